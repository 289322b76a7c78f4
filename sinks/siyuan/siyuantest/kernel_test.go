package siyuantest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// recorded is the clock of the recorded session, so timestamps in ids,
// "updated" and the front matter match the record.
var recorded = time.Date(2026, 12, 1, 8, 57, 44, 0, time.UTC)

func fixedClock() time.Time { return recorded }

// step is one recorded exchange. want is compared byte for byte after
// ${VAR} is replaced by a captured value; ${id} stands for any id and
// ${any} for any text (where the record itself elides, e.g. block DOM).
type step struct {
	name    string
	method  string // "" = POST
	route   string
	body    string
	auth    string // "" = "Token <right token>"; "none"; anything else is sent as the header
	ua      string
	ctype   string
	status  int // 0 = 200
	want    string
	capture map[string]string // var → dotted path into the answer ("data", "data.notebook.id")
}

func (s step) run(t *testing.T, k *Kernel, vars map[string]string) {
	t.Helper()
	body := expand(s.body, vars)
	method := s.method
	if method == "" {
		method = http.MethodPost
	}
	req, err := http.NewRequest(method, k.URL+expand(s.route, vars), strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	switch s.auth {
	case "":
		req.Header.Set("Authorization", "Token "+k.opts.Token)
	case "none":
	default:
		req.Header.Set("Authorization", s.auth)
	}
	if s.ua != "" {
		req.Header.Set("User-Agent", s.ua)
	}
	ct := s.ctype
	if ct == "" {
		ct = "application/json"
	}
	req.Header.Set("Content-Type", ct)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", s.name, err)
	}
	got, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	status := s.status
	if status == 0 {
		status = http.StatusOK
	}
	if resp.StatusCode != status {
		t.Errorf("%s: HTTP %d, want %d (%s)", s.name, resp.StatusCode, status, got)
	}
	if !match(expand(s.want, vars), string(got)) {
		t.Errorf("%s:\n got %s\nwant %s", s.name, got, expand(s.want, vars))
	}
	for v, p := range s.capture {
		var x any
		if err := json.Unmarshal(got, &x); err != nil {
			t.Fatalf("%s: capture %s: %v", s.name, v, err)
		}
		for _, key := range strings.Split(p, ".") {
			x = x.(map[string]any)[key]
		}
		vars[v] = x.(string)
	}
}

var varRe = regexp.MustCompile(`\$\{([A-Z0-9_]+)\}`)

func expand(s string, vars map[string]string) string {
	return varRe.ReplaceAllStringFunc(s, func(m string) string {
		if v, ok := vars[m[2:len(m)-1]]; ok {
			return v
		}
		return m
	})
}

func match(want, got string) bool {
	if !strings.Contains(want, "${id}") && !strings.Contains(want, "${any}") {
		return want == got
	}
	q := regexp.QuoteMeta(want)
	q = strings.ReplaceAll(q, regexp.QuoteMeta("${id}"), `\d{14}-[0-9a-z]{7}`)
	q = strings.ReplaceAll(q, regexp.QuoteMeta("${any}"), `.*?`)
	return regexp.MustCompile("^(?s)" + q + "$").MatchString(got)
}

func replay(t *testing.T, k *Kernel, vars map[string]string, steps []step) {
	t.Helper()
	for _, s := range steps {
		s.run(t, k, vars)
	}
}

const nbTail = `"icon":"","sort":0,"sortMode":15,"closed":false,"subFileCount":0,"newFlashcardCount":0,"dueFlashcardCount":0,"flashcardCount":0,"encrypted":false,"unlocked":false}`

const run1 = `# Run 1\n\n| metric | value |\n|---|---|\n| ttft_ms | 12.5 |\n`
const run1v2 = `# Run 1 v2\n\n| metric | value |\n|---|---|\n| ttft_ms | 12.5 |\n| tpot_ms | 3.1 |\n\n` + "```mermaid\\ngraph TD\\n  A[load] --> B[bench]\\n```" + `\n\n![chart](assets/chart.svg)\n`

