package loadgen

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptrace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/benchrun/benchrun/internal/results"
)

// h1Transport is benchrun's HTTP transport: plain-HTTP/1.1 requests go on
// the caller's goroutine over its own pool of connections; everything else
// (https, a request whose body length is unknown, a header net/http would
// refuse) goes to the embedded net/http transport, which also holds the
// settings both share (DialContext, the idle pool's size and timeout).
//
// Why: net/http hands every request between three goroutines (the
// caller's, the connection's writer and its reader) and keeps the latter
// two, with a buffer each, for every connection. On a small machine those
// hand-offs were most of the client's cost per request, and the two
// goroutines most of its memory per stream. Here the caller writes the
// request in one write and reads the answer itself; a connection is a
// socket and a read buffer.
//
// What it keeps of net/http's behaviour: the answer is parsed by
// http.ReadResponse (status, headers, chunked and sized bodies, trailers);
// the request's context cancels a blocked dial, write or read; a
// connection goes back to the pool only after its answer was read to the
// end and neither side asked to close it, and nothing past the answer
// sits in its read buffer; a pooled connection the server closed while
// it sat idle is not reused (aliveFunc); the httptrace
// GotConn hook reports each connection and whether it was pooled, so that
// kernel stamps and the stale-connection resend (Target.post) work alike
// on both paths.
type h1Transport struct {
	*http.Transport

	mu   sync.Mutex
	idle map[string][]*h1Conn // by host:port, the most recently used last
	// closes is, by host:port, what became of its pooled connections
	// (closeHistory): a server that closes every one stops being pooled.
	closes map[string]*closeHistory
}

// closeHistory is what became of a server's pooled connections: found
// closed when taken from the pool, closed under the request sent on them
// before any answer byte, or answered. A server that closes the
// connection after every answer while its headers promise keep-alive
// (llama-server) leaves each pooled one to a race between its close and
// the next request: under load the close can cross a request later than
// the stale-connection resend allows (staleCloseWindow) and fail it. Once
// nearly every pooled connection of a server was found closed, its
// connections are closed after each answer instead of pooled, as the
// server would close them anyway: no request is sent on one again.
type closeHistory struct {
	closed, answered int
	noReuse          bool
}

// Reuse is given up on a server whose pooled connections were closed at
// least closedToStop times and in at least closedShare of the times one
// was taken. Only a close that came within closeSoon of the answer
// counts: a server's idle timeout (llama-server's headers say 5 s,
// nginx's default is 75 s) closing a connection that sat idle says
// nothing of the next answer, and a dense load later keeps its pool.
const (
	closedToStop = 8
	closedShare  = 0.9
	closeSoon    = time.Second
)

// pooledOutcome records what became of a pooled connection to addr.
func (t *h1Transport) pooledOutcome(addr string, closed bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	h := t.closes[addr]
	if h == nil {
		h = &closeHistory{}
		t.closes[addr] = h
	}
	if closed {
		h.closed++
	} else {
		h.answered++
	}
	if h.closed >= closedToStop && float64(h.closed) >= closedShare*float64(h.closed+h.answered) {
		h.noReuse = true
	}
}

// pools says whether connections to addr go back to the pool.
func (t *h1Transport) pools(addr string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	h := t.closes[addr]
	return h == nil || !h.noReuse
}

// h1Conn is one pooled connection.
type h1Conn struct {
	conn  net.Conn
	br    *bufio.Reader // reads conn through bound
	bound headerBound
	alive func() bool // false: the server closed it or sent something unasked
	used  time.Time   // when it was last put back in the pool
}

// maxResponseHeaderBytes bounds what an answer's headers may take
// (informational answers before it included): net/http's transport's
// default (Transport.MaxResponseHeaderBytes), kept on both paths.
// Without it http.ReadResponse holds a header line whole however long it
// grows: an endless one took a request to 15.8 GB.
const maxResponseHeaderBytes = 10 << 20

// errHeadersTooLarge is the answer that crossed maxResponseHeaderBytes.
var errHeadersTooLarge = errors.New("response headers exceed 10 MiB (benchrun's bound on an answer's headers, net/http's default)")

// headerBound is what an h1Conn's read buffer reads: the connection,
// failing with errHeadersTooLarge once left bytes were read. RoundTrip
// sets left to the bound before an answer's headers and lifts it after.
type headerBound struct {
	r    io.Reader
	left int64
}

