package webhook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/redact"
	"github.com/benchrun/benchrun/internal/redact/redacttest"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/results/resultstest"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/pipeline/pipelinetest"
	"github.com/benchrun/benchrun/schema"
	"github.com/benchrun/benchrun/sinks/internal/resultdoc"
	"github.com/benchrun/benchrun/sinks/jsonsink"
	"github.com/benchrun/benchrun/sinks/webhook"
	"github.com/benchrun/benchrun/stages"
)

// The secrets the tests put in the environment: none of them may appear
// in an error, a progress line, the dry-run output or the manifest.
const (
	token      = "tok-5ecr3t-4f9a"
	secretPath = "T0001/B0002/XyZsecretPATH"
)

// received is one request the receiver got.
type received struct {
	Method, Path string
	Header       http.Header
	Body         []byte
}

// receiver is a real HTTP server on loopback that records every request
// and answers with the next of its statuses (the last one repeated).
type receiver struct {
	URL string

	mu       sync.Mutex
	got      []received
	statuses []int
	body     string        // the answer's body
	hang     chan struct{} // when set, never answer (until the client gives up)
}

func newReceiver(t *testing.T, statuses ...int) *receiver {
	t.Helper()
	r := &receiver{statuses: statuses}
	srv := httptest.NewServer(r)
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	r.URL = srv.URL
	return r
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.got = append(r.got, received{Method: req.Method, Path: req.URL.Path, Header: req.Header.Clone(), Body: b})
	code := http.StatusOK
	if n := len(r.got); len(r.statuses) > 0 {
		code = r.statuses[min(n, len(r.statuses))-1]
	}
	hang, body := r.hang, r.body
	r.mu.Unlock()
	if hang != nil {
		select {
		case <-hang:
		case <-req.Context().Done():
		}
		return
	}
	w.WriteHeader(code)
	_, _ = io.WriteString(w, body)
}

func (r *receiver) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

// setup forgets the secrets earlier tests registered and puts the test's
// in the environment: HOOK_URL is the receiver's URL with a secret path.
func setup(t *testing.T, r *receiver) {
	t.Helper()
	redacttest.Reset()
	t.Cleanup(redacttest.Reset)
	t.Setenv("HOOK_TOKEN", token)
	if r != nil {
		t.Setenv("HOOK_URL", r.URL+"/services/"+secretPath)
	}
}

// newSink decodes an entry as the pipeline does (New sees the fields
// beside #SinkBase).
func newSink(t *testing.T, params map[string]any) *webhook.Sink {
	t.Helper()
	s, err := webhook.Kind.New(pipeline.SinkSpec{Kind: "webhook", Name: "webhook", Params: params, Index: -1})
	if err != nil {
		t.Fatal(err)
	}
	return s.(*webhook.Sink)
}

// fixtureRun is the run the fixture rows belong to, and its summary.
func fixtureRun(t *testing.T) (*pipeline.RunInfo, *pipeline.Summary) {
	t.Helper()
	p := &schema.Plan{Name: "fixture", Description: "two cells", Metadata: map[string]string{"quant": "Q4_K_M"}}
	p.Model.Name = "sim-llama"
	ri := &pipeline.RunInfo{ID: resultstest.RunID, Plan: p, Dir: t.TempDir(), StartedAt: resultstest.T0}
	sum := &pipeline.Summary{Run: ri, Cells: len(resultstest.Points()), ExitCode: pipeline.ExitAssertion,
		Reason: "1 assertion failed", FinishedAt: resultstest.T0.Add(90 * time.Second)}
	return ri, sum
}

// feed hands the fixture's rows to a sink as the pipeline does, up to Stop.
func feed(t *testing.T, s pipeline.Sink, env *pipeline.SinkEnv) {
	t.Helper()
	if err := s.Start(env); err != nil {
		t.Fatal(err)
	}
	for _, pt := range resultstest.Points() {
		if err := s.Cell(pt.Cell, results.AsRequests(pt.Requests)); err != nil {
			t.Fatal(err)
		}
		if err := s.(pipeline.VerdictSink).Verdicts(pt.Cell, pt.Verdicts); err != nil {
			t.Fatal(err)
		}
	}
}

