package health

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/benchrun/benchrun/internal/sim"
	"github.com/benchrun/benchrun/internal/sim/simtest"
	"github.com/benchrun/benchrun/internal/testkit"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/pipeline/engine"
	"github.com/benchrun/benchrun/pipeline/pipelinetest"
	"github.com/benchrun/benchrun/schema"
	"github.com/benchrun/benchrun/stages/launch"
)

// stubLaunch stands in for the launch kind in the plan only: the tests
// hand the health stage a real simulator's URL as the target's outputs.
var stubLaunch = pipeline.Kind{Name: "launch", Schema: schema.KindSchema{Def: "#L", Source: "package schema\n#L: {#StageBase, kind: \"launch\", ...}"},
	New: func(s *schema.Stage) (pipeline.Stage, error) { return nil, nil }}

func runHealth(t *testing.T, stage string, target *pipeline.Outputs) (*pipeline.Outputs, time.Duration, error) {
	t.Helper()
	dir := t.TempDir()
	src := "name: \"p\"\nmodel: {name: \"tiny\"}\nstages: {\n\tserver: {kind: \"launch\"}\n\thealth: {kind: \"health\", target: \"server\", " + stage + "}\n}\n"
	reg := pipeline.NewRegistry()
	reg.AddKind(Kind)
	reg.AddKind(stubLaunch)
	g := pipelinetest.LoadPlanFile(t, reg, filepath.Join(dir, "plan.cue"), src) // decodes and validates the stage
	p := g.Plan
	spec, st := p.Stage("health"), g.Node("health").Stage
	env := &pipeline.Env{Stage: spec, Plan: p, Dir: dir, Deps: map[string]*pipeline.Outputs{"server": target}, Log: io.Discard, Progress: io.Discard}
	start := time.Now()
	out, err := st.Run(context.Background(), env)
	return out, time.Since(start), err
}

// simServer serves the simulator of cfg (simtest) and returns its URL.
func simServer(t *testing.T, cfg sim.Config) string {
	t.Helper()
	return simtest.Serve(t, simtest.NewSimFrom(t, cfg))
}

func TestReadyAfterLoading(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.Models = []string{"tiny"}
	cfg.LoadTime = 600 * time.Millisecond
	url := simServer(t, cfg)
	out, took, err := runHealth(t, `within: "10s", interval: "50ms"`, &pipeline.Outputs{URL: url, Engine: "sim"})
	if err != nil {
		t.Fatal(err)
	}
	if took < 500*time.Millisecond {
		t.Errorf("ready after %s, while the server was loading for 600ms", took)
	}
	if out.URL != url || out.Model != "tiny" || out.Done != nil {
		t.Fatalf("outputs = %+v", out)
	}
}

func TestWrongModelFailsAtOnce(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.Models = []string{"llama-3.2-1b", "other"}
	url := simServer(t, cfg)
	_, took, err := runHealth(t, `within: "30s"`, &pipeline.Outputs{URL: url, Engine: "sim"})
	want := `"tiny" is not among the models ` + url + ` serves ["llama-3.2-1b" "other"]: the plan's model name (model.name, or model in the stage) must equal the server's served name`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v\nwant %s", err, want)
	}
	if took > 2*time.Second {
		t.Errorf("took %s: a wrong model name must fail at once, not at the timeout", took)
	}
}

func TestNeverHealthyTimesOutWithLogTail(t *testing.T) {
	var hits atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Error(w, "loading", http.StatusServiceUnavailable)
	}))
	defer ts.Close()
	logPath := filepath.Join(t.TempDir(), "server.log")
	os.WriteFile(logPath, []byte("line 1\nloading model 97%\nCUDA out of memory\n"), 0o644)
	_, took, err := runHealth(t, `within: "700ms", interval: "50ms"`, &pipeline.Outputs{URL: ts.URL, Engine: "vllm", LogPath: logPath})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"not ready within 700ms", "last check: /health answered 503 (loading)", "  | loading model 97%\n  | CUDA out of memory"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if took > 3*time.Second || hits.Load() < 3 {
		t.Errorf("took %s with %d polls", took, hits.Load())
	}
}