func (h *headerBound) Read(p []byte) (int, error) {
	if h.left <= 0 {
		return 0, errHeadersTooLarge
	}
	if int64(len(p)) > h.left {
		p = p[:h.left]
	}
	n, err := h.r.Read(p)
	h.left -= int64(n)
	return n, err
}

// h1WriteBuffers hold one request's bytes while it is written.
var h1WriteBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// h1MaxPooledBuffer is the largest write buffer kept for reuse: a rare
// huge prompt does not pin its size in the pool.
const h1MaxPooledBuffer = 256 << 10

func newH1Transport(tr *http.Transport) *h1Transport {
	return &h1Transport{Transport: tr, idle: map[string][]*h1Conn{}, closes: map[string]*closeHistory{}}
}

// RoundTrip sends req and returns the answer, its body still to be read.
// A Host in req's headers is the Host sent, on both paths (hostFromHeader).
func (t *h1Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = hostFromHeader(req)
	if !t.fast(req) {
		return t.Transport.RoundTrip(req)
	}
	ctx := req.Context()
	addr := req.URL.Host
	if req.URL.Port() == "" {
		addr = net.JoinHostPort(req.URL.Hostname(), "80")
	}
	bufp := h1WriteBuffers.Get().(*[]byte)
	msg, err := appendRequest((*bufp)[:0], req)
	if err != nil {
		h1WriteBuffers.Put(bufp)
		return nil, err
	}
	c, reused, err := t.conn(ctx, addr)
	if err != nil {
		*bufp = msg[:0]
		putWriteBuffer(bufp)
		return nil, err
	}
	var idleFor time.Duration
	if reused {
		idleFor = time.Since(c.used)
	}
	if trace := httptrace.ContextClientTrace(ctx); trace != nil && trace.GotConn != nil {
		trace.GotConn(httptrace.GotConnInfo{Conn: c.conn, Reused: reused, WasIdle: reused, IdleTime: idleFor})
	}
	// A cancelled context ends a blocked write or read: the deadline in
	// the past wakes it, and the error it returns is the context's.
	stop := context.AfterFunc(ctx, func() { _ = c.conn.SetDeadline(time.Unix(1, 0)) })
	_, err = c.conn.Write(msg)
	*bufp = msg[:0]
	putWriteBuffer(bufp)
	if err != nil {
		return nil, t.fail(ctx, c, stop, fmt.Errorf("writing the request: %w", err))
	}
	// The headers are read under their bound (the buffer is empty: a
	// connection is pooled only so), the body without one of the
	// transport's: its reader bounds it (readWhole, the SSE reader).
	c.bound.left = maxResponseHeaderBytes
	// Nothing of an answer before the end: the connection closed under
	// the request, which on a pooled one is a stale connection (io.EOF;
	// http.ReadResponse would say io.ErrUnexpectedEOF).
	b, err := c.br.Peek(1)
	if err != nil {
		if reused && ctx.Err() == nil && idleFor < closeSoon {
			t.pooledOutcome(addr, true)
		}
		return nil, t.fail(ctx, c, stop, fmt.Errorf("reading the answer: %w", err))
	}
	if reused {
		t.pooledOutcome(addr, false)
	}
	if b[0] == 0 || b[0] == 'P' {
		// Not "HTTP/1.x" but maybe HTTP/2 (a frame's length's first
		// byte, the preface's): its first frame would be read as a
		// status line, "malformed HTTP response \x00\x00$\x04…",
		// which says nothing. Nine bytes are a frame's header, and
		// fewer than any HTTP/1 status line.
		if b, _ := c.br.Peek(9); looksHTTP2(b) {
			return nil, t.fail(ctx, c, stop, fmt.Errorf("reading the answer: %w (it begins %q)", ErrHTTP2, b))
		}
	}
	resp, err := readResponse(c.br, req)
	if err != nil {
		return nil, t.fail(ctx, c, stop, fmt.Errorf("reading the answer: %w", err))
	}
	c.bound.left = math.MaxInt64
	body := &h1Body{rc: resp.Body, t: t, c: c, ctx: ctx, stop: stop, addr: addr,
		keep: !req.Close && !resp.Close}
	if resp.Body == http.NoBody {
		body.eof.Store(true)
	}
	resp.Body = body
	return resp, nil
}

