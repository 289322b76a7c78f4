package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// vllmPersona is vLLM's OpenAI-compatible server (FastAPI on uvicorn).
var vllmPersona = persona{
	name:         PersonaVLLM,
	version:      "0.11.0",
	metrics:      MetricsVLLM,
	subword:      true,
	serverHeader: "uvicorn",
	cache:        cacheBlocks,
	usageCached:  cachedAlways,
	streamType:   "text/event-stream; charset=utf-8",
	emptyHealth:  true,
	badJSON:      apiErr{status: http.StatusBadRequest, typ: "BadRequestError", msg: "invalid JSON body: "},
	routes: func(s *Server) {
		s.openAIRoutes()
		m := s.mux
		m.HandleFunc("GET /health", s.handleHealth)
		m.HandleFunc("GET /ping", s.handleHealth)
		m.HandleFunc("POST /ping", s.handleHealth)
		m.HandleFunc("GET /version", s.handleVersion)
		m.HandleFunc("POST /tokenize", s.ready(s.handleTokenizeVLLM))
		m.HandleFunc("POST /detokenize", s.ready(s.handleDetokenizeVLLM))
	},
	rawModels: true,
	modelEntry: func(s *Server, m string) any {
		return map[string]any{
			"id": m, "object": "model", "created": s.created, "owned_by": "vllm", "root": m, "parent": nil,
			"max_model_len": s.cfg.MaxModelLen,
			"permission": []any{map[string]any{
				"id": fmt.Sprintf("modelperm-%016x", mix(fnv1a(m))), "object": "model_permission", "created": s.created,
				"allow_create_engine": false, "allow_sampling": true, "allow_logprobs": true,
				"allow_search_indices": false, "allow_view": true, "allow_fine_tuning": false,
				"organization": "*", "group": nil, "is_blocking": false,
			}},
		}
	},
	lookupModel: func(s *Server, name string) (string, *apiErr) {
		if name == "" {
			return s.cfg.Models[0], nil
		}
		if s.models[name] {
			return name, nil
		}
		return "", &apiErr{status: http.StatusNotFound, typ: "NotFoundError", param: "model",
			msg: fmt.Sprintf("The model `%s` does not exist.", name)}
	},
	// A chat request without max_tokens whose prompt leaves no room.
	checkPrompt: func(s *Server, p *genPlan, req *genRequest, endpoint string) *apiErr {
		n, m := len(p.promptIDs), s.cfg.MaxModelLen
		if endpoint == epChat && req.MaxTokens == nil && req.MaxCompletionTokens == nil && n >= m {
			return &apiErr{status: http.StatusBadRequest, typ: "BadRequestError",
				msg: fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens in the messages, Please reduce the length of the messages.", m, n)}
		}
		return nil
	},
	checkContext: checkTotal,
	writeErr:     writeVLLMErr,
	notFound:     fastAPINotFound,
}

// --- vLLM's endpoints ---

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

// vllmError is vLLM's (and SGLang's) ErrorResponse, in its field order.
type vllmError struct {
	Object  string  `json:"object"`
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    int     `json:"code"`
}

// writeVLLMErr writes vLLM's (and SGLang's) ErrorResponse.
func writeVLLMErr(w http.ResponseWriter, e *apiErr) {
	var param *string
	if e.param != "" {
		param = &e.param
	}
	writeRawJSON(w, e.status, vllmError{Object: "error", Message: e.msg, Type: e.typ, Param: param, Code: e.status})
}
