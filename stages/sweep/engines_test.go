package sweep

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/loadgen"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/sim"
	"github.com/benchrun/benchrun/internal/sim/simtest"
	"github.com/benchrun/benchrun/pipeline"
)

// promptRecorder wraps a handler and keeps the prompt of every streamed
// generation request (calibration probes are not streamed).
type promptRecorder struct {
	mu      sync.Mutex
	prompts []string
	next    http.Handler
}

func (p *promptRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var req struct {
		Prompt string `json:"prompt"`
		Stream bool   `json:"stream"`
	}
	if strings.HasSuffix(r.URL.Path, "/completions") && json.Unmarshal(body, &req) == nil && req.Stream {
		p.mu.Lock()
		p.prompts = append(p.prompts, req.Prompt)
		p.mu.Unlock()
	}
	p.next.ServeHTTP(w, r)
}

// Cold prompts never repeat anywhere in the run: not across the ladder's
// points, not across warm-up and timed passes. Before, every point of a
// cell reused the same prompts, and a prompt cache served 98-99% of them
// at c=4.
func TestColdPromptsNeverRepeat(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.TTFT, cfg.ITL, cfg.EOSProb = 2*time.Millisecond, time.Millisecond, 0
	s := simtest.NewSimFrom(t, cfg)
	rec := &promptRecorder{next: s}
	hs := httptest.NewServer(rec)
	t.Cleanup(hs.Close)
	st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q
		cells: [{isl: 24, osl: 2}], concurrency: [1, 2, 4], requests: 8, warmup: 2`, hs.URL), ``)
	c, err := runStage(t, st, p)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range c.cells {
		if r.Status != results.StatusOK {
			t.Fatalf("%s: %s %s", r.CellID, r.Status, r.Reason)
		}
	}
	seen := map[string]int{}
	for _, pr := range rec.prompts {
		seen[pr]++
	}
	if len(rec.prompts) != 3*3*8 {
		t.Fatalf("%d streamed requests, want 72", len(rec.prompts))
	}
	for pr, n := range seen {
		if n > 1 {
			t.Fatalf("a cold prompt was sent %d times: %q", n, pr)
		}
	}
	// Warm prompts are the same set at every point and pass.
	rec.prompts = nil
	st, p = loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, prompts: "warm"
		cells: [{isl: 24, osl: 2}], concurrency: [1, 2], requests: 4, warmup: 1`, hs.URL), ``)
	if _, err := runStage(t, st, p); err != nil {
		t.Fatal(err)
	}
	distinct := map[string]bool{}
	for _, pr := range rec.prompts {
		distinct[pr] = true
	}
	if len(distinct) != 4 {
		t.Fatalf("warm prompts: %d distinct over %d requests, want 4", len(distinct), len(rec.prompts))
	}
}

