package sim

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// personaSim serves a personality in fast fixed mode with /debug on.
func personaSim(t testing.TB, name string, mod ...func(*Config)) (*Server, string) {
	t.Helper()
	cfg := DefaultConfigFor(name)
	cfg.TTFT = 2 * time.Millisecond
	cfg.ITL = time.Millisecond
	cfg.Debug = true
	for _, m := range mod {
		m(&cfg)
	}
	return startSim(t, cfg)
}

// vocabWords is n vocabulary words: n tokens under every tokenizer (plus
// BOS and Ollama's first-word extra where they apply).
func vocabWords(n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = Word(i * 13)
	}
	return strings.Join(ws, " ")
}

func decodeJSON(t testing.TB, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("bad JSON %q: %v", b, err)
	}
}

type usageJSON struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

func completionUsage(t testing.TB, c *http.Client, url string, body map[string]any) (int, usageJSON, []byte) {
	t.Helper()
	resp, data := postJSON(t, c, url+"/v1/completions", body)
	var got struct {
		Usage usageJSON `json:"usage"`
	}
	if resp.StatusCode == 200 {
		decodeJSON(t, data, &got)
	}
	return resp.StatusCode, got.Usage, data
}

func TestCountPromptTokensRule(t *testing.T) {
	tests := []struct {
		persona, text string
		special       bool
		want          int
	}{
		{PersonaGeneric, "the between something", true, 3}, // one per word, never a BOS
		{PersonaVLLM, "the", false, 1},
		{PersonaVLLM, "of and time", false, 3},
		{PersonaVLLM, "between", false, 2},
		{PersonaVLLM, "something", false, 3},
		{PersonaVLLM, "something", true, 4},
		{PersonaSGLang, "bado kemi", false, 2},                        // vocabulary words: 1 each
		{PersonaLlamaServer, "badokemi", false, 2},                    // not a vocabulary word: 8 bytes
		{PersonaLlamaServer, "  w1234\tw5  ", false, 3},               // 5 bytes, 2 bytes
		{PersonaOllama, "time of", false, 1 + 1 + 1},                  // "time" even: +1
		{PersonaOllama, "the of", false, 1 + 2 + 1},                   // "the" odd: +2
		{PersonaOllama, "bado " + Word(7) + " kemi", true, 1 + 3 + 1}, // BOS, 3 words, +1
		{PersonaVLLM, "", true, 1},
	}
	for _, tt := range tests {
		if got := CountPromptTokens(tt.persona, tt.text, tt.special); got != tt.want {
			t.Errorf("CountPromptTokens(%s, %q, %v) = %d, want %d", tt.persona, tt.text, tt.special, got, tt.want)
		}
		if subword(tt.persona) {
			if ids := TokenizeAs(tt.persona, tt.text, tt.special); len(ids) != tt.want {
				t.Errorf("TokenizeAs(%s, %q) has %d ids, want %d", tt.persona, tt.text, len(ids), tt.want)
			}
		}
	}
	if CompletionPromptTokens(PersonaVLLM, "the") != 2 || CompletionPromptTokens(PersonaGeneric, "the") != 1 {
		t.Error("CompletionPromptTokens: BOS for subword personalities only")
	}
	msgs := []ChatMessage{{Role: "user", Content: "hello there"}}
	// "<|user|>" 8 bytes = 2, hello 2, there 2, "<|end|>" 2, "<|assistant|>" 4, BOS 1.
	if got := ChatPromptTokens(PersonaLlamaServer, msgs); got != 13 {
		t.Errorf("ChatPromptTokens = %d, want 13", got)
	}
	if RenderChat(PersonaLlamaServer, msgs) != "<|user|> hello there <|end|> <|assistant|>" {
		t.Errorf("RenderChat = %q", RenderChat(PersonaLlamaServer, msgs))
	}
	defer func() {
		if recover() == nil {
			t.Error("an unknown personality must panic")
		}
	}()
	CountPromptTokens("tgi", "x", false)
}

func TestSubwordRoundTrip(t *testing.T) {
	text := "The quick brown fox, jumps over 1234567 lazy-dogs! " + vocabWords(5) + " x {\"json\":[1,2]}"
	ids := TokenizeAs(PersonaVLLM, text, false)
	if got := DetokenizeAs(PersonaVLLM, ids); got != text {
		t.Fatalf("round trip:\n got %q\nwant %q", got, text)
	}
	// Any prefix of the ids detokenizes to text of exactly that many tokens:
	// the tokenize -> truncate -> detokenize recipe for exact lengths.
	for n := 0; n <= len(ids); n++ {
		if got := CountPromptTokens(PersonaVLLM, DetokenizeAs(PersonaVLLM, ids[:n]), false); got != n {
			t.Fatalf("prefix of %d ids retokenizes to %d", n, got)
		}
	}
	// Non-ASCII pieces get hashed ids and keep their count.
	uni := "naïve café"
	if n := CountPromptTokens(PersonaSGLang, DetokenizeAs(PersonaSGLang, TokenizeAs(PersonaSGLang, uni, false)), false); n != CountPromptTokens(PersonaSGLang, uni, false) {
		t.Fatalf("non-ASCII count changed: %d", n)
	}
	if DetokenizeAs(PersonaLlamaServer, []int{BOSToken, 0}) != "<s> "+Word(0) {
		t.Fatal("BOS renders as <s>")
	}
}

