package sim

import (
	"encoding/json"
	"io"
	"net/http"
	"unicode/utf8"
)

// llamaServerPersona is llama.cpp's llama-server: its own routes beside
// the /v1 ones, slots with a prompt each, a 503 while loading, the
// connection closed after every stream.
var llamaServerPersona = persona{
	reasoningField:   FieldReasoningContent,
	name:             PersonaLlamaServer,
	version:          "b6500-sim",
	metrics:          MetricsLlamaCpp,
	closeAfterStream: true,
	embedsOnRequest:  true,
	subword:          true,
	serverHeader:     "llama.cpp",
	cache:            cacheSlots,
	hostCache:        true,
	timings:          true,
	streamType:       "text/event-stream",
	// Its JSON parser's exception is a 500.
	badJSON: apiErr{status: http.StatusInternalServerError, typ: "server_error", msg: "[json.exception.parse_error.101] parse error: "},
	routes: func(s *Server) {
		s.openAIRoutes()
		m := s.mux
		m.HandleFunc("GET /health", s.handleHealth)
		m.HandleFunc("GET /v1/health", s.handleHealth)
		m.HandleFunc("GET /models", s.ready(s.handleModels))
		m.HandleFunc("POST /completions", s.gen(epCompletions))
		m.HandleFunc("POST /chat/completions", s.gen(epChat))
		m.HandleFunc("GET /props", s.ready(s.handleProps))
		m.HandleFunc("GET /slots", s.ready(s.handleSlots))
		m.HandleFunc("POST /slots/{id}", s.ready(s.handleSlotAction))
		m.HandleFunc("POST /tokenize", s.ready(s.handleTokenizeLlama))
		m.HandleFunc("POST /detokenize", s.ready(s.handleDetokenizeLlama))
		m.HandleFunc("POST /apply-template", s.ready(s.handleApplyTemplate))
	},
	rawModels: true,
	// No max_model_len: the per-slot context is meta.n_ctx (and /props).
	modelEntry: func(s *Server, m string) any {
		return map[string]any{"id": m, "object": "model", "created": s.created, "owned_by": "llamacpp",
			"meta": map[string]any{
				"vocab_type": 1, "n_vocab": VocabSize, "n_ctx_train": s.trainCtx(), "n_ctx": s.cfg.MaxModelLen,
				"n_embd": simEmbd, "n_params": simParams, "size": simSize,
			}}
	},
	lookupModel: serveAnyModel,
	// A prompt of MaxModelLen tokens or more is refused.
	checkPrompt: func(s *Server, p *genPlan, _ *genRequest, _ string) *apiErr {
		if n, m := len(p.promptIDs), s.cfg.MaxModelLen; n >= m {
			return &apiErr{status: http.StatusBadRequest, typ: "exceed_context_size_error",
				msg: "the request exceeds the available context size, try increasing it", nPrompt: n, nCtx: m}
		}
		return nil
	},
	// It stops at the context instead.
	chatRoom: roomIgnored,
	// It generates until its context is full: max_tokens is cut to the
	// room left, finish_reason "length".
	checkContext: func(s *Server, prompt int, maxTokens *int) *apiErr {
		*maxTokens = min(*maxTokens, s.cfg.MaxModelLen-prompt)
		return nil
	},
	// llama.cpp's format_error_response; nlohmann::json sorts the keys,
	// as encoding/json does for a map.
	writeErr: func(w http.ResponseWriter, e *apiErr) {
		body := map[string]any{"code": e.status, "message": e.msg, "type": llamaErrorType(e)}
		if e.typ == "exceed_context_size_error" {
			body["n_prompt_tokens"], body["n_ctx"] = e.nPrompt, e.nCtx
		}
		writeRawJSON(w, e.status, map[string]any{"error": body})
	},
	notFound: func(s *Server, w http.ResponseWriter, _ *http.Request) {
		s.writeErr(w, http.StatusNotFound, "not_found_error", "File Not Found")
	},

	// The other APIs: /v1/responses (its events without output_index or
	// sequence_number), /v1/messages (its Anthropic-compatible route) and
	// /v1/rerank (with --reranking), as tools/server/server.cpp routes
	// them (ggml 0.23.0).
	apis:               []string{epResponses, epMessages, epRerank},
	bareResponseEvents: true,
}

// --- llama-server's endpoints ---

