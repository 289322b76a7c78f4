package sim

import (
	"encoding/json"
	"net/http"
	"sync"
	"time"
)

// lazyLoad is Ollama's way of loading: the server answers at once and the
// first request that needs the model waits LoadTime for it.
type lazyLoad struct {
	once sync.Once
	at   time.Time
}

// modelReady returns when the model is (or will be) loaded for a request
// arriving now: zero for every personality but Ollama.
func (s *Server) modelReady() time.Time {
	if !s.persona.lazyLoad || s.cfg.LoadTime <= 0 {
		return time.Time{}
	}
	s.lazyLoad.once.Do(func() { s.lazyLoad.at = time.Now().Add(s.cfg.LoadTime) })
	return s.lazyLoad.at
}

// --- /v1/models ---

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	data := make([]any, len(s.cfg.Models))
	for i, m := range s.cfg.Models {
		data[i] = s.persona.modelEntry(s, m)
	}
	if !s.persona.rawModels {
		writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
		return
	}
	writeRawJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

// The "model" the llama-server and Ollama personalities describe: a
// Llama-3.2-1B-sized Q4_K_M GGUF.
const (
	simEmbd   = 2048
	simParams = 1235814400
	simSize   = 807694464
)

func boolOr(b *bool, def bool) bool {
	if b == nil {
		return def
	}
	return *b
}

// decode reads a JSON body into v, answering 400 in the personality's
// shape on failure (llama-server: 500, as its JSON parser's exception is).
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	if err := dec.Decode(v); err != nil {
		e := s.persona.badJSON
		e.msg += err.Error()
		s.writeAPIErr(w, &e)
		return false
	}
	return true
}