func TestPresetsAndOverrides(t *testing.T) {
	var paths []string
	cfg := sim.DefaultConfig()
	// Ollama lists "tiny:latest" and answers to "tiny" too; the simulator
	// serves both names.
	cfg.Models = []string{"tiny:latest", "tiny"}
	s := simtest.NewSimFrom(t, cfg)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.Method+" "+r.URL.Path)
		if r.URL.Path == "/" {
			io.WriteString(w, "Ollama is running") // the engine's own answer on its health path
			return
		}
		s.ServeHTTP(w, r)
	}))
	defer ts.Close()
	// The ollama preset: GET / for health, and "tiny" is served as "tiny:latest".
	if _, _, err := runHealth(t, `within: "5s"`, &pipeline.Outputs{URL: ts.URL, Engine: "ollama"}); err != nil {
		t.Fatal(err)
	}
	want := []string{"GET /", "GET /v1/models", "POST /v1/completions"}
	if strings.Join(paths, ",") != strings.Join(want, ",") {
		t.Fatalf("requests = %v, want %v", paths, want)
	}
	// The vLLM preset polls /health.
	paths = nil
	if _, _, err := runHealth(t, `within: "5s"`, &pipeline.Outputs{URL: ts.URL, Engine: "vllm"}); err != nil || paths[0] != "GET /health" {
		t.Fatalf("vllm preset: %v, requests %v", err, paths)
	}
	// A custom engine gives its own paths; probe: chat.
	paths = nil
	if _, _, err := runHealth(t, `within: "5s", path: "/", models_path: "/v1/models", probe: "chat", model: "tiny:latest"`, &pipeline.Outputs{URL: ts.URL}); err != nil {
		t.Fatal(err)
	}
	if paths[len(paths)-1] != "POST /v1/chat/completions" {
		t.Fatalf("probe went to %v", paths)
	}
}

func TestProbeRefused(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.Models = []string{"tiny"}
	s := simtest.NewSimFrom(t, cfg)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			http.Error(w, `{"error":{"message":"this model does not support completions"}}`, http.StatusBadRequest)
			return
		}
		s.ServeHTTP(w, r)
	}))
	defer ts.Close()
	_, took, err := runHealth(t, `within: "10s"`, &pipeline.Outputs{URL: ts.URL, Engine: "sim"})
	if err == nil || !strings.Contains(err.Error(), "the 1-token probe on /v1/completions was refused") || took > 2*time.Second {
		t.Fatalf("err = %v after %s", err, took)
	}
	if _, _, err := runHealth(t, `within: "10s", probe: "none"`, &pipeline.Outputs{URL: ts.URL, Engine: "sim"}); err != nil {
		t.Fatalf("probe: none still probed: %v", err)
	}
}

