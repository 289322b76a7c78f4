// Package siyuantest is a SiYuan kernel for tests: a real HTTP server on
// loopback that answers the kernel's JSON API the way SiYuan v3.7.3 does,
// as recorded exchange by exchange in shared/SIYUAN.md (including where
// that differs from SiYuan's docs: false successes, duplicate notebooks
// and documents, the SQL index lagging behind writes). The real kernel is
// AGPL and cannot run here, so the client and the sink are tested against
// this one; where the record is byte-exact (envelopes, messages) so is
// this kernel, elsewhere (block DOM, operation lists) it approximates.
//
// Beyond answering, a Kernel can fail on purpose (Stop, Restart, DieAfter,
// FailNext) and tells a test what it was asked and what it holds (Calls,
// Notebooks, Docs, Assets).
//
// Not in the record, so guessed: a closed notebook behaves as a missing
// one for documents ("Query notebook failed", no ids); closeNotebook and
// removeNotebook of an unknown id succeed; getChildBlocks, exportMdContent,
// getHPathByID and getBlockAttrs answer "invalid ID argument" for a
// malformed id; "indexing" (getHPathByID of a just-removed document) lasts
// until the next flush; the attributes table holds only the attributes set
// with setBlockAttrs; updateBlock of a child block replaces that block.
// Databases (/api/av/...) and dataType "dom" are not implemented: such
// calls answer 404 or a "siyuantest: ... not supported" failure.
package siyuantest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// DefaultToken is the API token a kernel started without Options.Token
// accepts (16 letters/digits, like the one SiYuan makes at first boot).
const DefaultToken = "testtoken0000001"

// Version is what /api/system/version answers.
const Version = "3.7.3"

// Options configure a test kernel. The zero value is a desktop kernel
// with no lock-screen password and the recorded SQL index lag.
type Options struct {
	// Token is the API token (Settings → About); "" means DefaultToken.
	Token string
	// Lock gives the kernel a lock-screen password (as a Docker kernel
	// always has): a call without a token is refused with 401.
	Lock bool
	// NoSQLLag makes writes visible to /api/query/sql at once. By default,
	// as recorded, attributes, new, renamed and removed documents reach
	// the SQL index only at /api/sqlite/flushTransaction (the real kernel
	// also catches up on its own a few seconds later; this one never does,
	// so a client that forgets the flush fails every time, not sometimes).
	NoSQLLag bool
	// BootCalls is how many /api/system/bootProgress calls answer that the
	// kernel is still booting (progress 2) before it answers 100.
	BootCalls int
	// Now is the clock for ids and timestamps; nil means time.Now.
	Now func() time.Time
}

// Fault is a one-off failure of a call (see FailNext).
type Fault struct {
	// Status is the HTTP status of the answer; 0 means 200.
	Status int
	// Code and Msg make the envelope {"code":Code,"msg":Msg,"data":null}.
	Code int
	Msg  string
	// Body, when set, is written as is instead of an envelope (an HTML
	// page from a proxy, a body that is not JSON).
	Body string
	// Truncate cuts the answer mid-body: the headers promise the whole
	// body, half of it is sent, and the connection is closed.
	Truncate bool
	// Reset closes the connection without answering (a crash mid-call).
	Reset bool
	// Delay holds the answer back this long (for client timeouts); the
	// wait ends early when the client gives up.
	Delay time.Duration
	// Apply carries the call out before failing its answer, so the state
	// changes but the client does not learn it (a document created whose
	// id never arrived). Without it the call changes nothing.
	Apply bool
}

// Call is one request the kernel received, in arrival order. It records
// whether a token was sent, never the token itself.
type Call struct {
	Method string
	Route  string // the URL path, e.g. "/api/filetree/createDocWithMd"
	Query  string // the raw query ("token=..." values are replaced by "xxxxx")
	Body   string
	// Auth is true when the request had an Authorization header.
	Auth bool
	// TokenOK is true when a token was sent (header or query) and it was
	// the right one.
	TokenOK bool
	// ContentType is the request's Content-Type header.
	ContentType string
}

// Notebook is a notebook as the kernel holds it.
type Notebook struct {
	ID     string
	Name   string
	Closed bool
}

// Doc is a document as the kernel holds it.
type Doc struct {
	ID       string
	Notebook string
	HPath    string
	Title    string
	// Markdown is the body as last written (createDocWithMd, updateBlock of
	// the document; appendBlock appends to it).
	Markdown string
	// Attrs are the attributes set with setBlockAttrs (not the id, title,
	// type and updated that getBlockAttrs adds).
	Attrs map[string]string
	// Blocks are the document's top-level blocks.
	Blocks []Block
}