// A cell whose isl+osl cannot fit the server's context is an error before
// any request is sent; the cells that fit run.
func TestCellOverTheContextIsRefusedUpFront(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.TTFT, cfg.ITL, cfg.EOSProb, cfg.MaxModelLen = 2*time.Millisecond, time.Millisecond, 0, 200
	s := simtest.NewSimFrom(t, cfg)
	rec := &promptRecorder{next: s}
	hs := httptest.NewServer(rec)
	t.Cleanup(hs.Close)
	st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q
		cells: [{isl: 64, osl: 16}, {isl: 256, osl: 16}], concurrency: [1, 2], requests: 4, warmup: 1`, hs.URL), ``)
	c, err := runStage(t, st, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.cells) != 4 {
		t.Fatalf("%d rows", len(c.cells))
	}
	for _, r := range c.cells {
		switch r.ISL {
		case 64:
			if r.Status != results.StatusOK || v(r.MaxModelLen) != 200 {
				t.Errorf("%s: %s %s (max_model_len %d)", r.CellID, r.Status, r.Reason, v(r.MaxModelLen))
			}
		case 256:
			if r.Status != results.StatusError || !strings.Contains(r.Reason, "isl+osl = 272 does not fit the server's context of 200 tokens") || !strings.Contains(r.Reason, "max_model_len") || r.Requests != 0 {
				t.Errorf("%s: %s %q", r.CellID, r.Status, r.Reason)
			}
		}
	}
	for _, pr := range rec.prompts {
		if n := sim.CountTokens(pr); n > 100 {
			t.Fatalf("a %d-token prompt was sent to a 200-token server", n)
		}
	}
}

// Every row says which engine version it measured; a server that will
// not say is "unknown", never a guess.
func TestRowsCarryTheEngineVersion(t *testing.T) {
	_, url := startSim(t, nil)
	st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q
		cells: [{isl: 16, osl: 2}], concurrency: [1], requests: 2, warmup: 0`, url), ``)
	c, err := runStage(t, st, p)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.cells[0].EngineVersion; got != "benchrun-sim" {
		t.Fatalf("engine_version %q, want the simulator's /version answer", got)
	}
	// No version endpoint at all.
	s := simtest.NewSimFrom(t, sim.DefaultConfig())
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/version" {
			http.NotFound(w, r)
			return
		}
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	st, p = loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q
		cells: [{isl: 16, osl: 2}], concurrency: [1], requests: 2, warmup: 0`, hs.URL), ``)
	if c, err = runStage(t, st, p); err != nil {
		t.Fatal(err)
	}
	if got := c.cells[0].EngineVersion; got != "unknown" {
		t.Fatalf("engine_version %q, want unknown", got)
	}
}

// When the server dies during a point, that point's reason is the death
// (not its first broken request), sending stops at once, and the rest are
// skipped.
func TestServerDeathLandsOnTheRunningPoint(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.TTFT, cfg.ITL, cfg.EOSProb = 2*time.Millisecond, 2*time.Millisecond, 0
	s := simtest.NewSimFrom(t, cfg)
	var mu sync.Mutex
	sent := 0
	var diedAt time.Time
	var lateSends int
	done := make(chan struct{})
	var once sync.Once
	hs := httptest.NewUnstartedServer(nil)
	hs.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"stream":true`)) && bytes.Contains(body, []byte(`"max_tokens":20`)) {
			mu.Lock()
			sent++
			n := sent
			if !diedAt.IsZero() && time.Since(diedAt) > 200*time.Millisecond {
				lateSends++
			}
			mu.Unlock()
			// The 4th streamed request of the c=2 point (after 8 at c=1
			// with its warm-up) kills the "server".
			if n == 8+4 {
				once.Do(func() {
					mu.Lock()
					diedAt = time.Now()
					mu.Unlock()
					go func() { hs.CloseClientConnections(); close(done) }()
				})
				panic(http.ErrAbortHandler)
			}
		}
		select {
		case <-done:
			panic(http.ErrAbortHandler)
		default:
		}
		s.ServeHTTP(w, r)
	})
	hs.Start()
	t.Cleanup(hs.Close)
	st, p := loadStage(t, `kind: "sweep", target: "server"
		cells: [{isl: 16, osl: 20}], concurrency: [1, 2, 4], requests: 4, warmup: 1`, ``)
	var c collected
	env := &pipeline.Env{Stage: p.Stages[0], Plan: p, Progress: io.Discard, Log: io.Discard,
		Deps: map[string]*pipeline.Outputs{"server": {URL: hs.URL, Done: done, DoneReason: func() string { return "signal: killed" }}},
		Emit: func(cell results.Cell, _ results.Requests) error {
			c.cells = append(c.cells, cell)
			return nil
		}}
	p.Stages[0].Target = "server"
	_, err := st.Run(t.Context(), env)
	if err == nil || !strings.Contains(err.Error(), "server died: signal: killed") {
		t.Fatalf("err = %v", err)
	}
	if len(c.cells) != 3 {
		t.Fatalf("%d rows", len(c.cells))
	}
	if c.cells[0].Status != results.StatusOK {
		t.Fatalf("c=1: %s %s", c.cells[0].Status, c.cells[0].Reason)
	}
	if c.cells[1].Status != results.StatusError || !strings.HasPrefix(c.cells[1].Reason, "server died: signal: killed") {
		t.Fatalf("c=2 (running when the server died): %s %q", c.cells[1].Status, c.cells[1].Reason)
	}
	if c.cells[2].Status != results.StatusSkipped || !strings.Contains(c.cells[2].Reason, "server died") {
		t.Fatalf("c=4: %s %q", c.cells[2].Status, c.cells[2].Reason)
	}
	if lateSends > 0 {
		t.Fatalf("%d requests were sent more than 200 ms after the server died", lateSends)
	}
}

