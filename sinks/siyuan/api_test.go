package siyuan

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/sinks/siyuan/siyuantest"
)

// apiToken is distinctive so a test can tell it never leaks into a message.
const apiToken = "s3cr3tTok3nXy9Qz"

func apiKernel(t *testing.T, opts siyuantest.Options) (*siyuantest.Kernel, *Client) {
	t.Helper()
	if opts.Token == "" {
		opts.Token = apiToken
	}
	k := siyuantest.Start(t, opts)
	return k, &Client{BaseURL: k.URL, Token: opts.Token, HTTP: &http.Client{Timeout: 5 * time.Second}}
}

func TestAPIRoundTrip(t *testing.T) {
	k, c := apiKernel(t, siyuantest.Options{})
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	p, err := c.BootProgress(ctx)
	must(err)
	if p.Progress != 100 {
		t.Errorf("BootProgress = %+v", p)
	}
	v, err := c.Version(ctx)
	must(err)
	if v != "3.7.3" {
		t.Errorf("Version = %q", v)
	}
	nb, err := c.CreateNotebook(ctx, "ML Benchmarks")
	must(err)
	nbs, err := c.ListNotebooks(ctx)
	must(err)
	if len(nbs) != 1 || nbs[0] != nb || nb.Name != "ML Benchmarks" {
		t.Errorf("ListNotebooks = %+v, created %+v", nbs, nb)
	}
	must(c.CloseNotebook(ctx, nb.ID))
	must(c.OpenNotebook(ctx, nb.ID))

	ids, err := c.IDsByHPath(ctx, nb.ID, "/benchrun/q/run-1")
	must(err)
	if ids == nil || len(ids) != 0 {
		t.Errorf("IDsByHPath before = %#v, want empty", ids)
	}
	id, err := c.CreateDocWithMd(ctx, nb.ID, "/benchrun/q/run-1", "# Run 1\n\n| a | b |\n|---|---|\n| 1 | 2 |\n")
	must(err)
	ids, err = c.IDsByHPath(ctx, nb.ID, "/benchrun/q/run-1")
	must(err)
	if len(ids) != 1 || ids[0] != id {
		t.Errorf("IDsByHPath = %v, want [%s]", ids, id)
	}
	must(c.UpdateDocMarkdown(ctx, id, "# Run 1 v2\n\n![chart](assets/c.svg)\n"))
	must(c.AppendMarkdown(ctx, id, "## Notes"))
	bs, err := c.ChildBlocks(ctx, id)
	must(err)
	if len(bs) != 3 || bs[0].Type != "h" || bs[0].SubType != "h1" || bs[1].Type != "p" || bs[2].Content != "Notes" {
		t.Errorf("ChildBlocks = %+v", bs)
	}
	md, err := c.ExportMarkdown(ctx, id)
	must(err)
	if md != "# Run 1 v2\n\n![chart](assets/c.svg)\n\n## Notes\n" {
		t.Errorf("ExportMarkdown = %q", md)
	}
	must(c.SetBlockAttrs(ctx, id, map[string]string{"custom-benchrun-run": "run-1", "custom-benchrun-note": `"q" <b> ü`}))
	attrs, err := c.BlockAttrs(ctx, id)
	must(err)
	if attrs["custom-benchrun-run"] != "run-1" || attrs["custom-benchrun-note"] != `"q" <b> ü` || attrs["title"] != "run-1" || attrs["id"] != id {
		t.Errorf("BlockAttrs = %v", attrs)
	}
	const q = "SELECT block_id FROM attributes WHERE name='custom-benchrun-run' AND value='run-1' LIMIT 2"
	rows, err := c.SQL(ctx, q)
	must(err)
	if len(rows) != 0 {
		t.Errorf("SQL before flush = %v, want none (the index lags)", rows)
	}
	must(c.FlushTransaction(ctx))
	rows, err = c.SQL(ctx, q)
	must(err)
	if len(rows) != 1 || rows[0]["block_id"] != id {
		t.Errorf("SQL after flush = %v", rows)
	}
	must(c.RenameDoc(ctx, id, "run-2"))
	hp, err := c.HPathByID(ctx, id)
	must(err)
	if hp != "/benchrun/q/run-2" {
		t.Errorf("HPathByID = %q", hp)
	}
	paths, err := c.UploadAssets(ctx, []AssetFile{{Name: "chart.svg", Data: []byte("<svg/>")}, {Name: "loss.png", Data: []byte("png")}})
	must(err)
	if !strings.HasPrefix(paths["chart.svg"], "assets/chart-") || !strings.HasSuffix(paths["loss.png"], ".png") {
		t.Errorf("UploadAssets = %v", paths)
	}
	again, err := c.UploadAssets(ctx, []AssetFile{{Name: "chart.svg", Data: []byte("<svg/>")}})
	must(err)
	if again["chart.svg"] != paths["chart.svg"] {
		t.Errorf("same asset again = %v, want %v", again, paths)
	}
	must(c.RemoveDoc(ctx, id))
	if err := c.RemoveDoc(ctx, id); !IsNotFound(err) {
		t.Errorf("RemoveDoc twice = %v, want not found", err)
	}
	must(c.RemoveNotebook(ctx, nb.ID))

	// What went over the wire.
	for _, call := range k.Calls() {
		if !call.Auth || !call.TokenOK {
			t.Errorf("%s: sent without the right token", call.Route)
		}
		if call.Method != http.MethodPost {
			t.Errorf("%s: method %s", call.Route, call.Method)
		}
		switch call.Route {
		case "/api/asset/upload":
			if !strings.HasPrefix(call.ContentType, "multipart/form-data") || !strings.Contains(call.Body, `name="file[]"`) ||
				!strings.Contains(call.Body, "name=\"assetsDirPath\"\r\n\r\n/assets/") {
				t.Errorf("upload body %q", call.Body)
			}
		case "/api/export/exportMdContent":
			wantJSON(t, call.Body, `{"addTitle":false,"id":"`+id+`","yfm":false}`)
		case "/api/block/updateBlock":
			wantJSON(t, call.Body, `{"data":"# Run 1 v2\n\n![chart](assets/c.svg)\n","dataType":"markdown","id":"`+id+`"}`)
		default:
			if call.ContentType != "application/json" || !json.Valid([]byte(call.Body)) {
				t.Errorf("%s: %s body %q", call.Route, call.ContentType, call.Body)
			}
		}
	}
}