// noSecret fails the test when text holds one of the test's secrets.
func noSecret(t *testing.T, what, text string, r *receiver) {
	t.Helper()
	secrets := []string{token, secretPath}
	if r != nil {
		secrets = append(secrets, r.URL+"/services/"+secretPath)
	}
	for _, s := range secrets {
		if strings.Contains(text, s) {
			t.Errorf("%s holds the secret %q:\n%s", what, s, text)
		}
	}
}

// The result payload is result.json: the same bytes the json sink writes
// from the same calls, POSTed as application/json with the headers
// expanded from the environment.
func TestResultPayloadIsResultJSON(t *testing.T) {
	r := newReceiver(t)
	setup(t, r)
	ri, sum := fixtureRun(t)

	js := jsonsink.New()
	feed(t, js, pipelinetest.LiveEnv(ri))
	if err := js.Stop(sum); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(ri.Dir, jsonsink.FileName))
	if err != nil {
		t.Fatal(err)
	}

	var progress bytes.Buffer
	env := pipelinetest.LiveEnv(ri)
	env.Progress = &progress
	s := newSink(t, map[string]any{"url": "${HOOK_URL}", "headers": map[string]any{"Authorization": "Bearer ${HOOK_TOKEN}", "X-Plain": "as written"}})
	feed(t, s, env)
	if err := s.Stop(sum); err != nil {
		t.Fatal(err)
	}
	got := r.requests()
	if len(got) != 1 {
		t.Fatalf("%d requests, want 1", len(got))
	}
	q := got[0]
	if q.Method != http.MethodPost || q.Path != "/services/"+secretPath {
		t.Errorf("%s %s, want POST /services/%s", q.Method, q.Path, secretPath)
	}
	if ct := q.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	if a := q.Header.Get("Authorization"); a != "Bearer "+token {
		t.Errorf("Authorization %q, want the token from the environment", a)
	}
	if v := q.Header.Get("X-Plain"); v != "as written" {
		t.Errorf("X-Plain %q", v)
	}
	if !bytes.Equal(q.Body, want) {
		t.Errorf("body differs from result.json:\n--- body\n%s\n--- result.json\n%s", q.Body, want)
	}
	var doc resultdoc.Result
	if err := json.Unmarshal(q.Body, &doc); err != nil {
		t.Fatalf("body is not JSON: %v", err)
	}
	if doc.RunID != resultstest.RunID || len(doc.Cells) != 6 || doc.Assertions.Failed != 1 || doc.Status != "failed" {
		t.Errorf("body: run %q, %d cells, %d failed checks, status %q", doc.RunID, len(doc.Cells), doc.Assertions.Failed, doc.Status)
	}
	if !strings.Contains(progress.String(), "posted the result payload") {
		t.Errorf("progress: %q", progress.String())
	}
	noSecret(t, "progress", progress.String(), r)
}

// The summary payload: the outcome, verdict counts by outcome and the
// failed verdicts with their expression, cell and values.
func TestSummaryPayload(t *testing.T) {
	r := newReceiver(t)
	setup(t, r)
	ri, sum := fixtureRun(t)
	sum.Reason = "1 assertion failed (token " + token + " in a reason)" // a secret a stage let through
	redact.Add(token)
	s := newSink(t, map[string]any{"url": "${HOOK_URL}", "payload": "summary"})
	feed(t, s, pipelinetest.LiveEnv(ri))
	if err := s.Stop(sum); err != nil {
		t.Fatal(err)
	}
	got := r.requests()
	if len(got) != 1 {
		t.Fatalf("%d requests, want 1", len(got))
	}
	noSecret(t, "summary body", string(got[0].Body), r)
	var p webhook.Summary
	if err := json.Unmarshal(got[0].Body, &p); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, got[0].Body)
	}
	fin := resultstest.T0.Add(90 * time.Second)
	if p.RunID != resultstest.RunID || p.Plan != "fixture" || p.Status != "failed" || p.ExitCode == nil || *p.ExitCode != 1 ||
		!p.StartedAt.Equal(resultstest.T0) || p.FinishedAt == nil || !p.FinishedAt.Equal(fin) || p.Cells != 6 || p.RunDir != ri.Dir {
		t.Errorf("summary %+v", p)
	}
	if !strings.HasPrefix(p.Reason, "1 assertion failed") || !strings.Contains(p.Reason, redact.Mask) {
		t.Errorf("reason %q, want it with the token masked", p.Reason)
	}
	if want := map[string]int{"pass": 11, "fail": 1}; !reflect.DeepEqual(p.Verdicts, want) {
		t.Errorf("verdict counts %v, want %v", p.Verdicts, want)
	}
	if len(p.Failed) != 1 {
		t.Fatalf("failed verdicts %+v, want 1", p.Failed)
	}
	f := p.Failed[0]
	if f.Assertion == "" || f.Cell == "" || f.CellID != "sweep/256:32/c16" || len(f.Values) == 0 || f.Outcome != "fail" || f.Pos == "" {
		t.Errorf("failed verdict %+v", f)
	}
	if !strings.Contains(p.Text, "failed (exit 1)") || !strings.Contains(p.Text, "1 of 12 checks failed") || !strings.Contains(p.Text, f.Assertion) {
		t.Errorf("text %q", p.Text)
	}
}

