package siyuan_test

// These tests post real runs (a sweep against the simulator over HTTP,
// stored as Parquet) to a test SiYuan kernel: the kernel itself is
// AGPL-3.0 and not installable here, so siyuantest answers exactly as the
// recorded v3.7.3 kernel does (../shared/SIYUAN.md), including its
// duplicates on create, its SQL index lag and its auth failures.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/rundir"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/pipeline/engine"
	"github.com/benchrun/benchrun/pipeline/pipelinetest"
	"github.com/benchrun/benchrun/sinks"
	"github.com/benchrun/benchrun/sinks/siyuan"
	"github.com/benchrun/benchrun/sinks/siyuan/siyuantest"
	"github.com/benchrun/benchrun/stages"
)

func registry() *pipeline.Registry {
	reg := pipeline.NewRegistry()
	stages.Builtin(reg)
	sinks.Builtin(reg)
	return reg
}

// runPlan is a quickstart-like sweep (two cells × concurrency 1, 2) with
// an assertion that holds, or fails when fail is set.
func runPlan(t *testing.T, assertion string) string {
	t.Helper()
	url := pipelinetest.Sim(t)
	g := pipelinetest.LoadPlan(t, registry(), fmt.Sprintf(`
name: "quick"
model: {name: "sim-llama"}
metadata: {quant: "Q4_K_M"}
stages: sweep: {
	kind: "sweep", target: %q
	cells: [{isl: 16, osl: 8}, {isl: 32, osl: 8}], concurrency: [1, 2], requests: 4, warmup: 0
	assert: [%q]
}`, url, assertion))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rec := pipelinetest.Run(t, ctx, g, engine.Options{})
	if len(rec.Cells) != 4 {
		t.Fatalf("%d cells\n%s", len(rec.Cells), rec.Progress)
	}
	return rec.Dir
}

// post posts the run in dir to the kernel as `benchrun post DIR --sink
// siyuan --url URL` does, with extra params over the sink's defaults.
func post(t *testing.T, dir, url string, extra map[string]any) (string, error) {
	return postAs(t, dir, url, "", extra)
}

// postAs is post with the run's status as the caller found it ("": the
// manifest's; "crashed" for a run killed half way).
func postAs(t *testing.T, dir, url, status string, extra map[string]any) (string, error) {
	t.Helper()
	params := map[string]any{"url": url}
	for k, v := range extra {
		params[k] = v
	}
	uses, err := engine.PostSinks(registry(), dir, []string{"siyuan"}, params)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range uses {
		u.Backoff = 10 * time.Millisecond
	}
	var out, progress strings.Builder
	_, err = engine.ReplayWith(dir, uses, engine.ReplayOptions{Status: status, Progress: &progress, Stdout: &out})
	return out.String() + progress.String(), err
}

func runID(t *testing.T, dir string) string {
	t.Helper()
	r, err := rundir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r.ID()
}