func TestRecordedSession(t *testing.T) {
	k := Start(t, Options{Now: fixedClock})
	vars := map[string]string{}
	long600 := strings.Repeat("t", 600)
	long512 := strings.Repeat("t", 512)
	replay(t, k, vars, []step{
		// Boot, version, routes.
		{name: "bootProgress", route: "/api/system/bootProgress", auth: "bad", want: `{"code":0,"msg":"","data":{"details":"v3.7.3 Finishing boot...","progress":100}}`},
		{name: "version", route: "/api/system/version", auth: "none", want: `{"code":0,"msg":"","data":"3.7.3"}`},
		{name: "GET is 404", method: "GET", route: "/api/notebook/lsNotebooks", status: 404, want: `404 page not found`},
		{name: "unknown route", route: "/api/nope/nope", status: 404, want: `404 page not found`},

		// Auth without a lock-screen password.
		{name: "no token", route: "/api/notebook/lsNotebooks", auth: "none", body: `{}`, want: `{"code":0,"msg":"","data":{"boxDocEnabled":true,"notebooks":[]}}`},
		{name: "wrong token", route: "/api/notebook/lsNotebooks", auth: "Token wrong", body: `{}`, status: 401, want: `{"code":-1,"msg":"Auth failed [header: Authorization]"}`},
		{name: "bearer wrong", route: "/api/notebook/lsNotebooks", auth: "bearer wrong", body: `{}`, status: 401, want: `{"code":-1,"msg":"Auth failed [header: Authorization]"}`},
		{name: "no scheme word", route: "/api/notebook/lsNotebooks", auth: "wrong", body: `{}`, want: `{"code":0,"msg":"","data":{"boxDocEnabled":true,"notebooks":[]}}`},
		{name: "query token", route: "/api/notebook/lsNotebooks?token=bad", auth: "none", body: `{}`, status: 401, want: `{"code":-1,"msg":"Auth failed [query: token]"}`},
		{name: "right token", route: "/api/notebook/lsNotebooks", body: `{}`, want: `{"code":0,"msg":"","data":{"boxDocEnabled":true,"notebooks":[]}}`},

		// Notebooks.
		{name: "createNotebook", route: "/api/notebook/createNotebook", body: `{"name":"ML Benchmarks"}`,
			want: `{"code":0,"msg":"","data":{"notebook":{"id":"${id}","name":"ML Benchmarks",` + nbTail + `}}`, capture: map[string]string{"NB": "data.notebook.id"}},
		{name: "createNotebook same name", route: "/api/notebook/createNotebook", body: `{"name":"ML Benchmarks"}`,
			want: `{"code":0,"msg":"","data":{"notebook":{"id":"${id}","name":"ML Benchmarks",` + nbTail + `}}`, capture: map[string]string{"NB2": "data.notebook.id"}},
		{name: "lsNotebooks newest first", route: "/api/notebook/lsNotebooks", body: `{}`,
			want: `{"code":0,"msg":"","data":{"boxDocEnabled":true,"notebooks":[{"id":"${NB2}","name":"ML Benchmarks",` + nbTail + `,{"id":"${NB}","name":"ML Benchmarks",` + strings.Replace(nbTail, `"sort":0`, `"sort":1`, 1) + `]}}`},
		{name: "createNotebook empty name", route: "/api/notebook/createNotebook", body: `{"name":""}`,
			want: `{"code":0,"msg":"","data":{"notebook":{"id":"${id}","name":"Untitled",` + nbTail + `}}`, capture: map[string]string{"NB3": "data.notebook.id"}},
		{name: "createNotebook no name", route: "/api/notebook/createNotebook", body: `{}`, want: `{"code":-1,"msg":"Field [name] is required","data":null}`},
		{name: "openNotebook open", route: "/api/notebook/openNotebook", body: `{"notebook":"${NB3}"}`, want: `{"code":0,"msg":"","data":null}`},
		{name: "closeNotebook", route: "/api/notebook/closeNotebook", body: `{"notebook":"${NB3}"}`, want: `{"code":0,"msg":"","data":null}`},
		{name: "lsNotebooks closed", route: "/api/notebook/lsNotebooks", body: `{}`, want: `{"code":0,"msg":"","data":{"boxDocEnabled":true,"notebooks":[{"id":"${NB3}","name":"Untitled","icon":"","sort":0,"sortMode":15,"closed":true,${any}`},
		{name: "openNotebook unknown", route: "/api/notebook/openNotebook", body: `{"notebook":"20261201085736-zzzzzzz"}`, want: `{"code":-1,"msg":"can not open file, just support open folder only","data":null}`},
		{name: "openNotebook bad id", route: "/api/notebook/openNotebook", body: `{"notebook":"nope"}`, want: `{"code":-1,"msg":"invalid ID argument","data":null}`},
		{name: "removeNotebook", route: "/api/notebook/removeNotebook", body: `{"notebook":"${NB3}"}`, want: `{"code":0,"msg":"","data":null}`},
		{name: "removeNotebook 2", route: "/api/notebook/removeNotebook", body: `{"notebook":"${NB2}"}`, want: `{"code":0,"msg":"","data":null}`},

		// Documents.
		{name: "getIDsByHPath nothing", route: "/api/filetree/getIDsByHPath", body: `{"notebook":"${NB}","path":"/benchrun/quickstart/run-1"}`, want: `{"code":0,"msg":"","data":[]}`},
		{name: "getIDsByHPath root", route: "/api/filetree/getIDsByHPath", body: `{"notebook":"${NB}","path":"/"}`, want: `{"code":0,"msg":"","data":["${NB}"]}`},
		{name: "createDocWithMd", route: "/api/filetree/createDocWithMd", body: `{"notebook":"${NB}","path":"/benchrun/quickstart/run-1","markdown":"` + run1 + `"}`,
			want: `{"code":0,"msg":"","data":"${id}"}`, capture: map[string]string{"DOC": "data"}},
		{name: "getIDsByHPath found", route: "/api/filetree/getIDsByHPath", body: `{"notebook":"${NB}","path":"/benchrun/quickstart/run-1"}`, want: `{"code":0,"msg":"","data":["${DOC}"]}`},
		{name: "getIDsByHPath parent", route: "/api/filetree/getIDsByHPath", body: `{"notebook":"${NB}","path":"/benchrun/quickstart"}`, want: `{"code":0,"msg":"","data":["${id}"]}`},
		{name: "createDocWithMd same path", route: "/api/filetree/createDocWithMd", body: `{"notebook":"${NB}","path":"/benchrun/quickstart/run-1","markdown":"second"}`,
			want: `{"code":0,"msg":"","data":"${id}"}`, capture: map[string]string{"DOC2": "data"}},
		{name: "getIDsByHPath two", route: "/api/filetree/getIDsByHPath", body: `{"notebook":"${NB}","path":"/benchrun/quickstart/run-1"}`, want: `{"code":0,"msg":"","data":["${DOC}","${DOC2}"]}`},
		{name: "getChildBlocks", route: "/api/block/getChildBlocks", body: `{"id":"${DOC}"}`,
			want: `{"code":0,"msg":"","data":[{"id":"${id}","type":"h","subType":"h1","content":"Run 1","markdown":"# Run 1"},{"id":"${id}","type":"t","content":"metric value ttft_ms 12.5","markdown":"|metric|value|\n| ---------| -------|\n|ttft_ms|12.5|"}]}`},
		{name: "exportMdContent default", route: "/api/export/exportMdContent", body: `{"id":"${DOC}"}`,
			want: `{"code":0,"msg":"","data":{"content":"---\ntitle: run-1\ndate: 2026-12-01T08:57:44Z\nlastmod: 2026-12-01T08:57:44Z\n---\n\n# run-1\n\n# Run 1\n\n|metric|value|\n| ---------| -------|\n|ttft_ms|12.5|\n","hPath":"/benchrun/quickstart/run-1"}}`},
		{name: "updateBlock document", route: "/api/block/updateBlock", body: `{"dataType":"markdown","id":"${DOC}","data":"` + run1v2 + `"}`,
			want: `{"code":0,"msg":"","data":[{"timestamp":0,"doOperations":[` +
				`{"action":"delete","data":{"createEmptyParagraph":false},"id":"${id}","rootID":"","parentID":"","previousID":"","nextID":"","retData":null,"blockIDs":null,"blockID":"","deckID":"","avID":"","srcIDs":null,"srcs":null,"isDetached":false,"name":"","type":"","format":"","keyID":"","rowID":"","isTwoWay":false,"backRelationKeyID":"","removeDest":false,"layout":"","groupID":"","targetGroupID":"","viewID":"","ignoreDefaultFill":false,"context":null},` +
				`{"action":"delete",${any}},` +
				`{"action":"insert","data":"\u003cdiv data-subtype=\"h1\" data-node-id=\"${id}\" data-node-index=\"1\" data-type=\"NodeHeading\" class=\"h1\" ${any}","id":"${id}","rootID":"","parentID":"${DOC}",${any}}],"undoOperations":null}]}`},
		{name: "getChildBlocks after update", route: "/api/block/getChildBlocks", body: `{"id":"${DOC}"}`,
			want: `{"code":0,"msg":"","data":[` +
				`{"id":"${id}","type":"h","subType":"h1","content":"Run 1 v2","markdown":"# Run 1 v2"},` +
				`{"id":"${id}","type":"t","content":"metric value ttft_ms 12.5 tpot_ms 3.1","markdown":"|metric|value|\n| ---------| -------|\n|ttft_ms|12.5|\n|tpot_ms|3.1|"},` +
				`{"id":"${id}","type":"c","content":"graph TD\n  A[load] --\u003e B[bench]","markdown":"` + "```mermaid\\ngraph TD\\n  A[load] --\\u003e B[bench]\\n```" + `"},` +
				`{"id":"${id}","type":"p","content":"chart assets/chart.svg ","markdown":"![chart](assets/chart.svg)"}]}`},
		{name: "exportMdContent plain", route: "/api/export/exportMdContent", body: `{"id":"${DOC}","yfm":false,"addTitle":false}`,
			want: `{"code":0,"msg":"","data":{"content":"# Run 1 v2\n\n|metric|value|\n| ---------| -------|\n|ttft_ms|12.5|\n|tpot_ms|3.1|\n\n` + "```mermaid\\ngraph TD\\n  A[load] --\\u003e B[bench]\\n```" + `\n\n![chart](assets/chart.svg)\n","hPath":"/benchrun/quickstart/run-1"}}`},
		{name: "exportMdContent yfm false keeps title", route: "/api/export/exportMdContent", body: `{"id":"${DOC}","yfm":false}`,
			want: `{"code":0,"msg":"","data":{"content":"# run-1\n\n# Run 1 v2\n\n${any}","hPath":"/benchrun/quickstart/run-1"}}`},
		{name: "getHPathByID", route: "/api/filetree/getHPathByID", body: `{"id":"${DOC}"}`, want: `{"code":0,"msg":"","data":"/benchrun/quickstart/run-1"}`},
		{name: "getHPathByID notebook", route: "/api/filetree/getHPathByID", body: `{"id":"${NB}"}`, want: `{"code":0,"msg":"","data":"/"}`},
		{name: "renameDocByID", route: "/api/filetree/renameDocByID", body: `{"id":"${DOC2}","title":"run-2"}`, want: `{"code":0,"msg":"","data":null}`},
		{name: "renamed hpath", route: "/api/filetree/getHPathByID", body: `{"id":"${DOC2}"}`, want: `{"code":0,"msg":"","data":"/benchrun/quickstart/run-2"}`},
		{name: "renamed ids", route: "/api/filetree/getIDsByHPath", body: `{"notebook":"${NB}","path":"/benchrun/quickstart/run-2"}`, want: `{"code":0,"msg":"","data":["${DOC2}"]}`},
		{name: "renamed title attr", route: "/api/attr/getBlockAttrs", body: `{"id":"${DOC2}"}`, want: `{"code":0,"msg":"","data":{"id":"${DOC2}","title":"run-2","type":"doc","updated":"20261201085744"}}`},
		{name: "rename slash", route: "/api/filetree/renameDocByID", body: `{"id":"${DOC2}","title":"a/b"}`, want: `{"code":0,"msg":"","data":null}`},
		{name: "slash dropped", route: "/api/filetree/getHPathByID", body: `{"id":"${DOC2}"}`, want: `{"code":0,"msg":"","data":"/benchrun/quickstart/ab"}`},
		{name: "rename too long", route: "/api/filetree/renameDocByID", body: `{"id":"${DOC2}","title":"` + long600 + `"}`, want: `{"code":-1,"msg":"Maximum length is limited to 512 characters","data":null}`},
		{name: "rename no title", route: "/api/filetree/renameDocByID", body: `{"id":"${DOC2}"}`, want: `{"code":0,"msg":"","data":null}`},
		{name: "not renamed", route: "/api/filetree/getHPathByID", body: `{"id":"${DOC2}"}`, want: `{"code":0,"msg":"","data":"/benchrun/quickstart/ab"}`},
		{name: "rename back", route: "/api/filetree/renameDocByID", body: `{"id":"${DOC2}","title":"run-2"}`, want: `{"code":0,"msg":"","data":null}`},

		// Attributes and SQL.
		{name: "setBlockAttrs", route: "/api/attr/setBlockAttrs", body: `{"id":"${DOC}","attrs":{"custom-benchrun-run":"run-1","custom-benchrun-plan":"quickstart"}}`, want: `{"code":0,"msg":"","data":null}`},
		{name: "getBlockAttrs", route: "/api/attr/getBlockAttrs", body: `{"id":"${DOC}"}`,
			want: `{"code":0,"msg":"","data":{"custom-benchrun-plan":"quickstart","custom-benchrun-run":"run-1","id":"${DOC}","title":"run-1","type":"doc","updated":"20261201085744"}}`},
		{name: "sql before flush", route: "/api/query/sql", body: `{"stmt":"SELECT block_id FROM attributes WHERE name='custom-benchrun-run' AND value='run-1'"}`, want: `{"code":0,"msg":"","data":[]}`},
		{name: "setBlockAttrs 2", route: "/api/attr/setBlockAttrs", body: `{"id":"${DOC2}","attrs":{"custom-benchrun-run":"run-2","custom-benchrun-plan":"quickstart"}}`, want: `{"code":0,"msg":"","data":null}`},
		{name: "flushTransaction", route: "/api/sqlite/flushTransaction", want: `{"code":0,"msg":"","data":null}`, body: `{}`},
		{name: "sql after flush", route: "/api/query/sql", body: `{"stmt":"SELECT block_id FROM attributes WHERE name='custom-benchrun-run' AND value='run-2'"}`, want: `{"code":0,"msg":"","data":[{"block_id":"${DOC2}"}]}`},
		{name: "sql syntax error", route: "/api/query/sql", body: `{"stmt":"SELEC x"}`, want: `{"code":1,"msg":"near \"SELEC\": syntax error","data":null}`},
		{name: "sql not single", route: "/api/query/sql", body: `{"stmt":"SELECT 1; SELECT 2"}`, want: `{"code":-1,"msg":"SQL statement is not single","data":null}`},
		{name: "sql unsupported", route: "/api/query/sql", body: `{"stmt":"SELECT * FROM blocks b JOIN attributes a ON a.block_id = b.id"}`, want: `{"code":1,"msg":"siyuantest: statement not supported: SELECT * FROM blocks b JOIN attributes a ON a.block_id = b.id","data":null}`},
		{name: "attr bad name", route: "/api/attr/setBlockAttrs", body: `{"id":"${DOC2}","attrs":{"custom-bench_run":"x","custom-ok":"y"}}`,
			want: `{"code":-1,"msg":"The attribute name can only contain lowercase English letters, digits, and hyphens, and must start with a lowercase English letter [${DOC2}]","data":null}`},
		{name: "attr number", route: "/api/attr/setBlockAttrs", body: `{"id":"${DOC2}","attrs":{"custom-benchrun-n":12}}`, want: `{"code":-1,"msg":"the value of attr [custom-benchrun-n] must be a string","data":null}`},
		{name: "attr upper", route: "/api/attr/setBlockAttrs", body: `{"id":"${DOC2}","attrs":{"custom-BenchRun":"<b>\"q\"\n&ü"}}`, want: `{"code":0,"msg":"","data":null}`},
		{name: "attr empty deletes", route: "/api/attr/setBlockAttrs", body: `{"id":"${DOC2}","attrs":{"custom-benchrun-plan":""}}`, want: `{"code":0,"msg":"","data":null}`},
		{name: "attrs after", route: "/api/attr/getBlockAttrs", body: `{"id":"${DOC2}"}`,
			want: `{"code":0,"msg":"","data":{"custom-benchrun":"\u003cb\u003e\"q\"\n\u0026ü","custom-benchrun-run":"run-2","id":"${DOC2}","title":"run-2","type":"doc","updated":"20261201085744"}}`},
		{name: "attr unknown id", route: "/api/attr/setBlockAttrs", body: `{"id":"20200101000000-zzzzzzz","attrs":{"custom-a":"b"}}`, want: `{"code":-1,"msg":"tree not found","data":null}`},
		{name: "getBlockAttrs unknown", route: "/api/attr/getBlockAttrs", body: `{"id":"20200101000000-zzzzzzz"}`, want: `{"code":0,"msg":"","data":{}}`},

		// Removal.
		{name: "removeDocByID", route: "/api/filetree/removeDocByID", body: `{"id":"${DOC2}"}`, want: `{"code":0,"msg":"","data":null}`},
		{name: "removed ids", route: "/api/filetree/getIDsByHPath", body: `{"notebook":"${NB}","path":"/benchrun/quickstart/run-2"}`, want: `{"code":0,"msg":"","data":[]}`},
		{name: "removed attrs", route: "/api/attr/getBlockAttrs", body: `{"id":"${DOC2}"}`, want: `{"code":0,"msg":"","data":{}}`},
		{name: "removed hpath indexing", route: "/api/filetree/getHPathByID", body: `{"id":"${DOC2}"}`, want: `{"code":-1,"msg":"indexing","data":null}`},
		{name: "removed still in sql", route: "/api/query/sql", body: `{"stmt":"SELECT block_id FROM attributes WHERE name='custom-benchrun-run' AND value='run-2'"}`, want: `{"code":0,"msg":"","data":[{"block_id":"${DOC2}"}]}`},
		{name: "removeDocByID again", route: "/api/filetree/removeDocByID", body: `{"id":"${DOC2}"}`, want: `{"code":-1,"msg":"tree not found","data":{"closeTimeout":7000}}`},
		{name: "flush", route: "/api/sqlite/flushTransaction", body: `{}`, want: `{"code":0,"msg":"","data":null}`},
		{name: "removed hpath", route: "/api/filetree/getHPathByID", body: `{"id":"${DOC2}"}`, want: `{"code":-1,"msg":"tree not found","data":null}`},
		{name: "removed gone from sql", route: "/api/query/sql", body: `{"stmt":"SELECT block_id FROM attributes WHERE name='custom-benchrun-run' AND value='run-2'"}`, want: `{"code":0,"msg":"","data":[]}`},

		// Errors.
		{name: "bad json", route: "/api/filetree/createDocWithMd", body: `{bad`, want: `{"code":-1,"msg":"Parses request [/api/filetree/createDocWithMd] failed: invalid character 'b' looking for beginning of object key string","data":null}`},
		{name: "empty body", route: "/api/filetree/createDocWithMd", body: ``, want: `{"code":-1,"msg":"Parses request [/api/filetree/createDocWithMd] failed: the request body is empty or truncated (EOF)","data":null}`},
		{name: "create bad notebook", route: "/api/filetree/createDocWithMd", body: `{"notebook":"nope","path":"/x","markdown":"x"}`, want: `{"code":-1,"msg":"invalid ID argument","data":null}`},
		{name: "create unknown notebook", route: "/api/filetree/createDocWithMd", body: `{"notebook":"20200101000000-zzzzzzz","path":"/x","markdown":"x"}`, want: `{"code":-1,"msg":"Query notebook failed","data":null}`},
		{name: "ids unknown notebook", route: "/api/filetree/getIDsByHPath", body: `{"notebook":"20200101000000-zzzzzzz","path":"/benchrun"}`, want: `{"code":0,"msg":"","data":[]}`},
		{name: "ids no notebook", route: "/api/filetree/getIDsByHPath", body: `{"path":"/benchrun"}`, want: `{"code":0,"msg":"","data":null}`},
		{name: "update unknown", route: "/api/block/updateBlock", body: `{"dataType":"markdown","data":"# x","id":"20200101000000-zzzzzzz"}`, want: `{"code":-1,"msg":"get block failed: tree not found","data":null}`},
		{name: "update bad id", route: "/api/block/updateBlock", body: `{"dataType":"markdown","data":"# x","id":"nope"}`, want: `{"code":-1,"msg":"invalid ID argument","data":null}`},
		{name: "children unknown", route: "/api/block/getChildBlocks", body: `{"id":"20200101000000-zzzzzzz"}`, want: `{"code":0,"msg":"","data":[]}`},
		{name: "export unknown", route: "/api/export/exportMdContent", body: `{"id":"20200101000000-zzzzzzz"}`, want: `{"code":0,"msg":"","data":{"content":"","hPath":""}}`},
		{name: "hpath unknown", route: "/api/filetree/getHPathByID", body: `{"id":"20200101000000-zzzzzzz"}`, want: `{"code":-1,"msg":"tree not found","data":null}`},
		{name: "rename unknown", route: "/api/filetree/renameDocByID", body: `{"id":"20200101000000-zzzzzzz","title":"x"}`, want: `{"code":-1,"msg":"tree not found","data":{"closeTimeout":7000}}`},
		{name: "remove unknown", route: "/api/filetree/removeDocByID", body: `{"id":"20200101000000-zzzzzzz"}`, want: `{"code":-1,"msg":"tree not found","data":{"closeTimeout":7000}}`},

		// Path normalisation.
		{name: "long title", route: "/api/filetree/createDocWithMd", body: `{"notebook":"${NB}","path":"/benchrun/long/` + long600 + `","markdown":"x"}`, want: `{"code":0,"msg":"","data":"${id}"}`, capture: map[string]string{"LONG": "data"}},
		{name: "long title cut", route: "/api/filetree/getHPathByID", body: `{"id":"${LONG}"}`, want: `{"code":0,"msg":"","data":"/benchrun/long/` + long512 + `"}`},
		{name: "long path not found", route: "/api/filetree/getIDsByHPath", body: `{"notebook":"${NB}","path":"/benchrun/long/` + long600 + `"}`, want: `{"code":0,"msg":"","data":[]}`},
		{name: "cut path found", route: "/api/filetree/getIDsByHPath", body: `{"notebook":"${NB}","path":"/benchrun/long/` + long512 + `"}`, want: `{"code":0,"msg":"","data":["${LONG}"]}`},
		{name: "no slash", route: "/api/filetree/createDocWithMd", body: `{"notebook":"${NB}","path":"benchrun/noslash/run-9","markdown":"x"}`, want: `{"code":0,"msg":"","data":"${id}"}`, capture: map[string]string{"NOSLASH": "data"}},
		{name: "no slash hpath", route: "/api/filetree/getHPathByID", body: `{"id":"${NOSLASH}"}`, want: `{"code":0,"msg":"","data":"/benchrun/noslash/run-9"}`},
		{name: "no slash lookup", route: "/api/filetree/getIDsByHPath", body: `{"notebook":"${NB}","path":"benchrun/noslash/run-9"}`, want: `{"code":0,"msg":"","data":[]}`},
		{name: "slash lookup", route: "/api/filetree/getIDsByHPath", body: `{"notebook":"${NB}","path":"/benchrun/noslash/run-9"}`, want: `{"code":0,"msg":"","data":["${NOSLASH}"]}`},
		{name: "trailing slash", route: "/api/filetree/createDocWithMd", body: `{"notebook":"${NB}","path":"/benchrun/slash/run-9/","markdown":"x"}`, want: `{"code":0,"msg":"","data":"${id}"}`, capture: map[string]string{"TRAIL": "data"}},
		{name: "trailing slash hpath", route: "/api/filetree/getHPathByID", body: `{"id":"${TRAIL}"}`, want: `{"code":0,"msg":"","data":"/benchrun/slash/run-9/run-9"}`},
		{name: "root path", route: "/api/filetree/createDocWithMd", body: `{"notebook":"${NB}","path":"/","markdown":"x"}`, want: `{"code":0,"msg":"","data":"${id}"}`, capture: map[string]string{"ROOT": "data"}},
		{name: "root path hpath", route: "/api/filetree/getHPathByID", body: `{"id":"${ROOT}"}`, want: `{"code":0,"msg":"","data":"/Untitled"}`},
		{name: "empty path", route: "/api/filetree/createDocWithMd", body: `{"notebook":"${NB}","path":"","markdown":"x"}`, want: `{"code":0,"msg":"","data":"${id}"}`, capture: map[string]string{"DOT": "data"}},
		{name: "empty path hpath", route: "/api/filetree/getHPathByID", body: `{"id":"${DOT}"}`, want: `{"code":0,"msg":"","data":"/."}`},
		{name: "no markdown", route: "/api/filetree/createDocWithMd", body: `{"notebook":"${NB}","path":"/benchrun/nomd"}`, want: `{"code":0,"msg":"","data":null}`},
		{name: "no markdown no doc", route: "/api/filetree/getIDsByHPath", body: `{"notebook":"${NB}","path":"/benchrun/nomd"}`, want: `{"code":0,"msg":"","data":[]}`},

		// Empty update, append.
		{name: "update empty", route: "/api/block/updateBlock", body: `{"dataType":"markdown","data":"","id":"${DOC}"}`, want: `{"code":0,"msg":"","data":[${any}]}`},
		{name: "one empty paragraph", route: "/api/block/getChildBlocks", body: `{"id":"${DOC}"}`, want: `{"code":0,"msg":"","data":[{"id":"${id}","type":"p","content":"","markdown":""}]}`, capture: map[string]string{}},
		{name: "appendBlock", route: "/api/block/appendBlock", body: `{"dataType":"markdown","data":"## Notes\n\nappended","parentID":"${DOC}"}`,
			want: `{"code":0,"msg":"","data":[{"timestamp":0,"doOperations":[{"action":"insert","data":"\u003cdiv data-subtype=\"h2\" ${any}","id":"${id}","rootID":"","parentID":"${DOC}","previousID":"${id}",${any}}],"undoOperations":null}]}`},
		{name: "appended", route: "/api/block/getChildBlocks", body: `{"id":"${DOC}"}`,
			want: `{"code":0,"msg":"","data":[{"id":"${id}","type":"p","content":"","markdown":""},{"id":"${id}","type":"h","subType":"h2","content":"Notes","markdown":"## Notes"},{"id":"${id}","type":"p","content":"appended","markdown":"appended"}]}`},
	})

	docs := k.Docs()
	if len(docs) == 0 || docs[len(docs)-1].HPath != "/." {
		t.Errorf("Docs() last = %+v", docs[len(docs)-1])
	}
}