// TestProbeThinkingModel: a thinking model's 1-token probe passes
// whether its token shows as reasoning (chat: delta.reasoning) or not at
// all (Ollama's /v1/completions drops the thinking: an empty text, and
// usage counts the token). Issue 48: the health stage read "response
// carried no tokens" for its whole within, and the run failed.
func TestProbeThinkingModel(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.Models = []string{"tiny"}
	cfg.Reasoning = sim.Reasoning{Tokens: 20, Field: sim.FieldReasoning}
	s := simtest.NewSimFrom(t, cfg)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/completions" {
			s.ServeHTTP(w, r)
			return
		}
		// Ollama v0.17's completions stream for a thinking model.
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"id":"cmpl-1","object":"text_completion","model":"tiny","choices":[{"text":"","index":0,"finish_reason":null}]}`+"\n\n")
		io.WriteString(w, `data: {"id":"cmpl-1","object":"text_completion","model":"tiny","choices":[{"text":"","index":0,"finish_reason":"length"}]}`+"\n\n")
		io.WriteString(w, `data: {"id":"cmpl-1","object":"text_completion","model":"tiny","choices":[],"usage":{"prompt_tokens":11,"completion_tokens":1,"total_tokens":12}}`+"\n\n")
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	defer ts.Close()
	for _, probe := range []string{"completions", "chat"} {
		if _, took, err := runHealth(t, `within: "3s", probe: "`+probe+`"`, &pipeline.Outputs{URL: ts.URL, Engine: "sim"}); err != nil || took > 2*time.Second {
			t.Errorf("probe %s: err = %v after %s", probe, err, took)
		}
	}
}

func TestValidatePaths(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "plan.cue")
	os.WriteFile(path, []byte("name: \"p\"\nstages: health: {kind: \"health\", target: \"http://h:1\", path: \"health\"}\n"), 0o644)
	reg := pipeline.NewRegistry()
	reg.AddKind(Kind)
	p, err := schema.Load(path, schema.Options{Kinds: reg.Schemas()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pipeline.Build(p, reg); err == nil || !strings.Contains(err.Error(), `stages.health.path: "health" must start with /`) {
		t.Fatalf("err = %v", err)
	}
}

// TestValidateReasoningOffChat: a reasoning control on a health stage
// whose probe is not chat is refused at its field; with probe chat (or
// none) it is what the probe sends.
func TestValidateReasoningOffChat(t *testing.T) {
	for _, tc := range []struct{ fields, want string }{
		{`think: false`, `plan.cue:2:56: stages.health.think: a reasoning control applies to endpoint "chat", "responses" only, not "completions"`},
		{`probe: "chat", think: false`, ""},
		{`probe: "none", reasoning_effort: "low"`, ""},
	} {
		path := filepath.Join(t.TempDir(), "plan.cue")
		os.WriteFile(path, []byte("name: \"p\"\nstages: health: {kind: \"health\", target: \"http://h:1\", "+tc.fields+"}\n"), 0o644)
		reg := pipeline.NewRegistry()
		reg.AddKind(Kind)
		p, err := schema.Load(path, schema.Options{Kinds: reg.Schemas()})
		if err != nil {
			t.Fatal(err)
		}
		_, err = pipeline.Build(p, reg)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: err = %v, want %q", tc.fields, err, tc.want)
		}
	}
}

// guarded is a simulator behind a gate that wants a bearer token and an
// X-Org header on the paths it protects (vLLM --api-key protects /v1/*
// and leaves /health open); it records what each request carried.
func guarded(t *testing.T, protect func(path string) bool) (*httptest.Server, *[]string) {
	t.Helper()
	cfg := sim.DefaultConfig()
	cfg.Models = []string{"tiny"}
	s := simtest.NewSimFrom(t, cfg)
	var mu sync.Mutex
	var seen []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, fmt.Sprintf("%s %s auth=%q org=%q", r.Method, r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("X-Org")))
		mu.Unlock()
		if protect(r.URL.Path) && (r.Header.Get("Authorization") != "Bearer s3cret" || r.Header.Get("X-Org") != "pa$$word$1") {
			http.Error(w, `{"error":{"message":"invalid api key"}}`, http.StatusUnauthorized)
			return
		}
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts, &seen
}

// TestCredentialsOnEveryCheck: the stage's headers and api_key_env key go
// with every check (health path, models path, probe), so a server that
// protects its model list becomes ready; without them, or with wrong
// ones, the stage fails at once with a hint instead of waiting out
// `within`.
func TestCredentialsOnEveryCheck(t *testing.T) {
	t.Setenv("HEALTH_TEST_KEY", "s3cret")
	t.Setenv("HEALTH_TEST_WRONG", "nope")
	os.Unsetenv("HEALTH_TEST_UNSET")
	all := func(string) bool { return true }
	vllm := func(p string) bool { return strings.HasPrefix(p, "/v1/") }
	creds := `api_key_env: "HEALTH_TEST_KEY", headers: {"X-Org": "pa$$word$1"}`
	tests := []struct {
		name    string
		protect func(string) bool
		stage   string
		want    string // "" for ready
	}{
		{"every path protected, credentials given", all, creds, ""},
		{"vLLM --api-key, credentials given", vllm, creds, ""},
		{"no credentials", all, "", `/health answered 401 Unauthorized: the server wants credentials: set api_key_env / headers on stages.health`},
		{"vLLM --api-key, no credentials", vllm, "", `/v1/models answered 401 Unauthorized: the server wants credentials: set api_key_env / headers on stages.health`},
		{"wrong key", all, `api_key_env: "HEALTH_TEST_WRONG", headers: {"X-Org": "pa$$word$1"}`, `/health answered 401 Unauthorized: the server refused the credentials sent (api_key_env / headers on stages.health)`},
		{"a header naming an unset variable", all, `headers: {"X-Org": "${HEALTH_TEST_UNSET}"}`, `stages.health.headers.X-Org: ${HEALTH_TEST_UNSET} is neither a plan variable nor set in benchrun's environment`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts, seen := guarded(t, tt.protect)
			stage := `within: "30s", interval: "50ms"`
			if tt.stage != "" {
				stage += ", " + tt.stage
			}
			_, took, err := runHealth(t, stage, &pipeline.Outputs{URL: ts.URL, Engine: "vllm"})
			if took > 3*time.Second {
				t.Errorf("took %s: credentials refused must fail at once", took)
			}
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("err = %v\nwant %s", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, path := range []string{"GET /health ", "GET /v1/models ", "POST /v1/completions "} {
				want := path + `auth="Bearer s3cret" org="pa$$word$1"`
				if !slices.Contains(*seen, want) {
					t.Errorf("no %q among the requests:\n%s", want, strings.Join(*seen, "\n"))
				}
			}
		})
	}
}

