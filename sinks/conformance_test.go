package sinks_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	pq "github.com/parquet-go/parquet-go"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/rundir"
	"github.com/benchrun/benchrun/internal/sim"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/pipeline/engine"
	"github.com/benchrun/benchrun/pipeline/pipelinetest"
	"github.com/benchrun/benchrun/sinks"
	"github.com/benchrun/benchrun/stages"
)

// The sink conformance test: every non-durable sink kind sinks.Builtin
// registers (found in the registry, so a new sink is covered by its line
// in sinks/builtin.go alone) writes the same bytes when a run directory is
// replayed (`benchrun report RUN_DIR`) as it wrote live: after a run that
// went through, after one that failed half way and was resumed, and with
// --output PREFIX for the sinks that take it. A sink whose kind needs
// parameters to be listed in a plan gets them from sinkParams.

// sinkParams are the CUE fields a non-default sink kind needs beside
// `kind` to be listed in the conformance plan ("notebook: \"x\"").
var sinkParams = map[string]string{}

func registry() *pipeline.Registry {
	reg := pipeline.NewRegistry()
	stages.Builtin(reg)
	sinks.Builtin(reg)
	return reg
}

// replayable is every registered sink kind a replay drives: not the
// durable one (the replay's source) nor the remote ones (benchrun report
// never posts; their folders test them against a receiving server).
func replayable(reg *pipeline.Registry) []pipeline.SinkKind {
	var out []pipeline.SinkKind
	for _, k := range reg.Sinks() {
		if !k.Durable && !k.Remote {
			out = append(out, k)
		}
	}
	return out
}

// conformancePlan is a sweep over the simulator at url with three cells
// × two concurrencies: two cells measure, and the third (600 tokens, past
// the simulator's 512-token context) is refused, so its rows are errors
// with NULL metrics and its verdicts errors. Every non-default sink kind
// is listed in `sinks`.
func conformancePlan(reg *pipeline.Registry, url string) string {
	var entries []string
	for _, k := range replayable(reg) {
		if k.Default {
			continue
		}
		e := fmt.Sprintf("{kind: %q", k.Name)
		if p := sinkParams[k.Name]; p != "" {
			e += ", " + p
		}
		entries = append(entries, e+"}")
	}
	return fmt.Sprintf(`name: "conformance"
description: "every sink, live and replayed"
model: {name: "sim-llama"}
metadata: {quant: "Q4_K_M", gpu: "none"}
slo: {ttft_ms: 500, tpot_ms: 50}
sinks: [%s]
stages: sweep: {
	kind:        "sweep"
	target:      %q
	cells:       [{isl: 16, osl: 4}, {isl: 32, osl: 8}, {isl: 600, osl: 8}]
	concurrency: [1, 2]
	requests:    4
	warmup:      0
	assert: ["ttft_p99_ms < 10000", "itl_p99_ms < 1000*itl_p50_ms", "status == \"ok\""]
}
`, strings.Join(entries, ", "), url)
}

// dyingSim is the simulator behind a switch: after `left` streamed
// completions it dies (every connection is dropped unanswered, as a
// crashed server's would be) until revived.
type dyingSim struct {
	next http.Handler
	mu   sync.Mutex
	left int // completions still answered; < 0: never dies
	dead bool
}

func (d *dyingSim) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	if !d.dead && d.left >= 0 && r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/completions") {
		if d.left == 0 {
			d.dead = true
		} else {
			d.left--
		}
	}
	dead := d.dead
	d.mu.Unlock()
	if dead {
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				if tc, ok := conn.(*net.TCPConn); ok {
					_ = tc.SetLinger(0) // a reset, as from a process that is gone
				}
				conn.Close()
				return
			}
		}
		http.Error(w, "dead", http.StatusServiceUnavailable)
		return
	}
	d.next.ServeHTTP(w, r)
}

func (d *dyingSim) revive() {
	d.mu.Lock()
	d.dead, d.left = false, -1
	d.mu.Unlock()
}

func smallContext(c *sim.Config) { c.MaxModelLen = 512 }