// The run becomes one document of "ML Benchmarks" at
// /benchrun/PLAN/DATE RUN, marked with its run id, with the report's
// charts uploaded and shown inline; a second post updates the same
// document in place: one document, new content, the same id (here the
// first post saw the run crashed, titled so; the second sees it ok).
func TestPostsOneDocumentAndUpdatesIt(t *testing.T) {
	k := siyuantest.Start(t, siyuantest.Options{})
	t.Setenv("SIYUAN_TOKEN", siyuantest.DefaultToken)
	dir := runPlan(t, "status == \"ok\"")
	id := runID(t, dir)
	if out, err := postAs(t, dir, k.URL, "crashed", nil); err != nil {
		t.Fatalf("post: %v\n%s", err, out)
	}
	crashed := runDocs(k, id)
	if len(crashed) != 1 || !strings.HasSuffix(crashed[0].HPath, " (crashed)") {
		t.Fatalf("documents %+v, want one titled … (crashed)", crashed)
	}
	if out, err := post(t, dir, k.URL, nil); err != nil {
		t.Fatalf("post: %v\n%s", err, out)
	}
	nbs := k.Notebooks()
	if len(nbs) != 1 || nbs[0].Name != "ML Benchmarks" {
		t.Fatalf("notebooks %+v, want one ML Benchmarks", nbs)
	}
	docs := runDocs(k, id)
	if len(docs) != 1 {
		t.Fatalf("%d documents of run %s, want 1: %+v", len(docs), id, k.Docs())
	}
	d := docs[0]
	date := time.Now().UTC().Format("2006-01-02")
	if want := "/benchrun/quick/" + date + " " + id; d.HPath != want || d.Attrs["custom-benchrun-plan"] != "quick" || d.Attrs["custom-benchrun-status"] != "ok" {
		t.Errorf("document at %q with attrs %v, want %q marked plan quick, status ok", d.HPath, d.Attrs, want)
	}
	assets := k.Assets()
	if len(assets) < 4 {
		t.Errorf("%d assets uploaded, want the report's charts", len(assets))
	}
	for _, a := range assets {
		if !strings.Contains(d.Markdown, "]("+a.Path+")") {
			t.Errorf("asset %s (%s) is not shown in the document", a.Name, a.Path)
		}
	}
	for _, want := range []string{"## Key takeaways", "Prefill", "Generation", "Run directory"} {
		if !strings.Contains(d.Markdown, want) {
			t.Errorf("document lacks %q:\n%s", want, d.Markdown)
		}
	}

	if d.ID != crashed[0].ID || d.Markdown == crashed[0].Markdown || len(docsUnder(k, id)) != 1 {
		t.Errorf("after the second post: document %s (the first was %s), %d at the run's paths; want the one document, renamed, with new content", d.ID, crashed[0].ID, len(docsUnder(k, id)))
	}
	// Once more, unchanged: the same document, the same content.
	if out, err := post(t, dir, k.URL, nil); err != nil {
		t.Fatalf("third post: %v\n%s", err, out)
	}
	if docs = runDocs(k, id); len(docs) != 1 || docs[0].ID != d.ID || docs[0].Markdown != d.Markdown {
		t.Errorf("after the third post: documents %v, want %s as it was", ids(docs), d.ID)
	}
	if n := len(k.Notebooks()); n != 1 {
		t.Errorf("%d notebooks after the second post, want 1", n)
	}
	if n := len(k.Assets()); n != len(assets) {
		t.Errorf("%d assets after the second post, want the same %d (same name, same content: the same asset)", n, len(assets))
	}
}

// A failed run is posted marked failed (title and attribute); the
// document of the same run posted before, when it was ok, is renamed in
// place rather than duplicated.
func TestPostFailedRunIsMarked(t *testing.T) {
	k := siyuantest.Start(t, siyuantest.Options{})
	t.Setenv("SIYUAN_TOKEN", siyuantest.DefaultToken)
	dir := runPlan(t, "concurrency < 2") // fails on the c=2 cells
	if out, err := post(t, dir, k.URL, nil); err != nil {
		t.Fatalf("post: %v\n%s", err, out)
	}
	docs := runDocs(k, runID(t, dir))
	if len(docs) != 1 || !strings.HasSuffix(docs[0].HPath, " (failed)") || docs[0].Attrs["custom-benchrun-status"] != "failed" || !strings.Contains(docs[0].Markdown, "failed") {
		t.Fatalf("documents %+v: want one titled … (failed), marked failed", docs)
	}
}

// A run whose post stage could not reach the kernel is failed in its
// manifest for that alone: posted again once the kernel is up, its
// document is titled and marked by what it measured and judged (no
// "(failed)" beside "all 4 checks passed"), the post stage listed as
// posted since. A run that also failed a check still says "(failed)".
func TestRepostOfARunFailedOnlyByItsPost(t *testing.T) {
	for _, tc := range []struct {
		name      string
		assertion string
		failed    bool
	}{
		{"checks passed", "status == \"ok\"", false},
		{"a check failed", "concurrency < 2", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := siyuantest.Start(t, siyuantest.Options{})
			t.Setenv("SIYUAN_TOKEN", siyuantest.DefaultToken)
			k.Stop()
			dir := runPostedPlan(t, k.URL, tc.assertion)
			m, err := rundir.ReadManifest(dir)
			if err != nil {
				t.Fatal(err)
			}
			if m.Status != "failed" || !strings.Contains(m.Reason, "stage post failed") {
				t.Fatalf("manifest status %q (%s), want failed by the post stage", m.Status, m.Reason)
			}
			k.Restart()
			if out, err := post(t, dir, k.URL, nil); err != nil {
				t.Fatalf("post: %v\n%s", err, out)
			}
			docs := runDocs(k, runID(t, dir))
			if len(docs) != 1 {
				t.Fatalf("%d documents of the run, want 1", len(docs))
			}
			d := docs[0]
			titled := strings.HasSuffix(d.HPath, " (failed)")
			marked := d.Attrs["custom-benchrun-status"]
			if tc.failed {
				if !titled || marked != "failed" || !strings.Contains(d.Markdown, "**Run failed**") {
					t.Errorf("document %q marked %q, want titled … (failed), marked failed, saying Run failed:\n%s", d.HPath, marked, d.Markdown)
				}
				return
			}
			if titled || marked != "ok" || !strings.HasPrefix(d.Markdown, "**ok** · all 4 checks passed") || !strings.Contains(d.Markdown, "- stage post: failed, posted since (") {
				t.Errorf("document %q marked %q, want no (failed), marked ok, the summary ok with the post stage posted since:\n%s", d.HPath, marked, d.Markdown)
			}
		})
	}
}