func TestLockedKernel(t *testing.T) {
	k := Start(t, Options{Lock: true, Token: "abcdefgh12345678"})
	vars := map[string]string{}
	const lockMsg = `{"code":-1,"msg":"Lock screen password authentication failed, please \u003cbutton onclick=\"window.location.reload()\"\u003erefresh\u003c/button\u003e or reopen"}`
	replay(t, k, vars, []step{
		{name: "no token", route: "/api/notebook/lsNotebooks", auth: "none", body: `{}`, status: 401, want: `{"code":-1,"msg":"Auth failed [session]"}`},
		{name: "no scheme word", route: "/api/notebook/lsNotebooks", auth: "abcdefgh12345678", body: `{}`, status: 401, want: `{"code":-1,"msg":"Auth failed [session]"}`},
		{name: "browser", route: "/api/notebook/lsNotebooks", auth: "none", ua: "Mozilla/5.0", body: `{}`, status: 401, want: lockMsg},
		{name: "app", route: "/api/notebook/lsNotebooks", auth: "none", ua: "SiYuan/3.7.3", body: `{}`, status: 401, want: lockMsg},
		{name: "wrong token", route: "/api/notebook/lsNotebooks", auth: "Token wrong", body: `{}`, status: 401, want: `{"code":-1,"msg":"Auth failed [header: Authorization]"}`},
		{name: "right token", route: "/api/notebook/lsNotebooks", body: `{}`, want: `{"code":0,"msg":"","data":{"boxDocEnabled":true,"notebooks":[]}}`},
		{name: "bearer", route: "/api/notebook/lsNotebooks", auth: "Bearer abcdefgh12345678", body: `{}`, want: `{"code":0,"msg":"","data":{"boxDocEnabled":true,"notebooks":[]}}`},
		{name: "query token", route: "/api/notebook/lsNotebooks?token=abcdefgh12345678", auth: "none", body: `{}`, want: `{"code":0,"msg":"","data":{"boxDocEnabled":true,"notebooks":[]}}`},
		{name: "boot needs none", route: "/api/system/bootProgress", auth: "none", body: `{}`, want: `{"code":0,"msg":"","data":{"details":"v3.7.3 Finishing boot...","progress":100}}`},
	})
}

