// Package siyuan posts a run to a SiYuan notebook, as the seed flowchart
// records every benchmark in "ML Benchmarks": one document per run with
// its tables, verdicts, takeaways and charts (document.go), found again
// and updated in place on every later post of the run, so a re-post, a
// retry after a kernel that died half way, or two posts at once never
// make a second document. The client (api.go) follows how a real kernel
// answers (../shared/SIYUAN.md), not SiYuan's docs; siyuantest is a test
// kernel that answers the same way.
package siyuan

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/benchrun/benchrun/internal/chart"
	"github.com/benchrun/benchrun/internal/httpsafe"
	"github.com/benchrun/benchrun/internal/redact"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
	"github.com/benchrun/benchrun/sinks/internal/runview"
)

// What this sink implements, checked by the compiler.
var (
	_ pipeline.Sink        = (*Sink)(nil)
	_ pipeline.VerdictSink = (*Sink)(nil)
)

//go:embed schema.cue
var schemaSource string

// Kind registers the sink: remote (benchrun post drives it again from a
// run directory; benchrun report never does), listed by a plan entry.
var Kind = pipeline.SinkKind{
	Name:   "siyuan",
	Doc:    "post the run as one document of a SiYuan notebook (updated in place on every post; token from $SIYUAN_TOKEN)",
	Schema: schema.KindSchema{Def: "#SiYuan", Source: schemaSource},
	Remote: true,
	Writes: "the SiYuan document",
	Flags:  []string{"url", "dry_run"},
	New:    New,
}

// DefaultURL is where a desktop SiYuan kernel listens.
const DefaultURL = "http://127.0.0.1:6806"

// Attribute names that mark the run's document (lowercase letters,
// digits and "-" only: the kernel refuses the whole call otherwise).
const (
	attrRun    = "custom-benchrun-run"
	attrPlan   = "custom-benchrun-plan"
	attrStatus = "custom-benchrun-status"
)

// Config is the sink's configuration (schema.cue).
type Config struct {
	URL         string `json:"url"`
	Notebook    string `json:"notebook"`
	Path        string `json:"path"`
	TokenEnv    string `json:"token_env"`
	Compare     string `json:"compare"`
	CompareLast int    `json:"compare_last"`
	Charts      *bool  `json:"charts"`
	Timeout     string `json:"timeout"`
	DryRun      bool   `json:"dry_run"`
}

// Sink is a configured siyuan sink.
type Sink struct {
	name    string
	cfg     Config
	timeout time.Duration

	env      *pipeline.SinkEnv
	url      string
	token    string
	cells    []results.Cell
	verdicts []results.Verdict
	// views are what the charts draw from the cells' requests.
	views runview.Views
}

// New decodes the configuration (no I/O; the environment is read at Start).
func New(spec pipeline.SinkSpec) (pipeline.Sink, error) {
	o := &Sink{name: spec.Name, cfg: Config{Notebook: "ML Benchmarks", Path: "/benchrun/{plan}/{date} {run}", TokenEnv: "SIYUAN_TOKEN", CompareLast: 5, Timeout: "30s"}}
	if err := spec.Decode(&o.cfg); err != nil {
		return nil, err
	}
	d, err := time.ParseDuration(o.cfg.Timeout)
	if err != nil || d <= 0 {
		return nil, spec.ErrorAt("timeout", fmt.Errorf("%q is not a positive duration (30s, 2m)", o.cfg.Timeout))
	}
	o.timeout = d
	if o.cfg.URL != "" && !strings.HasPrefix(o.cfg.URL, "http://") && !strings.HasPrefix(o.cfg.URL, "https://") {
		return nil, spec.ErrorAt("url", fmt.Errorf("%q is not an http:// or https:// URL (the kernel listens on http://127.0.0.1:6806)", o.cfg.URL))
	}
	if !strings.HasPrefix(o.cfg.Path, "/") {
		return nil, spec.ErrorAt("path", fmt.Errorf("%q must start with /", o.cfg.Path))
	}
	return o, nil
}

// Name implements pipeline.Sink.
func (o *Sink) Name() string { return o.name }

// Start resolves the kernel's URL and the token. A token that is not set
// is not an error here: a kernel without a lock-screen password accepts
// calls from 127.0.0.1 without one, and one that wants it says "Auth
// failed", which the post turns into what to set.
func (o *Sink) Start(env *pipeline.SinkEnv) error {
	o.env = env
	o.url = strings.TrimRight(firstNonEmpty(o.cfg.URL, os.Getenv("SIYUAN_URL"), DefaultURL), "/")
	o.token = os.Getenv(o.cfg.TokenEnv)
	redact.Add(o.token) // masked in every row, log and message
	o.cells, o.verdicts, o.views = nil, nil, runview.Views{}
	return nil
}