// Block is a top-level block of a document.
type Block struct {
	ID       string
	Type     string // "h", "t", "c", "p", "l", ...
	SubType  string // "h1".."h6" for headings
	Content  string
	Markdown string
}

// Asset is an uploaded file.
type Asset struct {
	Name string // the file name as uploaded
	Path string // "assets/<stem>-<id><ext>", as succMap gave it
	Data []byte
}

// Kernel is a running test kernel.
type Kernel struct {
	// URL is the base URL, e.g. "http://127.0.0.1:41234".
	URL string

	t    testing.TB
	opts Options
	addr string

	mu       sync.Mutex
	ln       net.Listener
	srv      *http.Server
	conns    map[net.Conn]struct{}
	stopped  bool
	ids      map[string]bool
	boxes    []*box // creation order
	docs     []*doc // creation order; removed ones are dropped
	assets   []*Asset
	index    *sqlIndex       // what /api/query/sql sees
	removed  map[string]bool // removed since the last flush: getHPathByID says "indexing"
	calls    []Call
	boots    int
	dieAfter map[string]int
	faults   map[string][]Fault
}

type box struct {
	id, name string
	closed   bool
	created  time.Time
}

type doc struct {
	id, box  string
	parent   *doc // nil: at the notebook's root
	title    string
	markdown string
	attrs    map[string]string
	blocks   []Block
	created  time.Time
	updated  time.Time
}

func (d *doc) hpath() string {
	if d.parent == nil {
		return "/" + d.title
	}
	return d.parent.hpath() + "/" + d.title
}

// Start starts a kernel on 127.0.0.1 and stops it when the test ends.
func Start(t testing.TB, opts Options) *Kernel {
	t.Helper()
	if opts.Token == "" {
		opts.Token = DefaultToken
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	k := &Kernel{
		t: t, opts: opts,
		ids:      map[string]bool{},
		removed:  map[string]bool{},
		dieAfter: map[string]int{},
		faults:   map[string][]Fault{},
		index:    &sqlIndex{},
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("siyuantest: listen: %v", err)
	}
	k.flushLocked() // an empty index
	k.addr = ln.Addr().String()
	k.URL = "http://" + k.addr
	k.serve(ln)
	t.Cleanup(k.Stop)
	return k
}

func (k *Kernel) serve(ln net.Listener) {
	conns := map[net.Conn]struct{}{} // this generation's connections
	srv := &http.Server{
		Handler: http.HandlerFunc(k.handle),
		ConnState: func(c net.Conn, s http.ConnState) {
			k.mu.Lock()
			defer k.mu.Unlock()
			switch s {
			case http.StateNew:
				conns[c] = struct{}{}
			case http.StateClosed, http.StateHijacked:
				delete(conns, c)
			}
		},
	}
	k.mu.Lock()
	k.ln, k.srv, k.stopped, k.conns = ln, srv, false, conns
	k.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
}

// Stop stops the kernel as a killed process stops: the listener and every
// open connection are closed, so calls in flight fail and further calls
// get "connection refused". The state is kept for Restart.
func (k *Kernel) Stop() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.stopLocked()
}

func (k *Kernel) stopLocked() {
	if k.stopped {
		return
	}
	k.stopped = true
	_ = k.ln.Close()
	closeConns(k.conns)
}

func closeConns(conns map[net.Conn]struct{}) {
	for c := range conns {
		_ = c.Close()
	}
}

// Restart listens again on the same address with the same state, as a
// kernel started again on the same workspace.
func (k *Kernel) Restart() {
	k.t.Helper()
	k.mu.Lock()
	stopped := k.stopped
	k.mu.Unlock()
	if !stopped {
		k.t.Fatalf("siyuantest: Restart of a running kernel")
	}
	ln, err := net.Listen("tcp", k.addr)
	if err != nil {
		k.t.Fatalf("siyuantest: listen again on %s: %v", k.addr, err)
	}
	k.serve(ln)
}

// DieAfter stops the kernel (as Stop) right after it answers the n-th
// call of route counted from now, e.g. DieAfter("filetree/createDocWithMd",
// 1) lets a document be created and kills the kernel before the client's
// next call. route may omit the "/api/" prefix.
func (k *Kernel) DieAfter(route string, n int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.dieAfter[routeKey(route)] = n
}