// runPostedPlan is runPlan with the siyuan sink at url driven by a post
// stage (finally: it posts a failed run too).
func runPostedPlan(t *testing.T, url, assertion string) string {
	t.Helper()
	g := pipelinetest.LoadPlan(t, registry(), fmt.Sprintf(`
name: "quick"
model: {name: "sim-llama"}
sinks: [{kind: "siyuan", url: %q, timeout: "1s"}]
stages: {
	sweep: {
		kind: "sweep", target: %q
		cells: [{isl: 16, osl: 8}, {isl: 32, osl: 8}], concurrency: [1, 2], requests: 4, warmup: 0
		assert: [%q]
	}
	post: {kind: "post", needs: ["sweep"], finally: true, sinks: ["siyuan"]}
}`, url, pipelinetest.Sim(t), assertion))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rec := pipelinetest.Run(t, ctx, g, engine.Options{})
	if len(rec.Cells) != 4 {
		t.Fatalf("%d cells\n%s", len(rec.Cells), rec.Progress)
	}
	return rec.Dir
}

// A wrong token, or none for a kernel with a lock-screen password, is an
// error that says which variable to set, with no token in it; nothing is
// made.
func TestPostAuthFailures(t *testing.T) {
	dir := runPlan(t, "status == \"ok\"")
	for _, tc := range []struct {
		name  string
		lock  bool
		token string
	}{{"wrong token", false, "wrongtoken000001"}, {"no token, locked kernel", true, ""}} {
		t.Run(tc.name, func(t *testing.T) {
			k := siyuantest.Start(t, siyuantest.Options{Lock: tc.lock})
			t.Setenv("SIYUAN_TOKEN", tc.token)
			out, err := post(t, dir, k.URL, nil)
			if err == nil || !strings.Contains(err.Error(), "SIYUAN_TOKEN") || !strings.Contains(strings.ToLower(err.Error()), "auth") {
				t.Fatalf("err %v, want an auth failure naming SIYUAN_TOKEN\n%s", err, out)
			}
			if tc.token != "" && (strings.Contains(err.Error(), tc.token) || strings.Contains(out, tc.token)) {
				t.Errorf("the token is in the error or the output: %v\n%s", err, out)
			}
			if n := len(k.Docs()); n != 0 {
				t.Errorf("%d documents made", n)
			}
			if n := k.CallCount("notebook/lsNotebooks"); n != 1 {
				t.Errorf("lsNotebooks called %d times, want once: an auth failure is not retried", n)
			}
		})
	}
}

// A kernel that is not running: a clear error, retried as transient.
func TestPostKernelDown(t *testing.T) {
	k := siyuantest.Start(t, siyuantest.Options{})
	k.Stop()
	t.Setenv("SIYUAN_TOKEN", siyuantest.DefaultToken)
	dir := runPlan(t, "status == \"ok\"")
	out, err := post(t, dir, k.URL, nil)
	if err == nil || !strings.Contains(err.Error(), "not reachable") || !strings.Contains(out, "retrying") && !strings.Contains(out, "try") {
		t.Fatalf("err %v, want 'not reachable' after retries\n%s", err, out)
	}
	m, rerr := rundir.ReadManifest(dir)
	if rerr != nil {
		t.Fatal(rerr)
	}
	for _, f := range []string{"cells", "requests"} {
		if ents, _ := os.ReadDir(filepath.Join(dir, f)); len(ents) == 0 {
			t.Errorf("%s/ is empty after a failed post", f)
		}
	}
	if m.Status != "ok" {
		t.Errorf("manifest status %q changed by a failed post", m.Status)
	}
}