// Cell implements pipeline.Sink.
func (o *Sink) Cell(c results.Cell, reqs results.Requests) error {
	o.cells = append(o.cells, c)
	o.views.Keep(c, reqs)
	return nil
}

// Verdicts implements pipeline.VerdictSink.
func (o *Sink) Verdicts(_ results.Cell, rows []results.Verdict) error {
	o.verdicts = append(o.verdicts, rows...)
	return nil
}

// Stop posts the run. Every step can be repeated (the pipeline retries a
// transient failure by calling Stop again): the notebook and the document
// are looked up before anything is made.
func (o *Sink) Stop(sum *pipeline.Summary) error {
	run := pipeline.RunRecord(o.env.Run, sum)
	verdicts, reason := results.LatestVerdicts(o.verdicts), sum.Reason
	if postedOnlyFailure(run, verdicts, o.sinkRecords(sum), o.name) {
		// The title, the status attribute and the summary line say what
		// the run measured and judged: its one failure was this post,
		// which this document is.
		run, reason = postedRun(run), ""
	}
	doc := Document{
		Run: run, Status: run.Status, Reason: reason,
		Cells: results.LatestCells(o.cells), Verdicts: verdicts, RunDir: o.env.Run.Dir,
	}
	if o.cfg.Compare != "" {
		c, err := LoadComparison(o.env.HistoryRoot, o.cfg.Compare, doc.Cells, run.RunID, o.cfg.CompareLast)
		if err != nil {
			return fmt.Errorf("comparing with earlier runs of %s: %w", o.cfg.Compare, err)
		}
		doc.Compare = c
	}
	var charts []chart.Rendered
	if o.cfg.Charts == nil || *o.cfg.Charts {
		charts = runview.RunCharts(doc.Cells, doc.Verdicts, o.views)
	}
	path := o.docPath(run, run.Status)
	if o.cfg.DryRun {
		return o.dryRun(doc, charts, path, run)
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout*time.Duration(8+len(charts)))
	defer cancel()
	c := &Client{BaseURL: o.url, Token: o.token, TokenEnv: o.cfg.TokenEnv, HTTP: &http.Client{Timeout: o.timeout, CheckRedirect: httpsafe.NoRedirects}}
	unlock, err := lockFile(lockPath(o.url, o.cfg.Notebook))
	if err != nil {
		return fmt.Errorf("locking the post of run %s: %w", run.RunID, err)
	}
	defer unlock()
	id, err := o.post(ctx, c, doc, charts, path, run)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.env.Progress, "sink %s: run %s posted to %s, notebook %q, document %s (%s)\n", o.name, run.RunID, o.url, o.cfg.Notebook, id, path)
	return nil
}

// post is Stop's work against the kernel: the notebook, the charts, the
// document (found or made), its attributes, and the dedupe. It returns
// the document's id.
func (o *Sink) post(ctx context.Context, c *Client, doc Document, charts []chart.Rendered, path string, run results.Run) (string, error) {
	nb, err := o.notebook(ctx, c)
	if err != nil {
		return "", err
	}
	if len(charts) > 0 {
		if doc.Charts, err = o.uploadCharts(ctx, c, charts, run.RunID); err != nil {
			return "", err
		}
	}
	md := doc.Markdown()
	id, err := o.findDoc(ctx, c, nb, run)
	if err != nil {
		return "", err
	}
	if id == "" {
		if id, err = c.CreateDocWithMd(ctx, nb, path, md); err != nil {
			return "", fmt.Errorf("creating %s in notebook %q: %w", path, o.cfg.Notebook, err)
		}
	} else {
		if err := c.UpdateDocMarkdown(ctx, id, md); err != nil {
			return "", fmt.Errorf("updating document %s: %w", id, err)
		}
		// The title carries the run's status: rename when it changed
		// (an interrupted run posted again once resumed), keeping the id
		// so links to it survive.
		if cur, err := c.HPathByID(ctx, id); err == nil && cur != path && parentOf(cur) == parentOf(path) {
			if err := c.RenameDoc(ctx, id, titleOf(path)); err != nil {
				return "", fmt.Errorf("renaming document %s to %q: %w", id, titleOf(path), err)
			}
		}
	}
	// The attributes last: a post that dies before them leaves a document
	// the next post finds by its path and completes.
	attrs := map[string]string{attrRun: run.RunID, attrPlan: run.Plan, attrStatus: run.Status}
	if err := c.SetBlockAttrs(ctx, id, attrs); err != nil {
		return "", fmt.Errorf("marking document %s as run %s's: %w", id, run.RunID, err)
	}
	return o.dedupe(ctx, c, id, run.RunID)
}

