package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// ollamaPersona is Ollama's OpenAI-compatible layer: no /health, no
// /metrics, no tokenizer endpoint, a model loaded on the first request,
// a prompt over the context truncated rather than refused.
var ollamaPersona = persona{
	reasoningField:        FieldReasoning,
	reasoningEmptyContent: true,
	wholeToolCall:         true,
	name:                  PersonaOllama,
	version:               "0.17.4",
	metrics:               MetricsNone,
	subword:               true,
	firstWordQuirk:        true,
	lazyLoad:              true,
	cache:                 cacheSlots,
	streamType:            "text/event-stream; charset=utf-8",
	badJSON:               apiErr{status: http.StatusBadRequest, typ: "BadRequestError", msg: "invalid JSON body: "},
	cleanRunnerDeath:      true,
	routes: func(s *Server) {
		s.openAIRoutes()
		m := s.mux
		m.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			_, _ = w.Write([]byte("Ollama is running"))
		})
		m.HandleFunc("GET /api/version", s.handleVersion)
		m.HandleFunc("GET /api/tags", s.handleOllamaTags)
		m.HandleFunc("POST /api/show", s.handleOllamaShow)
	},
	rawModels: true,
	modelEntry: func(s *Server, m string) any {
		return map[string]any{"id": ollamaTag(m), "object": "model", "created": s.created, "owned_by": "library"}
	},
	// A name with or without ":latest".
	lookupModel: func(s *Server, name string) (string, *apiErr) {
		if name == "" {
			return s.cfg.Models[0], nil
		}
		if _, ok := s.ollamaModel(name); ok {
			return name, nil
		}
		return "", &apiErr{status: http.StatusNotFound, typ: "not_found_error",
			msg: fmt.Sprintf("model %q not found, try pulling it first", name)}
	},
	// A prompt over num_ctx is truncated, keeping the first 4 and the
	// last tokens (its runner's "truncating input prompt ... keep=4").
	checkPrompt: func(s *Server, p *genPlan, _ *genRequest, _ string) *apiErr {
		if n, m := len(p.promptIDs), s.cfg.MaxModelLen; n > m {
			keep := min(ollamaNumKeep, m)
			ids := make([]int, 0, m)
			ids = append(ids, p.promptIDs[:keep]...)
			p.promptIDs = append(ids, p.promptIDs[n-(m-keep):]...)
		}
		return nil
	},
	// It shifts the context instead.
	chatRoom: roomIgnored,
	// It never refuses.
	checkContext: func(*Server, int, *int) *apiErr { return nil },
	// Its OpenAI-compatible layer's openai.NewError.
	writeErr: func(w http.ResponseWriter, e *apiErr) {
		typ := "api_error"
		switch e.status {
		case http.StatusBadRequest:
			typ = "invalid_request_error"
		case http.StatusNotFound:
			typ = "not_found_error"
		}
		writeRawJSON(w, e.status, map[string]any{"error": map[string]any{"message": e.msg, "type": typ, "param": nil, "code": nil}})
	},
	// Go's mux (gin's is the same text).
	notFound: func(_ *Server, w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) },

	// The other APIs: openai/responses.go (/v1/responses, reasoning
	// as response.reasoning_summary_text.delta) and anthropic/anthropic.go
	// (/v1/messages, v0.14.0 on); no rerank route.
	apis:             []string{epResponses, epMessages},
	reasoningSummary: true,
}

// --- Ollama's endpoints ---

func (s *Server) ollamaDetails() map[string]any {
	return map[string]any{"parent_model": "", "format": "gguf", "family": "llama", "families": []string{"llama"},
		"parameter_size": "1.2B", "quantization_level": "Q4_K_M"}
}

func ollamaDigest(m string) string {
	h := fnv1a(m)
	return fmt.Sprintf("%016x%016x%016x%016x", mix(h), mix(h+1), mix(h+2), mix(h+3))
}

func (s *Server) handleOllamaTags(w http.ResponseWriter, r *http.Request) {
	out := make([]map[string]any, len(s.cfg.Models))
	for i, m := range s.cfg.Models {
		out[i] = map[string]any{"name": ollamaTag(m), "model": ollamaTag(m),
			"modified_at": s.started.Format(time.RFC3339Nano), "size": simSize, "digest": ollamaDigest(m),
			"details": s.ollamaDetails()}
	}
	writeRawJSON(w, http.StatusOK, map[string]any{"models": out})
}

// ollamaTemplate is renderChat as Ollama's Go template.
const ollamaTemplate = "{{ range .Messages }}<|{{ .Role }}|> {{ .Content }} <|end|> {{ end }}<|assistant|>"

// handleOllamaShow is Ollama's /api/show: the served context is num_ctx in
// parameters; model_info's llama.context_length is the (larger) context
// the model was trained with.
func (s *Server) handleOllamaShow(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model string `json:"model"`
		Name  string `json:"name"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody)).Decode(&req); err != nil {
		writeRawJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	name := req.Model
	if name == "" {
		name = req.Name
	}
	if name == "" {
		writeRawJSON(w, http.StatusBadRequest, map[string]string{"error": "model is required"})
		return
	}
	m, ok := s.ollamaModel(name)
	if !ok {
		writeRawJSON(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("model '%s' not found", name)})
		return
	}
	// Ollama's own formatting: fmt.Sprintf("%-*s %#v", 30, key, value).
	params := fmt.Sprintf("%-*s %#v\n%-*s %#v", 30, "num_ctx", s.cfg.MaxModelLen, 30, "stop", "<|end|>")
	modelfile := fmt.Sprintf("# Modelfile generated by \"ollama show\"\n# To build a new Modelfile based on this, replace FROM with:\n# FROM %s\n\n"+
		"FROM /root/.ollama/models/blobs/sha256-%s\nTEMPLATE \"\"\"%s\"\"\"\nPARAMETER num_ctx %d\nPARAMETER stop <|end|>\n",
		ollamaTag(m), ollamaDigest(m), ollamaTemplate, s.cfg.MaxModelLen)
	writeRawJSON(w, http.StatusOK, map[string]any{
		"license": "", "modelfile": modelfile, "parameters": params, "template": ollamaTemplate,
		"details": s.ollamaDetails(),
		"model_info": map[string]any{
			"general.architecture": "llama", "general.basename": m, "general.file_type": 15,
			"general.parameter_count": simParams, "general.quantization_version": 2,
			"llama.attention.head_count": 32, "llama.attention.head_count_kv": 8, "llama.block_count": 16,
			"llama.context_length": s.trainCtx(), "llama.embedding_length": simEmbd,
			"llama.feed_forward_length": 8192, "llama.vocab_size": VocabSize,
			"tokenizer.ggml.bos_token_id": BOSToken, "tokenizer.ggml.model": "gpt2",
		},
		"capabilities": []string{"completion"},
		"modified_at":  s.started.Format(time.RFC3339Nano),
	})
}

// ollamaTag is a served name as Ollama lists it ("x" is "x:latest").
func ollamaTag(m string) string {
	if strings.Contains(m, ":") {
		return m
	}
	return m + ":latest"
}

// ollamaModel finds the served model a name means under Ollama's naming.
func (s *Server) ollamaModel(name string) (string, bool) {
	for _, m := range s.cfg.Models {
		if name == m || ollamaTag(name) == ollamaTag(m) {
			return m, true
		}
	}
	return "", false
}
