package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// maxBody bounds request bodies: a max-model-len prompt as JSON is far below.
const maxBody = 64 << 20

// Server is the simulator as an http.Handler. Close it to stop its engine
// and end in-flight streams.
type Server struct {
	cfg       Config
	mux       *http.ServeMux
	started   time.Time
	readyAt   time.Time
	created   int64 // the "created" field of responses
	seedHash  uint64
	seq       atomic.Uint64
	generated atomic.Int64 // generation requests planned (SlowFirst counts them)
	records   recordLog
	metrics   *metrics
	engine    *engine // nil in fixed mode
	inflight  atomic.Int64
	hooks     hookCounts   // server hooks called (hooks.go)
	mcaches   modelCaches  // the other served models' prompt caches (models.go)
	inflightT atomic.Int64 // tokens held by in-flight requests (fixed mode's cache usage)
	live      liveRequests // the generation requests in flight (llama-server's /slots)
	// closed is done once Close is called: handlers select on its Done
	// channel or register on it with context.AfterFunc.
	closed    context.Context
	endClosed context.CancelFunc
	closeOnce sync.Once
	models    map[string]bool
	persona   *persona     // Config.Personality's
	srvHeader string       // the Server header the engine's HTTP stack sends
	pcache    *promptCache // fixed mode's prompt cache; nil without one
	lazyLoad  lazyLoad     // Ollama loads the model on the first request
}

// New builds a Server from cfg. It panics if cfg is invalid, because a
// misconfigured ground truth would silently corrupt every test built on it;
// call cfg.Validate first to get the error instead.
func New(cfg Config) *Server {
	if err := cfg.Validate(); err != nil {
		panic(fmt.Sprintf("sim.New: invalid config: %v", err))
	}
	now := time.Now()
	s := &Server{
		cfg:      cfg,
		mux:      http.NewServeMux(),
		started:  now,
		readyAt:  now.Add(cfg.LoadTime),
		created:  now.Unix(),
		seedHash: mix(uint64(cfg.Seed)),
		records:  recordLog{max: cfg.MaxRecords},
		metrics:  newMetrics(),
		models:   make(map[string]bool),
		persona:  personaOf(cfg.Personality),
	}
	s.closed, s.endClosed = context.WithCancel(context.Background())
	s.srvHeader = s.persona.serverHeader
	s.pcache = newPromptCache(cfg, s.persona.name)
	for _, m := range cfg.Models {
		s.models[m] = true
	}
	if cfg.Mode == ModeEngine {
		s.engine = newEngine(cfg.Engine, cfg.TokensPerChunk, cfg.Seed, s.metrics)
	}
	s.routes()
	return s
}

// Config returns the configuration the server runs with.
func (s *Server) Config() Config { return s.cfg }

// Close ends in-flight streams (their connections are aborted) and stops the
// engine loop. It is safe to call more than once.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.endClosed()
		if s.engine != nil {
			s.engine.close()
		}
	})
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.srvHeader != "" {
		w.Header().Set("Server", s.srvHeader)
	}
	s.mux.ServeHTTP(w, r)
}

func (s *Server) routes() {
	s.persona.routes(s)
	s.debugRoutes()
	s.mux.HandleFunc("/", s.notFound)
}

func (s *Server) debugRoutes() {
	if s.cfg.Debug {
		s.mux.HandleFunc("GET /debug/requests", s.handleDebugRequests)
		s.mux.HandleFunc("DELETE /debug/requests", func(w http.ResponseWriter, r *http.Request) {
			s.ResetRecords()
			w.WriteHeader(http.StatusNoContent)
		})
		s.mux.HandleFunc("GET /debug/engine", s.handleDebugEngine)
	}
}

func (s *Server) handleVersion(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"version": s.version()})
}

// Ready reports whether the simulated model load has finished.
func (s *Server) Ready() bool { return !time.Now().Before(s.readyAt) }

// ready answers 503 while the model is "loading", as llama-server does for
// every endpoint; vLLM is not even listening then, which a client sees as a
// connection error instead.
func (s *Server) ready(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.Ready() && !s.persona.lazyLoad { // Ollama loads on the first request
			s.writeErr(w, http.StatusServiceUnavailable, "unavailable_error", "Loading model")
			return
		}
		h(w, r)
	}
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	if !s.Ready() {
		s.writeErr(w, http.StatusServiceUnavailable, "unavailable_error", "Loading model")
		return
	}
	if s.persona.emptyHealth {
		w.WriteHeader(http.StatusOK) // an empty 200, as vLLM's and SGLang's /health
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_ = s.writeMetrics(w) // the client went away; nothing to tell it
}