func TestBoot(t *testing.T) {
	k := Start(t, Options{BootCalls: 2})
	replay(t, k, map[string]string{}, []step{
		{name: "booting 1", route: "/api/system/bootProgress", want: `{"code":0,"msg":"","data":{"details":"v3.7.3 Initializing database...","progress":2}}`},
		{name: "booting 2", route: "/api/system/bootProgress", want: `{"code":0,"msg":"","data":{"details":"v3.7.3 Initializing database...","progress":2}}`},
		{name: "booted", route: "/api/system/bootProgress", want: `{"code":0,"msg":"","data":{"details":"v3.7.3 Finishing boot...","progress":100}}`},
	})
}

func multipartBody(t *testing.T, field, dir string, files ...[2]string) (string, string) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	if dir != "" {
		_ = w.WriteField("assetsDirPath", dir)
	}
	for _, f := range files {
		fw, err := w.CreateFormFile(field, f[0])
		if err != nil {
			t.Fatal(err)
		}
		_, _ = fw.Write([]byte(f[1]))
	}
	_ = w.Close()
	return b.String(), w.FormDataContentType()
}

func TestAssets(t *testing.T) {
	k := Start(t, Options{Now: fixedClock})
	vars := map[string]string{}
	const svg = `<svg xmlns="http://www.w3.org/2000/svg"/>`
	two, ct2 := multipartBody(t, "file[]", "/assets/", [2]string{"chart.svg", svg}, [2]string{"loss.png", "\x89PNG"})
	again, ctA := multipartBody(t, "file[]", "/assets/", [2]string{"chart.svg", svg})
	other, ctO := multipartBody(t, "file[]", "/assets/", [2]string{"chart2.svg", svg})
	nodir, ctN := multipartBody(t, "file[]", "", [2]string{"c3.svg", svg})
	brackets, ctB := multipartBody(t, "file[]", "/assets/", [2]string{"my chart (v1).svg", svg})
	plain, ctP := multipartBody(t, "file", "/assets/", [2]string{"x.svg", svg})
	escape, ctE := multipartBody(t, "file[]", "/../../x/", [2]string{"x.svg", svg})
	replay(t, k, vars, []step{
		{name: "upload two", route: "/api/asset/upload", body: two, ctype: ct2,
			want: `{"code":0,"msg":"","data":{"errFiles":null,"succMap":{"chart.svg":"assets/chart-${id}.svg","loss.png":"assets/loss-${id}.png"}}}`},
	})
	// The path has a random part; take it from the kernel.
	as := k.Assets()
	if len(as) != 2 {
		t.Fatalf("Assets() = %d, want 2", len(as))
	}
	vars["CHART"] = as[0].Path
	replay(t, k, vars, []step{
		{name: "same again", route: "/api/asset/upload", body: again, ctype: ctA, want: `{"code":0,"msg":"","data":{"errFiles":null,"succMap":{"chart.svg":"${CHART}"}}}`},
		{name: "same content other name", route: "/api/asset/upload", body: other, ctype: ctO, want: `{"code":0,"msg":"","data":{"errFiles":null,"succMap":{"chart2.svg":"assets/chart2-${id}.svg"}}}`},
		{name: "no assetsDirPath", route: "/api/asset/upload", body: nodir, ctype: ctN, want: `{"code":0,"msg":"","data":{"errFiles":null,"succMap":{"c3.svg":"assets/c3-${id}.svg"}}}`},
		{name: "brackets dropped", route: "/api/asset/upload", body: brackets, ctype: ctB, want: `{"code":0,"msg":"","data":{"errFiles":null,"succMap":{"my chart (v1).svg":"assets/my chart v1-${id}.svg"}}}`},
		{name: "field file", route: "/api/asset/upload", body: plain, ctype: ctP, want: `{"code":0,"msg":"","data":{"errFiles":null,"succMap":{}}}`},
		{name: "json body", route: "/api/asset/upload", body: `{}`, want: `{"code":-1,"msg":"request Content-Type isn't multipart/form-data","data":null}`},
		{name: "outside workspace", route: "/api/asset/upload", body: escape, ctype: ctE, want: `{"code":-1,"msg":"Path [/siyuan/x] is not in workspace","data":null}`},
	})
	if n := len(k.Assets()); n != 5 {
		t.Errorf("Assets() = %d, want 5", n)
	}
}

