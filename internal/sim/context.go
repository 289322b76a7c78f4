package sim

// promptTokens tokenizes a text prompt (or a rendered chat) the way the
// personality's engine does for generation: BOS first, except generic.
func (s *Server) promptTokens(text string) []int {
	if !s.persona.subword {
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
	if s.persona.checkPrompt == nil {
		return nil
	}
	return s.persona.checkPrompt(s, p, req, endpoint)
}

// chatDefaultMaxTokens is max_tokens of a chat request that gives none:
// DefaultMaxTokens, within the room the context leaves where the engine
// checks prompt + max_tokens (llama-server stops at the context instead,
// Ollama shifts it).
func (s *Server) chatDefaultMaxTokens(prompt int) int {
	room := s.cfg.MaxModelLen - prompt
	switch s.persona.chatRoom {
	case roomIgnored:
		return s.cfg.DefaultMaxTokens
	case roomBelow:
		return min(s.cfg.DefaultMaxTokens, room-1)
	}
	return min(s.cfg.DefaultMaxTokens, room)
}

// checkContext applies the engine's prompt + max_tokens rule: vLLM (and
// generic) refuse a total over MaxModelLen, SGLang one at or over it;
// llama-server generates until its context is full (max_tokens is cut to
// the room left, finish_reason "length"); Ollama never refuses.
func (s *Server) checkContext(prompt int, maxTokens *int) *apiErr {
	return s.persona.checkContext(s, prompt, maxTokens)
}