// notebook finds the notebook by name: of several of that name (the
// kernel makes a second notebook of a name that exists), the lowest id,
// which every post picks alike (ids start with their creation time, so it
// is the oldest to the second). With none it creates it, then looks
// again and keeps the lowest id, removing its own if another post made
// one at the same time.
func (o *Sink) notebook(ctx context.Context, c *Client) (string, error) {
	find := func() (Notebook, bool, error) {
		nbs, err := c.ListNotebooks(ctx)
		if err != nil {
			return Notebook{}, false, fmt.Errorf("listing notebooks: %w", err)
		}
		var same []Notebook
		for _, nb := range nbs {
			if nb.Name == o.cfg.Notebook {
				same = append(same, nb)
			}
		}
		if len(same) == 0 {
			return Notebook{}, false, nil
		}
		slices.SortFunc(same, func(a, b Notebook) int { return strings.Compare(a.ID, b.ID) })
		return same[0], true, nil
	}
	nb, ok, err := find()
	if err != nil {
		return "", err
	}
	if !ok {
		made, err := c.CreateNotebook(ctx, o.cfg.Notebook)
		if err != nil {
			return "", fmt.Errorf("creating notebook %q: %w", o.cfg.Notebook, err)
		}
		if nb, ok, err = find(); err != nil {
			return "", err
		}
		if !ok {
			nb = made
		}
		if nb.ID != made.ID {
			// Another post made it first: ours is empty, and a second
			// notebook of the name would split the runs.
			if err := c.RemoveNotebook(ctx, made.ID); err != nil {
				return "", fmt.Errorf("removing the duplicate notebook %q (%s) this post made: %w", o.cfg.Notebook, made.ID, err)
			}
		}
	}
	if nb.Closed {
		if err := c.OpenNotebook(ctx, nb.ID); err != nil {
			return "", fmt.Errorf("opening notebook %q: %w", o.cfg.Notebook, err)
		}
	}
	return nb.ID, nil
}

// findDoc returns the run's document: the one marked with the run's id
// (found through SQL after a flush: without one the index lags by
// seconds), else one at the run's path under any status title (a post
// that died before marking it); "" when there is none. Several: the
// oldest.
func (o *Sink) findDoc(ctx context.Context, c *Client, nb string, run results.Run) (string, error) {
	ids, err := o.markedDocs(ctx, c, run.RunID)
	if err != nil {
		return "", err
	}
	if len(ids) == 0 {
		for _, status := range []string{results.StatusOK, pipeline.RunFailed, pipeline.RunInterrupted, pipeline.RunCrashed, run.Status} {
			found, err := c.IDsByHPath(ctx, nb, o.docPath(run, status))
			if err != nil {
				return "", fmt.Errorf("looking up %s: %w", o.docPath(run, status), err)
			}
			ids = append(ids, found...)
		}
	}
	if len(ids) == 0 {
		return "", nil
	}
	slices.Sort(ids)
	return ids[0], nil
}

// markedDocs are the documents whose run attribute is runID, sorted.
func (o *Sink) markedDocs(ctx context.Context, c *Client, runID string) ([]string, error) {
	if err := c.FlushTransaction(ctx); err != nil {
		return nil, fmt.Errorf("flushing the kernel's index: %w", err)
	}
	rows, err := c.SQL(ctx, fmt.Sprintf("SELECT block_id FROM attributes WHERE name='%s' AND value='%s' LIMIT 64", attrRun, sqlQuote(runID)))
	if err != nil {
		return nil, fmt.Errorf("finding the run's document: %w", err)
	}
	var ids []string
	for _, r := range rows {
		if id, ok := r["block_id"].(string); ok && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// dedupe removes the run's documents but the oldest, when two posts at
// once (from two machines: the lock covers one) each made one; it
// returns the one kept.
func (o *Sink) dedupe(ctx context.Context, c *Client, id, runID string) (string, error) {
	ids, err := o.markedDocs(ctx, c, runID)
	if err != nil || len(ids) < 2 {
		return id, err
	}
	for _, other := range ids[1:] {
		if err := c.RemoveDoc(ctx, other); err != nil && !IsNotFound(err) {
			return "", fmt.Errorf("removing the run's duplicate document %s: %w", other, err)
		}
	}
	return ids[0], nil
}

// docPath fills the path template for the run with the given status: a
// run that did not end ok says so in its title.
func (o *Sink) docPath(run results.Run, status string) string {
	date := ""
	if !run.StartedAt.IsZero() {
		date = run.StartedAt.UTC().Format("2006-01-02")
	}
	r := strings.NewReplacer("{plan}", segment(run.Plan), "{date}", date, "{run}", segment(run.RunID), "{model}", segment(run.Model))
	parts := strings.Split(r.Replace(o.cfg.Path), "/")
	var clean []string
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			clean = append(clean, truncate(p, 480))
		}
	}
	if len(clean) == 0 {
		clean = []string{segment(run.RunID)}
	}
	if status != "" && status != results.StatusOK {
		clean[len(clean)-1] += " (" + status + ")"
	}
	return "/" + strings.Join(clean, "/")
}