// FailNext makes the next call of route fail as f says; several calls
// queue up, one per call. route may omit the "/api/" prefix.
func (k *Kernel) FailNext(route string, f Fault) {
	k.mu.Lock()
	defer k.mu.Unlock()
	r := routeKey(route)
	k.faults[r] = append(k.faults[r], f)
}

func routeKey(route string) string {
	if strings.HasPrefix(route, "/") {
		return route
	}
	return "/api/" + route
}

// Calls returns every request received so far, in order.
func (k *Kernel) Calls() []Call {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]Call(nil), k.calls...)
}

// CallCount returns how many requests route received.
func (k *Kernel) CallCount(route string) int {
	r := routeKey(route)
	n := 0
	for _, c := range k.Calls() {
		if c.Route == r {
			n++
		}
	}
	return n
}

// Notebooks returns the notebooks in creation order.
func (k *Kernel) Notebooks() []Notebook {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []Notebook
	for _, b := range k.boxes {
		out = append(out, Notebook{ID: b.id, Name: b.name, Closed: b.closed})
	}
	return out
}

// Docs returns the documents in creation order.
func (k *Kernel) Docs() []Doc {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []Doc
	for _, d := range k.docs {
		attrs := map[string]string{}
		for n, v := range d.attrs {
			attrs[n] = v
		}
		out = append(out, Doc{
			ID: d.id, Notebook: d.box, HPath: d.hpath(), Title: d.title,
			Markdown: d.markdown, Attrs: attrs, Blocks: append([]Block(nil), d.blocks...),
		})
	}
	return out
}

// Assets returns the uploaded files in upload order.
func (k *Kernel) Assets() []Asset {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []Asset
	for _, a := range k.assets {
		out = append(out, Asset{Name: a.Name, Path: a.Path, Data: bytes.Clone(a.Data)})
	}
	return out
}

// AddNotebook creates a notebook directly (no call recorded), for tests
// that start from an existing workspace.
func (k *Kernel) AddNotebook(name string) string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.createBox(name).id
}

// AddDoc creates a document directly (no call recorded) and makes it
// visible to SQL; hpath is taken as createDocWithMd takes it.
func (k *Kernel) AddDoc(notebook, hpath, markdown string, attrs map[string]string) string {
	k.mu.Lock()
	defer k.mu.Unlock()
	d := k.createDoc(notebook, hpath, markdown)
	for n, v := range attrs {
		d.attrs[n] = v
	}
	k.flushLocked()
	return d.id
}

// Flush does what /api/sqlite/flushTransaction does.
func (k *Kernel) Flush() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.flushLocked()
}

var idPattern = regexp.MustCompile(`^\d{14}-[0-9a-z]{7}$`)

func validID(s string) bool { return idPattern.MatchString(s) }

const idChars = "0123456789abcdefghijklmnopqrstuvwxyz"

// newID makes a fresh id: a 14-digit timestamp, a dash and 7 random
// lowercase letters/digits, never one handed out before.
func (k *Kernel) newID() string {
	for {
		b := make([]byte, 7)
		for i := range b {
			b[i] = idChars[rand.IntN(len(idChars))]
		}
		id := k.now().Format("20060102150405") + "-" + string(b)
		if !k.ids[id] {
			k.ids[id] = true
			return id
		}
	}
}

func (k *Kernel) now() time.Time { return k.opts.Now().UTC() }

// ---- HTTP ----

// envelope is SiYuan's answer. The 401 answers have no data key, hence
// the separate authFailure.
type envelope struct {
	Code int    `json:"code"`
	Msg  string `json:"msg"`
	Data any    `json:"data"`
}

type authFailure struct {
	Code int    `json:"code"`
	Msg  string `json:"msg"`
}

const lockScreenMsg = `Lock screen password authentication failed, please <button onclick="window.location.reload()">refresh</button> or reopen`

// ret is a handler's answer in the making. Handlers fill it in; if a
// handler "panics" on a missing field (missingField), the answer written
// is ret as it stands — SiYuan's handlers defer writing their result, so a
// failed type assertion turns into code 0 with data null.
type ret struct {
	Code int
	Msg  string
	Data any
}

func (r *ret) fail(code int, msg string, data any) {
	r.Code, r.Msg, r.Data = code, msg, data
}

type missingField struct{ name string }

type handler func(k *Kernel, arg map[string]any, r *ret)