// TestUnsupported checks that what the sink's client never sends is
// refused as such, not answered with a guess.
func TestUnsupported(t *testing.T) {
	k := Start(t, Options{})
	vars := map[string]string{"NB": k.AddNotebook("nb")}
	dir, ct := multipartBody(t, "file[]", "/assets/sub/", [2]string{"x.svg", "<svg/>"})
	replay(t, k, vars, []step{
		{name: "create", route: "/api/filetree/createDocWithMd", body: `{"notebook":"${NB}","path":"/a","markdown":"# A\n\ntext"}`,
			want: `{"code":0,"msg":"","data":"${id}"}`, capture: map[string]string{"DOC": "data"}},
		{name: "dom", route: "/api/block/appendBlock", body: `{"dataType":"dom","data":"<div></div>","parentID":"${DOC}"}`,
			want: `{"code":-1,"msg":"siyuantest: appendBlock dataType dom not supported","data":null}`},
		{name: "own attribute", route: "/api/attr/setBlockAttrs", body: `{"id":"${DOC}","attrs":{"title":"b"}}`,
			want: `{"code":-1,"msg":"siyuantest: setting the kernel's own attributes not supported","data":null}`},
		{name: "assets subfolder", route: "/api/asset/upload", body: dir, ctype: ct,
			want: `{"code":-1,"msg":"siyuantest: assetsDirPath /assets/sub/ not supported","data":null}`},
		{name: "removeDoc", route: "/api/filetree/removeDoc", body: `{"notebook":"${NB}","path":"/x.sy"}`, status: 404, want: `404 page not found`},
	})
	_, b, err := post(k, "block/getChildBlocks", `{"id":"`+vars["DOC"]+`"}`)
	var env struct{ Data []struct{ ID string } }
	if err != nil || json.Unmarshal(b, &env) != nil || len(env.Data) != 2 {
		t.Fatalf("getChildBlocks: %v %s", err, b)
	}
	vars["BLOCK"] = env.Data[1].ID
	replay(t, k, vars, []step{
		{name: "update child", route: "/api/block/updateBlock", body: `{"dataType":"markdown","data":"x","id":"${BLOCK}"}`,
			want: `{"code":-1,"msg":"siyuantest: updateBlock of a child block not supported","data":null}`},
		{name: "child hpath", route: "/api/filetree/getHPathByID", body: `{"id":"${BLOCK}"}`, want: `{"code":0,"msg":"","data":"/a"}`},
	})
}