// An unset variable is an error at Start naming it and the field, and
// saying to export it.
func TestUnsetVariable(t *testing.T) {
	setup(t, nil)
	ri, _ := fixtureRun(t)
	for _, tc := range []struct {
		params map[string]any
		want   []string
	}{
		{map[string]any{"url": "${WEBHOOK_TEST_UNSET_URL}"}, []string{"url", "${WEBHOOK_TEST_UNSET_URL}", "export"}},
		{map[string]any{"url": "http://127.0.0.1:1/x", "headers": map[string]any{"Authorization": "Bearer ${WEBHOOK_TEST_UNSET_TOKEN}"}},
			[]string{"headers.Authorization", "${WEBHOOK_TEST_UNSET_TOKEN}", "export"}},
	} {
		err := newSink(t, tc.params).Start(pipelinetest.LiveEnv(ri))
		if err == nil {
			t.Fatalf("%v: Start succeeded", tc.params)
		}
		t.Log(err)
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q does not say %q", err, w)
			}
		}
	}
}

// 503 is transient (the pipeline tries again) and the next try succeeds.
func TestServiceUnavailableIsTransient(t *testing.T) {
	r := newReceiver(t, http.StatusServiceUnavailable, http.StatusOK)
	setup(t, r)
	ri, sum := fixtureRun(t)
	s := newSink(t, map[string]any{"url": "${HOOK_URL}", "headers": map[string]any{"Authorization": "Bearer ${HOOK_TOKEN}"}})
	feed(t, s, pipelinetest.LiveEnv(ri))
	err := s.Stop(sum)
	if err == nil || !pipeline.IsTransient(err) || !strings.Contains(err.Error(), "503") {
		t.Fatalf("Stop: %v (transient %v), want a transient 503", err, pipeline.IsTransient(err))
	}
	noSecret(t, "the 503 error", err.Error(), r)
	t.Log(err)
	if err := s.Stop(sum); err != nil {
		t.Fatalf("second try: %v", err)
	}
	got := r.requests()
	if len(got) != 2 || !bytes.Equal(got[0].Body, got[1].Body) {
		t.Errorf("%d requests (bodies equal: %v), want the same body twice", len(got), len(got) == 2 && bytes.Equal(got[0].Body, got[1].Body))
	}
	for _, code := range []int{408, 425, 429, 500, 502} {
		r := newReceiver(t, code)
		s := newSink(t, map[string]any{"url": r.URL})
		feed(t, s, pipelinetest.LiveEnv(ri))
		if err := s.Stop(sum); !pipeline.IsTransient(err) {
			t.Errorf("HTTP %d: %v, want a transient error", code, err)
		}
	}
}

