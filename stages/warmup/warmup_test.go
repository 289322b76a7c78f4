package warmup

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/sim"
	"github.com/benchrun/benchrun/internal/sim/simtest"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
)

// server stands in for the launch stage (the warm-up only sends to its URL).
var server = pipeline.Kind{Name: "server", Schema: schema.KindSchema{Def: "#Kserver", Source: "package schema\n#Kserver: {#StageBase, kind: \"server\", ...}"},
	New: func(s *schema.Stage) (pipeline.Stage, error) { return other{}, nil }}

// bench stands in for a sweep: a stage that says what load it applies
// (pipeline.LoadShaper), decoded from its own fields with the sweep's
// defaults (but no default cells).
var bench = pipeline.Kind{Name: "bench", Schema: schema.KindSchema{Def: "#Kbench", Source: `package schema
#Kbench: {
	#StageBase
	kind:        "bench"
	endpoint:    *"completions" | "chat" | "embeddings" | "messages" | "rerank"
	concurrency: [...int] | *[1, 4, 8]
	rates?:      [...number]
	arrival:     *"poisson" | "constant" | "gamma"
	target?:     string
	cells?: [...{isl: int, osl: int}]
	calibrate:   *"auto" | "off"
	seed:        int | *1
}`},
	New: func(s *schema.Stage) (pipeline.Stage, error) {
		var cfg struct {
			Endpoint    string    `json:"endpoint"`
			Concurrency []int     `json:"concurrency"`
			Rates       []float64 `json:"rates"`
			Arrival     string    `json:"arrival"`
			Cells       []struct {
				ISL int `json:"isl"`
				OSL int `json:"osl"`
			} `json:"cells"`
			Calibrate string `json:"calibrate"`
			Seed      int64  `json:"seed"`
		}
		if err := s.Decode(&cfg); err != nil {
			return nil, err
		}
		l := pipeline.LoadShape{Endpoint: cfg.Endpoint, Concurrency: cfg.Concurrency, Rates: cfg.Rates, Arrival: cfg.Arrival, Calibrate: cfg.Calibrate, Seed: cfg.Seed}
		for _, c := range cfg.Cells {
			l.Cells = append(l.Cells, pipeline.ShapeCell{ISL: c.ISL, OSL: c.OSL})
		}
		return shaper{l}, nil
	}}

// exec stands in for a stage that does not say what load it applies.
var exec = pipeline.Kind{Name: "exec", Schema: schema.KindSchema{Def: "#Kexec", Source: "package schema\n#Kexec: {#StageBase, kind: \"exec\", ...}"},
	New: func(s *schema.Stage) (pipeline.Stage, error) { return other{}, nil }}

type other struct{}

func (other) Validate(*pipeline.Check) error { return nil }
func (other) Run(context.Context, *pipeline.Env) (*pipeline.Outputs, error) {
	return &pipeline.Outputs{}, nil
}

type shaper struct{ shape pipeline.LoadShape }

var _ pipeline.LoadShaper = shaper{}

func (shaper) Validate(*pipeline.Check) error { return nil }
func (shaper) Run(context.Context, *pipeline.Env) (*pipeline.Outputs, error) {
	return &pipeline.Outputs{}, nil
}
func (s shaper) LoadShape() pipeline.LoadShape { return s.shape }

// load builds a plan with a server, the warm-up and next, and returns the
// warm-up, the Check its Validate and Warnings see, and the graph's
// error (the warm-up's Validate's among them).
func load(t *testing.T, warm, next string) (*Stage, *pipeline.Check, error) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "plan.cue")
	src := "name: \"p\"\nmodel: {name: \"tiny\"}\nstages: {\n\tserver: {kind: \"server\"}\n\twarmup: {kind: \"warmup\", target: \"server\", " + warm + "}\n" + next + "}\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := pipeline.NewRegistry()
	reg.AddKind(Kind)
	reg.AddKind(server)
	reg.AddKind(bench)
	reg.AddKind(exec)
	p, err := schema.Load(path, schema.Options{Kinds: reg.Schemas()})
	if err != nil {
		t.Fatal(err)
	}
	g, err := pipeline.Build(p, reg)
	st := g.Node("warmup").Stage
	if st == nil {
		t.Fatalf("the warm-up did not decode: %v", err)
	}
	return st.(*Stage), g.Check("warmup"), err
}