// hostFromHeader returns req, or a copy of it whose Host is the one its
// headers set. A caller that sets the Host header (a plan's headers, a
// probe's) means the Host line: net/http sends Request.Host and drops
// Header["Host"], so a virtual-hosted gateway would get the URL's host
// and answer from its default backend. The copy is shallow (RoundTrip
// must not change the caller's request), its headers without Host.
func hostFromHeader(req *http.Request) *http.Request {
	hs := req.Header["Host"]
	if len(hs) == 0 {
		return req
	}
	r := *req
	r.Host = hs[0]
	r.Header = req.Header.Clone()
	r.Header.Del("Host")
	return &r
}

// netHTTPReason says why a request to url with client goes through Go's
// net/http transport rather than the fast path ("": it takes the fast
// path). Requests whose headers net/http refuses fail either way.
func netHTTPReason(client *http.Client, url string) string {
	t, ok := client.Transport.(*h1Transport)
	switch {
	case !ok:
		return "the HTTP client is not benchrun's (loadgen.NewHTTPClient)"
	case !strings.HasPrefix(url, "http://"):
		return "TLS (https) goes through Go's net/http transport"
	case t.Transport.Proxy != nil || t.Transport.DisableKeepAlives:
		return "the transport has a proxy or no keep-alive"
	}
	return ""
}

// CellNotes sets a cell's stamp columns (CellStamps) and returns what the
// row's notes say about how its requests were sent and timed ("" for
// nothing to say).
func CellNotes(row *results.Cell, rs []Result) string {
	var t SendTally
	for i := range rs {
		t.Add(&rs[i])
	}
	return joinNote(CellStamps(row, rs), t.Note())
}

// SendTally is what a cell's note on its transport needs of its results,
// folded in as each finishes.
type SendTally struct {
	requests, netHTTP int
	why               string
}

// Add folds in one result.
func (t *SendTally) Add(r *Result) {
	t.requests++
	if r.NetHTTP != "" {
		t.netHTTP++
		t.why = r.NetHTTP
	}
}

// Note is the note a cell's row carries when some of its requests went
// through Go's net/http transport ("" when all took the fast path).
func (t *SendTally) Note() string {
	if t.netHTTP == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d requests went through Go's net/http transport, not benchrun's HTTP/1.1 fast path (%s): more client CPU per request and two more goroutines per connection", t.netHTTP, t.requests, t.why)
}

// joinNote joins two notes with "; ", either possibly "".
func joinNote(a, b string) string {
	return strings.TrimPrefix(strings.TrimSuffix(a+"; "+b, "; "), "; ")
}

// fast reports whether req goes on the caller's goroutine.
func (t *h1Transport) fast(req *http.Request) bool {
	if req.URL.Scheme != "http" || t.Transport.Proxy != nil || t.Transport.DisableKeepAlives || req.URL.User != nil {
		return false
	}
	if req.Body != nil && req.Body != http.NoBody && req.ContentLength <= 0 {
		return false // unknown length: net/http chunks it
	}
	if req.Method != http.MethodPost && req.Method != http.MethodGet {
		return false
	}
	if !httpguts.ValidHostHeader(req.Host) {
		return false // net/http refuses it ("invalid Host header")
	}
	for k, vs := range req.Header {
		if !httpguts.ValidHeaderFieldName(k) {
			return false // net/http refuses it, and says so
		}
		for _, v := range vs {
			if !httpguts.ValidHeaderFieldValue(v) {
				return false
			}
		}
	}
	return true
}