// handleTokenizeLlama is llama-server's /tokenize: it reads only content
// (a string, or a list mixing strings and token ids), add_special (BOS,
// default false) and with_pieces. A body without content, such as vLLM's
// {"model", "prompt"}, gets 200 {"tokens": []}.
func (s *Server) handleTokenizeLlama(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Content    json.RawMessage `json:"content"`
		AddSpecial bool            `json:"add_special"`
		WithPieces bool            `json:"with_pieces"`
	}
	if !s.decode(w, r, &req) {
		return
	}
	var ids []int
	var pieces []string
	if len(req.Content) > 0 && string(req.Content) != "null" {
		var str string
		if err := json.Unmarshal(req.Content, &str); err == nil {
			ids, pieces = tokenizeSubword(s.persona, str, req.AddSpecial, req.WithPieces)
		} else {
			var mixed []json.RawMessage
			if err := json.Unmarshal(req.Content, &mixed); err != nil {
				s.writeErr(w, http.StatusInternalServerError, "server_error", "content must be a string or a list of strings and token ids")
				return
			}
			if req.AddSpecial {
				ids, pieces = append(ids, BOSToken), append(pieces, bosText)
			}
			for _, el := range mixed {
				var id int
				if json.Unmarshal(el, &id) == nil {
					ids, pieces = append(ids, id), append(pieces, s.persona.detokenize([]int{id}))
					continue
				}
				if json.Unmarshal(el, &str) != nil {
					s.writeErr(w, http.StatusInternalServerError, "server_error", "content must be a string or a list of strings and token ids")
					return
				}
				more, ps := tokenizeSubword(s.persona, str, false, true)
				ids, pieces = append(ids, more...), append(pieces, ps...)
			}
		}
	}
	if !req.WithPieces {
		if ids == nil {
			ids = []int{}
		}
		writeRawJSON(w, http.StatusOK, map[string]any{"tokens": ids})
		return
	}
	out := make([]map[string]any, len(ids))
	for i, id := range ids {
		var piece any = pieces[i]
		if !utf8.ValidString(pieces[i]) { // llama-server sends the bytes then
			bs := make([]int, len(pieces[i]))
			for j := range len(pieces[i]) {
				bs[j] = int(pieces[i][j])
			}
			piece = bs
		}
		out[i] = map[string]any{"id": id, "piece": piece}
	}
	writeRawJSON(w, http.StatusOK, map[string]any{"tokens": out})
}

func (s *Server) handleDetokenizeLlama(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Tokens []int `json:"tokens"`
	}
	if !s.decode(w, r, &req) {
		return
	}
	writeRawJSON(w, http.StatusOK, map[string]string{"content": s.persona.detokenize(req.Tokens)})
}