func TestPersonaTokenize(t *testing.T) {
	c := testClient()
	text := "the between " + Word(3)
	vllmURL := func() string { _, u := personaSim(t, PersonaVLLM); return u }()
	llamaURL := func() string { _, u := personaSim(t, PersonaLlamaServer); return u }()
	sglURL := func() string { _, u := personaSim(t, PersonaSGLang); return u }()
	msgs := []map[string]string{{"role": "user", "content": "hello there"}}
	tests := []struct {
		name, url string
		body      any
		want      string // exact body, or a prefix ending in "..."
	}{
		{"vllm prompt", vllmURL, map[string]any{"model": "sim-llama", "prompt": text},
			`{"count":5,"max_model_len":8192,"tokens":[4096,` + itoa(pieceID("the", false)) + `,` + itoa(pieceID("betw", false)) + `,` + itoa(pieceID("een", true)) + `,3],"token_strs":null}`},
		{"vllm no special", vllmURL, map[string]any{"prompt": text, "add_special_tokens": false}, `{"count":4,...`},
		{"vllm messages", vllmURL, map[string]any{"messages": msgs}, `{"count":13,...`},
		{"vllm messages no generation prompt", vllmURL, map[string]any{"messages": msgs, "add_generation_prompt": false}, `{"count":9,...`},
		{"vllm token strs", vllmURL, map[string]any{"prompt": "between", "return_token_strs": true}, `{"count":3,"max_model_len":8192,"tokens":[4096,` + itoa(pieceID("betw", false)) + `,` + itoa(pieceID("een", true)) + `],"token_strs":["<s>","▁betw","een"]}`},
		{"llama content", llamaURL, map[string]any{"content": text}, `{"tokens":[` + itoa(pieceID("the", false)) + `,` + itoa(pieceID("betw", false)) + `,` + itoa(pieceID("een", true)) + `,3]}`},
		{"llama add_special", llamaURL, map[string]any{"content": "the", "add_special": true}, `{"tokens":[4096,` + itoa(pieceID("the", false)) + `]}`},
		{"llama with_pieces", llamaURL, map[string]any{"content": "between " + Word(0), "with_pieces": true},
			`{"tokens":[{"id":` + itoa(pieceID("betw", false)) + `,"piece":" betw"},{"id":` + itoa(pieceID("een", true)) + `,"piece":"een"},{"id":0,"piece":" ` + Word(0) + `"}]}`},
		{"llama mixed", llamaURL, map[string]any{"content": []any{"the", 5}}, `{"tokens":[` + itoa(pieceID("the", false)) + `,5]}`},
		// The trap: vLLM's dialect gets an empty token list and a 200.
		{"llama vllm dialect", llamaURL, map[string]any{"model": "sim-llama", "prompt": text}, `{"tokens":[]}`},
		{"llama messages", llamaURL, map[string]any{"messages": msgs}, `{"tokens":[]}`},
		{"sglang prompt", sglURL, map[string]any{"model": "sim-llama", "prompt": text}, `{"tokens":[4096,...`},
		{"sglang count", sglURL, map[string]any{"prompt": text, "add_special_tokens": false}, `{"tokens":[` + itoa(pieceID("the", false)) + `,` + itoa(pieceID("betw", false)) + `,` + itoa(pieceID("een", true)) + `,3],"count":4,"max_model_len":8192}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := postJSON(t, c, tt.url+"/tokenize", tt.body)
			got := strings.TrimSuffix(string(body), "\n")
			ok := got == tt.want
			if p, cut := strings.CutSuffix(tt.want, "..."); cut {
				ok = strings.HasPrefix(got, p)
			}
			if resp.StatusCode != 200 || !ok {
				t.Fatalf("%d %s\nwant %s", resp.StatusCode, got, tt.want)
			}
		})
	}
	// Ollama has no /tokenize: Go's mux 404.
	_, ollamaURL := personaSim(t, PersonaOllama)
	resp, body := postJSON(t, c, ollamaURL+"/tokenize", map[string]any{"prompt": "x"})
	if resp.StatusCode != 404 || string(body) != "404 page not found\n" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("ollama /tokenize: %d %q %s", resp.StatusCode, body, resp.Header.Get("Content-Type"))
	}
}

func TestPersonaDetokenize(t *testing.T) {
	c := testClient()
	text := "Once upon a time, in 1999: " + vocabWords(4)
	for _, tt := range []struct{ persona, field string }{{PersonaVLLM, "prompt"}, {PersonaLlamaServer, "content"}} {
		_, url := personaSim(t, tt.persona)
		ids := TokenizeAs(tt.persona, text, false)
		_, body := postJSON(t, c, url+"/detokenize", map[string]any{"model": "sim-llama", "tokens": ids})
		var got map[string]string
		decodeJSON(t, body, &got)
		if got[tt.field] != text {
			t.Fatalf("%s detokenize: %s", tt.persona, body)
		}
		// An exact-length prompt: tokenize, keep 7 ids, detokenize, send.
		_, body = postJSON(t, c, url+"/detokenize", map[string]any{"tokens": ids[:7]})
		decodeJSON(t, body, &got)
		code, u, data := completionUsage(t, c, url, map[string]any{"prompt": got[tt.field], "max_tokens": 1})
		if code != 200 || u.PromptTokens != 7+1 { // + BOS
			t.Fatalf("%s exact-length prompt: %d %s", tt.persona, code, data)
		}
	}
}

func TestPersonaPromptTokens(t *testing.T) {
	c := testClient()
	text := "the between something w1234 " + vocabWords(3)
	msgs := []map[string]string{{"role": "system", "content": "be brief"}, {"role": "user", "content": text}}
	cmsgs := []ChatMessage{{Role: "system", Content: "be brief"}, {Role: "user", Content: text}}
	for _, p := range Personalities() {
		t.Run(p, func(t *testing.T) {
			s, url := personaSim(t, p)
			code, u, data := completionUsage(t, c, url, map[string]any{"prompt": text, "max_tokens": 2})
			if code != 200 || u.PromptTokens != CompletionPromptTokens(p, text) {
				t.Fatalf("completions: %d %s, want prompt_tokens %d", code, data, CompletionPromptTokens(p, text))
			}
			resp, data := postJSON(t, c, url+"/v1/chat/completions", map[string]any{"messages": msgs, "max_tokens": 2})
			var chat struct{ Usage usageJSON }
			decodeJSON(t, data, &chat)
			if resp.StatusCode != 200 || chat.Usage.PromptTokens != ChatPromptTokens(p, cmsgs) {
				t.Fatalf("chat: %d %s, want prompt_tokens %d", resp.StatusCode, data, ChatPromptTokens(p, cmsgs))
			}
			if rec := s.Records()[1]; rec.PromptTokens != chat.Usage.PromptTokens || rec.CompletionTokens != 2 {
				t.Fatalf("record %+v", rec)
			}
			// Each engine's own way to count a chat prompt agrees with usage.
			switch p {
			case PersonaVLLM:
				_, data = postJSON(t, c, url+"/tokenize", map[string]any{"messages": msgs})
				var tok struct{ Count int }
				decodeJSON(t, data, &tok)
				if tok.Count != chat.Usage.PromptTokens {
					t.Fatalf("vllm /tokenize messages %d vs chat %d", tok.Count, chat.Usage.PromptTokens)
				}
			case PersonaLlamaServer:
				_, data = postJSON(t, c, url+"/apply-template", map[string]any{"messages": msgs})
				var tmpl struct{ Prompt string }
				decodeJSON(t, data, &tmpl)
				_, data = postJSON(t, c, url+"/tokenize", map[string]any{"content": tmpl.Prompt, "add_special": true})
				var tok struct{ Tokens []int }
				decodeJSON(t, data, &tok)
				if len(tok.Tokens) != chat.Usage.PromptTokens || tmpl.Prompt != RenderChat(p, cmsgs) {
					t.Fatalf("apply-template + tokenize %d vs chat %d (%q)", len(tok.Tokens), chat.Usage.PromptTokens, tmpl.Prompt)
				}
			}
		})
	}
	// Ollama's quirk: a word-count calibration is off by BOS and 1-2 more.
	_, url := personaSim(t, PersonaOllama)
	for _, tt := range []struct {
		prompt string
		want   int
	}{{vocabWords(10), 10 + 1 + 1}, {"abc " + vocabWords(9), 10 + 1 + 2}} {
		if _, u, data := completionUsage(t, c, url, map[string]any{"prompt": tt.prompt, "max_tokens": 1}); u.PromptTokens != tt.want {
			t.Fatalf("ollama %q: %s, want %d", tt.prompt, data, tt.want)
		}
	}
}

func TestPersonaContextReporting(t *testing.T) {
	c := testClient()
	set := func(cfg *Config) { cfg.MaxModelLen = 4096; cfg.Slots = 3 }
	t.Run("vllm", func(t *testing.T) {
		_, url := personaSim(t, PersonaVLLM, set)
		_, body := getBody(t, c, url+"/v1/models")
		if !strings.Contains(body, `"max_model_len":4096`) || !strings.Contains(body, `"owned_by":"vllm"`) {
			t.Fatalf("models: %s", body)
		}
	})
	t.Run("llama-server", func(t *testing.T) {
		_, url := personaSim(t, PersonaLlamaServer, set)
		_, body := getBody(t, c, url+"/v1/models")
		var models struct {
			Object string
			Data   []map[string]json.RawMessage
		}
		decodeJSON(t, []byte(body), &models)
		var meta map[string]int
		decodeJSON(t, models.Data[0]["meta"], &meta)
		if _, has := models.Data[0]["max_model_len"]; has || models.Object != "list" || meta["n_ctx"] != 4096 || meta["n_ctx_train"] != 8192 || meta["vocab_type"] != 1 || meta["n_vocab"] != VocabSize {
			t.Fatalf("models: %s", body)
		}
		_, body = getBody(t, c, url+"/props")
		var props struct {
			DefaultGenerationSettings struct {
				NCtx   int            `json:"n_ctx"`
				Params map[string]any `json:"params"`
			} `json:"default_generation_settings"`
			TotalSlots   int    `json:"total_slots"`
			ModelPath    string `json:"model_path"`
			ChatTemplate string `json:"chat_template"`
			BuildInfo    string `json:"build_info"`
		}
		decodeJSON(t, []byte(body), &props)
		if props.DefaultGenerationSettings.NCtx != 4096 || props.TotalSlots != 3 || props.BuildInfo != "b6500-sim" ||
			props.ChatTemplate == "" || props.ModelPath == "" || props.DefaultGenerationSettings.Params["cache_prompt"] != true {
			t.Fatalf("props: %s", body)
		}
		_, body = getBody(t, c, url+"/slots")
		var slots []struct {
			ID           int  `json:"id"`
			NCtx         int  `json:"n_ctx"`
			IsProcessing bool `json:"is_processing"`
		}
		decodeJSON(t, []byte(body), &slots)
		if len(slots) != 3 || slots[2].ID != 2 || slots[0].NCtx != 4096 || slots[0].IsProcessing {
			t.Fatalf("slots: %s", body)
		}
	})
	t.Run("sglang", func(t *testing.T) {
		_, url := personaSim(t, PersonaSGLang, set)
		_, body := getBody(t, c, url+"/get_server_info")
		var info map[string]any
		decodeJSON(t, []byte(body), &info)
		if info["context_length"] != 4096.0 || info["version"] != "0.5.2" {
			t.Fatalf("server info: %s", body)
		}
		_, body = getBody(t, c, url+"/get_model_info")
		if body != `{"has_chat_template":true,"is_generation":true,"model_path":"sim-llama","preferred_sampling_params":null,"tokenizer_path":"sim-llama","weight_version":"default"}`+"\n" {
			t.Fatalf("model info: %s", body)
		}
		if _, body = getBody(t, c, url+"/v1/models"); !strings.Contains(body, `"max_model_len":4096`) {
			t.Fatalf("models: %s", body)
		}
	})
	t.Run("ollama", func(t *testing.T) {
		_, url := personaSim(t, PersonaOllama, set, func(cfg *Config) { cfg.TrainContextLen = 131072 })
		for _, body := range []map[string]string{{"model": "sim-llama"}, {"name": "sim-llama:latest"}} {
			resp, data := postJSON(t, c, url+"/api/show", body)
			var show struct {
				Parameters string         `json:"parameters"`
				Modelfile  string         `json:"modelfile"`
				Template   string         `json:"template"`
				Details    map[string]any `json:"details"`
				ModelInfo  map[string]any `json:"model_info"`
			}
			decodeJSON(t, data, &show)
			f := strings.Fields(show.Parameters)
			if resp.StatusCode != 200 || len(f) < 2 || f[0] != "num_ctx" || f[1] != "4096" || show.ModelInfo["llama.context_length"] != 131072.0 ||
				show.ModelInfo["general.architecture"] != "llama" || show.Details["format"] != "gguf" || show.Details["family"] != "llama" ||
				!strings.Contains(show.Modelfile, "PARAMETER num_ctx 4096") || show.Template == "" {
				t.Fatalf("show %v: %d %s", body, resp.StatusCode, data)
			}
			if !strings.HasPrefix(show.Parameters, "num_ctx                        4096") { // Ollama's %-30s
				t.Fatalf("parameters %q", show.Parameters)
			}
		}
		resp, data := postJSON(t, c, url+"/api/show", map[string]string{"model": "llama9"})
		if resp.StatusCode != 404 || string(data) != `{"error":"model 'llama9' not found"}`+"\n" {
			t.Fatalf("unknown model: %d %s", resp.StatusCode, data)
		}
		_, body := getBody(t, c, url+"/api/tags")
		var tags struct {
			Models []struct{ Name, Model string }
		}
		decodeJSON(t, []byte(body), &tags)
		if len(tags.Models) != 1 || tags.Models[0].Name != "sim-llama:latest" || tags.Models[0].Model != "sim-llama:latest" {
			t.Fatalf("tags: %s", body)
		}
		if _, body = getBody(t, c, url+"/v1/models"); !strings.Contains(body, `"id":"sim-llama:latest"`) {
			t.Fatalf("models: %s", body)
		}
		// The tag works as a model name; an unknown one is Ollama's 404.
		if code, _, data := completionUsage(t, c, url, map[string]any{"model": "sim-llama:latest", "prompt": "x", "max_tokens": 1}); code != 200 {
			t.Fatalf("model by tag: %d %s", code, data)
		}
		resp, data = postJSON(t, c, url+"/v1/completions", map[string]any{"model": "nope", "prompt": "x"})
		if resp.StatusCode != 404 || string(data) != `{"error":{"code":null,"message":"model \"nope\" not found, try pulling it first","param":null,"type":"not_found_error"}}`+"\n" {
			t.Fatalf("unknown model: %d %s", resp.StatusCode, data)
		}
	})
}

func TestPersonaOverContext(t *testing.T) {
	c := testClient()
	small := func(cfg *Config) { cfg.MaxModelLen = 64 }
	tests := []struct {
		persona   string
		words     int // vocabulary words: +1 token for BOS
		maxTokens int
		status    int
		want      string
	}{
		{PersonaVLLM, 50, 20, 400, `{"object":"error","message":"This model's maximum context length is 64 tokens. However, you requested 71 tokens (51 in the messages, 20 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}`},
		{PersonaVLLM, 50, 13, 200, ""},
		{PersonaLlamaServer, 63, 1, 400, `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","n_ctx":64,"n_prompt_tokens":64,"type":"exceed_context_size_error"}}`},
		{PersonaSGLang, 63, 1, 400, `{"object":"error","message":"The input (64 tokens) is longer than the model's context length (64 tokens).","type":"BadRequestError","param":null,"code":400}`},
		{PersonaSGLang, 50, 13, 400, `{"object":"error","message":"Requested token count exceeds the model's maximum context length of 64 tokens. You requested a total of 64 tokens: 51 tokens from the input messages and 13 tokens for the completion. Please reduce the number of tokens in the input messages or the completion to fit within the limit.","type":"BadRequestError","param":null,"code":400}`},
		{PersonaSGLang, 50, 12, 200, ""},
		{PersonaGeneric, 60, 5, 400, `{"error":{"message":"This model's maximum context length is 64 tokens. However, you requested 65 tokens (60 in the messages, 5 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}}`},
	}
	for _, tt := range tests {
		_, url := personaSim(t, tt.persona, small)
		resp, data := postJSON(t, c, url+"/v1/completions", map[string]any{"prompt": vocabWords(tt.words), "max_tokens": tt.maxTokens})
		if resp.StatusCode != tt.status || (tt.want != "" && string(data) != tt.want+"\n") {
			t.Errorf("%s %d words + %d: %d %s\nwant %d %s", tt.persona, tt.words, tt.maxTokens, resp.StatusCode, data, tt.status, tt.want)
		}
	}
	// llama-server generates until its context is full.
	_, url := personaSim(t, PersonaLlamaServer, small)
	resp, data := postJSON(t, c, url+"/v1/completions", map[string]any{"prompt": vocabWords(49), "max_tokens": 100, "ignore_eos": true})
	var got struct {
		Choices []struct {
			FinishReason string `json:"finish_reason"`
		}
		Usage usageJSON
	}
	decodeJSON(t, data, &got)
	if resp.StatusCode != 200 || got.Usage.PromptTokens != 50 || got.Usage.CompletionTokens != 14 || got.Choices[0].FinishReason != "length" {
		t.Fatalf("llama-server past the context: %d %s", resp.StatusCode, data)
	}
	// Ollama truncates silently to num_ctx.
	s, url := personaSim(t, PersonaOllama, small)
	code, u, data := completionUsage(t, c, url, map[string]any{"prompt": vocabWords(100), "max_tokens": 10})
	if code != 200 || u.PromptTokens != 64 || u.CompletionTokens != 10 {
		t.Fatalf("ollama truncation: %d %s", code, data)
	}
	if rec := s.Records()[0]; rec.PromptTokens != 64 {
		t.Fatalf("record %+v", rec)
	}
	// vLLM chat without max_tokens and a prompt that fills the context.
	_, url = personaSim(t, PersonaVLLM, small)
	resp, data = postJSON(t, c, url+"/v1/chat/completions", map[string]any{"messages": []map[string]string{{"role": "user", "content": vocabWords(60)}}})
	if resp.StatusCode != 400 || !strings.Contains(string(data), "However, you requested 69 tokens in the messages, Please reduce the length of the messages.") {
		t.Fatalf("vllm chat: %d %s", resp.StatusCode, data)
	}
}

func TestPersonaVersion(t *testing.T) {
	c := testClient()
	tests := []struct {
		persona, path string
		status        int
		want          string
	}{
		{PersonaGeneric, "/version", 200, `{"version":"benchrun-sim"}`},
		{PersonaVLLM, "/version", 200, `{"version":"0.11.0"}`},
		{PersonaSGLang, "/version", 200, `{"version":"0.5.2"}`},
		{PersonaLlamaServer, "/version", 404, `{"error":{"code":404,"message":"File Not Found","type":"not_found_error"}}`},
		{PersonaOllama, "/api/version", 200, `{"version":"0.17.4"}`},
		{PersonaOllama, "/version", 404, "404 page not found"},
		{PersonaVLLM, "/nothing", 404, `{"detail":"Not Found"}`},
	}
	for _, tt := range tests {
		_, url := personaSim(t, tt.persona)
		if code, body := getBody(t, c, url+tt.path); code != tt.status || strings.TrimSpace(body) != tt.want {
			t.Errorf("%s %s: %d %s, want %d %s", tt.persona, tt.path, code, body, tt.status, tt.want)
		}
	}
	_, url := personaSim(t, PersonaVLLM, func(cfg *Config) { cfg.Version = "0.9.2" })
	if _, body := getBody(t, c, url+"/version"); strings.TrimSpace(body) != `{"version":"0.9.2"}` {
		t.Errorf("explicit version: %s", body)
	}
	_, url = personaSim(t, PersonaLlamaServer, func(cfg *Config) { cfg.Version = "b7000-abc" })
	if _, body := getBody(t, c, url+"/props"); !strings.Contains(body, `"build_info":"b7000-abc"`) {
		t.Errorf("build_info: %s", body)
	}
}

func TestPersonaHealth(t *testing.T) {
	c := testClient()
	loading := func(cfg *Config) { cfg.LoadTime = 300 * time.Millisecond }
	t.Run("llama-server loading", func(t *testing.T) {
		_, url := personaSim(t, PersonaLlamaServer, loading)
		want := `{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}`
		if code, body := getBody(t, c, url+"/health"); code != 503 || strings.TrimSpace(body) != want {
			t.Fatalf("health: %d %s", code, body)
		}
		if resp, body := postJSON(t, c, url+"/v1/completions", map[string]any{"prompt": "a"}); resp.StatusCode != 503 || strings.TrimSpace(string(body)) != want {
			t.Fatalf("completions: %d %s", resp.StatusCode, body)
		}
		eventually(t, 3*time.Second, "health 200", func() bool {
			code, body := getBody(t, c, url+"/health")
			return code == 200 && strings.TrimSpace(body) == `{"status":"ok"}`
		})
	})
	t.Run("vllm", func(t *testing.T) {
		_, url := personaSim(t, PersonaVLLM)
		if code, body := getBody(t, c, url+"/health"); code != 200 || body != "" {
			t.Fatalf("health: %d %q", code, body)
		}
	})
	t.Run("ollama", func(t *testing.T) {
		cfgTTFT := 5 * time.Millisecond
		s, url := personaSim(t, PersonaOllama, loading, func(cfg *Config) { cfg.TTFT = cfgTTFT })
		if code, body := getBody(t, c, url+"/"); code != 200 || body != "Ollama is running" {
			t.Fatalf("/: %d %q", code, body)
		}
		if code, body := getBody(t, c, url+"/health"); code != 404 || body != "404 page not found\n" {
			t.Fatalf("/health: %d %q", code, body)
		}
		if code, _ := getBody(t, c, url+"/metrics"); code != 404 {
			t.Fatalf("/metrics: %d", code)
		}
		if code, _ := getBody(t, c, url+"/v1/models"); code != 200 {
			t.Fatalf("/v1/models while loading: %d", code)
		}
		// Ollama loads on the first request: its TTFT holds the load.
		time.Sleep(50 * time.Millisecond) // loading is lazy: time before the request does not count
		if code, _, data := completionUsage(t, c, url, map[string]any{"prompt": "a", "max_tokens": 1}); code != 200 {
			t.Fatalf("first request: %d %s", code, data)
		}
		rec := s.Records()[0]
		if ttft := rec.Events[0].Time.Sub(rec.Received); ttft < 300*time.Millisecond {
			t.Fatalf("first request's TTFT %v does not include the load", ttft)
		}
		completionUsage(t, c, url, map[string]any{"prompt": "b", "max_tokens": 1})
		rec = s.Records()[1]
		if ttft := rec.Events[0].Time.Sub(rec.Received); ttft > 200*time.Millisecond {
			t.Fatalf("second request's TTFT %v", ttft)
		}
	})
}

func TestPersonaMetrics(t *testing.T) {
	c := testClient()
	tests := []struct {
		persona string
		want    []string
		not     string
	}{
		{PersonaVLLM, []string{`vllm:num_requests_running{model_name="sim-llama"} 0`, `vllm:prompt_tokens_total{model_name="sim-llama"} 5`}, "llamacpp:"},
		{PersonaLlamaServer, []string{"llamacpp:prompt_tokens_total 5", "llamacpp:tokens_predicted_total 3", "llamacpp:requests_processing 0"}, "vllm:"},
		{PersonaSGLang, []string{
			`sglang:num_running_reqs{model_name="sim-llama"} 0`, `sglang:num_queue_reqs{model_name="sim-llama"} 0`,
			`sglang:token_usage{model_name="sim-llama"} 0`, `sglang:cache_hit_rate{model_name="sim-llama"} 0`,
			`sglang:prompt_tokens_total{model_name="sim-llama"} 5`, `sglang:generation_tokens_total{model_name="sim-llama"} 3`,
			`sglang:num_retracted_reqs{model_name="sim-llama"} 0`, `sglang:time_to_first_token_seconds_count{model_name="sim-llama"} 1`,
		}, "vllm:"},
	}
	for _, tt := range tests {
		_, url := personaSim(t, tt.persona)
		completionUsage(t, c, url, map[string]any{"prompt": vocabWords(4), "max_tokens": 3, "ignore_eos": true})
		code, body := getBody(t, c, url+"/metrics")
		if code != 200 || strings.Contains(body, tt.not) {
			t.Errorf("%s: %d, has %q", tt.persona, code, tt.not)
		}
		for _, w := range tt.want {
			if !strings.Contains(body, w+"\n") {
				t.Errorf("%s metrics lack %q", tt.persona, w)
			}
		}
	}
	// An explicit Metrics wins over the personality's.
	_, url := personaSim(t, PersonaLlamaServer, func(cfg *Config) { cfg.Metrics = MetricsBoth })
	if _, body := getBody(t, c, url+"/metrics"); !strings.Contains(body, "vllm:") || !strings.Contains(body, "llamacpp:") {
		t.Error("Metrics both under llama-server")
	}
}

// readToEnd reads a whole response and reports how its body ended: nil for
// a clean end (the chunked terminator), an error for a cut connection.
func readToEnd(c *http.Client, url string, body any, hdr ...string) (status int, data string, err error) {
	req, err := newReq(url, strings.NewReader(mustJSON(body)))
	if err != nil {
		return 0, "", err
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestCleanCut(t *testing.T) {
	c := testClient()
	body := streamBody(20)
	tests := []struct {
		persona, fault string
		cut            bool // a clean end; else an aborted connection
		events         int
	}{
		{PersonaOllama, "drop-after=3", true, 3}, // Ollama's runner dies: a clean 200
		{PersonaOllama, "cut-after=3", true, 3},
		{PersonaVLLM, "cut-after=3", true, 3},
		{PersonaGeneric, "cut-after=2", true, 2},
		{PersonaLlamaServer, "cut-after=2", true, 2}, // on the hijacked connection
		{PersonaVLLM, "drop-after=3", false, 3},
		{PersonaLlamaServer, "drop-after=3", false, 3},
		{PersonaOllama, "cut-after=0", true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.persona+" "+tt.fault, func(t *testing.T) {
			s, url := personaSim(t, tt.persona)
			status, data, err := readToEnd(c, url+"/v1/completions", body, FaultHeader, tt.fault)
			if status != 200 || (err == nil) != tt.cut {
				t.Fatalf("status %d err %v, want clean end %v", status, err, tt.cut)
			}
			events := strings.Count(data, "data: {")
			if events != tt.events || strings.Contains(data, "[DONE]") || strings.Contains(data, `"usage"`) || strings.Contains(data, `"finish_reason":"`) {
				t.Fatalf("%d events, want %d, and no [DONE], usage or finish_reason:\n%s", events, tt.events, data)
			}
			rec := s.Records()[0]
			if rec.FinishReason != "abort" || rec.Status != 200 || len(rec.Events) != tt.events {
				t.Fatalf("record %+v", rec)
			}
			if tt.cut && !strings.Contains(rec.Fault, "cut-after=") {
				t.Fatalf("record fault %q", rec.Fault)
			}
		})
	}
	// Non-streamed: a 200 with the text so far, no finish_reason, no usage.
	s, url := personaSim(t, PersonaOllama)
	resp, data := postJSON(t, c, url+"/v1/completions", map[string]any{"prompt": "a", "max_tokens": 10, "ignore_eos": true}, FaultHeader, "drop-after=4")
	var got struct {
		Choices []struct {
			Text         string  `json:"text"`
			FinishReason *string `json:"finish_reason"`
		}
		Usage *usageJSON
	}
	decodeJSON(t, data, &got)
	if resp.StatusCode != 200 || got.Usage != nil || got.Choices[0].FinishReason != nil || CountTokens(got.Choices[0].Text) != 4 {
		t.Fatalf("non-streamed cut: %d %s", resp.StatusCode, data)
	}
	if rec := s.Records()[0]; rec.FinishReason != "abort" || rec.CompletionTokens != 4 {
		t.Fatalf("record %+v", rec)
	}
	// At a rate: every stream is cut.
	_, url = personaSim(t, PersonaVLLM, func(cfg *Config) { cfg.Faults.CutRate = 1; cfg.Faults.CutAfter = 2 })
	if status, data, err := readToEnd(c, url+"/v1/completions", body); status != 200 || err != nil || strings.Count(data, "data: {") != 2 || strings.Contains(data, "[DONE]") {
		t.Fatalf("cut-rate: %d %v %s", status, err, data)
	}
}

func TestPromptCacheTTFT(t *testing.T) {
	// No keep-alive: llama-server closes the connection after each stream.
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	const ttft = 40 * time.Millisecond
	slow := func(cfg *Config) { cfg.TTFT = ttft }
	// The delay the simulator planned for the first token: what the cache
	// changes. It may write later on a busy machine, never earlier.
	serverTTFT := func(s *Server, id string) time.Duration {
		rec, ok := s.Record(id)
		if !ok || len(rec.Events) == 0 {
			t.Fatalf("no record %s", id)
		}
		if got := rec.Events[0].Time.Sub(rec.Received); got < rec.PlannedTTFT {
			t.Fatalf("%s: first token after %v, before the planned %v", id, got, rec.PlannedTTFT)
		}
		return rec.PlannedTTFT
	}
	prompt := vocabWords(100) // 101 tokens with BOS (102 for Ollama)
	other := "zzz " + vocabWords(99)
	for _, tt := range []struct {
		persona   string
		cached    int // on the second identical request
		details   bool
		llamaTime bool
	}{
		{PersonaLlamaServer, 100, false, true},
		{PersonaOllama, 101, false, false},
		{PersonaVLLM, 96, true, false}, // whole 16-token blocks within the first 100 tokens
		{PersonaSGLang, 100, true, false},
	} {
		t.Run(tt.persona, func(t *testing.T) {
			s, url := personaSim(t, tt.persona, slow)
			send := func(p string) (string, []chunk, string) {
				res := readStream(context.Background(), c, url+"/v1/completions", map[string]any{"prompt": p, "max_tokens": 3, "ignore_eos": true,
					"stream": true, "stream_options": map[string]any{"include_usage": true}})
				if res.err != nil || res.status != 200 {
					t.Fatalf("stream: %d %v %s", res.status, res.err, res.body)
				}
				return parseChunks(t, res.events)[0].ID, parseChunks(t, res.events), res.events[len(res.events)-1].data + res.events[len(res.events)-2].data
			}
			id1, _, _ := send(prompt)
			id2, _, tail := send(prompt)
			id3, _, _ := send(other)
			t1, t2, t3 := serverTTFT(s, id1), serverTTFT(s, id2), serverTTFT(s, id3)
			if t2 > t1/2 || t2 > 10*time.Millisecond {
				t.Fatalf("repeated prompt planned TTFT %v, first %v", t2, t1)
			}
			if t3 < ttft*8/10 {
				t.Fatalf("a different prompt got planned TTFT %v", t3)
			}
			r1, _ := s.Record(id1)
			r2, _ := s.Record(id2)
			if r1.CachedTokens > 1 || r2.CachedTokens != tt.cached {
				t.Fatalf("cached tokens %d then %d, want ~0 then %d", r1.CachedTokens, r2.CachedTokens, tt.cached)
			}
			if got := strings.Contains(tail, `"prompt_tokens_details":{"cached_tokens":`+itoa(tt.cached)+`}`); got != tt.details {
				t.Fatalf("usage details %v in %s", got, tail)
			}
			if got := strings.Contains(tail, `"timings":{"cache_n":`+itoa(tt.cached)+`,`); got != tt.llamaTime {
				t.Fatalf("timings.cache_n %v in %s", got, tail)
			}
		})
	}
	// Generic: no cache unless asked, and usage stays as it was.
	for _, on := range []bool{false, true} {
		s, url := startSim(t, func() Config { cfg := fastConfig(); cfg.TTFT = ttft; cfg.PromptCache = on; return cfg }())
		var ids []string
		var bodies []string
		for range 2 {
			_, _, data := completionUsage(t, c, url, map[string]any{"prompt": prompt, "max_tokens": 1})
			var r struct{ ID string }
			decodeJSON(t, data, &r)
			ids, bodies = append(ids, r.ID), append(bodies, string(data))
		}
		t2 := serverTTFT(s, ids[1])
		if cached := t2 < ttft/2; cached != on {
			t.Fatalf("generic prompt-cache=%v: second planned TTFT %v", on, t2)
		}
		if has := strings.Contains(bodies[1], "prompt_tokens_details"); has != on {
			t.Fatalf("generic prompt-cache=%v: %s", on, bodies[1])
		}
	}
	// SGLang's /flush_cache empties it.
	s, url := personaSim(t, PersonaSGLang, slow)
	completionUsage(t, c, url, map[string]any{"prompt": prompt, "max_tokens": 1})
	if resp, body := postJSON(t, c, url+"/flush_cache", map[string]any{}); resp.StatusCode != 200 || !strings.HasPrefix(string(body), "Cache flushed.") {
		t.Fatalf("flush_cache: %d %s", resp.StatusCode, body)
	}
	completionUsage(t, c, url, map[string]any{"prompt": prompt, "max_tokens": 1})
	if rec := s.Records()[1]; rec.CachedTokens != 0 {
		t.Fatalf("after flush: %d cached", rec.CachedTokens)
	}
}

func TestPromptCacheStyles(t *testing.T) {
	ids := func(n, from int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = from + i
		}
		return out
	}
	use := func(c *promptCache, ids []int) int {
		hit, _ := c.use(ids)
		return hit
	}
	// Ollama's runner: its slots alone.
	cfg := DefaultConfigFor(PersonaOllama)
	cfg.Slots = 2
	c := newPromptCache(cfg, PersonaOllama)
	a, b, d := ids(40, 0), ids(40, 1000), ids(40, 2000)
	if use(c, a) != 0 || use(c, b) != 0 || use(c, a) != 39 {
		t.Fatal("two slots keep two prompts")
	}
	use(c, d) // evicts b, the least recently used
	if use(c, a) != 39 || use(c, b) != 0 {
		t.Fatal("d should have evicted b, not a")
	}
	// llama-server: a prompt evicted from its slot is saved to host
	// memory and found again (server_prompt_cache), within the budget.
	lcfg := DefaultConfigFor(PersonaLlamaServer)
	lcfg.Slots, lcfg.Engine.KVCacheTokens = 2, 100
	lc := newPromptCache(lcfg, PersonaLlamaServer)
	use(lc, a)
	use(lc, b)
	use(lc, d) // b's slot... the least recently used, a's: saved
	if got := use(lc, a); got != 39 {
		t.Fatalf("a prompt evicted from its slot and saved to host memory: %d cached, want 39", got)
	}
	e, f, g := ids(40, 3000), ids(40, 4000), ids(40, 5000)
	for _, p := range [][]int{e, f, g, d, e} {
		use(lc, p)
	}
	if got := use(lc, b); got != 0 {
		t.Fatalf("b, saved first, beyond the host cache's 100 tokens since: %d cached", got)
	}
	// A prompt sharing more than half reuses the slot's prefix.
	ext := append(append([]int(nil), a...), ids(10, 9500)...)
	if got := use(c, ext); got != 40 {
		t.Fatalf("extension of a: %d cached", got)
	}
	rc := newPromptCache(DefaultConfigFor(PersonaSGLang), PersonaSGLang)
	use(rc, a)
	if got := use(rc, append(a[:20:20], ids(5, 9000)...)); got != 20 {
		t.Fatalf("radix: %d", got)
	}
	bc := newPromptCache(DefaultConfigFor(PersonaVLLM), PersonaVLLM)
	use(bc, a)
	if got := use(bc, append(a[:37:37], ids(5, 9000)...)); got != 32 {
		t.Fatalf("blocks: %d", got)
	}
	if got := use(bc, a[:32]); got != 16 { // the last token is always computed
		t.Fatalf("blocks, whole prompt cached: %d", got)
	}
	if cachedTTFT(40*time.Millisecond, 100, 50) != 20*time.Millisecond || cachedTTFT(40*time.Millisecond, 100, 99) != time.Millisecond ||
		cachedTTFT(500*time.Microsecond, 100, 99) != 500*time.Microsecond {
		t.Fatal("cachedTTFT formula")
	}
	if newPromptCache(DefaultConfig(), PersonaGeneric) != nil {
		t.Fatal("generic has no prompt cache by default")
	}
}

// TestPromptCacheKeepsAnswers: a finished request leaves its prompt and
// its output but the last token in every style's cache, so a
// conversation's next turn (prompt, answer, new text) finds its whole
// history cached: to the block in vLLM's style, to the token in the slot
// and radix styles.
func TestPromptCacheKeepsAnswers(t *testing.T) {
	ids := func(n, from int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = from + i
		}
		return out
	}
	prompt, answer, next := ids(40, 0), ids(20, 1000), ids(30, 2000)
	turn2 := append(append(append([]int(nil), prompt...), answer...), next...)
	for _, tc := range []struct {
		persona string
		want    int
	}{
		{PersonaVLLM, (40 + 20 - 1) / 16 * 16},
		{PersonaLlamaServer, 40 + 20 - 1},
		{PersonaOllama, 40 + 20 - 1},
		{PersonaSGLang, 40 + 20 - 1},
	} {
		c := newPromptCache(DefaultConfigFor(tc.persona), tc.persona)
		_, entry := c.use(prompt)
		c.keep(entry, prompt, answer)
		if got, _ := c.use(turn2); got != tc.want {
			t.Errorf("%s: turn 2 found %d tokens cached, want %d", tc.persona, got, tc.want)
		}
	}
}

func TestPersonaEngineMode(t *testing.T) {
	c := testClient()
	s, url := personaSim(t, PersonaLlamaServer, func(cfg *Config) { cfg.Mode = ModeEngine; cfg.CloseAfterStream = false })
	prompt := vocabWords(64)
	for range 2 {
		res := readStream(context.Background(), c, url+"/v1/completions", map[string]any{"prompt": prompt, "max_tokens": 4, "ignore_eos": true, "stream": true})
		// Up to one event per token: a handler that runs late (a loaded
		// machine) sends the tokens the engine made meanwhile in one event,
		// as a real server's detokenizer does (22 of 100 runs under two
		// busy loops had 3 events).
		if res.err != nil || len(res.events) < 1 || len(res.events) > 4 {
			t.Fatalf("engine stream: %v %d events for 4 tokens", res.err, len(res.events))
		}
		if last := res.events[len(res.events)-1].data; !strings.Contains(last, `"timings":{"cache_n":`) {
			t.Fatalf("final chunk: %s", last)
		}
	}
	if recs := s.Records(); recs[0].PromptTokens != 65 || recs[1].CachedTokens != 64 {
		t.Fatalf("records %+v / %+v", recs[0], recs[1])
	}
}

func TestPersonaConfig(t *testing.T) {
	for _, p := range Personalities() {
		cfg := DefaultConfigFor(p)
		if err := cfg.Validate(); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
	cfg := DefaultConfigFor(PersonaLlamaServer)
	if cfg.Metrics != MetricsLlamaCpp || !cfg.CloseAfterStream || !cfg.PromptCache {
		t.Fatalf("llama-server defaults: %+v", cfg)
	}
	if cfg := DefaultConfigFor(PersonaOllama); cfg.Metrics != MetricsNone || cfg.CloseAfterStream {
		t.Fatalf("ollama defaults: %+v", cfg)
	}
	if g := DefaultConfigFor(PersonaGeneric); g.PromptCache || g.CloseAfterStream || g.Metrics != MetricsVLLM {
		t.Fatalf("generic defaults: %+v", g)
	}
	bad := DefaultConfig()
	bad.Personality = "tgi"
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "llama-server") {
		t.Fatalf("unknown personality: %v", err)
	}
	if err := ApplyPersonality(&bad, "tgi"); err == nil {
		t.Fatal("ApplyPersonality(tgi)")
	}
	if DefaultVersion("") != "benchrun-sim" || DefaultVersion(PersonaSGLang) != "0.5.2" {
		t.Fatal("DefaultVersion")
	}
}

// TestConversationHitsCache: over HTTP, in fixed mode (each personality's
// cache style) and in engine mode, a second turn that sends the first
// turn's prompt and answer back finds all of it cached but the answer's
// last token (in whole blocks for the block styles); TTFT follows.
func TestConversationHitsCache(t *testing.T) {
	c := testClient()
	for _, tc := range []struct {
		name    string
		persona string
		engine  bool
		blocks  bool
	}{
		{"vllm fixed", PersonaVLLM, false, true},
		{"sglang fixed", PersonaSGLang, false, false},
		{"vllm engine", PersonaVLLM, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, url := personaSim(t, tc.persona, func(cfg *Config) {
				cfg.TTFT = 40 * time.Millisecond
				if tc.engine {
					cfg.Mode = ModeEngine
				}
			})
			turn1 := vocabWords(40)
			_, u1, data := completionUsage(t, c, url, map[string]any{"prompt": turn1, "max_tokens": 10, "ignore_eos": true})
			var r1 struct {
				Choices []struct{ Text string }
			}
			decodeJSON(t, data, &r1)
			turn2 := turn1 + r1.Choices[0].Text + "\n\n" + vocabWords(20)
			_, u2, _ := completionUsage(t, c, url, map[string]any{"prompt": turn2, "max_tokens": 10, "ignore_eos": true})
			history := u1.PromptTokens + u1.CompletionTokens
			want := history - 1
			if tc.blocks {
				want = want / 16 * 16
			}
			if u2.PromptTokensDetails == nil || u2.PromptTokensDetails.CachedTokens != want || u2.PromptTokens <= history {
				t.Fatalf("turn 2: %+v (details %+v), want %d of the %d history tokens cached", u2, u2.PromptTokensDetails, want, history)
			}
			recs := s.Records()
			if recs[1].CachedTokens != want {
				t.Fatalf("record: %d cached", recs[1].CachedTokens)
			}
			if !tc.engine {
				ttft := func(r RequestRecord) time.Duration { return r.Events[0].Time.Sub(r.Received) }
				// The cache discount is in the plan: the first token at
				// 40 ms × the uncached share of the prompt. Non-streamed,
				// the body comes with the last token, 9 ITL (1 ms) after
				// the first, never earlier (how much later a busy machine
				// makes it is not this test's to say).
				planned := time.Duration(float64(40*time.Millisecond) * float64(u2.PromptTokens-want) / float64(u2.PromptTokens))
				if d := recs[1].PlannedTTFT - planned; d < -time.Microsecond || d > time.Microsecond {
					t.Errorf("turn 2's first token planned at %v, want %v (%d of %d prompt tokens cached)", recs[1].PlannedTTFT, planned, want, u2.PromptTokens)
				}
				if wantTTFT := planned + 9*time.Millisecond; ttft(recs[1]) < wantTTFT {
					t.Errorf("turn 2 answered %v after it arrived, before its plan's %v", ttft(recs[1]), wantTTFT)
				}
			}
		})
	}
}
