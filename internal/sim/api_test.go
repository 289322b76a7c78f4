package sim

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

func fastConfig() Config {
	cfg := DefaultConfig()
	cfg.TTFT = 2 * time.Millisecond
	cfg.ITL = time.Millisecond
	cfg.Debug = true
	return cfg
}

func TestModels(t *testing.T) {
	cfg := fastConfig()
	cfg.Models = []string{"a", "b"}
	_, url := startSim(t, cfg)
	code, body := getBody(t, testClient(), url+"/v1/models")
	var got struct {
		Object string `json:"object"`
		Data   []struct {
			ID          string `json:"id"`
			Object      string `json:"object"`
			MaxModelLen int    `json:"max_model_len"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil || code != 200 {
		t.Fatalf("%d %s: %v", code, body, err)
	}
	if got.Object != "list" || len(got.Data) != 2 || got.Data[0].ID != "a" || got.Data[1].ID != "b" || got.Data[0].MaxModelLen != 8192 {
		t.Fatalf("models = %+v", got)
	}
}

func TestCompletionsStream(t *testing.T) {
	s, url := startSim(t, fastConfig())
	c := testClient()
	res := readStream(context.Background(), c, url+"/v1/completions", map[string]any{
		"model": "sim-llama", "prompt": words(7), "max_tokens": 5, "stream": true,
		"ignore_eos": true, "stream_options": map[string]any{"include_usage": true},
	})
	if res.err != nil || res.status != 200 || !res.done {
		t.Fatalf("stream: status %d done %v err %v", res.status, res.done, res.err)
	}
	chunks := parseChunks(t, res.events)
	if len(chunks) != 6 {
		t.Fatalf("%d chunks, want 5 content + 1 usage", len(chunks))
	}
	var text strings.Builder
	for i, ch := range chunks[:5] {
		if ch.ID != chunks[0].ID || !strings.HasPrefix(ch.ID, "cmpl-") || ch.Object != "text_completion" {
			t.Fatalf("chunk %d id/object = %q %q", i, ch.ID, ch.Object)
		}
		if CountTokens(ch.Choices[0].Text) != 1 {
			t.Fatalf("chunk %d text %q is not one token", i, ch.Choices[0].Text)
		}
		text.WriteString(ch.Choices[0].Text)
		fr := ch.Choices[0].FinishReason
		if (i < 4) != (fr == nil) || (i == 4 && *fr != "length") {
			t.Fatalf("chunk %d finish_reason %v", i, fr)
		}
	}
	u := chunks[5].Usage
	if len(chunks[5].Choices) != 0 || u == nil || u.PromptTokens != 7 || u.CompletionTokens != 5 || u.TotalTokens != 12 {
		t.Fatalf("usage chunk = %s", res.events[5].data)
	}
	if CountTokens(text.String()) != 5 {
		t.Fatalf("streamed text %q has %d tokens", text.String(), CountTokens(text.String()))
	}
	rec, ok := s.Record(chunks[0].ID)
	if !ok || rec.PromptTokens != 7 || rec.CompletionTokens != 5 || len(rec.Events) != 5 || rec.Status != 200 || rec.FinishReason != "length" {
		t.Fatalf("record = %+v", rec)
	}
	for i, e := range rec.Events {
		if e.Tokens != 1 || e.UnixNano != e.Time.UnixNano() || e.Time.Before(rec.Received) {
			t.Fatalf("event %d = %+v", i, e)
		}
	}
}

func TestChatStreamAndTokensPerChunk(t *testing.T) {
	cfg := fastConfig()
	cfg.TokensPerChunk = 3
	_, url := startSim(t, cfg)
	res := readStream(context.Background(), testClient(), url+"/v1/chat/completions", map[string]any{
		"messages":   []map[string]any{{"role": "user", "content": "one two three"}},
		"max_tokens": 7, "ignore_eos": true, "stream": true,
		"stream_options": map[string]any{"include_usage": true},
	})
	if res.err != nil || !res.done {
		t.Fatalf("stream: %v done=%v", res.err, res.done)
	}
	chunks := parseChunks(t, res.events)
	// role, then 3+3+1 tokens, then usage
	if len(chunks) != 5 {
		t.Fatalf("%d chunks: %v", len(chunks), res.events)
	}
	if r := chunks[0].Choices[0].Delta; r.Role == nil || *r.Role != "assistant" || r.Content != nil {
		t.Fatalf("first chunk must be role-only: %s", res.events[0].data)
	}
	for i, want := range []int{3, 3, 1} {
		ch := chunks[1+i]
		if ch.Object != "chat.completion.chunk" || !strings.HasPrefix(ch.ID, "chatcmpl-") {
			t.Fatalf("chunk %s", res.events[1+i].data)
		}
		if got := CountTokens(*ch.Choices[0].Delta.Content); got != want {
			t.Fatalf("chunk %d carries %d tokens, want %d", i, got, want)
		}
	}
	if u := chunks[4].Usage; u == nil || u.PromptTokens != 3+2+1 || u.CompletionTokens != 7 {
		t.Fatalf("usage: %s", res.events[4].data)
	}
}

func TestNonStreaming(t *testing.T) {
	_, url := startSim(t, fastConfig())
	c := testClient()
	resp, body := postJSON(t, c, url+"/v1/completions", map[string]any{"prompt": []int{1, 2, 3, 4}, "max_tokens": 9, "ignore_eos": true})
	var comp struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Choices []struct {
			Text         string `json:"text"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct{ PromptTokens, CompletionTokens, TotalTokens int }
	}
	if err := json.Unmarshal(body, &comp); err != nil || resp.StatusCode != 200 {
		t.Fatalf("%d %s %v", resp.StatusCode, body, err)
	}
	var u struct {
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	_ = json.Unmarshal(body, &u)
	if comp.Object != "text_completion" || CountTokens(comp.Choices[0].Text) != 9 || u.Usage.PromptTokens != 4 || u.Usage.CompletionTokens != 9 || comp.Choices[0].FinishReason != "length" {
		t.Fatalf("completion = %s", body)
	}
	resp, body = postJSON(t, c, url+"/v1/chat/completions", map[string]any{
		"model": "sim-llama", "max_completion_tokens": 4, "ignore_eos": true,
		"messages": []map[string]any{{"role": "user", "content": []map[string]string{{"type": "text", "text": "a b"}}}},
	})
	var chat struct {
		Object  string `json:"object"`
		Choices []struct {
			Message struct{ Role, Content string } `json:"message"`
		} `json:"choices"`
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(body, &chat); err != nil || resp.StatusCode != 200 {
		t.Fatalf("%d %s %v", resp.StatusCode, body, err)
	}
	if chat.Object != "chat.completion" || chat.Choices[0].Message.Role != "assistant" || CountTokens(chat.Choices[0].Message.Content) != 4 || chat.Usage.PromptTokens != 5 {
		t.Fatalf("chat = %s", body)
	}
}

func TestEOSRule(t *testing.T) {
	cfg := fastConfig()
	cfg.EOSProb = 0.2
	cfg.ITL = 0
	_, url := startSim(t, cfg)
	c := testClient()
	lengths := map[int]int{}
	for i := range 20 {
		prompt := words(5) + " p" + string(rune('a'+i))
		var got [2]int
		for rep := range 2 {
			_, body := postJSON(t, c, url+"/v1/completions", map[string]any{"prompt": prompt, "max_tokens": 50, "min_tokens": 3})
			var r struct {
				Choices []struct {
					FinishReason string `json:"finish_reason"`
				} `json:"choices"`
				Usage struct {
					CompletionTokens int `json:"completion_tokens"`
				} `json:"usage"`
			}
			if err := json.Unmarshal(body, &r); err != nil {
				t.Fatal(err)
			}
			n := r.Usage.CompletionTokens
			if n < 4 || n > 50 || (n < 50) != (r.Choices[0].FinishReason == "stop") {
				t.Fatalf("prompt %d: %d tokens, finish %s (min_tokens 3, max 50)", i, n, r.Choices[0].FinishReason)
			}
			got[rep] = n
		}
		if got[0] != got[1] {
			t.Fatalf("same prompt gave %d then %d tokens", got[0], got[1])
		}
		lengths[got[0]]++
	}
	if lengths[50] == 20 || len(lengths) < 3 {
		t.Fatalf("early EOS never varied: %v", lengths)
	}
	// ignore_eos always gives max_tokens.
	_, body := postJSON(t, c, url+"/v1/completions", map[string]any{"prompt": "x", "max_tokens": 50, "ignore_eos": true})
	if !strings.Contains(string(body), `"completion_tokens":50`) {
		t.Fatalf("ignore_eos: %s", body)
	}
}

func TestRequestErrors(t *testing.T) {
	cfg := fastConfig()
	cfg.MaxModelLen = 100
	cfg.Models = []string{"m1", "m2"}
	_, url := startSim(t, cfg)
	c := testClient()
	tests := []struct {
		name, path string
		body       any
		status     int
		contains   string
	}{
		{"unknown model", "/v1/completions", map[string]any{"model": "gpt-9", "prompt": "a"}, 404, "Served models: m1, m2"},
		{"unknown model chat", "/v1/chat/completions", map[string]any{"model": "gpt-9", "messages": []any{}}, 404, "m1, m2"},
		{"unknown model embeddings", "/v1/embeddings", map[string]any{"model": "gpt-9", "input": "a"}, 404, "m1, m2"},
		{"unknown model tokenize", "/tokenize", map[string]any{"model": "gpt-9", "prompt": "a"}, 404, "m1, m2"},
		{"too long", "/v1/completions", map[string]any{"prompt": words(90), "max_tokens": 20}, 400, "maximum context length is 100 tokens. However, you requested 110 tokens (90 in the messages, 20 in the completion)"},
		{"n=2", "/v1/completions", map[string]any{"prompt": "a", "n": 2}, 400, "n=1"},
		{"max_tokens 0", "/v1/completions", map[string]any{"prompt": "a", "max_tokens": 0}, 400, "max_tokens"},
		{"min over max", "/v1/completions", map[string]any{"prompt": "a", "max_tokens": 2, "min_tokens": 3}, 400, "min_tokens"},
		{"empty prompt", "/v1/completions", map[string]any{"prompt": "  "}, 400, "empty"},
		{"no prompt", "/v1/completions", map[string]any{}, 400, "prompt"},
		{"two prompts", "/v1/completions", map[string]any{"prompt": []string{"a", "b"}}, 400, "one prompt"},
		{"no messages", "/v1/chat/completions", map[string]any{}, 400, "messages"},
		{"bad role", "/v1/chat/completions", map[string]any{"messages": []map[string]string{{"role": "a b", "content": "x"}}}, 400, "role"},
		{"bad json", "/v1/completions", "not an object", 400, "invalid JSON"},
		{"bad fault header", "/v1/completions", map[string]any{"prompt": "a"}, 400, "X-Sim-Fault"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hdr []string
			if tt.name == "bad fault header" {
				hdr = []string{FaultHeader, "explode=1"}
			}
			resp, body := postJSON(t, c, url+tt.path, tt.body, hdr...)
			var e apiError
			if err := json.Unmarshal(body, &e); err != nil {
				t.Fatalf("not OpenAI's error shape: %s", body)
			}
			if resp.StatusCode != tt.status || e.Error.Code != tt.status || e.Error.Type == "" || !strings.Contains(e.Error.Message, tt.contains) {
				t.Fatalf("got %d %s, want %d containing %q", resp.StatusCode, body, tt.status, tt.contains)
			}
		})
	}
	code, body := getBody(t, c, url+"/v2/nothing")
	if code != 404 || !strings.Contains(body, `"error"`) {
		t.Fatalf("unknown path: %d %s", code, body)
	}
}

func TestTokenizeDetokenize(t *testing.T) {
	_, url := startSim(t, fastConfig())
	c := testClient()
	_, body := postJSON(t, c, url+"/tokenize", map[string]any{"model": "sim-llama", "prompt": "bado kemi  zebra"})
	var tok struct {
		Count       int   `json:"count"`
		MaxModelLen int   `json:"max_model_len"`
		Tokens      []int `json:"tokens"`
	}
	if err := json.Unmarshal(body, &tok); err != nil || tok.Count != 3 || len(tok.Tokens) != 3 || tok.MaxModelLen != 8192 {
		t.Fatalf("tokenize: %s %v", body, err)
	}
	_, body = postJSON(t, c, url+"/detokenize", map[string]any{"model": "sim-llama", "tokens": tok.Tokens[:2]})
	if string(body) != `{"prompt":"bado kemi"}`+"\n" {
		t.Fatalf("detokenize: %s", body)
	}
	// The chat count from /tokenize equals usage.prompt_tokens.
	msgs := []map[string]string{{"role": "system", "content": "be brief"}, {"role": "user", "content": words(10)}}
	_, body = postJSON(t, c, url+"/tokenize", map[string]any{"messages": msgs})
	_ = json.Unmarshal(body, &tok)
	_, body = postJSON(t, c, url+"/v1/chat/completions", map[string]any{"messages": msgs, "max_tokens": 1})
	if !strings.Contains(string(body), `"prompt_tokens":`+itoa(tok.Count)) || tok.Count != 2+2+10+2+1 {
		t.Fatalf("tokenize count %d vs chat %s", tok.Count, body)
	}
	// An exact-length prompt built from /detokenize.
	ids := make([]int, 123)
	for i := range ids {
		ids[i] = i * 7 % VocabSize
	}
	_, body = postJSON(t, c, url+"/detokenize", map[string]any{"tokens": ids})
	var det struct{ Prompt string }
	_ = json.Unmarshal(body, &det)
	_, body = postJSON(t, c, url+"/v1/completions", map[string]any{"prompt": det.Prompt, "max_tokens": 1})
	if !strings.Contains(string(body), `"prompt_tokens":123`) {
		t.Fatalf("exact-length prompt: %s", body)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestEmbeddings(t *testing.T) {
	for _, mode := range []string{ModeFixed, ModeEngine} {
		t.Run(mode, func(t *testing.T) {
			cfg := fastConfig()
			cfg.Mode = mode
			cfg.EmbeddingDim = 8
			_, url := startSim(t, cfg)
			c := testClient()
			resp, body := postJSON(t, c, url+"/v1/embeddings", map[string]any{"input": []string{"a b c", "d e", "a b c"}})
			var got struct {
				ID   string `json:"id"`
				Data []struct {
					Index     int       `json:"index"`
					Embedding []float64 `json:"embedding"`
				} `json:"data"`
				Usage struct {
					PromptTokens int `json:"prompt_tokens"`
				} `json:"usage"`
			}
			if err := json.Unmarshal(body, &got); err != nil || resp.StatusCode != 200 {
				t.Fatalf("%d %s %v", resp.StatusCode, body, err)
			}
			if len(got.Data) != 3 || got.Usage.PromptTokens != 8 || !strings.HasPrefix(got.ID, "embd-") {
				t.Fatalf("embeddings = %s", body)
			}
			var norm float64
			for _, x := range got.Data[0].Embedding {
				norm += x * x
			}
			if len(got.Data[0].Embedding) != 8 || norm < 0.99 || norm > 1.01 {
				t.Fatalf("vector %v norm %v", got.Data[0].Embedding, norm)
			}
			if got.Data[0].Embedding[0] != got.Data[2].Embedding[0] || got.Data[0].Embedding[0] == got.Data[1].Embedding[0] {
				t.Fatal("same input must give the same vector, different inputs different ones")
			}
			_, body = postJSON(t, c, url+"/v1/embeddings", map[string]any{"input": "x y", "encoding_format": "base64", "dimensions": 4})
			var b64 struct {
				Data []struct {
					Embedding string `json:"embedding"`
				} `json:"data"`
			}
			_ = json.Unmarshal(body, &b64)
			if raw, err := base64.StdEncoding.DecodeString(b64.Data[0].Embedding); err != nil || len(raw) != 16 {
				t.Fatalf("base64: %s", body)
			}
		})
	}
}

func TestHealthLoading(t *testing.T) {
	cfg := fastConfig()
	cfg.LoadTime = 300 * time.Millisecond
	_, url := startSim(t, cfg)
	c := testClient()
	if code, body := getBody(t, c, url+"/health"); code != 503 || !strings.Contains(body, "Loading model") {
		t.Fatalf("health while loading: %d %s", code, body)
	}
	if resp, _ := postJSON(t, c, url+"/v1/completions", map[string]any{"prompt": "a"}); resp.StatusCode != 503 {
		t.Fatalf("completions while loading: %d", resp.StatusCode)
	}
	eventually(t, 3*time.Second, "health 200", func() bool {
		code, _ := getBody(t, c, url+"/health")
		return code == 200
	})
	if resp, _ := postJSON(t, c, url+"/v1/completions", map[string]any{"prompt": "a", "max_tokens": 1}); resp.StatusCode != 200 {
		t.Fatalf("completions after loading: %d", resp.StatusCode)
	}
	if code, _ := getBody(t, c, url+"/ping"); code != 200 {
		t.Fatalf("/ping: %d", code)
	}
	if code, body := getBody(t, c, url+"/version"); code != 200 || !strings.Contains(body, "benchrun-sim") {
		t.Fatalf("/version: %d %s", code, body)
	}
}

func TestMetrics(t *testing.T) {
	cfg := fastConfig()
	cfg.Metrics = MetricsBoth
	cfg.Models = []string{"a", "b"}
	_, url := startSim(t, cfg)
	c := testClient()
	res := readStream(context.Background(), c, url+"/v1/completions", map[string]any{"prompt": words(6), "max_tokens": 4, "ignore_eos": true, "stream": true})
	if res.err != nil {
		t.Fatal(res.err)
	}
	code, body := getBody(t, c, url+"/metrics")
	if code != 200 {
		t.Fatalf("metrics: %d", code)
	}
	for _, want := range []string{
		`vllm:num_requests_running{model_name="a"} 0`,
		`vllm:num_requests_running{model_name="b"} 0`,
		`vllm:num_requests_waiting{model_name="a"} 0`,
		`vllm:kv_cache_usage_perc{model_name="a"} 0`,
		`vllm:prompt_tokens_total{model_name="a"} 6`,
		`vllm:generation_tokens_total{model_name="a"} 4`,
		`vllm:time_to_first_token_seconds_count{model_name="a"} 1`,
		`vllm:inter_token_latency_seconds_count{model_name="a"} 3`,
		`vllm:time_to_first_token_seconds_bucket{model_name="a",le="+Inf"} 1`,
		`vllm:request_success_total{model_name="a",finished_reason="length"} 1`,
		`llamacpp:prompt_tokens_total 6`,
		`llamacpp:tokens_predicted_total 4`,
		`llamacpp:requests_processing 0`,
		`llamacpp:requests_deferred 0`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("metrics lack %q", want)
		}
	}
	// Each family is declared once (valid exposition with two models).
	if n := strings.Count(body, "# TYPE vllm:num_requests_running "); n != 1 {
		t.Errorf("TYPE declared %d times", n)
	}
	// llama.cpp names only when asked.
	cfg.Metrics = MetricsVLLM
	_, url2 := startSim(t, cfg)
	if _, body := getBody(t, c, url2+"/metrics"); strings.Contains(body, "llamacpp:") {
		t.Error("llamacpp metrics without asking")
	}
}

func TestDebugEndpoint(t *testing.T) {
	cfg := fastConfig()
	s, url := startSim(t, cfg)
	c := testClient()
	res := readStream(context.Background(), c, url+"/v1/completions", map[string]any{"prompt": "a b", "max_tokens": 3, "ignore_eos": true, "stream": true})
	if res.err != nil {
		t.Fatal(res.err)
	}
	id := parseChunks(t, res.events)[0].ID
	code, body := getBody(t, c, url+"/debug/requests?id="+id)
	var got struct {
		Requests []recordJSON `json:"requests"`
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil || code != 200 || len(got.Requests) != 1 {
		t.Fatalf("%d %s %v", code, body, err)
	}
	r := got.Requests[0]
	rec, _ := s.Record(id)
	if r.ID != id || len(r.Events) != 3 || r.Events[2].UnixNano != rec.Events[2].UnixNano || r.ReceivedUnixNano != rec.ReceivedUnixNano || r.CompletionTokens != 3 || r.PromptTokens != 2 {
		t.Fatalf("debug record %+v vs %+v", r, rec)
	}
	// Client-side arrival follows the server's write, on the same clock.
	for i, e := range res.events {
		if e.at.UnixNano() < r.Events[i].UnixNano {
			t.Fatalf("event %d arrived before it was written", i)
		}
	}
	code, body = getBody(t, c, url+"/debug/requests?since="+itoa(int(r.Seq)))
	if code != 200 || !strings.Contains(body, `"requests":[]`) {
		t.Fatalf("since: %s", body)
	}
	req, _ := http.NewRequest(http.MethodDelete, url+"/debug/requests", nil)
	if resp, err := c.Do(req); err != nil || resp.StatusCode != 204 {
		t.Fatalf("DELETE: %v", err)
	}
	if len(s.Records()) != 0 {
		t.Fatal("records not cleared")
	}
	if code, body := getBody(t, c, url+"/debug/engine"); code != 200 || !strings.Contains(body, `"mode":"fixed"`) {
		t.Fatalf("debug/engine: %d %s", code, body)
	}
	// Without Debug the endpoints do not exist.
	cfg.Debug = false
	_, url2 := startSim(t, cfg)
	if code, _ := getBody(t, c, url2+"/debug/requests"); code != 404 {
		t.Fatalf("debug without Debug: %d", code)
	}
}

func TestRecordsBounded(t *testing.T) {
	cfg := fastConfig()
	cfg.MaxRecords = 3
	cfg.TTFT = 0
	s, url := startSim(t, cfg)
	c := testClient()
	for range 5 {
		postJSON(t, c, url+"/v1/completions", map[string]any{"prompt": "a", "max_tokens": 1})
	}
	recs := s.Records()
	if len(recs) != 3 || recs[0].Seq != 3 || recs[2].Seq != 5 {
		t.Fatalf("records kept: %d, first seq %d", len(recs), recs[0].Seq)
	}
}