// liveRun runs the plan at planPath through the registry's sinks in a run
// directory under base/runs, with the sinks' prefix (when given) set.
func liveRun(t *testing.T, reg *pipeline.Registry, planPath, src string, prefix string) (*pipeline.Summary, string) {
	t.Helper()
	g := pipelinetest.LoadPlanFile(t, reg, planPath, src)
	if prefix != "" {
		if err := g.SetSinkParam("prefix", prefix); err != nil {
			t.Fatal(err)
		}
	}
	ri, err := engine.NewRunInfo(filepath.Join(filepath.Dir(planPath), "runs"), g.Plan, nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return runGraph(t, g, ri)
}

// runGraph runs g, a recording sink beside the registry's: every row it
// is handed live must already be as the tables store it (checkStored), so
// that the byte-for-byte replay below holds with no sink rounding a time
// of its own.
func runGraph(t *testing.T, g *pipeline.Graph, ri *pipeline.RunInfo) (*pipeline.Summary, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, progress bytes.Buffer
	rec := pipelinetest.NewRecordingSink()
	sum, err := engine.Run(ctx, g, ri, engine.Options{Stdout: &stdout, Progress: &progress, FinallyTimeout: 5 * time.Second,
		Sinks: pipelinetest.UseSinks(rec)})
	if err != nil {
		t.Fatalf("run: %v\n%s", err, progress.String())
	}
	t.Logf("attempt %d: exit %d\n%s", ri.Attempt, sum.ExitCode, progress.String())
	got := rec.Snapshot()
	if len(got.Cells) == 0 || len(got.Requests) == 0 || len(got.Verdicts) == 0 {
		t.Fatalf("the recording sink was handed %d cells, %d requests, %d verdicts live: nothing to check", len(got.Cells), len(got.Requests), len(got.Verdicts))
	}
	checkStored(t, "handed live", &pipeline.Rows{Cells: got.Cells, Requests: rundir.RequestList(got.Requests), Verdicts: got.Verdicts, Samples: got.Samples})
	return sum, ri.Dir
}

// checkStored requires every time of rows (and of slices) to be as the
// tables store it (results.StoredTime: UTC, to the microsecond).
func checkStored(t *testing.T, what string, rows *pipeline.Rows, windows ...results.Slice) {
	t.Helper()
	var times []time.Time
	for _, s := range windows {
		times = append(times, s.StartedAt)
	}
	for _, c := range rows.Cells {
		times = append(times, c.StartedAt)
	}
	for r := range rows.Requests.All() {
		times = append(times, r.SentAt)
	}
	for _, v := range rows.Verdicts {
		times = append(times, v.JudgedAt)
	}
	for _, s := range rows.Samples {
		times = append(times, s.At)
	}
	for _, tm := range times {
		if tm != results.StoredTime(tm) {
			t.Fatalf("rows %s carry the time %s, not as the tables store it (%s): a sink would have to round it itself",
				what, tm.Format(time.RFC3339Nano), results.StoredTime(tm).Format(time.RFC3339Nano))
		}
	}
}

// checkRows asserts what the conformance plan is for: cell rows of both
// kinds, NULL metrics on the refused cell, and verdict rows.
func checkRows(t *testing.T, dir string) {
	t.Helper()
	run, err := rundir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := run.Rows()
	if err != nil {
		t.Fatal(err)
	}
	var ok, nulls int
	for _, c := range rows.Cells {
		if c.Status == results.StatusOK {
			ok++
		}
		if c.Status == results.StatusError && c.TTFTP99Ms == nil {
			nulls++
		}
	}
	if ok == 0 || nulls == 0 || len(rows.Verdicts) == 0 || rows.Requests.Len() == 0 {
		t.Fatalf("the run has %d ok cells, %d with null metrics, %d verdicts, %d requests: the plan no longer exercises the sinks", ok, nulls, len(rows.Verdicts), rows.Requests.Len())
	}
	// Slices are derived again from requests wherever they are shown, so
	// nothing but this check reads the stored ones back.
	parts, err := filepath.Glob(filepath.Join(dir, results.TableSlices, "*.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	var sl []results.Slice
	for _, p := range parts {
		part, err := pq.ReadFile[results.Slice](p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		sl = append(sl, part...)
	}
	if len(sl) == 0 {
		t.Fatalf("the run has no stored slices (%d parts)", len(parts))
	}
	checkStored(t, "read back for a replay", rows, sl...)
}

func TestSinkConformance(t *testing.T) {
	reg := registry()
	if len(replayable(reg)) == 0 {
		t.Fatal("no sink kind to check")
	}

	t.Run("live", func(t *testing.T) {
		base := t.TempDir()
		url := pipelinetest.Sim(t, smallContext)
		sum, dir := liveRun(t, reg, filepath.Join(base, "plan.cue"), conformancePlan(reg, url), "")
		if sum.ExitCode != pipeline.ExitInfra {
			t.Errorf("exit %d, want 3 (the refused cell is an error row)", sum.ExitCode)
		}
		checkRows(t, dir)
		checkReplay(t, reg, base, dir, "", nil)
	})

	t.Run("prefix", func(t *testing.T) {
		base := t.TempDir()
		url := pipelinetest.Sim(t, smallContext)
		prefix := filepath.Join(base, "out", "result")
		_, dir := liveRun(t, reg, filepath.Join(base, "plan.cue"), conformancePlan(reg, url), prefix)
		checkReplay(t, reg, base, dir, prefix, nil)
	})

	t.Run("resume", func(t *testing.T) {
		base := t.TempDir()
		srv := &dyingSim{next: pipelinetest.NewSim(t, smallContext), left: 8}
		url := pipelinetest.Serve(t, srv)
		src := conformancePlan(reg, url)
		planPath := filepath.Join(base, "plan.cue")
		sum, dir := liveRun(t, reg, planPath, src, "")
		if sum.ExitCode != pipeline.ExitInfra {
			t.Errorf("attempt 1: exit %d, want 3 (the simulator died)", sum.ExitCode)
		}
		first, err := rundir.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		done, _ := first.DoneCells()
		if len(done) == 0 || len(done) >= 4 {
			t.Fatalf("attempt 1 finished %d cells (%v); want some, not all of the four that fit", len(done), done)
		}
		// Each sink's files as the failed attempt left them are what a
		// replay of it writes, too.
		t.Run("failed", func(t *testing.T) { checkReplay(t, reg, base, dir, "", nil) })

		srv.revive()
		g := pipelinetest.LoadPlanFile(t, reg, planPath, src)
		ri, err := engine.ResumeRunInfo(dir, g.Plan, nil, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		runGraph(t, g, ri)
		final, err := rundir.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		if done, _ := final.DoneCells(); len(done) != 4 {
			t.Fatalf("after the resume %d cells are done (%v); want the four that fit", len(done), done)
		}
		checkRows(t, dir)
		t.Run("resumed", func(t *testing.T) { checkReplay(t, reg, base, dir, "", nil) })
	})
}

// pipelineFile says whether a file of a run directory is the pipeline's
// (the tables, which are the durable sink's and the replay's source; the
// manifest, the plan, the lock, stage logs) rather than a replayed sink's.
func pipelineFile(rel string) bool {
	top, _, nested := strings.Cut(rel, "/")
	if nested && slices.Contains(results.Tables, top) {
		return true
	}
	switch rel {
	case rundir.ManifestFile, rundir.PlanFile, rundir.ResolvedFile, "plan.resumed.json", rundir.LockFile:
		return true
	}
	return !nested && strings.HasSuffix(rel, ".log")
}

// readTree reads every file under dir by its slash-separated path.
func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		return out
	}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		out[filepath.ToSlash(rel)] = b
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func writeTree(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	for rel, b := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// checkReplay replays the run directory dir (under base, as the prefix
// is) and requires every sink's files, in the run directory and at the
// prefix, to be byte-identical to what the live run left. The copies keep
// their place relative to a new base, so a path a sink writes relative to
// the run directory (report's PREFIX.md links charts/) is the same.
//
// normalise, when set, rewrites the files of both sides before they are
// compared: for a difference that is known and named, never a sink's own.
func checkReplay(t *testing.T, reg *pipeline.Registry, base, dir, prefix string, normalise func(rel string, b []byte) []byte) {
	t.Helper()
	differ := func(rel string, live, replayed []byte) string {
		d := firstDiff(live, replayed)
		if d == "" || normalise == nil {
			return d
		}
		d2 := firstDiff(normalise(rel, live), normalise(rel, replayed))
		if d2 == "" {
			t.Logf("%s differs only where normalised (a known gap): %s", rel, strings.SplitN(d, "\n", 2)[0])
		}
		return d2
	}
	relDir, err := filepath.Rel(base, dir)
	if err != nil {
		t.Fatal(err)
	}
	live := readTree(t, dir)
	outDir, relPrefix := "", ""
	var liveOut map[string][]byte
	if prefix != "" {
		outDir = filepath.Dir(prefix)
		relPrefix, _ = filepath.Rel(base, prefix)
		liveOut = readTree(t, outDir)
		if len(liveOut) == 0 {
			t.Fatalf("no sink wrote anything at --output %s", prefix)
		}
	}
	sinkFiles := map[string][]byte{} // what the live run's sinks wrote
	kept := map[string][]byte{}      // the pipeline's files
	for rel, b := range live {
		if pipelineFile(rel) {
			kept[rel] = b
		} else {
			sinkFiles[rel] = b
		}
	}
	if len(sinkFiles) == 0 {
		t.Fatal("the live run's sinks wrote no file in the run directory")
	}

	// replay copies the run directory without the sinks' files (or with
	// them, over which the replay must write afresh) to a new base and
	// replays the named sink kinds there (nil: every sink). It returns
	// the files the replay left in the run directory and at the prefix.
	replay := func(t *testing.T, kinds []string, withSinkFiles bool) (run, out map[string][]byte) {
		t.Helper()
		b2 := t.TempDir()
		cp := filepath.Join(b2, relDir)
		writeTree(t, cp, kept)
		if withSinkFiles {
			writeTree(t, cp, sinkFiles)
		}
		var params map[string]any
		if prefix != "" {
			params = map[string]any{"prefix": filepath.Join(b2, relPrefix)}
		}
		uses, err := engine.ReplaySinks(reg, cp, params)
		if err != nil {
			t.Fatal(err)
		}
		if kinds != nil {
			uses = slices.DeleteFunc(uses, func(u *pipeline.SinkUse) bool { return !slices.Contains(kinds, u.Kind.Name) })
		}
		if _, err := engine.Replay(cp, uses, "", io.Discard); err != nil {
			t.Fatalf("replay: %v", err)
		}
		run = readTree(t, cp)
		for rel := range kept {
			delete(run, rel)
		}
		if prefix != "" {
			out = readTree(t, filepath.Join(b2, filepath.Dir(relPrefix)))
		}
		return run, out
	}

	claimed, claimedOut := map[string]string{}, map[string]string{}
	for _, k := range replayable(reg) {
		t.Run(k.Name, func(t *testing.T) {
			run, out := replay(t, []string{k.Name}, false)
			for rel, b := range run {
				want, ok := sinkFiles[rel]
				if !ok {
					t.Errorf("sink %s: a replay writes %s, which the live run did not", k.Name, rel)
					continue
				}
				claimed[rel] = k.Name
				if d := differ(rel, want, b); d != "" {
					t.Errorf("sink %s: %s differs between the live run and a replay of its run directory: %s", k.Name, rel, d)
				}
			}
			for rel, b := range out {
				want, ok := liveOut[rel]
				if !ok {
					t.Errorf("sink %s: a replay writes %s at the prefix, which the live run did not", k.Name, rel)
					continue
				}
				claimedOut[rel] = k.Name
				if d := differ(rel, want, b); d != "" {
					t.Errorf("sink %s: prefix file %s differs between the live run and a replay: %s", k.Name, rel, d)
				}
			}
			if prefix != "" && slices.Contains(k.Flags, "prefix") && len(out) == 0 {
				t.Errorf("sink %s takes the prefix flag but its replay wrote nothing at --output %s", k.Name, prefix)
			}
		})
	}
	for _, rel := range sortedKeys(sinkFiles) {
		if claimed[rel] == "" {
			t.Errorf("the live run wrote %s, which no sink's replay writes (a sink's file that is not a function of its calls)", rel)
		}
	}
	for _, rel := range sortedKeys(liveOut) {
		if claimedOut[rel] == "" {
			t.Errorf("the live run wrote %s at the prefix, which no sink's replay writes", rel)
		}
	}

	// Every sink at once (benchrun report), and over the files already
	// there: a replay writes its files afresh, it never appends.
	for _, withFiles := range []bool{false, true} {
		run, out := replay(t, nil, withFiles)
		if !equalTrees(t, sinkFiles, run, differ, fmt.Sprintf("replay of every sink (over the existing files: %v)", withFiles)) {
			continue
		}
		if prefix != "" {
			equalTrees(t, liveOut, out, differ, fmt.Sprintf("replay of every sink at the prefix (over the existing files: %v)", withFiles))
		}
	}
}

func equalTrees(t *testing.T, want, got map[string][]byte, differ func(rel string, live, replayed []byte) string, what string) bool {
	t.Helper()
	ok := true
	for _, rel := range sortedKeys(want) {
		b, have := got[rel]
		if !have {
			t.Errorf("%s: %s missing", what, rel)
			ok = false
		} else if d := differ(rel, want[rel], b); d != "" {
			t.Errorf("%s: %s differs: %s", what, rel, d)
			ok = false
		}
	}
	for _, rel := range sortedKeys(got) {
		if _, have := want[rel]; !have {
			t.Errorf("%s: %s written, not by the live run", what, rel)
			ok = false
		}
	}
	return ok
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// firstDiff describes where live and replayed differ ("" when they do
// not): the first differing line of each.
func firstDiff(live, replayed []byte) string {
	if bytes.Equal(live, replayed) {
		return ""
	}
	a, b := strings.Split(string(live), "\n"), strings.Split(string(replayed), "\n")
	for i := 0; i < max(len(a), len(b)); i++ {
		var la, lb string
		if i < len(a) {
			la = a[i]
		}
		if i < len(b) {
			lb = b[i]
		}
		if la != lb {
			return fmt.Sprintf("line %d (of %d live, %d replayed):\n  live:     %s\n  replayed: %s", i+1, len(a), len(b), clip(la), clip(lb))
		}
	}
	return fmt.Sprintf("%d bytes live, %d replayed", len(live), len(replayed))
}

func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}