func (s *Server) gauges() gauges {
	if s.engine != nil {
		used := s.engine.usedBlocks.Load()
		return gauges{
			running:  int(s.engine.nRunning.Load()),
			waiting:  int(s.engine.nWaiting.Load()),
			kvUsage:  float64(used) / float64(s.engine.total),
			kvTokens: int(used) * s.cfg.Engine.BlockSize,
		}
	}
	t := s.inflightT.Load()
	g := gauges{running: int(s.inflight.Load()), kvTokens: int(t)}
	if kv := s.cfg.Engine.KVCacheTokens; kv > 0 { // fixed mode does not validate the engine
		g.kvUsage = min(1, float64(t)/float64(kv))
	}
	return g
}

type modelJSON struct {
	ID          string `json:"id"`
	Object      string `json:"object"`
	Created     int64  `json:"created"`
	OwnedBy     string `json:"owned_by"`
	Root        string `json:"root"`
	MaxModelLen int    `json:"max_model_len"`
}

// resolveModel returns the served name for a request's model field; an
// empty field means the first served model, as vLLM does.
func (s *Server) resolveModel(w http.ResponseWriter, name string) (string, bool) {
	m, e := s.lookupModel(name)
	if e != nil {
		s.writeAPIErr(w, e)
		return "", false
	}
	return m, true
}

// unknownModel is vLLM's message plus the served names, so that a plan with
// a wrong model name says at once what it should have been.
func (s *Server) unknownModel(name string) error {
	//lint:ignore ST1005 vLLM's exact wording, which clients match on
	return fmt.Errorf("The model `%s` does not exist. Served models: %s", name, strings.Join(s.cfg.Models, ", "))
}

type tokenizeRequest struct {
	Model    string            `json:"model"`
	Prompt   *string           `json:"prompt"`
	Messages []json.RawMessage `json:"messages"`
}

func (s *Server) handleTokenize(w http.ResponseWriter, r *http.Request) {
	var req tokenizeRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if _, ok := s.resolveModel(w, req.Model); !ok {
		return
	}
	var text string
	switch {
	case req.Prompt != nil && req.Messages != nil:
		writeError(w, http.StatusBadRequest, "BadRequestError", "give either prompt or messages, not both")
		return
	case req.Prompt != nil:
		text = *req.Prompt
	case req.Messages != nil:
		msgs, err := parseMessages(req.Messages)
		if err != nil {
			writeError(w, http.StatusBadRequest, "BadRequestError", err.Error())
			return
		}
		text = renderChat(msgs)
	default:
		writeError(w, http.StatusBadRequest, "BadRequestError", "prompt or messages is required")
		return
	}
	ids := Tokenize(text)
	writeJSON(w, http.StatusOK, map[string]any{"count": len(ids), "max_model_len": s.cfg.MaxModelLen, "tokens": ids})
}

func (s *Server) handleDetokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model  string `json:"model"`
		Tokens []int  `json:"tokens"`
	}
	if !decodeBody(w, r, &req) {
		return
	}
	if _, ok := s.resolveModel(w, req.Model); !ok {
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"prompt": Detokenize(req.Tokens)})
}

func (s *Server) handleDebugRequests(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	id := q.Get("id")
	var since uint64
	if v := q.Get("since"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			writeError(w, http.StatusBadRequest, "BadRequestError", "since: "+err.Error())
			return
		}
		since = n
	}
	recs := s.Records()
	out := make([]recordJSON, 0, len(recs))
	for _, rec := range recs {
		if (id != "" && rec.ID != id) || rec.Seq <= since {
			continue
		}
		out = append(out, toJSON(rec))
	}
	writeJSON(w, http.StatusOK, map[string]any{"requests": out})
}

func (s *Server) handleDebugEngine(w http.ResponseWriter, r *http.Request) {
	g := s.gauges()
	out := map[string]any{
		"mode":        s.cfg.Mode,
		"running":     g.running,
		"waiting":     g.waiting,
		"kv_usage":    g.kvUsage,
		"kv_tokens":   g.kvTokens,
		"steps":       s.metrics.steps.Load(),
		"preemptions": s.metrics.preemptions.Load(),
		"errors":      s.metrics.errors.Load(),
		"requests":    s.seq.Load(),
	}
	if s.engine != nil {
		out["kv_total_blocks"] = s.engine.total
		out["block_size"] = s.cfg.Engine.BlockSize
	}
	writeJSON(w, http.StatusOK, out)
}

// decodeBody reads a JSON body into v, answering 400 itself on failure.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "BadRequestError", "invalid JSON body: "+err.Error())
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// writeRawJSON is writeJSON without Go's escaping of <, > and &, which the
// real engines' JSON libraries do not do.
func writeRawJSON(w http.ResponseWriter, status int, v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

// apiError is OpenAI's error shape: {"error": {"message", "type", "param", "code"}}.
type apiError struct {
	Error apiErrorBody `json:"error"`
}

type apiErrorBody struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    int     `json:"code"`
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, apiError{Error: apiErrorBody{Message: msg, Type: typ, Code: status}})
}