func wantJSON(t *testing.T, got, want string) {
	t.Helper()
	var g, w any
	_ = json.Unmarshal([]byte(got), &g)
	_ = json.Unmarshal([]byte(want), &w)
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if string(gb) != string(wb) {
		t.Errorf("body %s, want %s", got, want)
	}
}

// failure is what a failing call must produce.
type failure struct {
	transient, auth, notFound, unreachable bool
	contains                               []string
	apiCode                                *int
}

func intp(i int) *int { return &i }

func (f failure) check(t *testing.T, name string, err error) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error", name)
		return
	}
	msg := err.Error()
	if strings.Contains(msg, apiToken) {
		t.Errorf("%s: the token is in the message", name)
	}
	if got := pipeline.IsTransient(err); got != f.transient {
		t.Errorf("%s: transient %v, want %v: %s", name, got, f.transient, msg)
	}
	if got := IsAuth(err); got != f.auth {
		t.Errorf("%s: IsAuth %v, want %v: %s", name, got, f.auth, msg)
	}
	if got := IsNotFound(err); got != f.notFound {
		t.Errorf("%s: IsNotFound %v, want %v: %s", name, got, f.notFound, msg)
	}
	if got := IsUnreachable(err); got != f.unreachable {
		t.Errorf("%s: IsUnreachable %v, want %v: %s", name, got, f.unreachable, msg)
	}
	for _, s := range f.contains {
		if !strings.Contains(msg, s) {
			t.Errorf("%s: message %q lacks %q", name, msg, s)
		}
	}
	if f.apiCode != nil {
		var ae *APIError
		if !errors.As(err, &ae) || ae.Code != *f.apiCode {
			t.Errorf("%s: want an APIError with code %d, got %#v", name, *f.apiCode, err)
		}
	}
}

