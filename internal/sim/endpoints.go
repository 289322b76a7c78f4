package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
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

// --- vLLM ---

type vllmTokenizeRequest struct {
	Model               string            `json:"model"`
	Prompt              *string           `json:"prompt"`
	Messages            []json.RawMessage `json:"messages"`
	AddSpecialTokens    *bool             `json:"add_special_tokens"`
	AddGenerationPrompt *bool             `json:"add_generation_prompt"`
	ReturnTokenStrs     bool              `json:"return_token_strs"`
}

type vllmTokenizeResponse struct {
	Count       int      `json:"count"`
	MaxModelLen int      `json:"max_model_len"`
	Tokens      []int    `json:"tokens"`
	TokenStrs   []string `json:"token_strs"`
}

func boolOr(b *bool, def bool) bool {
	if b == nil {
		return def
	}
	return *b
}

// handleTokenizeVLLM is vLLM's /tokenize: a prompt gets BOS unless
// add_special_tokens is false; messages are rendered by the chat template
// (which starts with BOS), add_special_tokens defaulting to false there.
func (s *Server) handleTokenizeVLLM(w http.ResponseWriter, r *http.Request) {
	var req vllmTokenizeRequest
	if !s.decode(w, r, &req) {
		return
	}
	if _, ok := s.resolveModel(w, req.Model); !ok {
		return
	}
	var ids []int
	var strs []string
	switch {
	case req.Prompt != nil && req.Messages != nil:
		s.writeErr(w, http.StatusBadRequest, "BadRequestError", "give either prompt or messages, not both")
		return
	case req.Prompt != nil:
		ids, strs = tokenizeSubword(s.persona, *req.Prompt, boolOr(req.AddSpecialTokens, true), req.ReturnTokenStrs)
	case req.Messages != nil:
		msgs, err := parseMessages(req.Messages)
		if err != nil {
			s.writeErr(w, http.StatusBadRequest, "BadRequestError", err.Error())
			return
		}
		ids, strs = tokenizeSubword(s.persona, renderChatOpts(msgs, boolOr(req.AddGenerationPrompt, true)), true, req.ReturnTokenStrs)
		if boolOr(req.AddSpecialTokens, false) {
			ids = append([]int{BOSToken}, ids...)
			if req.ReturnTokenStrs {
				strs = append([]string{bosText}, strs...)
			}
		}
	default:
		s.writeErr(w, http.StatusBadRequest, "BadRequestError", "prompt or messages is required")
		return
	}
	for i, p := range strs {
		if strings.HasPrefix(p, " ") {
			strs[i] = "▁" + p[1:] // the tokenizer's own spelling of a word start
		}
	}
	writeRawJSON(w, http.StatusOK, vllmTokenizeResponse{Count: len(ids), MaxModelLen: s.cfg.MaxModelLen, Tokens: ids, TokenStrs: strs})
}

func (s *Server) handleDetokenizeVLLM(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model  string `json:"model"`
		Tokens []int  `json:"tokens"`
	}
	if !s.decode(w, r, &req) {
		return
	}
	if _, ok := s.resolveModel(w, req.Model); !ok {
		return
	}
	writeRawJSON(w, http.StatusOK, map[string]string{"prompt": s.persona.detokenize(req.Tokens)})
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

// --- llama-server ---

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

// --- SGLang ---

type sglangTokenizeResponse struct {
	Tokens      []int `json:"tokens"`
	Count       int   `json:"count"`
	MaxModelLen int   `json:"max_model_len"`
}

func (s *Server) handleTokenizeSGLang(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model            string  `json:"model"`
		Prompt           *string `json:"prompt"`
		AddSpecialTokens *bool   `json:"add_special_tokens"`
	}
	if !s.decode(w, r, &req) {
		return
	}
	if req.Prompt == nil {
		s.writeErr(w, http.StatusBadRequest, "BadRequestError", "prompt is required")
		return
	}
	ids, _ := tokenizeSubword(s.persona, *req.Prompt, boolOr(req.AddSpecialTokens, true), false)
	writeRawJSON(w, http.StatusOK, sglangTokenizeResponse{Tokens: ids, Count: len(ids), MaxModelLen: s.cfg.MaxModelLen})
}

func (s *Server) handleSGLangModelInfo(w http.ResponseWriter, r *http.Request) {
	writeRawJSON(w, http.StatusOK, map[string]any{
		"model_path": s.cfg.Models[0], "tokenizer_path": s.cfg.Models[0], "is_generation": true,
		"preferred_sampling_params": nil, "weight_version": "default", "has_chat_template": true,
	})
}

// handleSGLangServerInfo is SGLang's /get_server_info: its server args,
// with context_length, and the version.
func (s *Server) handleSGLangServerInfo(w http.ResponseWriter, r *http.Request) {
	maxRunning, kv, chunk := s.cfg.Engine.MaxNumSeqs, s.cfg.Engine.KVCacheTokens, s.cfg.Engine.MaxBatchedTokens
	writeRawJSON(w, http.StatusOK, map[string]any{
		"model_path": s.cfg.Models[0], "tokenizer_path": s.cfg.Models[0], "served_model_name": s.cfg.Models[0],
		"context_length": s.cfg.MaxModelLen, "max_running_requests": maxRunning, "max_total_tokens": kv,
		"chunked_prefill_size": chunk, "page_size": 1, "tp_size": 1, "dp_size": 1,
		"disable_radix_cache": !(s.cfg.PromptCache || (s.engine != nil && s.cfg.Engine.PrefixCache)),
		"schedule_policy":     "fcfs", "random_seed": s.cfg.Seed, "stream_interval": s.cfg.TokensPerChunk,
		"max_total_num_tokens": kv, "max_req_input_len": s.cfg.MaxModelLen - 1,
		"internal_states": []any{map[string]any{"last_gen_throughput": 0.0}},
		"version":         s.version(),
	})
}

// handleFlushCache is SGLang's /flush_cache: it empties the prompt cache.
func (s *Server) handleFlushCache(w http.ResponseWriter, r *http.Request) {
	s.flushPromptCache()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("Cache flushed.\nPlease check backend logs for more details. (When there are running or waiting requests, the operation will not be performed.)\n"))
}

// flushPromptCache empties fixed mode's prompt cache and the engine's
// prefix cache.
func (s *Server) flushPromptCache() {
	if s.pcache != nil {
		s.pcache.reset()
	}
	if s.engine != nil {
		s.engine.flushPrefix()
	}
}

// --- Ollama ---

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
