// Package siyuantest is a SiYuan kernel for tests: a real HTTP server on
// loopback that answers the calls the siyuan sink's client makes the way
// SiYuan v3.7.3 does, as recorded exchange by exchange in shared/SIYUAN.md,
// including where that differs from SiYuan's docs: false successes,
// duplicate notebooks and documents, the SQL index lagging behind writes
// until /api/sqlite/flushTransaction. The real kernel is AGPL and cannot
// run here, so the client and the sink are tested against this one; where
// the record is byte-exact (envelopes, messages) so is this kernel,
// elsewhere (block DOM, operation lists) it approximates.
//
// It answers only what the client sends. Other routes (databases,
// removeDoc, GET /assets/...) answer 404 as an unknown route does;
// dataType "dom", child-block updates, an assetsDirPath other than
// /assets/, setting the kernel's own attributes (id, title, type, updated)
// and SQL other than the sink's one statement answer a "siyuantest: ...
// not supported" failure, so a client that needs more fails visibly
// rather than getting a wrong answer. Markdown is split into the block
// types the record shows (headings, tables, code, paragraphs); anything
// else, lists included, is a paragraph.
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
// with setBlockAttrs.
package siyuantest

import (
	"bytes"
	"maps"
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
// with no lock-screen password.
type Options struct {
	// Token is the API token (Settings → About); "" means DefaultToken.
	Token string
	// Lock gives the kernel a lock-screen password (as a Docker kernel
	// always has): a call without a token is refused with 401.
	Lock bool
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
	conns    map[net.Conn]struct{}
	stopped  bool
	ids      map[string]bool // every id handed out, so none repeats
	boxes    []*Notebook     // creation order
	docs     []*doc          // creation order; removed ones are dropped
	assets   []*Asset
	index    []attrRow       // the attributes table as /api/query/sql sees it
	removed  map[string]bool // removed since the last flush: getHPathByID says "indexing"
	calls    []Call
	boots    int
	dieAfter map[string]int
	faults   map[string][]Fault
}

type doc struct {
	id, box          string
	parent           *doc // nil: at the notebook's root
	title, markdown  string
	attrs            map[string]string
	blocks           []block
	created, updated time.Time
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
	k := &Kernel{t: t, opts: opts, ids: map[string]bool{}, removed: map[string]bool{},
		dieAfter: map[string]int{}, faults: map[string][]Fault{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("siyuantest: listen: %v", err)
	}
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
	k.ln, k.stopped, k.conns = ln, false, conns
	k.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
}

// Stop stops the kernel as a killed process stops: the listener and every
// open connection are closed, so calls in flight fail and further calls
// get "connection refused". The state is kept for Restart.
func (k *Kernel) Stop() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.stopped {
		closeConns(k.stopLocked())
	}
}

// stopLocked closes the listener and returns the connections to close.
func (k *Kernel) stopLocked() map[net.Conn]struct{} {
	k.stopped = true
	_ = k.ln.Close()
	return k.conns
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
	r, n := routeKey(route), 0
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
		out = append(out, *b)
	}
	return out
}

// Docs returns the documents in creation order.
func (k *Kernel) Docs() []Doc {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []Doc
	for _, d := range k.docs {
		out = append(out, Doc{ID: d.id, Notebook: d.box, HPath: d.hpath(), Title: d.title,
			Markdown: d.markdown, Attrs: maps.Clone(d.attrs)})
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
	return k.createBox(name).ID
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
		id := k.now().Format(tsLayout) + "-" + string(b)
		if !k.ids[id] {
			k.ids[id] = true
			return id
		}
	}
}

const tsLayout = "20060102150405"

func (k *Kernel) now() time.Time { return k.opts.Now().UTC() }