func TestAPIFailures(t *testing.T) {
	ctx := context.Background()
	k, c := apiKernel(t, siyuantest.Options{})
	nb, err := c.CreateNotebook(ctx, "nb")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := c.CreateDocWithMd(ctx, nb.ID, "/d", "x")
	if err != nil {
		t.Fatal(err)
	}
	create := func() error { _, err := c.CreateDocWithMd(ctx, nb.ID, "/new", "x"); return err }
	fault := func(f siyuantest.Fault) func() error {
		return func() error { k.FailNext("filetree/createDocWithMd", f); return create() }
	}
	unreachable := failure{transient: true, unreachable: true, contains: []string{"SiYuan at " + k.URL + " is not reachable", "start SiYuan or set the sink's url / SIYUAN_URL"}}
	tests := []struct {
		name string
		call func() error
		want failure
	}{
		{"code -1", func() error { _, err := c.CreateDocWithMd(ctx, "20200101000000-zzzzzzz", "/x", "x"); return err },
			failure{apiCode: intp(-1), contains: []string{"filetree/createDocWithMd failed: Query notebook failed (code -1)", "open it in SiYuan"}}},
		{"false success", fault(siyuantest.Fault{Body: `{"code":0,"msg":"","data":null}`}),
			failure{contains: []string{"malformed answer to filetree/createDocWithMd", "data null"}}},
		{"not an id", fault(siyuantest.Fault{Body: `{"code":0,"msg":"","data":"x"}`}), failure{contains: []string{`"x" is not an id`}}},
		{"HTTP 503 envelope", fault(siyuantest.Fault{Status: 503, Code: -1, Msg: "busy"}), failure{transient: true, apiCode: intp(-1), contains: []string{"HTTP 503"}}},
		{"HTTP 502 page", fault(siyuantest.Fault{Status: 502, Body: "<html>Bad Gateway</html>"}), failure{transient: true, contains: []string{"malformed answer", "Bad Gateway"}}},
		{"HTML 200", fault(siyuantest.Fault{Body: "<html>login</html>"}), failure{contains: []string{"malformed answer", "is the url a SiYuan kernel?"}}},
		{"no msg", fault(siyuantest.Fault{Body: `{"code":0,"data":"20200101000000-zzzzzzz"}`}), failure{contains: []string{`no "msg"`}}},
		{"data shape", fault(siyuantest.Fault{Body: `{"code":0,"msg":"","data":{"id":"x"}}`}), failure{contains: []string{"unexpected shape"}}},
		{"indexing", fault(siyuantest.Fault{Code: -1, Msg: "indexing"}), failure{transient: true, apiCode: intp(-1), contains: []string{"try again"}}},
		{"truncated", fault(siyuantest.Fault{Truncate: true, Apply: true}), unreachable},
		{"reset", fault(siyuantest.Fault{Reset: true}), unreachable},
		{"timeout", func() error {
			k.FailNext("system/version", siyuantest.Fault{Delay: time.Second})
			c2 := *c
			c2.HTTP = &http.Client{Timeout: 50 * time.Millisecond}
			_, err := c2.Version(ctx)
			return err
		}, unreachable},
		{"no route", func() error {
			c2 := *c
			c2.BaseURL = k.URL + "/nope"
			_, err := c2.Version(ctx)
			return err
		}, failure{contains: []string{"no such API call", "404 page not found"}}},
		{"sql error", func() error { _, err := c.SQL(ctx, "SELEC x"); return err }, failure{apiCode: intp(1), contains: []string{`near "SELEC": syntax error (code 1)`}}},
		{"sql not single", func() error { _, err := c.SQL(ctx, "SELECT 1; SELECT 2"); return err }, failure{apiCode: intp(-1)}},
		{"hpath unknown", func() error { _, err := c.HPathByID(ctx, "20200101000000-zzzzzzz"); return err }, failure{notFound: true, apiCode: intp(-1)}},
		{"attrs unknown", func() error { _, err := c.BlockAttrs(ctx, "20200101000000-zzzzzzz"); return err }, failure{notFound: true}},
		{"export unknown", func() error { _, err := c.ExportMarkdown(ctx, "20200101000000-zzzzzzz"); return err }, failure{notFound: true}},
		{"update unknown", func() error { return c.UpdateDocMarkdown(ctx, "20200101000000-zzzzzzz", "x") }, failure{notFound: true, apiCode: intp(-1)}},
		{"rename unknown", func() error { return c.RenameDoc(ctx, "20200101000000-zzzzzzz", "x") }, failure{notFound: true, apiCode: intp(-1)}},
		{"attrs on an unknown block", func() error {
			return c.SetBlockAttrs(ctx, "20200101000000-zzzzzzz", map[string]string{"custom-a": "b"})
		}, failure{notFound: true}},
		{"errFiles", func() error {
			k.FailNext("asset/upload", siyuantest.Fault{Body: `{"code":0,"msg":"","data":{"errFiles":["a.svg"],"succMap":{}}}`})
			_, err := c.UploadAssets(ctx, []AssetFile{{Name: "a.svg", Data: []byte("x")}})
			return err
		}, failure{contains: []string{"files not stored", "a.svg"}}},
		{"missing from succMap", func() error {
			k.FailNext("asset/upload", siyuantest.Fault{Body: `{"code":0,"msg":"","data":{"errFiles":null,"succMap":{}}}`})
			_, err := c.UploadAssets(ctx, []AssetFile{{Name: "a.svg", Data: []byte("x")}})
			return err
		}, failure{contains: []string{`no path for "a.svg"`}}},
		// Refused before sending: the kernel would do something else silently.
		{"path without slash", func() error { _, err := c.CreateDocWithMd(ctx, nb.ID, "a/b", "x"); return err }, failure{contains: []string{`must start with "/"`}}},
		{"trailing slash", func() error { _, err := c.CreateDocWithMd(ctx, nb.ID, "/a/", "x"); return err }, failure{contains: []string{"empty segment"}}},
		{"long title", func() error { _, err := c.CreateDocWithMd(ctx, nb.ID, "/"+strings.Repeat("t", 513), "x"); return err }, failure{contains: []string{"over 512"}}},
		{"rename slash", func() error { return c.RenameDoc(ctx, doc, "a/b") }, failure{contains: []string{`contains "/"`}}},
		{"upper attr", func() error { return c.SetBlockAttrs(ctx, doc, map[string]string{"custom-BenchRun": "x"}) }, failure{contains: []string{"lowercase"}}},
		{"asset space", func() error { _, err := c.UploadAssets(ctx, []AssetFile{{Name: "my chart.svg"}}); return err }, failure{contains: []string{"no spaces"}}},
	}
	for _, tt := range tests {
		tt.want.check(t, tt.name, tt.call())
	}
	// The refusals before sending sent nothing.
	for _, call := range k.Calls() {
		if strings.Contains(call.Body, `"a/b"`) || strings.Contains(call.Body, "BenchRun") {
			t.Errorf("a refused call was sent: %s %s", call.Route, call.Body)
		}
	}
}