func TestShapeFollowsTheNextStage(t *testing.T) {
	tests := []struct {
		name, warm, next string
		want             Shape
	}{
		{"from the sweep", ``, `sweep: {kind: "bench", needs: ["warmup"], endpoint: "chat", concurrency: [1, 8, 4], cells: [{isl: 256, osl: 64}, {isl: 16, osl: 8}]}`,
			Shape{Endpoint: "chat", Concurrency: 8, ISL: 256, OSL: 64}},
		{"largest over every follower", ``, `a: {kind: "bench", needs: ["warmup"], concurrency: [2]}
	b: {kind: "bench", needs: ["warmup"], concurrency: [16]}`, Shape{Endpoint: "completions", Concurrency: 16, ISL: 128, OSL: 32}},
		{"own fields win", `concurrency: 3, endpoint: "completions", isl: 10, osl: 5`, `sweep: {kind: "bench", needs: ["warmup"], endpoint: "chat", concurrency: [8]}`,
			Shape{Endpoint: "completions", Concurrency: 3, ISL: 10, OSL: 5}},
		// A rates-only sweep is warmed by an open loop at its largest rate,
		// not by a closed loop at the unused concurrency default.
		{"an open loop from a rates-only sweep", ``, `sweep: {kind: "bench", needs: ["warmup"], concurrency: [1, 4, 8], rates: [2, 16, 4], arrival: "constant"}`,
			Shape{Endpoint: "completions", Rate: 16, Arrival: "constant", ISL: 128, OSL: 32}},
		{"embeddings is not warmed as such", ``, `sweep: {kind: "bench", needs: ["warmup"], endpoint: "embeddings", concurrency: [4]}`,
			Shape{Endpoint: "completions", Concurrency: 4, ISL: 128, OSL: 32}},
		{"nor is rerank", ``, `sweep: {kind: "bench", needs: ["warmup"], endpoint: "rerank", concurrency: [4]}`,
			Shape{Endpoint: "completions", Concurrency: 4, ISL: 128, OSL: 32}},
		{"the Messages API is", ``, `sweep: {kind: "bench", needs: ["warmup"], endpoint: "messages", concurrency: [2]}`,
			Shape{Endpoint: "messages", Concurrency: 2, ISL: 128, OSL: 32}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, c, err := load(t, tt.warm, tt.next)
			if err != nil {
				t.Fatal(err)
			}
			got := s.ShapeFor(c.Dependents())
			load := Shape{Endpoint: got.Endpoint, Concurrency: got.Concurrency, Rate: got.Rate, Arrival: got.Arrival, ISL: got.ISL, OSL: got.OSL}
			if !reflect.DeepEqual(load, tt.want) {
				t.Fatalf("shape = %+v, want %+v", load, tt.want)
			}
		})
	}
}

func TestValidateNeedsAFollowerOrConcurrency(t *testing.T) {
	if _, _, err := load(t, ``, ``); err == nil || !strings.Contains(err.Error(), "no stage needs this warm-up") {
		t.Fatalf("err = %v", err)
	}
	if _, _, err := load(t, `concurrency: 2`, ``); err != nil {
		t.Fatal(err)
	}
}

// TestValidateReasoningFollowsTheEndpoint: the warm-up's reasoning
// controls are refused at their field when the endpoint it warms (its
// own, or its follower's) is not chat, and sent when it is.
func TestValidateReasoningFollowsTheEndpoint(t *testing.T) {
	if _, _, err := load(t, `reasoning_effort: "low"`, `sweep: {kind: "bench", needs: ["warmup"], concurrency: [2]}`); err == nil ||
		!strings.Contains(err.Error(), `stages.warmup.reasoning_effort: a reasoning control applies to endpoint`) || !strings.Contains(err.Error(), `not "completions"`) {
		t.Errorf("completions: err = %v", err)
	}
	if _, _, err := load(t, `reasoning_effort: "low"`, `sweep: {kind: "bench", needs: ["warmup"], endpoint: "chat", concurrency: [2]}`); err != nil {
		t.Errorf("chat: %v", err)
	}
}