// A server's sockets close before its exit is reaped (7–70 ms for a
// real llama-server): a pass that ended on refused connections waits for
// the death instead of starting the next pass into a closed port. Here
// the "server" dies on the warm-up pass's last request and its exit is
// known 50 ms later (as a real one's is, 7–70 ms); the timed pass must send nothing.
func TestNoPassStartsIntoADeadServer(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.TTFT, cfg.ITL, cfg.EOSProb = 2*time.Millisecond, 2*time.Millisecond, 0
	s := simtest.NewSimFrom(t, cfg)
	var mu sync.Mutex
	sent, afterDeath := 0, 0
	dead := false
	var dying []byte // the request the server died on (the client may resend it once)
	done := make(chan struct{})
	hs := httptest.NewUnstartedServer(nil)
	hs.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"stream":true`)) {
			mu.Lock()
			if dead {
				if !bytes.Equal(body, dying) {
					afterDeath++
				}
				mu.Unlock()
				panic(http.ErrAbortHandler)
			}
			sent++
			if sent == 4 { // the warm-up pass's last request
				dead, dying = true, body
				mu.Unlock()
				time.AfterFunc(50*time.Millisecond, func() { close(done) })
				panic(http.ErrAbortHandler)
			}
			mu.Unlock()
		}
		s.ServeHTTP(w, r)
	})
	hs.Start()
	t.Cleanup(hs.Close)
	st, p := loadStage(t, `kind: "sweep", target: "server", calibrate: "off"
		cells: [{isl: 16, osl: 20}], concurrency: [1, 2], requests: 4, warmup: 1`, ``)
	var c collected
	env := &pipeline.Env{Stage: p.Stages[0], Plan: p, Progress: io.Discard, Log: io.Discard,
		Deps: map[string]*pipeline.Outputs{"server": {URL: hs.URL, Done: done, DoneReason: func() string { return "exit status 1" }}},
		Emit: func(cell results.Cell, _ results.Requests) error {
			c.cells = append(c.cells, cell)
			return nil
		}}
	p.Stages[0].Target = "server"
	_, err := st.Run(t.Context(), env)
	if err == nil || !strings.Contains(err.Error(), "server died: exit status 1") {
		t.Fatalf("err = %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if afterDeath > 0 {
		t.Errorf("%d requests were sent after the server died (its exit known 50 ms later): the next pass did not wait for it", afterDeath)
	}
	if len(c.cells) != 2 || c.cells[0].Status != results.StatusError || !strings.HasPrefix(c.cells[0].Reason, "server died: exit status 1") {
		t.Fatalf("rows %d; first %s %q: want the dying point's row to carry the death", len(c.cells), c.cells[0].Status, c.cells[0].Reason)
	}
	if c.cells[1].Status != results.StatusSkipped {
		t.Errorf("c=2: %s %q, want skipped", c.cells[1].Status, c.cells[1].Reason)
	}
}

// Every request is bounded by default: a server that answers with
// keep-alive comments and no token fails the cell within the first-token
// limit (the stall timeout by default) instead of hanging it.
func TestNoRequestIsUnboundedByDefault(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/completions") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for r.Context().Err() == nil {
			fmt.Fprint(w, ": ping\n\n")
			w.(http.Flusher).Flush()
			time.Sleep(20 * time.Millisecond)
		}
	}))
	t.Cleanup(hs.Close)
	st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, calibrate: "off", stall_timeout: "300ms"
		cells: [{isl: 8, osl: 4}], concurrency: [2], requests: 2, warmup: 0`, hs.URL), ``)
	start := time.Now()
	c, err := runStage(t, st, p)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("the cell took %v", took)
	}
	if r := c.cells[0]; r.Status != results.StatusError || !strings.Contains(r.Reason, "no first token within 300ms") {
		t.Fatalf("%s %q", r.Status, r.Reason)
	}
	if b := st.bounded(&loadgen.Target{}, point{cell: Cell{OSL: 128}}); b.FirstTokenTimeout != 300*time.Millisecond || b.Timeout != 300*time.Millisecond+128*time.Second {
		t.Fatalf("bounds %v / %v", b.FirstTokenTimeout, b.Timeout)
	}
}

// Header values expand only ${NAME}: a literal "pa$$word$1" arrives as
// written (os.ExpandEnv made it "paword"), and an unset name is refused
// before anything is sent (it was sent as an empty value).
func TestHeaderExpansionOneRule(t *testing.T) {
	s := simtest.NewSimFrom(t, sim.DefaultConfig())
	var mu sync.Mutex
	var got []string
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("X-Secret"))
		mu.Unlock()
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	t.Setenv("BENCHRUN_TEST_HDR", "tok")
	st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, calibrate: "off", headers: {"X-Secret": "pa$$word$1-${BENCHRUN_TEST_HDR}"}
		cells: [{isl: 8, osl: 2}], concurrency: [1], requests: 1, warmup: 0`, hs.URL), ``)
	if _, err := runStage(t, st, p); err != nil {
		t.Fatal(err)
	}
	for _, h := range got {
		if h != "pa$$word$1-tok" {
			t.Fatalf("header arrived as %q", h)
		}
	}
	st, p = loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q, headers: {"Authorization": "Bearer ${BENCHRUN_TEST_UNSET}"}
		cells: [{isl: 8, osl: 2}], concurrency: [1], requests: 1, warmup: 0`, hs.URL), ``)
	mu.Lock()
	got = nil
	mu.Unlock()
	if _, err := runStage(t, st, p); err == nil || !strings.Contains(err.Error(), "stages.sweep.headers.Authorization: ${BENCHRUN_TEST_UNSET} is neither") {
		t.Fatalf("err = %v", err)
	}
	if len(got) != 0 {
		t.Fatalf("%d requests were sent with an unset header", len(got))
	}
}
