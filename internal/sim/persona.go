package sim

import (
	"fmt"
	"net/http"
)

// persona is one engine's wire habits as the simulator reproduces them:
// its routes, its answers' shapes, its context rules, its tokenizer and
// its prompt cache. Each persona is a value in a file of its own
// (persona_vllm.go, persona_sglang.go, ...), listed in personas; the
// simulator's code reads it instead of switching on the engine's name.
// The client side describes the same engines in internal/engines, and
// stages/engines_drift_test.go holds the two to each other.
type persona struct {
	name string
	// version is the engine version reported when Config.Version is empty.
	version string
	// metrics is the /metrics flavour ApplyPersonality sets (Metrics*).
	metrics string
	// closeAfterStream: ApplyPersonality sets Config.CloseAfterStream
	// (llama-server closes the connection after every stream).
	closeAfterStream bool
	// embedsOnRequest: the engine embeds only when started to
	// (llama-server's --embeddings, and not with --pooling none); it
	// refuses /v1/embeddings otherwise, and ApplyPersonality leaves
	// Config.Embeddings off.
	embedsOnRequest bool
	// subword: the engine's tokenizer splits words and adds BOS
	// (docs/SIM.md, "The subword tokenizer"); the generic persona counts
	// one token per word.
	subword bool
	// firstWordQuirk: Ollama's tokenizer adds 1 or 2 tokens to the first
	// word (ollamaExtra).
	firstWordQuirk bool
	// lazyLoad: the server answers at once and the first request that
	// needs the model waits for it (Ollama), instead of 503 while loading.
	lazyLoad bool
	// serverHeader is the Server header the engine's HTTP stack sends.
	serverHeader string
	// cache is fixed mode's prompt-cache style (cacheBlocks, cacheSlots,
	// cacheRadix); hostCache adds llama-server's host-memory prompt cache.
	cache     int
	hostCache bool
	// usageCached says when usage reports prompt_tokens_details.cached_tokens.
	usageCached int
	// timings: responses carry llama-server's "timings" member.
	timings bool
	// streamType is a stream's Content-Type.
	streamType string
	// emptyHealth: /health answers an empty 200 (vLLM, SGLang), not
	// {"status":"ok"}.
	emptyHealth bool
	// badJSON is the error a body that is not JSON gets.
	badJSON apiErr
	// cleanRunnerDeath: a stream whose runner died ends cleanly, with a
	// 200 (Ollama), instead of the connection dropping.
	cleanRunnerDeath bool
	// reasoningField is the member a thinking model's reasoning goes in
	// (Reasoning.Field overrides it); reasoningEmptyContent: an empty
	// "content" beside it in every reasoning delta (Ollama);
	// reasoningUsage: usage reports
	// completion_tokens_details.reasoning_tokens.
	reasoningField        string
	reasoningEmptyContent bool
	reasoningUsage        bool
	// apis are the other APIs the engine serves (apis.go): epResponses,
	// epMessages, epRerank; reasoningSummary: its Responses API sends
	// reasoning as response.reasoning_summary_text.delta (Ollama's
	// openai/responses.go), not response.reasoning_text.delta.
	apis             []string
	reasoningSummary bool
	// bareResponseEvents: its Responses events carry no output_index and
	// no sequence_number (llama-server's server-task.cpp: a call's
	// arguments deltas name their item by item_id alone).
	bareResponseEvents bool
	// wholeToolCall: a tool call goes out whole in one event, its
	// arguments complete, with an empty content beside it (Ollama holds
	// the text back until its parser has the call), instead of OpenAI's
	// name first and arguments in pieces.
	wholeToolCall bool
	// routes registers the engine's endpoints (the debug routes and the
	// catch-all are added after them).
	routes func(s *Server)
	// rawModels: /v1/models is written without Go's HTML escaping, as
	// the engine's JSON library writes it; modelEntry is one model's
	// entry.
	rawModels  bool
	modelEntry func(s *Server, m string) any
	// lookupModel resolves a request's model field to the served name.
	lookupModel func(s *Server, name string) (string, *apiErr)
	// checkPrompt is the engine's rule for a prompt that alone does not
	// fit the context (nil: none).
	checkPrompt func(s *Server, p *genPlan, req *genRequest, endpoint string) *apiErr
	// chatRoom is how much of the context's room a chat request's default
	// max_tokens may take (roomAll, roomBelow, roomIgnored).
	chatRoom int
	// checkContext is the engine's prompt + max_tokens rule.
	checkContext func(s *Server, prompt int, maxTokens *int) *apiErr
	// writeErr writes an error in the engine's shape.
	writeErr func(w http.ResponseWriter, e *apiErr)
	// notFound answers an unknown route as the engine's HTTP stack does.
	notFound func(s *Server, w http.ResponseWriter, r *http.Request)
}