func (s *Server) handleApplyTemplate(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if !s.decode(w, r, &req) {
		return
	}
	if req.Messages == nil {
		s.writeErr(w, http.StatusBadRequest, "invalid_request_error", "'messages' is required")
		return
	}
	msgs, err := parseMessages(req.Messages)
	if err != nil {
		s.writeErr(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	writeRawJSON(w, http.StatusOK, map[string]string{"prompt": renderChat(msgs)})
}

// chatTemplate is renderChat as the Jinja template llama-server reports.
const chatTemplate = "{% for message in messages %}<|{{ message['role'] }}|> {{ message['content'] }} <|end|> {% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"

func (s *Server) llamaParams() map[string]any {
	return map[string]any{
		"n_predict": -1, "seed": 4294967295, "temperature": 0.8, "top_k": 40, "top_p": 0.95, "min_p": 0.05,
		"n_keep": 0, "n_discard": 0, "ignore_eos": false, "stream": true,
		"cache_prompt": s.cfg.PromptCache || (s.engine != nil && s.cfg.Engine.PrefixCache),
		"samplers":     []string{"penalties", "dry", "top_k", "typ_p", "top_p", "min_p", "xtc", "temperature"},
	}
}

// handleProps is llama-server's /props: the per-slot context is
// default_generation_settings.n_ctx, the version is build_info.
func (s *Server) handleProps(w http.ResponseWriter, r *http.Request) {
	writeRawJSON(w, http.StatusOK, map[string]any{
		"default_generation_settings": map[string]any{
			"id": 0, "id_task": -1, "n_ctx": s.cfg.MaxModelLen, "speculative": false, "is_processing": false,
			"params": s.llamaParams(), "prompt": "",
		},
		"total_slots":   s.slots(),
		"model_path":    "models/" + s.cfg.Models[0] + ".gguf",
		"modalities":    map[string]bool{"vision": false, "audio": false},
		"chat_template": chatTemplate,
		"bos_token":     bosText,
		"eos_token":     "</s>",
		"build_info":    s.version(),
	})
}

// handleSlots is llama-server's /slots; the first slots show the requests
// in flight (the simulator does not pin requests to slots), each with what
// it holds as llama.cpp's server_slot::to_json says it (current builds,
// tools/server/server-context.cpp): n_prompt_tokens is the slot's whole
// token sequence, prompt.tokens.size(), to which every sampled token is
// appended, so it already counts next_token.n_decoded;
// n_prompt_tokens_processed is the prompt tokens computed for this
// request and n_prompt_tokens_cache those reused. Builds of 2025
// (SlotsObjectNextToken) send next_token as an object and none of the
// three.
func (s *Server) handleSlots(w http.ResponseWriter, r *http.Request) {
	busy := s.live.busiest(s.slots())
	out := make([]map[string]any, s.slots())
	for i := range out {
		var use slotUse
		if i < len(busy) {
			use = busy[i]
		}
		var next any = map[string]any{"has_next_token": i < len(busy), "has_new_line": false, "n_remain": -1, "n_decoded": use.decoded, "stopping_word": ""}
		slot := map[string]any{
			"id": i, "id_task": -1, "n_ctx": s.cfg.MaxModelLen, "speculative": false, "is_processing": i < len(busy),
			"params": s.llamaParams(), "prompt": "",
		}
		if !s.cfg.SlotsObjectNextToken {
			next = []any{next} // current llama.cpp: one per sequence
			slot["n_prompt_tokens"] = use.prompt + use.decoded
			slot["n_prompt_tokens_processed"] = use.prompt - use.cached
			slot["n_prompt_tokens_cache"] = use.cached
		}
		slot["next_token"] = next
		out[i] = slot
	}
	writeRawJSON(w, http.StatusOK, out)
}

// llamaErrorType maps a status to llama.cpp's error_type names.
func llamaErrorType(e *apiErr) string {
	switch {
	case e.typ == "exceed_context_size_error":
		return e.typ
	case e.status == http.StatusBadRequest:
		return "invalid_request_error"
	case e.status == http.StatusUnauthorized:
		return "authentication_error"
	case e.status == http.StatusForbidden:
		return "permission_error"
	case e.status == http.StatusNotFound:
		return "not_found_error"
	case e.status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case e.status == http.StatusNotImplemented:
		return "not_supported_error"
	case e.status == http.StatusServiceUnavailable:
		return "unavailable_error"
	}
	return "server_error"
}

// writeLlamaMetrics writes llama-server's names (served with --metrics),
// each one unlabelled series.
func writeLlamaMetrics(bw io.Writer, g gauges, m *metrics, legacy bool) {
	pt, gt := float64(m.promptTokens.Load()), float64(m.generationTokens.Load())
	ps, ds := float64(m.promptNs.Load())/1e9, float64(m.decodeNs.Load())/1e9
	counter(bw, "llamacpp:prompt_tokens_total", "Number of prompt tokens processed.", nolbl, pt)
	counter(bw, "llamacpp:prompt_seconds_total", "Prompt process time", nolbl, ps)
	counter(bw, "llamacpp:tokens_predicted_total", "Number of generation tokens processed.", nolbl, gt)
	counter(bw, "llamacpp:tokens_predicted_seconds_total", "Predict process time", nolbl, ds)
	steps := m.steps.Load()
	counter(bw, "llamacpp:n_decode_total", "Total number of llama_decode() calls", nolbl, float64(steps))
	busy := 0.0
	if steps > 0 {
		busy = float64(m.stepBusySlots.Load()) / float64(steps)
	}
	gauge(bw, "llamacpp:n_busy_slots_per_decode", "Average number of busy slots per llama_decode() call", nolbl, busy)
	gauge(bw, "llamacpp:prompt_tokens_seconds", "Average prompt throughput in tokens/s.", nolbl, rate(pt, ps))
	gauge(bw, "llamacpp:predicted_tokens_seconds", "Average generation throughput in tokens/s.", nolbl, rate(gt, ds))
	if legacy {
		// Removed upstream as "too internal" (llama.cpp PRs #13660,
		// #22879): current builds leave KV usage to /slots.
		gauge(bw, "llamacpp:kv_cache_usage_ratio", "KV-cache usage. 1 means 100 percent usage.", nolbl, g.kvUsage)
		gauge(bw, "llamacpp:kv_cache_tokens", "KV-cache tokens.", nolbl, float64(g.kvTokens))
	}
	gauge(bw, "llamacpp:requests_processing", "Number of requests processing.", nolbl, float64(g.running))
	gauge(bw, "llamacpp:requests_deferred", "Number of requests deferred.", nolbl, float64(g.waiting))
}