// TestSQLShapes runs the one statement the sink sends, in the spellings
// SQLite accepts, and checks the kernel says so of any other.
func TestSQLShapes(t *testing.T) {
	k := Start(t, Options{})
	nb := k.AddNotebook("nb")
	mark := func(path, run string) string {
		t.Helper()
		_, b, err := post(k, "filetree/createDocWithMd", `{"notebook":"`+nb+`","path":"`+path+`","markdown":"# x"}`)
		var env struct{ Data string }
		if err != nil || json.Unmarshal(b, &env) != nil || !validID(env.Data) {
			t.Fatalf("create %s: %v %s", path, err, b)
		}
		attrs, _ := json.Marshal(map[string]any{"id": env.Data, "attrs": map[string]string{"custom-benchrun-run": run, "custom-benchrun-plan": "p"}})
		if _, b, err := post(k, "attr/setBlockAttrs", string(attrs)); err != nil || string(b) != `{"code":0,"msg":"","data":null}` {
			t.Fatalf("mark %s: %v %s", path, err, b)
		}
		return env.Data
	}
	a, b, c := mark("/benchrun/p/a", "a"), mark("/benchrun/p/b", "it's"), mark("/benchrun/p/c", "a")
	if _, _, err := post(k, "sqlite/flushTransaction", `{}`); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ stmt, want string }{
		{`SELECT block_id FROM attributes WHERE name='custom-benchrun-run' AND value='it''s' LIMIT 64`, `[{"block_id":"` + b + `"}]`},
		{`select block_id from attributes where name = 'custom-benchrun-run' and value = 'a';`, `[{"block_id":"` + a + `"},{"block_id":"` + c + `"}]`},
		{`SELECT block_id FROM attributes WHERE name='custom-benchrun-run' AND value='a' LIMIT 1`, `[{"block_id":"` + a + `"}]`},
		{`SELECT block_id FROM attributes WHERE name='CUSTOM-benchrun-run' AND value='a'`, `[]`},
		{`SELECT block_id, value FROM attributes WHERE name LIKE 'custom-benchrun-r%'`, `code 1: siyuantest: statement not supported: SELECT block_id, value FROM attributes WHERE name LIKE 'custom-benchrun-r%'`},
		{`SELECT id FROM blocks WHERE type='d' OR id='x'`, `code 1: siyuantest: statement not supported: SELECT id FROM blocks WHERE type='d' OR id='x'`},
		{`DELETE FROM blocks`, `code 1: near "DELETE": syntax error`},
	}
	for _, tt := range tests {
		body, _ := json.Marshal(map[string]string{"stmt": tt.stmt})
		resp, err := http.Post(k.URL+"/api/query/sql", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var env struct {
			Code int             `json:"code"`
			Msg  string          `json:"msg"`
			Data json.RawMessage `json:"data"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&env)
		_ = resp.Body.Close()
		got := string(env.Data)
		if env.Code != 0 {
			got = "code " + string(rune('0'+env.Code)) + ": " + env.Msg
		}
		if got != tt.want {
			t.Errorf("%s\n got %s\nwant %s", tt.stmt, got, tt.want)
		}
	}
}

func post(k *Kernel, route, body string) (*http.Response, []byte, error) {
	req, _ := http.NewRequest(http.MethodPost, k.URL+routeKey(route), strings.NewReader(body))
	req.Header.Set("Authorization", "Token "+k.opts.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

func TestStopRestart(t *testing.T) {
	k := Start(t, Options{})
	nb := k.AddNotebook("kept")
	k.Stop()
	_, _, err := post(k, "notebook/lsNotebooks", `{}`)
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("after Stop: %v, want connection refused", err)
	}
	k.Restart()
	_, b, err := post(k, "notebook/lsNotebooks", `{}`)
	if err != nil || !strings.Contains(string(b), nb) {
		t.Fatalf("after Restart: %v %s, want notebook %s", err, b, nb)
	}
}

func TestDieAfter(t *testing.T) {
	k := Start(t, Options{})
	nb := k.AddNotebook("nb")
	k.DieAfter("filetree/createDocWithMd", 1)
	_, b, err := post(k, "filetree/createDocWithMd", `{"notebook":"`+nb+`","path":"/a","markdown":"x"}`)
	if err != nil || !match(`{"code":0,"msg":"","data":"${id}"}`, string(b)) {
		t.Fatalf("dying call: %v %s, want the whole answer", err, b)
	}
	_, _, err = post(k, "attr/setBlockAttrs", `{}`)
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("after death: %v, want connection refused", err)
	}
	if n := len(k.Docs()); n != 1 {
		t.Errorf("Docs() = %d, want 1", n)
	}
}

func TestFaults(t *testing.T) {
	k := Start(t, Options{})
	nb := k.AddNotebook("nb")
	create := `{"notebook":"` + nb + `","path":"/a","markdown":"x"}`
	tests := []struct {
		name    string
		fault   Fault
		status  int
		want    string
		wantErr error
		docs    int // documents after the call
	}{
		{name: "503", fault: Fault{Status: 503, Code: -1, Msg: "busy"}, status: 503, want: `{"code":-1,"msg":"busy","data":null}`},
		{name: "code -1", fault: Fault{Code: -1, Msg: "indexing"}, status: 200, want: `{"code":-1,"msg":"indexing","data":null}`},
		{name: "html", fault: Fault{Status: 502, Body: "<html>bad gateway</html>"}, status: 502, want: `<html>bad gateway</html>`},
		{name: "truncated", fault: Fault{Truncate: true}, wantErr: io.ErrUnexpectedEOF},
		{name: "truncated applied", fault: Fault{Truncate: true, Apply: true}, wantErr: io.ErrUnexpectedEOF, docs: 1},
		{name: "reset", fault: Fault{Reset: true}, wantErr: syscall.ECONNRESET, docs: 1},
	}
	for _, tt := range tests {
		k.FailNext("filetree/createDocWithMd", tt.fault)
		resp, b, err := post(k, "filetree/createDocWithMd", create)
		switch {
		case tt.wantErr != nil:
			if !errors.Is(err, tt.wantErr) && !(tt.wantErr == syscall.ECONNRESET && errors.Is(err, io.EOF)) {
				t.Errorf("%s: err %v, want %v", tt.name, err, tt.wantErr)
			}
		case err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case resp.StatusCode != tt.status || string(b) != tt.want:
			t.Errorf("%s: HTTP %d %s, want %d %s", tt.name, resp.StatusCode, b, tt.status, tt.want)
		}
		if n := len(k.Docs()); n != tt.docs {
			t.Errorf("%s: %d documents, want %d", tt.name, n, tt.docs)
		}
	}
	// The queue is used up: the next call is answered normally.
	if _, b, err := post(k, "filetree/createDocWithMd", create); err != nil || !match(`{"code":0,"msg":"","data":"${id}"}`, string(b)) {
		t.Errorf("after faults: %v %s", err, b)
	}
}

func TestDelayFault(t *testing.T) {
	k := Start(t, Options{})
	k.FailNext("system/version", Fault{Delay: 2 * time.Second})
	c := &http.Client{Timeout: 100 * time.Millisecond}
	_, err := c.Post(k.URL+"/api/system/version", "application/json", strings.NewReader(`{}`))
	if err == nil {
		t.Fatal("want a timeout")
	}
}

func TestConcurrentCreates(t *testing.T) {
	k := Start(t, Options{})
	nb := k.AddNotebook("nb")
	var wg sync.WaitGroup
	ids := make([]string, 40)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, b, err := post(k, "filetree/createDocWithMd", `{"notebook":"`+nb+`","path":"/same/p","markdown":"x"}`)
			if err != nil {
				t.Error(err)
				return
			}
			var env struct{ Data string }
			_ = json.Unmarshal(b, &env)
			ids[i] = env.Data
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, id := range ids {
		if !validID(id) || seen[id] {
			t.Errorf("id %q invalid or repeated", id)
		}
		seen[id] = true
	}
	// One shared parent "/same", then 40 documents at "/same/p".
	if n := len(k.Docs()); n != 41 {
		t.Errorf("Docs() = %d, want 41", n)
	}
	if n := k.CallCount("filetree/createDocWithMd"); n != 40 {
		t.Errorf("CallCount = %d, want 40", n)
	}
	for _, c := range k.Calls() {
		if !c.Auth || !c.TokenOK {
			t.Errorf("call %s: Auth %v TokenOK %v", c.Route, c.Auth, c.TokenOK)
		}
	}
}