// TestServerDeathReportedOnce runs a real launch stage whose server dies
// at start while the health stage waits: the health stage's reason is the
// death, said once (not "server server died: X (server server died: X;
// last check: ...)"), and the log's tail is shown once (by the launch
// stage's watcher), not a second time by the health stage.
func TestServerDeathReportedOnce(t *testing.T) {
	src := `name: "p"
model: {name: "tiny"}
stages: {
	server: {kind: "launch", cmd: ["sh", "-c", "echo booting; sleep 0.5; echo 'fatal: cannot load model'; exit 2"]}
	health: {kind: "health", target: "server", within: "30s", interval: "50ms"}
}
`
	reg := pipeline.NewRegistry()
	reg.AddKind(Kind)
	reg.AddKind(launch.Kind)
	g := pipelinetest.LoadPlan(t, reg, src)
	var progress syncBuffer
	reason := pipelinetest.Run(t, context.Background(), g, engine.Options{Progress: &progress}).Stage("health").Reason
	if want := "server died: exit status 2 (last line of server.log: fatal: cannot load model)"; reason != want {
		t.Errorf("health's reason\n%q\nwant\n%q", reason, want)
	}
	if n := strings.Count(progress.String(), "  | booting"); n != 1 {
		t.Errorf("the log tail is shown %d times:\n%s", n, progress.String())
	}
}

// syncBuffer is the tests' synchronized buffer (testkit).
type syncBuffer = testkit.SyncBuffer

// TestHTTP2OnlyServerFailsAtOnce: a server that speaks only HTTP/2 (h2c
// with prior knowledge) answers every check in a framing benchrun does
// not read: the health stage says so at once, not after retrying for its
// whole within as `malformed HTTP response "\x00\x00$\x04…"`.
func TestHTTP2OnlyServerFailsAtOnce(t *testing.T) {
	//lint:ignore SA1019 x/net/http2 serves one connection we hold (ServeConn); net/http's own h2c server hides the connection, and its close can reset the SETTINGS frame before the client reads it
	h2s := &http2.Server{}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			//lint:ignore SA1019 x/net/http2 serves one connection we hold (ServeConn); net/http's own h2c server hides the connection, and its close can reset the SETTINGS frame before the client reads it
			go h2s.ServeConn(c, &http2.ServeConnOpts{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				fmt.Fprint(w, `{"data":[{"id":"tiny"}]}`)
			})})
		}
	}()
	_, took, err := runHealth(t, `within: "20s", interval: "50ms"`, &pipeline.Outputs{URL: "http://" + l.Addr().String(), Engine: "vllm"})
	if err == nil || !strings.Contains(err.Error(), "answered in HTTP/2") {
		t.Fatalf("err = %v, want the server named as speaking HTTP/2", err)
	}
	if took > 3*time.Second {
		t.Errorf("took %s: an HTTP/2 answer must fail at once, not wait out within", took)
	}
}