// TestValidateSettleCanHappen: at the sweep's top concurrency 64 the
// default window is 128 requests, so settling needs 256 and the default
// max_requests (200) could only ever report "did not settle".
func TestValidateSettleCanHappen(t *testing.T) {
	next := `sweep: {kind: "bench", needs: ["warmup"], concurrency: [1, 64]}`
	_, _, err := load(t, ``, next)
	if err == nil || !strings.Contains(err.Error(), "stages.warmup.settle.max_requests: 200 cannot settle: comparing two windows of 128 requests needs at least 256") {
		t.Fatalf("err = %v", err)
	}
	for _, ok := range []string{`settle: {max_requests: 256}`, `settle: {window: 16}`, `requests: 50`} {
		if _, _, err := load(t, ok, next); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

// TestFollowerThatIsNotALoadShaper: a warm-up learns the load only from
// stages that say what load they apply (pipeline.LoadShaper). In front of
// one that does not, it keeps its own fields and the defaults, and vet
// warns, naming the stage and the defaults it will use; a LoadShaper
// among the followers, or the warm-up's own fields, silence it.
func TestFollowerThatIsNotALoadShaper(t *testing.T) {
	tests := []struct {
		name, warm, next string
		want             Shape  // Endpoint, Concurrency, ISL, OSL
		warning          string // "" for none
	}{
		{"not a LoadShaper", ``, `bench: {kind: "exec", needs: ["warmup"], concurrency: [64], cells: [{isl: 512, osl: 8}]}`,
			Shape{Endpoint: "completions", Concurrency: 1, ISL: 128, OSL: 32},
			"stages.warmup: no stage that needs this warm-up says what load it applies (stages.bench (exec)), so it warms with the defaults concurrency 1, isl 128, osl 32"},
		{"own concurrency, guessed lengths", `concurrency: 4`, `bench: {kind: "exec", needs: ["warmup"]}`,
			Shape{Endpoint: "completions", Concurrency: 4, ISL: 128, OSL: 32},
			"so it warms with the defaults isl 128, osl 32;"},
		{"all its own", `concurrency: 4, isl: 64, osl: 16`, `bench: {kind: "exec", needs: ["warmup"]}`,
			Shape{Endpoint: "completions", Concurrency: 4, ISL: 64, OSL: 16}, ""},
		{"a LoadShaper beside it", ``, `bench: {kind: "exec", needs: ["warmup"]}
	sweep: {kind: "bench", needs: ["warmup"], concurrency: [2, 8], cells: [{isl: 256, osl: 64}]}`,
			Shape{Endpoint: "completions", Concurrency: 8, ISL: 256, OSL: 64}, ""},
		// A stage that only targets the server (it does not need the
		// warm-up) is not the warm-up's to match.
		{"a LoadShaper that does not need it", `concurrency: 2`, `sweep: {kind: "bench", target: "server", concurrency: [16]}`,
			Shape{Endpoint: "completions", Concurrency: 2, ISL: 128, OSL: 32}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, c, err := load(t, tt.warm, tt.next)
			if err != nil {
				t.Fatal(err)
			}
			got := s.ShapeFor(c.Dependents())
			if got := (Shape{Endpoint: got.Endpoint, Concurrency: got.Concurrency, ISL: got.ISL, OSL: got.OSL}); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("shape = %+v, want %+v", got, tt.want)
			}
			ws := s.Warnings(c)
			switch {
			case tt.warning == "" && len(ws) > 0:
				t.Errorf("warnings: %v", ws)
			case tt.warning != "" && (len(ws) != 1 || !strings.Contains(ws[0].Msg, tt.warning) || ws[0].Pos.Line == 0):
				t.Errorf("warnings: %v\nwant one with a position, saying %q", ws, tt.warning)
			}
		})
	}
}