// noArgRoutes take no arguments; their body is not parsed.
var noArgRoutes = map[string]bool{
	"/api/system/bootProgress":     true,
	"/api/system/version":          true,
	"/api/notebook/lsNotebooks":    true,
	"/api/sqlite/flushTransaction": true,
}

// open routes answer without a token.
var openRoutes = map[string]bool{
	"/api/system/bootProgress": true,
	"/api/system/version":      true,
}

func (k *Kernel) handle(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	auth := req.Header.Get("Authorization")
	tok, hasTok := headerToken(auth)
	qtok, hasQ := req.URL.Query()["token"]
	call := Call{
		Method: req.Method, Route: req.URL.Path, Query: redactQuery(req.URL.RawQuery),
		Body: string(body), Auth: auth != "", ContentType: req.Header.Get("Content-Type"),
		TokenOK: (hasTok && tok == k.opts.Token) || (hasQ && len(qtok) > 0 && qtok[0] == k.opts.Token),
	}

	k.mu.Lock()
	if k.stopped {
		k.mu.Unlock()
		resetConn(w)
		return
	}
	k.calls = append(k.calls, call)
	var fault *Fault
	if q := k.faults[call.Route]; len(q) > 0 {
		fault = &q[0]
		k.faults[call.Route] = q[1:]
	}
	var dying map[net.Conn]struct{}
	if n, ok := k.dieAfter[call.Route]; ok {
		n--
		k.dieAfter[call.Route] = n
		if n <= 0 {
			delete(k.dieAfter, call.Route)
			// Stopped from here on (no new connection, Restart allowed), so
			// the client's next call is refused even if it comes before
			// this answer is done; this answer still goes out whole.
			k.stopped = true
			_ = k.ln.Close()
			dying = k.conns
		}
	}
	k.mu.Unlock()

	if dying != nil {
		// No keep-alive: the client's next call dials and is refused. The
		// body is flushed (with its Content-Length) before the connections
		// are closed.
		w.Header().Set("Connection", "close")
		defer func() {
			if fl, ok := w.(http.Flusher); ok {
				fl.Flush()
			}
			k.mu.Lock()
			closeConns(dying)
			k.mu.Unlock()
		}()
	}

	if fault != nil {
		if fault.Delay > 0 {
			select {
			case <-time.After(fault.Delay):
			case <-req.Context().Done():
				return
			}
		}
		if !fault.Apply {
			k.writeFault(w, fault, nil)
			return
		}
	}

	status, out := k.answer(req, body, tok, hasTok, qtok, hasQ)
	if fault != nil {
		k.writeFault(w, fault, out)
		return
	}
	if status == http.StatusNotFound {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Length", "18")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, "404 page not found")
		return
	}
	if ct, ok := out.(rawAnswer); ok {
		w.Header().Set("Content-Type", ct.contentType)
		w.Header().Set("Content-Length", fmt.Sprint(len(ct.data)))
		w.WriteHeader(status)
		_, _ = w.Write(ct.data)
		return
	}
	writeJSON(w, status, out)
}

// rawAnswer is a non-JSON answer (GET /assets/...).
type rawAnswer struct {
	contentType string
	data        []byte
}

