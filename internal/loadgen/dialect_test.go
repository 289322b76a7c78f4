package loadgen

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/benchrun/benchrun/internal/engines"
	"github.com/benchrun/benchrun/internal/sim"
	"github.com/benchrun/benchrun/internal/sim/simtest"
)

// Against every engine personality: discovery names the engine, its
// version and context; calibration speaks the engine's tokenizer dialect
// (or probes where there is none), costs tens of requests, and every
// prompt comes out at exactly isl tokens as the server counts them, on
// completions and on chat (whose template adds tokens /tokenize does not
// see on llama-server).
func TestCalibrateEachEngineDialect(t *testing.T) {
	for _, tc := range []struct {
		persona, engine, version, method string
		ctx                              int
	}{
		{sim.PersonaVLLM, engines.VLLM.Name, "0.11.0", "tokenize(prompt)+probe", 1024},
		{sim.PersonaLlamaServer, engines.LlamaServer.Name, "b6500-sim", "tokenize(content)+probe", 1024},
		{sim.PersonaSGLang, engines.SGLang.Name, "0.5.2", "tokenize(prompt)+probe", 1024},
		{sim.PersonaOllama, engines.Ollama.Name, "0.17.4", "probe", 1024},
	} {
		for _, ep := range []Endpoint{Completions, Chat} {
			t.Run(tc.persona+"/"+string(ep), func(t *testing.T) {
				_, url := startSim(t, func(c *sim.Config) {
					if err := sim.ApplyPersonality(c, tc.persona); err != nil {
						t.Fatal(err)
					}
					c.MaxModelLen = tc.ctx
				})
				tg := newTarget(url, 4)
				tg.Endpoint = ep
				// The plan does not name the engine: discovery finds it.
				info := Discover(context.Background(), tg, "")
				if info.Engine != tc.engine || info.Version != tc.version || info.MaxModelLen != tc.ctx {
					t.Fatalf("discovered %+v", info)
				}
				v, err := Calibrate(context.Background(), tg, CalibrateAuto, info)
				if err != nil {
					t.Fatal(err)
				}
				if v.Method != tc.method || len(v.Words) < calibrationMinWords || v.Requests > 50 {
					t.Fatalf("method %s, %d words, %d requests", v.Method, len(v.Words), v.Requests)
				}
				t.Logf("%s: %d single + %d multi-token words, overhead %d, %d requests", v.Method, len(v.Words), len(v.Multi), v.Overhead, v.Requests)
				for _, isl := range []int{16, 48, 200} {
					src := &PromptSource{ISL: isl, Seed: 5, CellKey: uint64(isl), PointKey: 3, Vocab: v}
					src.Prepare()
					for i := 0; i < 4; i++ {
						r := tg.Do(context.Background(), Request{Prompt: src.Prompt(0, i), MaxTokens: 1})
						if r.Err != nil {
							t.Fatal(r.Err)
						}
						if r.InputTokens != isl {
							t.Fatalf("isl %d: prompt %d is %d tokens as served (method %s, overhead %d): %q", isl, i, r.InputTokens, v.Method, v.Overhead, src.Prompt(0, i))
						}
					}
				}
			})
		}
	}
}

// llama-server answers {"tokens":[]} to a /tokenize body without
// "content": that is "this dialect is not understood", never a count of
// 0. Before, calibration took it for 0 tokens, blamed the model and fell
// back to one token per word (prompts 2.9x too long, status ok).
func TestEmptyTokenListIsNotACount(t *testing.T) {
	_, url := startSim(t, func(c *sim.Config) { _ = sim.ApplyPersonality(c, sim.PersonaLlamaServer) })
	tg := newTarget(url, 2)
	if _, err := tg.tokenizeCount(context.Background(), DialectPrompt, "the of and", false); err == nil || !strings.Contains(err.Error(), "empty token list") {
		t.Fatalf("prompt dialect on llama-server: err = %v", err)
	}
	n, err := tg.tokenizeCount(context.Background(), DialectContent, "the of and", false)
	if err != nil || n != simtest.CountPromptTokens(sim.PersonaLlamaServer, "the of and", false) {
		t.Fatalf("content dialect: %d, %v", n, err)
	}
	requests := 0
	d, err := tg.tokenizerDialect(context.Background(), "", &requests)
	if err != nil || d != DialectContent {
		t.Fatalf("dialect %q, %v", d, err)
	}
}

// Ollama's own engine charges 2-3 tokens for the first word of a prompt;
// with the lead word fixed and its cost in the overhead, probing holds
// every prompt to the exact length (it came out at 47.5 for 48 before).
func TestOllamaFirstWordQuirkIsInTheOverhead(t *testing.T) {
	_, url := startSim(t, func(c *sim.Config) { _ = sim.ApplyPersonality(c, sim.PersonaOllama) })
	tg := newTarget(url, 2)
	v, err := Calibrate(context.Background(), tg, CalibrateProbe, ServerInfo{})
	if err != nil {
		t.Fatal(err)
	}
	if lead := simtest.CompletionPromptTokens(sim.PersonaOllama, v.Lead); v.Overhead != lead {
		t.Fatalf("overhead %d, want the lead's own cost %d", v.Overhead, lead)
	}
	src := &PromptSource{ISL: 48, Seed: 1, CellKey: 48, Vocab: v}
	src.Prepare()
	for i := 0; i < 20; i++ {
		p := src.Prompt(1, i)
		if n := simtest.CompletionPromptTokens(sim.PersonaOllama, p); n != 48 {
			t.Fatalf("prompt %d: %d tokens, want 48: %q", i, n, p)
		}
	}
}

// tinyVocabCount is a tokenizer where almost no English word is one token
// (four are; the rest cost one token per 2 bytes, at least 2), like
// stories260K's 512-token vocabulary, where calibration by single-token
// words alone found 4 words and gave up.
func tinyVocabCount(text string) int {
	n := 1 // BOS
	for _, w := range strings.Fields(text) {
		switch w {
		case "the", "of", "to", "in":
			n++
		default:
			n += max(2, (len(w)+1)/2)
		}
	}
	return n
}

func tinyVocabServer(t *testing.T) string {
	t.Helper()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Prompt string `json:"prompt"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		switch r.URL.Path {
		case "/tokenize":
			fmt.Fprintf(w, `{"count":%d}`, tinyVocabCount(req.Prompt)-1)
		case "/v1/completions":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":"x","choices":[{"index":0,"text":" a","finish_reason":"length"}],"usage":{"prompt_tokens":%d,"completion_tokens":1}}`, tinyVocabCount(req.Prompt))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(hs.Close)
	return hs.URL
}

func TestCalibrateOnATinyVocabulary(t *testing.T) {
	tg := newTarget(tinyVocabServer(t), 2)
	for _, method := range []string{CalibrateAuto, CalibrateProbe} {
		v, err := Calibrate(context.Background(), tg, method, ServerInfo{})
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		if v.Requests > 50 || len(v.Multi) == 0 {
			t.Fatalf("%s: %d requests, %d single and %d multi-token words", method, v.Requests, len(v.Words), len(v.Multi))
		}
		for _, isl := range []int{8, 48, 128} {
			src := &PromptSource{ISL: isl, Seed: 2, CellKey: 1, PointKey: 9, Vocab: v}
			src.Prepare()
			for i := 0; i < 10; i++ {
				if n := tinyVocabCount(src.Prompt(0, i)); n != isl {
					t.Fatalf("%s: isl %d prompt %d is %d tokens: %q", method, isl, i, n, src.Prompt(0, i))
				}
			}
		}
	}
}