func TestSettled(t *testing.T) {
	tests := []struct {
		name   string
		ttfts  []float64
		window int
		want   bool
	}{
		{"too few", []float64{10, 10, 10}, 2, false},
		{"flat", []float64{50, 10, 10, 10, 10}, 2, true},
		{"still falling", []float64{100, 80, 60, 40}, 2, false},
		{"within 10%", []float64{10, 10, 10.5, 10.5}, 2, true},
		{"median ignores one outlier", []float64{10, 10, 10, 10, 10, 90}, 3, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, why := Settled(tt.ttfts, tt.window, 0.1); got != tt.want {
				t.Fatalf("Settled = %v (%s), want %v", got, why, tt.want)
			}
		})
	}
}

// counting wraps a real simulator, counting completions and optionally
// delaying each request more than the last (a server that never settles).
func counting(t *testing.T, grow time.Duration) (*httptest.Server, *atomic.Int64, *atomic.Int64) {
	cfg := sim.DefaultConfig()
	cfg.Models = []string{"tiny"}
	cfg.TTFT, cfg.ITL = 5*time.Millisecond, time.Millisecond
	s := simtest.NewSimFrom(t, cfg)
	var n, maxInFlight, inFlight atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Only the warm-up's own (streamed) requests count: discovery and
		// calibration probes are not warm-up load.
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if r.Method == http.MethodPost && bytes.Contains(body, []byte(`"stream":true`)) {
			i := n.Add(1)
			cur := inFlight.Add(1)
			defer inFlight.Add(-1)
			for {
				m := maxInFlight.Load()
				if cur <= m || maxInFlight.CompareAndSwap(m, cur) {
					break
				}
			}
			time.Sleep(time.Duration(i) * grow)
		}
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts, &n, &maxInFlight
}

// run runs the warm-up as the runner does: its Env finds the followers
// (Env.Dependents) in the graph load built.
func run(t *testing.T, s *Stage, c *pipeline.Check, url string) (*pipeline.Outputs, string, error) {
	var progress strings.Builder
	env := &pipeline.Env{Stage: s.spec, Plan: c.Plan, Graph: c.Graph(), Dir: t.TempDir(), Deps: map[string]*pipeline.Outputs{"server": {URL: url}}, Log: io.Discard, Progress: &progress}
	out, err := s.Run(context.Background(), env)
	return out, progress.String(), err
}