// dryRun prints the document and the calls that would post it, and sends
// nothing: to the command's stdout under `benchrun post --dry-run`, else
// to the progress writer. The token is never printed (only whether it is
// set).
func (o *Sink) dryRun(doc Document, charts []chart.Rendered, path string, run results.Run) error {
	w := o.env.Stdout
	if w == nil {
		w = o.env.Progress
	}
	for _, ch := range charts {
		name := assetName(run.RunID, ch.Name)
		doc.Charts = append(doc.Charts, ChartRef{Title: ch.Title, Path: "assets/" + name})
	}
	md := doc.Markdown()
	token := "not set"
	if o.token != "" {
		token = "set"
	}
	body := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	var b strings.Builder
	fmt.Fprintf(&b, "sink %s: dry run, nothing sent. Posting run %s to %s (token from $%s: %s) would make these calls:\n", o.name, run.RunID, o.url, o.cfg.TokenEnv, token)
	fmt.Fprintf(&b, "  POST /api/notebook/lsNotebooks {}   (then /api/notebook/createNotebook %s when no notebook has that name)\n", body(map[string]string{"name": o.cfg.Notebook}))
	if len(charts) > 0 {
		var names []string
		for _, ch := range charts {
			names = append(names, fmt.Sprintf("%s (%d bytes)", assetName(run.RunID, ch.Name), len(ch.SVG)))
		}
		fmt.Fprintf(&b, "  POST /api/asset/upload   multipart: assetsDirPath=/assets/, file[]=NAME, once per chart: %s   (not a chart this run uploaded to this kernel before with the same content, as %s records)\n", strings.Join(names, ", "), assetsFile)
	}
	fmt.Fprintf(&b, "  POST /api/sqlite/flushTransaction {}\n")
	fmt.Fprintf(&b, "  POST /api/query/sql %s\n", body(map[string]string{"stmt": fmt.Sprintf("SELECT block_id FROM attributes WHERE name='%s' AND value='%s' LIMIT 64", attrRun, sqlQuote(run.RunID))}))
	fmt.Fprintf(&b, "  POST /api/filetree/getIDsByHPath %s   (when no document is marked as the run's)\n", body(map[string]string{"notebook": "NOTEBOOK_ID", "path": path}))
	fmt.Fprintf(&b, "  POST /api/filetree/createDocWithMd %s   (or /api/block/updateBlock of the run's document, with the same markdown)\n", body(map[string]string{"notebook": "NOTEBOOK_ID", "path": path, "markdown": "<the markdown below>"}))
	fmt.Fprintf(&b, "  POST /api/attr/setBlockAttrs %s\n", body(map[string]any{"id": "DOC_ID", "attrs": map[string]string{attrRun: run.RunID, attrPlan: run.Plan, attrStatus: run.Status}}))
	fmt.Fprintf(&b, "--- markdown (%d bytes) ---\n%s--- end of markdown ---\n", len(md), md)
	_, err := io.WriteString(w, redact.String(b.String()))
	return err
}

// lockPath is the lock file of posts to one notebook of one kernel.
func lockPath(url, notebook string) string {
	h := sha256.Sum256([]byte(url + "\x00" + notebook))
	return filepath.Join(os.TempDir(), "benchrun-siyuan-"+hex.EncodeToString(h[:8])+".lock")
}

var unsafeAsset = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// assetName is a chart's file name: the run id and the chart, with
// nothing the kernel rewrites (spaces, brackets), so the same chart of
// the same run uploads to the same asset.
func assetName(runID, chart string) string {
	return unsafeAsset.ReplaceAllString("benchrun-"+runID+"-"+chart, "-") + ".svg"
}

// segment is a value made safe for one path segment: a "/" would split it
// (the kernel drops it from titles).
func segment(s string) string { return strings.ReplaceAll(strings.TrimSpace(s), "/", "-") }

// truncate cuts s to n runes (the kernel cuts titles at 512 characters,
// and then the path the sink looks up would not match).
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}

func parentOf(p string) string { return p[:strings.LastIndex(p, "/")+1] }

func titleOf(p string) string { return p[strings.LastIndex(p, "/")+1:] }

// sqlQuote escapes a value for a single-quoted SQL string.
func sqlQuote(s string) string { return strings.ReplaceAll(s, "'", "''") }

func firstNonEmpty(xs ...string) string {
	for _, x := range xs {
		if x != "" {
			return x
		}
	}
	return ""
}