// fail closes the request's connection and returns its error: the
// context's when it was cancelled (as net/http's transport does).
func (t *h1Transport) fail(ctx context.Context, c *h1Conn, stop func() bool, err error) error {
	stop()
	c.conn.Close()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// conn takes a pooled connection to addr, or dials one.
func (t *h1Transport) conn(ctx context.Context, addr string) (*h1Conn, bool, error) {
	for {
		c := t.takeIdle(addr)
		if c == nil {
			break
		}
		if c.br.Buffered() == 0 && c.alive() {
			return c, true, nil
		}
		if time.Since(c.used) < closeSoon {
			t.pooledOutcome(addr, true)
		}
		c.conn.Close()
	}
	dial := t.Transport.DialContext
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	nc, err := dial(ctx, "tcp", addr)
	if err != nil {
		return nil, false, err // "dial tcp …: connect: connection refused", as net/http says it
	}
	c := &h1Conn{conn: nc, bound: headerBound{r: nc, left: math.MaxInt64}}
	c.br = bufio.NewReaderSize(&c.bound, 4096)
	c.alive = aliveFunc(nc)
	return c, false, nil
}

// takeIdle pops the most recently used idle connection to addr, closing
// those idle past the transport's IdleConnTimeout.
func (t *h1Transport) takeIdle(addr string) *h1Conn {
	t.mu.Lock()
	defer t.mu.Unlock()
	for {
		cs := t.idle[addr]
		if len(cs) == 0 {
			return nil
		}
		c := cs[len(cs)-1]
		cs[len(cs)-1] = nil
		t.idle[addr] = cs[:len(cs)-1]
		if t.Transport.IdleConnTimeout > 0 && time.Since(c.used) > t.Transport.IdleConnTimeout {
			c.conn.Close()
			continue
		}
		return c
	}
}

// putIdle returns c to the pool, or closes it when the pool for addr is
// full.
func (t *h1Transport) putIdle(addr string, c *h1Conn) {
	c.used = time.Now()
	t.mu.Lock()
	limit := t.Transport.MaxIdleConnsPerHost
	if limit <= 0 {
		limit = http.DefaultMaxIdleConnsPerHost
	}
	if len(t.idle[addr]) < limit {
		t.idle[addr] = append(t.idle[addr], c)
		c = nil
	}
	t.mu.Unlock()
	if c != nil {
		c.conn.Close()
	}
}

// CloseIdleConnections closes the idle connections of both paths.
func (t *h1Transport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = map[string][]*h1Conn{}
	t.mu.Unlock()
	for _, cs := range idle {
		for _, c := range cs {
			c.conn.Close()
		}
	}
	t.Transport.CloseIdleConnections()
}

// h1Body is an answer's body on the fast path. Closing it after the body
// was read to its end hands the connection back to the pool; closing it
// earlier, or after a failed read, closes the connection (which also ends
// a read blocked on another goroutine, as net/http's body does).
type h1Body struct {
	rc     io.ReadCloser // http.ReadResponse's body
	t      *h1Transport
	c      *h1Conn
	ctx    context.Context
	stop   func() bool // disarms the cancellation
	addr   string
	keep   bool        // neither side asked to close the connection
	eof    atomic.Bool // the body was read to its end
	failed atomic.Bool // a read failed: the connection is unusable
	closed atomic.Bool
}

func (b *h1Body) Read(p []byte) (int, error) {
	if b.closed.Load() {
		return 0, errors.New("http: read on closed response body")
	}
	n, err := b.rc.Read(p)
	switch {
	case err == io.EOF:
		b.eof.Store(true)
	case err != nil:
		b.failed.Store(true)
		if b.ctx.Err() != nil {
			err = b.ctx.Err()
		}
	}
	return n, err
}

func (b *h1Body) Close() error {
	if b.closed.Swap(true) {
		return nil
	}
	// stop is false when the cancellation already ran: the connection's
	// deadline is in the past, so it is closed whatever was read. Bytes
	// already read past the answer's end (a stray CRLF after a chunked
	// body's last chunk) belong to no request: pooled, they would be read
	// as the next answer's start (malformed HTTP response ""), so the
	// connection is closed, as net/http's transport closes one whose
	// reader holds buffered bytes.
	if b.stop() && b.keep && b.eof.Load() && !b.failed.Load() && b.c.br.Buffered() == 0 && b.t.pools(b.addr) {
		b.t.putIdle(b.addr, b.c)
		return nil
	}
	return b.c.conn.Close()
}

// appendRequest appends req as HTTP/1.1 to dst: the request line, Host,
// User-Agent and Content-Length as net/http writes them, the other
// headers in sorted order, and the body.
func appendRequest(dst []byte, req *http.Request) ([]byte, error) {
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	dst = append(dst, req.Method...)
	dst = append(dst, ' ')
	dst = append(dst, req.URL.RequestURI()...)
	dst = append(dst, " HTTP/1.1\r\nHost: "...)
	dst = append(dst, host...)
	dst = append(dst, "\r\nUser-Agent: "...)
	if ua, ok := req.Header["User-Agent"]; ok {
		if len(ua) > 0 {
			dst = append(dst, ua[0]...)
		}
	} else {
		dst = append(dst, "Go-http-client/1.1"...)
	}
	dst = append(dst, "\r\n"...)
	hasBody := req.Body != nil && req.Body != http.NoBody && req.ContentLength > 0
	if hasBody || req.Method == http.MethodPost {
		dst = append(dst, "Content-Length: "...)
		dst = strconv.AppendInt(dst, max(req.ContentLength, 0), 10)
		dst = append(dst, "\r\n"...)
	}
	if req.Close {
		dst = append(dst, "Connection: close\r\n"...)
	}
	var keysBuf [16]string
	keys := keysBuf[:0]
	for k := range req.Header {
		switch k {
		case "Host", "User-Agent", "Content-Length", "Transfer-Encoding", "Trailer", "Connection":
			continue
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range req.Header[k] {
			dst = append(dst, k...)
			dst = append(dst, ": "...)
			dst = append(dst, strings.Trim(v, " \t")...)
			dst = append(dst, "\r\n"...)
		}
	}
	dst = append(dst, "\r\n"...)
	if !hasBody {
		return dst, nil
	}
	n := len(dst)
	dst = slices.Grow(dst, int(req.ContentLength))[:n+int(req.ContentLength)]
	_, err := io.ReadFull(req.Body, dst[n:])
	req.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("reading the request's body: %w", err)
	}
	return dst, nil
}

// putWriteBuffer returns a write buffer to the pool unless it grew past
// h1MaxPooledBuffer.
func putWriteBuffer(b *[]byte) {
	if cap(*b) <= h1MaxPooledBuffer {
		h1WriteBuffers.Put(b)
	}
}

// readResponse reads the answer to req, skipping informational (1xx)
// answers before it as net/http does.
func readResponse(br *bufio.Reader, req *http.Request) (*http.Response, error) {
	for {
		resp, err := http.ReadResponse(br, req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			return resp, nil
		}
	}
}

// ErrHTTP2 is the error of an answer in HTTP/2 to benchrun's HTTP/1.1
// request: a server that speaks only HTTP/2 over plain TCP (h2c with
// prior knowledge: a gRPC-style server, an h2c-only proxy) answers any
// connection with its SETTINGS frame. Waiting cannot help (a health
// check should fail at once, not retry for its whole window): the errors
// of both paths wrap it (errors.Is), and HTTP2Answer finds it in the
// error of any net/http client.
var ErrHTTP2 = errors.New("the server answered in HTTP/2 (h2c prior knowledge); benchrun speaks HTTP/1.1 to http:// URLs: let the server speak HTTP/1.1 on this port too, or give it an https:// URL (HTTP/2 is negotiated over TLS)")

// looksHTTP2 reports whether b, an answer's first bytes, is an HTTP/2
// server's: the client preface's start ("PRI * HTTP/2.0") or a SETTINGS
// frame's header (a length that is a multiple of 6 below 64 KiB, type
// 0x4, flags 0 or ACK, stream 0), what an HTTP/2 server sends first.
func looksHTTP2(b []byte) bool {
	if len(b) < 9 {
		return false
	}
	if string(b) == http2Preface[:9] {
		return true
	}
	length := int(b[1])<<8 | int(b[2])
	return b[0] == 0 && length%6 == 0 && b[3] == 0x4 && b[4]&^0x1 == 0 && b[5]|b[6]|b[7]|b[8] == 0
}

const http2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// HTTP2Answer returns an error wrapping ErrHTTP2 when err is an HTTP/2
// answer read as HTTP/1.1, by either path of benchrun's transport or by
// net/http's own (whose error says only `malformed HTTP response
// "\x00\x00$\x04…"`); nil otherwise.
func HTTP2Answer(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrHTTP2) {
		return err
	}
	// net/http quotes the line it could not read (%q): an HTTP/2 frame
	// of under 64 KiB begins with a zero byte, a SETTINGS frame's
	// length's next byte is zero too; or the client preface.
	_, line, ok := strings.Cut(err.Error(), `malformed HTTP response "`)
	if ok && (strings.HasPrefix(line, `\x00\x00`) || strings.HasPrefix(line, "PRI * HTTP/2")) {
		return fmt.Errorf("%w (%w)", ErrHTTP2, err)
	}
	return nil
}