// loaded is load for a plan that must build.
func loaded(t *testing.T, warm, next string) (*Stage, *pipeline.Check) {
	t.Helper()
	s, c, err := load(t, warm, next)
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

func TestFixedCountAtTheSweepsConcurrency(t *testing.T) {
	ts, n, maxInFlight := counting(t, 0)
	s, p := loaded(t, `requests: 12`, `sweep: {kind: "bench", needs: ["warmup"], concurrency: [1, 4], cells: [{isl: 16, osl: 4}]}`)
	out, _, err := run(t, s, p, ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	if n.Load() != 12 || out.Values["warmup_requests"] != 12 {
		t.Fatalf("%d requests sent, outputs %v; want 12", n.Load(), out.Values)
	}
	if m := maxInFlight.Load(); m != 4 {
		t.Fatalf("at most %d in flight, want the sweep's top concurrency 4", m)
	}
}

func TestUntilSettled(t *testing.T) {
	ts, n, _ := counting(t, 0)
	s, p := loaded(t, `settle: {window: 4, max_requests: 100}`, `sweep: {kind: "bench", needs: ["warmup"], concurrency: [2], cells: [{isl: 16, osl: 4}]}`)
	out, progress, err := run(t, s, p, ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	if out.Values["warmup_settled"] != true || n.Load() >= 100 {
		t.Fatalf("settled=%v after %d requests; progress:\n%s", out.Values["warmup_settled"], n.Load(), progress)
	}
	if !strings.Contains(progress, "TTFT settled") {
		t.Errorf("progress:\n%s", progress)
	}
}

func TestNeverSettles(t *testing.T) {
	// Each request 25 ms slower than the last: two windows' medians 75 ms
	// apart, at least 25% (the last windows'), which a busy machine's late
	// wakes do not close (at 10 ms a request, 30 ms apart, a loaded suite
	// once closed them to within 5%).
	ts, n, _ := counting(t, 25*time.Millisecond)
	s, p := loaded(t, `concurrency: 1, settle: {window: 3, tolerance: 0.05, max_requests: 12}, isl: 8, osl: 2`, ``)
	out, progress, err := run(t, s, p, ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	if out.Values["warmup_settled"] != false || n.Load() != 12 {
		t.Fatalf("settled=%v after %d", out.Values["warmup_settled"], n.Load())
	}
	if !strings.Contains(progress, "warning: TTFT did not settle within 12 requests (window medians") {
		t.Fatalf("progress:\n%s", progress)
	}
	s, p = loaded(t, `concurrency: 1, settle: {window: 3, tolerance: 0.05, max_requests: 12}, isl: 8, osl: 2, require_settled: true`, ``)
	if _, _, err := run(t, s, p, ts.URL); err == nil || !strings.Contains(err.Error(), "did not settle") {
		t.Fatalf("require_settled: err = %v", err)
	}
}

func TestAllFail(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{"message":"overloaded"}}`, http.StatusInternalServerError)
	}))
	defer ts.Close()
	s, p := loaded(t, `concurrency: 2, requests: 2`, ``)
	if _, _, err := run(t, s, p, ts.URL); err == nil || !strings.Contains(err.Error(), "all 2 warm-up requests failed") || !strings.Contains(err.Error(), "overloaded") {
		t.Fatalf("err = %v", err)
	}
}

// Once it is clear that every request fails, the warm-up stops sending
// and says what the server answered, instead of sending all 200.
func TestAllFailStopsEarly(t *testing.T) {
	var n atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		http.Error(w, `{"error":{"message":"the request exceeds the available context size"}}`, http.StatusBadRequest)
	}))
	defer ts.Close()
	s, p := loaded(t, `concurrency: 2, requests: 200, isl: 8, osl: 2`, ``)
	_, _, err := run(t, s, p, ts.URL)
	if err == nil || !strings.Contains(err.Error(), "so the rest were not sent") || !strings.Contains(err.Error(), "exceeds the available context size") {
		t.Fatalf("err = %v", err)
	}
	if got := n.Load(); got > 40 {
		t.Fatalf("%d requests reached the server (discovery included); the warm-up should stop after a handful of failures", got)
	}
}

// The warm-up sizes its prompts exactly as the sweep does (the shared
// calibration): against llama-server's habits every warm-up prompt is isl
// tokens as the server counts them. Before, a "64" cell's warm-up sent 185.
func TestWarmupPromptsAreCalibrated(t *testing.T) {
	cfg := simtest.DefaultConfigFor(sim.PersonaLlamaServer)
	cfg.Models = []string{"tiny"}
	cfg.TTFT, cfg.ITL, cfg.EOSProb = 2*time.Millisecond, time.Millisecond, 0
	srv := simtest.NewSimFrom(t, cfg)
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	s, p := loaded(t, `requests: 8`, `sweep: {kind: "bench", needs: ["warmup"], concurrency: [2], cells: [{isl: 64, osl: 4}]}`)
	if _, _, err := run(t, s, p, ts.URL); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, rec := range srv.Records() {
		if !rec.Stream {
			continue // calibration probes are not streamed
		}
		n++
		if rec.PromptTokens != 64 {
			t.Fatalf("a warm-up prompt was %d tokens, want 64", rec.PromptTokens)
		}
	}
	if n != 8 {
		t.Fatalf("%d warm-up requests recorded", n)
	}
}