func TestAPIAuth(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name  string
		opts  siyuantest.Options
		token string
		env   string
		want  []string
	}{
		{"wrong token", siyuantest.Options{Token: "righttoken000001"}, apiToken, "",
			[]string{"refused the token (Auth failed [header: Authorization]): set SIYUAN_TOKEN to the API token from SiYuan's Settings → About"}},
		{"wrong token, named variable", siyuantest.Options{Token: "righttoken000001", Lock: true}, apiToken, "MY_SIYUAN_TOKEN",
			[]string{"refused the token", "set MY_SIYUAN_TOKEN"}},
		{"no token, locked", siyuantest.Options{Lock: true, Token: apiToken}, "", "",
			[]string{"needs an API token (Auth failed [session])", "set SIYUAN_TOKEN"}},
	}
	for _, tt := range tests {
		k := siyuantest.Start(t, tt.opts)
		c := &Client{BaseURL: k.URL, Token: tt.token, TokenEnv: tt.env}
		_, err := c.ListNotebooks(ctx)
		failure{auth: true, apiCode: intp(-1), contains: append(tt.want, "SiYuan at "+k.URL)}.check(t, tt.name, err)
		var ae *APIError
		if errors.As(err, &ae) && ae.HTTPStatus != http.StatusUnauthorized {
			t.Errorf("%s: HTTPStatus %d, want 401", tt.name, ae.HTTPStatus)
		}
	}
	// Without a lock-screen password a token-less call is accepted, but the
	// client still sends its token.
	k, c := apiKernel(t, siyuantest.Options{})
	if _, err := c.ListNotebooks(ctx); err != nil {
		t.Fatal(err)
	}
	if calls := k.Calls(); len(calls) != 1 || !calls[0].TokenOK {
		t.Errorf("calls %+v: want one with the token", calls)
	}
}

