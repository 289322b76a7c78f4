package sim

import (
	"fmt"
	"net/http"
)

// promptTokens tokenizes a text prompt (or a rendered chat) the way the
// personality's engine does for generation: BOS first, except generic.
func (s *Server) promptTokens(text string) []int {
	if s.persona == PersonaGeneric {
		return Tokenize(text)
	}
	ids, _ := tokenizeSubword(s.persona, text, true, false)
	return ids
}

// ollamaNumKeep is how many leading tokens Ollama keeps when it truncates a
// prompt to num_ctx (its runner's "truncating input prompt ... keep=4").
const ollamaNumKeep = 4

// checkPrompt applies the engine's rule for a prompt that alone does not
// fit the context, before max_tokens is looked at: Ollama truncates it
// (keeping the first 4 and the last tokens), llama-server and SGLang refuse
// a prompt of MaxModelLen tokens or more, and vLLM refuses one that leaves
// no room when a chat request gives no max_tokens.
func (s *Server) checkPrompt(p *genPlan, req *genRequest, endpoint string) *apiErr {
	n, m := len(p.promptIDs), s.cfg.MaxModelLen
	switch s.persona {
	case PersonaOllama:
		if n > m {
			keep := min(ollamaNumKeep, m)
			ids := make([]int, 0, m)
			ids = append(ids, p.promptIDs[:keep]...)
			p.promptIDs = append(ids, p.promptIDs[n-(m-keep):]...)
		}
	case PersonaLlamaServer:
		if n >= m {
			return &apiErr{status: http.StatusBadRequest, typ: "exceed_context_size_error",
				msg: "the request exceeds the available context size, try increasing it", nPrompt: n, nCtx: m}
		}
	case PersonaSGLang:
		if n >= m {
			return &apiErr{status: http.StatusBadRequest, typ: "BadRequestError",
				msg: fmt.Sprintf("The input (%d tokens) is longer than the model's context length (%d tokens).", n, m)}
		}
	case PersonaVLLM:
		if endpoint == epChat && req.MaxTokens == nil && req.MaxCompletionTokens == nil && n >= m {
			return &apiErr{status: http.StatusBadRequest, typ: "BadRequestError",
				msg: fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens in the messages, Please reduce the length of the messages.", m, n)}
		}
	}
	return nil
}

// chatDefaultMaxTokens is max_tokens of a chat request that gives none:
// DefaultMaxTokens, within the room the context leaves where the engine
// checks prompt + max_tokens (llama-server stops at the context instead,
// Ollama shifts it).
func (s *Server) chatDefaultMaxTokens(prompt int) int {
	room := s.cfg.MaxModelLen - prompt
	switch s.persona {
	case PersonaLlamaServer, PersonaOllama:
		return s.cfg.DefaultMaxTokens
	case PersonaSGLang:
		return min(s.cfg.DefaultMaxTokens, room-1) // SGLang refuses prompt + max_tokens >= context
	}
	return min(s.cfg.DefaultMaxTokens, room)
}

// checkContext applies the engine's prompt + max_tokens rule: vLLM (and
// generic) refuse a total over MaxModelLen, SGLang one at or over it;
// llama-server generates until its context is full (max_tokens is cut to
// the room left, finish_reason "length"); Ollama never refuses.
func (s *Server) checkContext(prompt int, maxTokens *int) *apiErr {
	m, total := s.cfg.MaxModelLen, prompt+*maxTokens
	switch s.persona {
	case PersonaLlamaServer:
		*maxTokens = min(*maxTokens, m-prompt)
	case PersonaOllama:
	case PersonaSGLang:
		if total >= m {
			return &apiErr{status: http.StatusBadRequest, typ: "BadRequestError",
				msg: fmt.Sprintf("Requested token count exceeds the model's maximum context length of %d tokens. You requested a total of %d tokens: %d tokens from the input messages and %d tokens for the completion. Please reduce the number of tokens in the input messages or the completion to fit within the limit.", m, total, prompt, *maxTokens)}
		}
	default:
		if total > m {
			return &apiErr{status: http.StatusBadRequest, typ: "BadRequestError",
				msg: fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.", m, total, prompt, *maxTokens)}
		}
	}
	return nil
}