// The kernel dies right after creating the document, before the post
// marks it: the post fails; once the kernel is back, the next post finds
// the unmarked document by its path and completes it: still one document.
func TestPostCompletesAHalfFinishedPost(t *testing.T) {
	k := siyuantest.Start(t, siyuantest.Options{})
	t.Setenv("SIYUAN_TOKEN", siyuantest.DefaultToken)
	dir := runPlan(t, "status == \"ok\"")
	id := runID(t, dir)
	k.DieAfter("filetree/createDocWithMd", 1)
	if _, err := post(t, dir, k.URL, nil); err == nil {
		t.Fatal("the post went through a kernel that died half way")
	}
	if docs := docsUnder(k, id); len(docs) != 1 || docs[0].Attrs["custom-benchrun-run"] != "" {
		t.Fatalf("after the kernel died: %+v, want one unmarked document", docs)
	}
	k.Restart()
	if out, err := post(t, dir, k.URL, nil); err != nil {
		t.Fatalf("the next post: %v\n%s", err, out)
	}
	if docs := docsUnder(k, id); len(runDocs(k, id)) != 1 || len(docs) != 1 {
		t.Errorf("documents %+v, want the one document, now marked", docs)
	}
}

// A post that fails part way through the charts and is tried again (the
// sink's own retry of a 5xx, or `benchrun post` once a kernel that died
// is back) uploads only the charts not uploaded yet: the run's record
// (siyuan-assets.json) gives the paths the kernel answered before, so
// every chart is sent once (plus the one call the kernel refused), none
// is left behind unshown, and the document shows each.
func TestRetriedPostUploadsEachChartOnce(t *testing.T) {
	pass := siyuantest.Fault{Apply: true} // answered as usual
	for _, tc := range []struct {
		name string
		fail func(k *siyuantest.Kernel)
		// died: the first post fails for good; the next, once the
		// kernel is back, completes.
		died bool
		// refused counts the upload calls the kernel failed (their
		// charts are sent again).
		refused int
	}{
		{"the kernel dies after the first upload, posted again", func(k *siyuantest.Kernel) { k.DieAfter("asset/upload", 1) }, true, 0},
		{"the kernel dies after two uploads, posted again", func(k *siyuantest.Kernel) { k.DieAfter("asset/upload", 2) }, true, 0},
		{"HTTP 500 on the third upload, the sink's retry", func(k *siyuantest.Kernel) {
			k.FailNext("asset/upload", pass)
			k.FailNext("asset/upload", pass)
			k.FailNext("asset/upload", siyuantest.Fault{Status: 500, Code: -1, Msg: "internal error"})
		}, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := siyuantest.Start(t, siyuantest.Options{})
			t.Setenv("SIYUAN_TOKEN", siyuantest.DefaultToken)
			dir := runPlan(t, "status == \"ok\"")
			id := runID(t, dir)
			tc.fail(k)
			out, err := post(t, dir, k.URL, nil)
			if tc.died {
				if err == nil {
					t.Fatalf("the post went through a kernel that died half way\n%s", out)
				}
				k.Restart()
				out, err = post(t, dir, k.URL, nil)
			}
			if err != nil {
				t.Fatalf("post: %v\n%s", err, out)
			}
			assets := k.Assets()
			if len(assets) < 4 {
				t.Fatalf("%d charts, want at least 4 (more than the two before the failure)", len(assets))
			}
			sent := 0 // charts sent, over every upload call
			for _, a := range assets {
				n := 0
				for _, c := range k.Calls() {
					if c.Route == "/api/asset/upload" && strings.Contains(c.Body, `filename="`+a.Name+`"`) {
						n++
					}
				}
				if n > 1+tc.refused {
					t.Errorf("chart %s sent %d times", a.Name, n)
				}
				sent += n
			}
			if want := len(assets) + tc.refused; sent != want || k.CallCount("asset/upload") != want {
				t.Errorf("%d charts sent in %d upload calls, want %d of each for %d charts: a chart uploaded before the failure was uploaded again", sent, k.CallCount("asset/upload"), want, len(assets))
			}
			docs := runDocs(k, id)
			if len(docs) != 1 {
				t.Fatalf("%d documents of the run, want 1", len(docs))
			}
			if n := strings.Count(docs[0].Markdown, "]("+"assets/"); n != len(assets) {
				t.Errorf("the document shows %d images, want the %d charts", n, len(assets))
			}
			for _, a := range assets {
				if !strings.Contains(docs[0].Markdown, "]("+a.Path+")") {
					t.Errorf("chart %s (%s) is not shown in the document", a.Name, a.Path)
				}
			}
			rec, err := os.ReadFile(filepath.Join(dir, siyuan.AssetsFile))
			if err != nil {
				t.Fatalf("the record of uploaded charts: %v", err)
			}
			if strings.Contains(string(rec), siyuantest.DefaultToken) {
				t.Errorf("the token is in %s", siyuan.AssetsFile)
			}
		})
	}
}