// When usage reports cached tokens.
const (
	cachedNever = iota
	cachedAlways
	cachedWithPromptCache // only when Config.PromptCache is on
)

// How a chat request's default max_tokens meets the context.
const (
	roomAll     = iota // within the room the context leaves
	roomBelow          // strictly below it (prompt + max_tokens < context)
	roomIgnored        // DefaultMaxTokens whatever the room
)

// personas are the personalities in the order Personalities lists them,
// generic first.
var personas = []*persona{&genericPersona, &vllmPersona, &llamaServerPersona, &sglangPersona, &ollamaPersona}

// personaOf is the persona named name ("" is generic; nil: unknown).
func personaOf(name string) *persona {
	name = normPersona(name)
	for _, p := range personas {
		if p.name == name {
			return p
		}
	}
	return nil
}

// contextErr is the 400 a request over the context gets, in the
// vLLM-shaped wording the generic and vLLM personas share.
func contextErr(m, total, prompt, maxTokens int) *apiErr {
	return &apiErr{status: http.StatusBadRequest, typ: "BadRequestError",
		msg: fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.", m, total, prompt, maxTokens)}
}

// checkTotal is the vLLM (and generic) rule: prompt + max_tokens over
// the context is refused.
func checkTotal(s *Server, prompt int, maxTokens *int) *apiErr {
	if m, total := s.cfg.MaxModelLen, prompt+*maxTokens; total > m {
		return contextErr(m, total, prompt, *maxTokens)
	}
	return nil
}

// fastAPINotFound is FastAPI's 404 (vLLM, SGLang).
func fastAPINotFound(_ *Server, w http.ResponseWriter, _ *http.Request) {
	writeRawJSON(w, http.StatusNotFound, map[string]string{"detail": "Not Found"})
}

// serveAnyModel is how llama-server and SGLang treat the model field:
// they serve their one model whatever it says ("" is the first).
func serveAnyModel(s *Server, name string) (string, *apiErr) {
	if name == "" {
		return s.cfg.Models[0], nil
	}
	return name, nil
}

// openAIRoutes are the OpenAI-compatible routes every engine persona
// serves, and /metrics where its flavour has one.
func (s *Server) openAIRoutes() {
	m := s.mux
	m.HandleFunc("GET /v1/models", s.ready(s.handleModels))
	m.HandleFunc("POST /v1/completions", s.gen(epCompletions))
	m.HandleFunc("POST /v1/chat/completions", s.gen(epChat))
	m.HandleFunc("POST /v1/embeddings", s.ready(s.handleEmbeddings))
	m.HandleFunc("POST /v1/audio/transcriptions", s.ready(s.handleTranscriptions))
	s.apiRoutes()
	if s.cfg.Metrics != MetricsNone {
		m.HandleFunc("GET /metrics", s.handleMetrics)
	}
}

// gen is the generation handler of endpoint, behind the load wait.
func (s *Server) gen(endpoint string) http.HandlerFunc {
	return s.ready(func(w http.ResponseWriter, r *http.Request) { s.handleGenerate(w, r, endpoint) })
}