// writeFault answers with f. With Fault.Apply, out is the answer the call
// would have had; it is what gets truncated when f names no other body.
func (k *Kernel) writeFault(w http.ResponseWriter, f *Fault, out any) {
	if f.Reset {
		resetConn(w)
		return
	}
	status := f.Status
	if status == 0 {
		status = http.StatusOK
	}
	var b []byte
	ct := "application/json; charset=utf-8"
	if f.Body != "" {
		b, ct = []byte(f.Body), "text/html; charset=utf-8"
		if json.Valid(b) {
			ct = "application/json; charset=utf-8"
		}
	} else if out != nil && f.Code == 0 && f.Msg == "" {
		b, _ = json.Marshal(out)
	} else {
		b, _ = json.Marshal(envelope{Code: f.Code, Msg: f.Msg})
	}
	w.Header().Set("Content-Type", ct)
	if f.Truncate {
		w.Header().Set("Content-Length", fmt.Sprint(len(b)))
		w.WriteHeader(status)
		_, _ = w.Write(b[:len(b)/2])
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
		// net/http closes the connection without finishing the body.
		panic(http.ErrAbortHandler)
	}
	w.Header().Set("Content-Length", fmt.Sprint(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// resetConn drops the connection with a TCP reset, no answer.
func resetConn(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	c, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	// encoding/json escapes <, > and & in strings and sorts map keys, as
	// the kernel's encoder does.
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(envelope{Code: -1, Msg: "siyuantest: " + err.Error()})
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Content-Length", fmt.Sprint(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func redactQuery(q string) string {
	if q == "" {
		return ""
	}
	parts := strings.Split(q, "&")
	for i, p := range parts {
		if strings.HasPrefix(p, "token=") {
			parts[i] = "token=xxxxx"
		}
	}
	return strings.Join(parts, "&")
}

// headerToken reads "Authorization: Token <t>" (also "token", "Bearer",
// "bearer"); a value without one of those scheme words counts as no
// token, as the kernel ignores it.
func headerToken(v string) (string, bool) {
	for _, scheme := range []string{"Token ", "token ", "Bearer ", "bearer "} {
		if t, ok := strings.CutPrefix(v, scheme); ok {
			return t, true
		}
	}
	return "", false
}

// answer is the kernel proper: routing, auth, the handler.
func (k *Kernel) answer(req *http.Request, body []byte, tok string, hasTok bool, qtok []string, hasQ bool) (int, any) {
	path := req.URL.Path
	if req.Method == http.MethodGet && strings.HasPrefix(path, "/assets/") {
		if st, a := k.authorize(req, path, tok, hasTok, qtok, hasQ); a != nil {
			return st, a
		}
		return k.serveAsset(strings.TrimPrefix(path, "/"))
	}
	h, ok := routes[path]
	if !ok || req.Method != http.MethodPost {
		return http.StatusNotFound, nil
	}
	if !openRoutes[path] {
		if st, a := k.authorize(req, path, tok, hasTok, qtok, hasQ); a != nil {
			return st, a
		}
	}
	r := &ret{}
	var arg map[string]any
	switch {
	case path == "/api/asset/upload":
		arg = map[string]any{"_req": req, "_body": body}
	case noArgRoutes[path]:
		arg = map[string]any{} // the kernel does not read the body
	default:
		if len(bytes.TrimSpace(body)) == 0 {
			return http.StatusOK, envelope{Code: -1, Msg: "Parses request [" + path + "] failed: the request body is empty or truncated (EOF)"}
		}
		if err := json.Unmarshal(body, &arg); err != nil {
			return http.StatusOK, envelope{Code: -1, Msg: "Parses request [" + path + "] failed: " + err.Error()}
		}
		if arg == nil {
			arg = map[string]any{}
		}
	}
	func() {
		defer func() {
			if p := recover(); p != nil {
				if _, ok := p.(missingField); !ok {
					panic(p)
				}
			}
		}()
		k.mu.Lock()
		defer k.mu.Unlock()
		h(k, arg, r)
	}()
	return http.StatusOK, envelope{Code: r.Code, Msg: r.Msg, Data: r.Data}
}

func (k *Kernel) authorize(req *http.Request, _ string, tok string, hasTok bool, qtok []string, hasQ bool) (int, any) {
	if hasTok {
		if tok != k.opts.Token {
			return http.StatusUnauthorized, authFailure{Code: -1, Msg: "Auth failed [header: Authorization]"}
		}
		return 0, nil
	}
	if hasQ {
		if len(qtok) == 0 || qtok[0] != k.opts.Token {
			return http.StatusUnauthorized, authFailure{Code: -1, Msg: "Auth failed [query: token]"}
		}
		return 0, nil
	}
	if !k.opts.Lock {
		return 0, nil // no lock-screen password: loopback callers need no token
	}
	ua := req.Header.Get("User-Agent")
	if strings.HasPrefix(ua, "Mozilla/") || strings.HasPrefix(ua, "SiYuan/") {
		return http.StatusUnauthorized, authFailure{Code: -1, Msg: lockScreenMsg}
	}
	return http.StatusUnauthorized, authFailure{Code: -1, Msg: "Auth failed [session]"}
}

// ---- argument helpers: a missing or mistyped field aborts the handler
// the way SiYuan's arg["x"].(string) does (see ret). ----

func str(arg map[string]any, name string) string {
	s, ok := arg[name].(string)
	if !ok {
		panic(missingField{name})
	}
	return s
}

func boolOr(arg map[string]any, name string, def bool) bool {
	v, ok := arg[name]
	if !ok {
		return def
	}
	b, ok := v.(bool)
	if !ok {
		panic(missingField{name})
	}
	return b
}