// Two posts of the same run at once (the notebook does not exist yet)
// make one notebook and one document.
func TestTwoPostsAtOnce(t *testing.T) {
	k := siyuantest.Start(t, siyuantest.Options{})
	t.Setenv("SIYUAN_TOKEN", siyuantest.DefaultToken)
	dir := runPlan(t, "status == \"ok\"")
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = post(t, dir, k.URL, nil)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	id := runID(t, dir)
	if nbs, docs := k.Notebooks(), runDocs(k, id); len(nbs) != 1 || len(docs) != 1 || len(docsUnder(k, id)) != 1 {
		t.Errorf("%d notebooks, %d documents marked as the run's (%d at its paths); want one of each", len(nbs), len(docs), len(docsUnder(k, id)))
	}
}

// Of two notebooks of the name (the kernel makes duplicates), every post
// uses the same one: the lowest id (ids start with the creation time, so
// the oldest, to the second), whatever order the kernel lists them in.
func TestReusesTheOldestNotebook(t *testing.T) {
	k := siyuantest.Start(t, siyuantest.Options{})
	t.Setenv("SIYUAN_TOKEN", siyuantest.DefaultToken)
	first := min(k.AddNotebook("ML Benchmarks"), k.AddNotebook("ML Benchmarks"))
	dir := runPlan(t, "status == \"ok\"")
	if out, err := post(t, dir, k.URL, nil); err != nil {
		t.Fatalf("post: %v\n%s", err, out)
	}
	if docs := runDocs(k, runID(t, dir)); len(docs) != 1 || docs[0].Notebook != first {
		t.Errorf("documents %+v, want one in the oldest notebook %s", docs, first)
	}
}

// --dry-run prints the markdown and the calls, sends nothing, and never
// shows the token.
func TestDryRun(t *testing.T) {
	k := siyuantest.Start(t, siyuantest.Options{})
	t.Setenv("SIYUAN_TOKEN", siyuantest.DefaultToken)
	dir := runPlan(t, "status == \"ok\"")
	out, err := post(t, dir, k.URL, map[string]any{"dry_run": true})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(k.Calls()); n != 0 {
		t.Errorf("%d calls made by a dry run", n)
	}
	for _, want := range []string{"dry run, nothing sent", "/api/filetree/createDocWithMd", "--- markdown", "## Key takeaways", "token from $SIYUAN_TOKEN: set"} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, siyuantest.DefaultToken) {
		t.Error("the token is in the dry run's output")
	}
}

// runDocs are the kernel's documents marked as the run's.
func runDocs(k *siyuantest.Kernel, runID string) []siyuantest.Doc {
	var out []siyuantest.Doc
	for _, d := range k.Docs() {
		if d.Attrs["custom-benchrun-run"] == runID {
			out = append(out, d)
		}
	}
	return out
}

// docsUnder are the kernel's documents whose title names the run, marked
// or not (the parents the kernel makes, /benchrun and /benchrun/PLAN, are
// not).
func docsUnder(k *siyuantest.Kernel, runID string) []siyuantest.Doc {
	var out []siyuantest.Doc
	for _, d := range k.Docs() {
		if strings.Contains(d.Title, runID) {
			out = append(out, d)
		}
	}
	return out
}

func ids(docs []siyuantest.Doc) []string {
	var out []string
	for _, d := range docs {
		out = append(out, d.ID)
	}
	return out
}