// Other 4xx are permanent: the error quotes the start of the answer
// (secrets masked) and says what to check.
func TestClientErrorIsPermanent(t *testing.T) {
	r := newReceiver(t, http.StatusBadRequest)
	setup(t, r)
	r.body = "invalid_payload: missing field `text` (you sent Bearer " + token + ")\n" + strings.Repeat("x", 1000)
	ri, sum := fixtureRun(t)
	s := newSink(t, map[string]any{"url": "${HOOK_URL}", "headers": map[string]any{"Authorization": "Bearer ${HOOK_TOKEN}"}})
	feed(t, s, pipelinetest.LiveEnv(ri))
	err := s.Stop(sum)
	if err == nil || pipeline.IsTransient(err) {
		t.Fatalf("Stop: %v, want a permanent error", err)
	}
	msg := err.Error()
	for _, w := range []string{"400", "invalid_payload: missing field `text`", redact.Mask, "payload: \"summary\""} {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q does not say %q", msg, w)
		}
	}
	if len(msg) > 800 {
		t.Errorf("error quotes %d characters, want a short excerpt: %s", len(msg), msg)
	}
	var se *webhook.StatusError
	if !errors.As(err, &se) || se.Code != 400 {
		t.Errorf("error %v is not a StatusError 400", err)
	}
	noSecret(t, "the 400 error", msg, r)
	t.Log(err)
	r401 := newReceiver(t, http.StatusUnauthorized)
	s = newSink(t, map[string]any{"url": r401.URL})
	feed(t, s, pipelinetest.LiveEnv(ri))
	if err := s.Stop(sum); err == nil || pipeline.IsTransient(err) || !strings.Contains(err.Error(), "credentials") {
		t.Errorf("401: %v, want a permanent error about the credentials", err)
	}
}

// A receiver that never answers: a transient timeout error within the
// entry's timeout.
func TestTimeout(t *testing.T) {
	r := newReceiver(t)
	setup(t, r)
	r.hang = make(chan struct{})
	t.Cleanup(func() { close(r.hang) })
	ri, sum := fixtureRun(t)
	s := newSink(t, map[string]any{"url": "${HOOK_URL}", "timeout": "300ms"})
	feed(t, s, pipelinetest.LiveEnv(ri))
	t0 := time.Now()
	err := s.Stop(sum)
	took := time.Since(t0)
	if err == nil || !pipeline.IsTransient(err) || !strings.Contains(err.Error(), "timeout") || !strings.Contains(err.Error(), "300ms") {
		t.Fatalf("Stop: %v (transient %v), want a transient timeout naming 300ms", err, pipeline.IsTransient(err))
	}
	if took > 3*time.Second {
		t.Errorf("Stop took %s with a 300ms timeout", took)
	}
	noSecret(t, "the timeout error", err.Error(), r)
	t.Log(err)
}

// Connection refused is transient; the error shows neither the URL nor
// its host when they came from the environment.
func TestConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	setup(t, nil)
	t.Setenv("HOOK_URL", "http://"+addr+"/services/"+secretPath)
	ri, sum := fixtureRun(t)
	s := newSink(t, map[string]any{"url": "${HOOK_URL}"})
	feed(t, s, pipelinetest.LiveEnv(ri))
	err = s.Stop(sum)
	if err == nil || !pipeline.IsTransient(err) || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("Stop: %v (transient %v), want a transient connection refused", err, pipeline.IsTransient(err))
	}
	noSecret(t, "the refused error", err.Error(), nil)
	t.Log(err)
	if strings.Contains(err.Error(), addr) {
		t.Errorf("error %q shows the host from the environment", err)
	}
}