func TestAPIKernelGone(t *testing.T) {
	ctx := context.Background()
	k, c := apiKernel(t, siyuantest.Options{})
	nb, err := c.CreateNotebook(ctx, "nb")
	if err != nil {
		t.Fatal(err)
	}
	// Killed between creating the document and marking it.
	k.DieAfter("filetree/createDocWithMd", 1)
	id, err := c.CreateDocWithMd(ctx, nb.ID, "/benchrun/run-1", "x")
	if err != nil {
		t.Fatal(err)
	}
	err = c.SetBlockAttrs(ctx, id, map[string]string{"custom-benchrun-run": "run-1"})
	failure{transient: true, unreachable: true, contains: []string{"is not reachable (attr/setBlockAttrs: ", "connection refused", "start SiYuan"}}.check(t, "after death", err)

	// Back with the same workspace: the document is there, unmarked.
	k.Restart()
	attrs, err := c.BlockAttrs(ctx, id)
	if err != nil || attrs["custom-benchrun-run"] != "" {
		t.Errorf("after restart: %v %v", attrs, err)
	}

	// A client nobody answers.
	k.Stop()
	_, err = c.Version(ctx)
	// The client's idle connection is closed under it (EOF) or the dial is
	// refused: transient either way.
	failure{transient: true, unreachable: true, contains: []string{"is not reachable (system/version: "}}.check(t, "stopped", err)

	// A cancelled context is the caller's doing, not the kernel's.
	k.Restart()
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.Version(cctx); !errors.Is(err, context.Canceled) || IsUnreachable(err) {
		t.Errorf("cancelled: %v", err)
	}
}

// TestAPINoTokenInErrors runs every kind of failure with the token also
// echoed back by the kernel and checks no message carries it.
func TestAPINoTokenInErrors(t *testing.T) {
	ctx := context.Background()
	k, c := apiKernel(t, siyuantest.Options{})
	echo := `{"code":-1,"msg":"bad token ` + apiToken + `","data":null}`
	k.FailNext("system/version", siyuantest.Fault{Body: echo})
	k.FailNext("system/version", siyuantest.Fault{Body: "<p>" + apiToken + "</p>"})
	k.FailNext("system/version", siyuantest.Fault{Status: 401, Body: `{"code":-1,"msg":"Auth failed [header: Authorization] ` + apiToken + `"}`})
	k.FailNext("system/version", siyuantest.Fault{Truncate: true, Body: `{"code":0,"msg":"` + apiToken + `","data":"3.7.3"}`})
	var errs []error
	for range 4 {
		_, err := c.Version(ctx)
		errs = append(errs, err)
	}
	c2 := *c
	c2.BaseURL = "http://user:" + apiToken + "@" + strings.TrimPrefix(k.URL, "http://")
	k.Stop()
	_, err := c2.Version(ctx)
	errs = append(errs, err)
	for i, err := range errs {
		if err == nil {
			t.Errorf("call %d: no error", i)
			continue
		}
		if strings.Contains(err.Error(), apiToken) || strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("call %d: the token is in the message", i)
		}
	}
}