// TestPlanHostHeaderReachesEveryCheck: a Host header in the plan is the
// Host of every check (net/http ignores a Host header and sends the URL's
// host: a virtual-hosted gateway would answer for its default backend).
func TestPlanHostHeaderReachesEveryCheck(t *testing.T) {
	var mu sync.Mutex
	var hosts []string
	s := simtest.NewSimFrom(t, sim.DefaultConfig())
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hosts = append(hosts, r.Method+" "+r.URL.Path+" "+r.Host)
		mu.Unlock()
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	model := sim.DefaultConfig().Models[0]
	_, _, err := runHealth(t, fmt.Sprintf(`within: "20s", interval: "50ms", model: %q, headers: {"Host": "llm.gateway.example"}`, model), &pipeline.Outputs{URL: ts.URL, Engine: "vllm"})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(hosts) < 3 {
		t.Fatalf("requests %v, want the three checks", hosts)
	}
	for _, h := range hosts {
		if !strings.HasSuffix(h, " llm.gateway.example") {
			t.Errorf("%s: want the plan's Host", h)
		}
	}
}

// TestProbeAPIs: the 1-token probe speaks the Responses and Messages
// APIs in their own shapes (POST /v1/responses with max_output_tokens;
// POST /v1/messages with max_tokens and the anthropic-version header)
// and passes on a thinking model whose one token is reasoning; a server
// without the API (the simulator's SGLang persona serves no
// /v1/messages) refuses the probe, which fails at once.
func TestProbeAPIs(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.Models = []string{"tiny"}
	cfg.Reasoning = sim.Reasoning{Tokens: 20}
	s := simtest.NewSimFrom(t, cfg)
	var mu sync.Mutex
	var seen []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			b, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(b))
			mu.Lock()
			seen = append(seen, r.URL.Path+" "+r.Header.Get("anthropic-version")+" "+string(b))
			mu.Unlock()
		}
		s.ServeHTTP(w, r)
	}))
	defer ts.Close()
	for probe, want := range map[string]string{
		"responses": `/v1/responses  {"input":"Hello","max_output_tokens":1,"model":"tiny","stream":true}`,
		"messages":  `/v1/messages 2023-06-01 {"max_tokens":1,"messages":[{"role":"user","content":"Hello"}],"model":"tiny","stream":true}`,
	} {
		seen = nil
		if _, took, err := runHealth(t, `within: "3s", probe: "`+probe+`"`, &pipeline.Outputs{URL: ts.URL, Engine: "sim"}); err != nil || took > 2*time.Second {
			t.Errorf("probe %s: err = %v after %s", probe, err, took)
		}
		if len(seen) != 1 || seen[0] != want {
			t.Errorf("probe %s sent %q, want %q", probe, seen, want)
		}
	}
	sglang := sim.DefaultConfig()
	sglang.Models = []string{"tiny"}
	if err := sim.ApplyPersonality(&sglang, sim.PersonaSGLang); err != nil {
		t.Fatal(err)
	}
	url := simServer(t, sglang)
	_, took, err := runHealth(t, `within: "10s", probe: "messages"`, &pipeline.Outputs{URL: url, Engine: "sim"})
	if err == nil || !strings.Contains(err.Error(), "the 1-token probe on /v1/messages was refused") || took > 2*time.Second {
		t.Errorf("a server without the Messages API: err = %v after %s", err, took)
	}
}