// A dry run sends nothing and prints the request, secrets masked, on
// stdout (or the progress writer when there is none).
func TestDryRun(t *testing.T) {
	r := newReceiver(t)
	setup(t, r)
	ri, sum := fixtureRun(t)
	for _, toStdout := range []bool{true, false} {
		var stdout, progress bytes.Buffer
		env := pipelinetest.LiveEnv(ri)
		env.Progress = &progress
		if toStdout {
			env.Stdout = &stdout
		}
		s := newSink(t, map[string]any{"url": "${HOOK_URL}", "dry_run": true, "payload": "summary",
			"headers": map[string]any{"Authorization": "Bearer ${HOOK_TOKEN}", "X-Short": "${HOOK_SHORT}"}})
		t.Setenv("HOOK_SHORT", "ab") // too short to register: masked all the same
		feed(t, s, env)
		if err := s.Stop(sum); err != nil {
			t.Fatal(err)
		}
		out := stdout.String()
		if !toStdout {
			out = progress.String()
		}
		for _, w := range []string{"dry run, nothing sent", "POST " + redact.Mask + "\n", "Authorization: " + redact.Mask + "\n",
			"X-Short: " + redact.Mask + "\n", "Content-Type: application/json\n", `"run_id": "` + resultstest.RunID + `"`, `"failed": [`} {
			if !strings.Contains(out, w) {
				t.Errorf("dry run (stdout %v) does not show %q:\n%s", toStdout, w, out)
			}
		}
		body, _ := s.Body(sum)
		if !strings.HasSuffix(out, "\n\n"+string(body)) {
			t.Errorf("dry run does not end with the exact body:\n%s", out)
		}
		noSecret(t, "the dry-run output", out, r)
		if strings.Contains(out, "X-Short: ab") {
			t.Errorf("a short env-derived header value is shown:\n%s", out)
		}
	}
	if n := len(r.requests()); n != 0 {
		t.Errorf("a dry run sent %d requests", n)
	}
}

// Through the pipeline: a live run POSTs result.json's bytes at the end,
// a 503 is retried under the entry's retry policy, and the manifest
// records the entry with its ${NAME} references, no secret anywhere.
func TestThroughThePipeline(t *testing.T) {
	r := newReceiver(t, http.StatusServiceUnavailable, http.StatusOK)
	setup(t, r)
	sim := pipelinetest.Sim(t)
	reg := pipeline.NewRegistry()
	stages.Builtin(reg)
	reg.AddSink(jsonsink.Kind)
	reg.AddSink(webhook.Kind)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rec := pipelinetest.RunStage(t, ctx, reg, fmt.Sprintf(`
name: "hook"
model: {name: "sim-llama"}
sinks: [{kind: "webhook", url: "${HOOK_URL}", headers: {Authorization: "Bearer ${HOOK_TOKEN}"}, retry: {attempts: 3, backoff: "10ms"}}]
stages: sweep: {
	kind: "sweep", target: %q
	cells: [{isl: 16, osl: 4}], concurrency: [1], requests: 2, warmup: 0
	assert: ["status == \"ok\""]
}`, sim), "sweep")
	if rec.Summary.ExitCode != pipeline.ExitOK {
		t.Fatalf("exit %d: %s\n%s", rec.Summary.ExitCode, rec.Summary.Reason, rec.Progress)
	}
	got := r.requests()
	if len(got) != 2 {
		t.Fatalf("%d requests, want the 503 and the retry", len(got))
	}
	want, err := os.ReadFile(filepath.Join(rec.Dir, jsonsink.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got[1].Body, want) {
		t.Errorf("body differs from the run's result.json:\n--- body\n%s\n--- result.json\n%s", got[1].Body, want)
	}
	if a := got[1].Header.Get("Authorization"); a != "Bearer "+token {
		t.Errorf("Authorization %q", a)
	}
	manifest, err := os.ReadFile(filepath.Join(rec.Dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Sinks []pipeline.SinkRecord `json:"sinks"`
	}
	if err := json.Unmarshal(manifest, &m); err != nil {
		t.Fatal(err)
	}
	var hook *pipeline.SinkRecord
	for i := range m.Sinks {
		if m.Sinks[i].Kind == "webhook" {
			hook = &m.Sinks[i]
		}
	}
	if hook == nil {
		t.Fatalf("manifest records no webhook sink: %s", manifest)
	}
	if hook.Status != pipeline.SinkOK || hook.Retries != 1 || hook.Config["url"] != "${HOOK_URL}" {
		t.Errorf("manifest record %+v, want ok after 1 retry, url as written", *hook)
	}
	if h, _ := hook.Config["headers"].(map[string]any); h["Authorization"] != "Bearer ${HOOK_TOKEN}" {
		t.Errorf("recorded headers %v, want the reference as written", hook.Config["headers"])
	}
	if !strings.Contains(rec.Progress, "↻ sink webhook: stop failed") {
		t.Errorf("progress does not show the retry:\n%s", rec.Progress)
	}
	noSecret(t, "manifest.json", string(manifest), r)
	noSecret(t, "progress", rec.Progress, r)
	for _, name := range []string{jsonsink.FileName, "plan.json", "plan.cue"} {
		if b, err := os.ReadFile(filepath.Join(rec.Dir, name)); err == nil {
			noSecret(t, name, string(b), r)
		}
	}
}

// vet places a bad entry at its field, file:line:col: the schema's
// checks (a timeout that is no duration, an unknown payload) and New's
// (a zero timeout, a URL that is not http).
func TestVetPlacesBadEntries(t *testing.T) {
	reg := pipeline.NewRegistry()
	stages.Builtin(reg)
	reg.AddSink(webhook.Kind)
	for _, tc := range []struct{ entry, want string }{
		{`{kind: "webhook", url: "http://x", timeout: "soon"}`, "timeout"},
		{`{kind: "webhook", url: "http://x", timeout: "0s"}`, "sinks[0].timeout"},
		{`{kind: "webhook", url: "http://x", payload: "everything"}`, "payload"},
		{`{kind: "webhook", url: "ftp://x"}`, "sinks[0].url"},
		{`{kind: "webhook", url: ""}`, "url"},
		{`{kind: "webhook", url: "http://x", headers: {"Bad Name": "v"}}`, "sinks[0].headers"},
	} {
		path := filepath.Join(t.TempDir(), "plan.cue")
		src := "name: \"p\"\nmodel: {name: \"m\"}\nsinks: [" + tc.entry + "]\nstages: h: {kind: \"health\", target: \"http://127.0.0.1:1\"}\n"
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		p, err := schema.Load(path, reg.LoadOptions(nil))
		if err == nil {
			_, err = pipeline.Build(p, reg)
		}
		if err == nil {
			t.Errorf("%s: vet passed", tc.entry)
			continue
		}
		t.Logf("%s: %v", tc.entry, err)
		if !strings.Contains(err.Error(), path+":3:") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %q, want it at %s:3:COL naming %s", tc.entry, err, path, tc.want)
		}
	}
}

// New decodes only: a URL naming an unset variable passes vet (the
// machine running vet need not hold the secret).
func TestNewReadsNoEnvironment(t *testing.T) {
	reg := pipeline.NewRegistry()
	stages.Builtin(reg)
	reg.AddSink(webhook.Kind)
	g := pipelinetest.LoadPlan(t, reg, `name: "p"
model: {name: "m"}
sinks: [{kind: "webhook", url: "${WEBHOOK_TEST_NEVER_SET}", headers: {Authorization: "Bearer ${WEBHOOK_TEST_NEVER_SET}"}}]
stages: h: {kind: "health", target: "http://127.0.0.1:1"}
`)
	found := false
	for _, u := range g.Sinks {
		if u.Kind.Name == "webhook" {
			found = true
			if u.Spec.Params["url"] != "${WEBHOOK_TEST_NEVER_SET}" || u.Spec.Params["timeout"] != "10s" || u.Spec.Params["payload"] != "result" {
				t.Errorf("params %v", u.Spec.Params)
			}
		}
	}
	if !found || !webhook.Kind.Remote || webhook.Kind.Default || webhook.Kind.Durable {
		t.Errorf("kind %+v (in the graph: %v)", webhook.Kind, found)
	}
}

// A receiver that redirects (307) to another: the webhook follows no
// redirect, so the other server never gets the payload nor the token; the
// error names where it pointed.
func TestRedirectIsNotFollowed(t *testing.T) {
	other := newReceiver(t)
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		http.Redirect(w, req, other.URL+"/elsewhere", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirect.Close)
	setup(t, nil)
	ri, sum := fixtureRun(t)
	s := newSink(t, map[string]any{"url": redirect.URL, "headers": map[string]any{"Authorization": "Bearer ${HOOK_TOKEN}"}})
	feed(t, s, pipelinetest.LiveEnv(ri))
	err := s.Stop(sum)
	if err == nil || !strings.Contains(err.Error(), "follows no redirect") || !strings.Contains(err.Error(), other.URL+"/elsewhere") {
		t.Fatalf("Stop: %v; want the redirect refused, naming where it pointed", err)
	}
	if got := other.requests(); len(got) != 0 {
		t.Errorf("the server redirected to received %d requests", len(got))
	}
}
