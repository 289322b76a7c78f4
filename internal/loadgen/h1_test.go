package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

// rawServer answers every request on a connection with the raw bytes
// answer returns for it (nil: close the connection), reading requests one
// after another while the connection stays open (an HTTP/1.0 answer or
// one that says "Connection: close" or X-Test-Then-Close ends it). It records each request
// as the server read it.
func rawServer(t *testing.T, answer func(n int, req *http.Request, body []byte) []byte) (string, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var seen []string
	var count atomic.Int64
	addr := serveRawConns(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			body, _ := io.ReadAll(req.Body)
			var dump bytes.Buffer
			_ = req.Header.Write(&dump)
			mu.Lock()
			seen = append(seen, req.Method+" "+req.RequestURI+" "+req.Host+"\n"+dump.String()+string(body))
			mu.Unlock()
			out := answer(int(count.Add(1)), req, body)
			if out == nil {
				return
			}
			if _, err := c.Write(out); err != nil {
				return
			}
			if bytes.HasPrefix(out, []byte("HTTP/1.0")) || bytes.Contains(out, []byte("Connection: close")) || bytes.Contains(out, []byte("X-Test-Then-Close")) {
				return // the answer ends with the connection
			}
		}
	})
	return "http://" + addr, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

// serveRawConns accepts connections on a loopback port until the test
// ends, each handled by serve on its own goroutine and closed after it;
// cleanup waits for them all. It returns the address.
func serveRawConns(t *testing.T, serve func(c net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				serve(c)
			}()
		}
	}()
	return ln.Addr().String()
}

// The fast path reads every shape of answer as net/http's transport does:
// sized and chunked bodies, trailers, an informational answer first, a
// body that ends with the connection, an empty one; and the server reads
// the same request from both.
func TestFastPathAnswersAsNetHTTP(t *testing.T) {
	for _, tc := range []struct{ name, raw string }{
		{"sized", "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"a\":\"bcd\"}"},
		{"chunked", "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n6\r\ndata: \r\n3\r\nx\n\n\r\n0\r\n\r\n"},
		{"trailer", "HTTP/1.1 200 OK\r\nTrailer: X-T\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nX-T: v\r\n\r\n"},
		{"informational", "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi"},
		{"until-close", "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nall of it"},
		{"empty", "HTTP/1.1 204 No Content\r\nX-Empty: 1\r\n\r\n"},
		{"error-status", "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 7\r\nRetry-After: 1\r\n\r\nloading"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, seen := rawServer(t, func(int, *http.Request, []byte) []byte { return []byte(tc.raw) })
			get := func(rt http.RoundTripper) (*http.Response, string) {
				req, err := http.NewRequest(http.MethodPost, url+"/v1/completions?x=1", strings.NewReader(`{"prompt":"p"}`))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer k")
				req.Header.Add("X-Multi", "a")
				req.Header.Add("X-Multi", "b")
				resp, err := rt.RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, err := io.ReadAll(resp.Body)
				if err != nil {
					t.Fatal(err)
				}
				return resp, string(b)
			}
			fast := NewHTTPClient(1).Transport.(*h1Transport)
			defer fast.CloseIdleConnections()
			slow := &http.Transport{DisableCompression: true}
			defer slow.CloseIdleConnections()
			fr, fb := get(fast)
			if fast.fast(fr.Request) == false {
				t.Fatal("the request did not take the fast path")
			}
			sr, sb := get(slow)
			if fr.StatusCode != sr.StatusCode || fr.Proto != sr.Proto || fr.ContentLength != sr.ContentLength || fr.Close != sr.Close || fb != sb {
				t.Errorf("fast %d %s len %d close %v %q; net/http %d %s len %d close %v %q",
					fr.StatusCode, fr.Proto, fr.ContentLength, fr.Close, fb, sr.StatusCode, sr.Proto, sr.ContentLength, sr.Close, sb)
			}
			if fh, sh := headerText(fr.Header), headerText(sr.Header); fh != sh {
				t.Errorf("headers: fast\n%s\nnet/http\n%s", fh, sh)
			}
			if fh, sh := headerText(fr.Trailer), headerText(sr.Trailer); fh != sh {
				t.Errorf("trailers: fast %q, net/http %q", fh, sh)
			}
			if s := seen(); len(s) != 2 || s[0] != s[1] {
				t.Errorf("the server read different requests:\n%q", s)
			}
		})
	}
}

func headerText(h http.Header) string {
	var b bytes.Buffer
	_ = h.Write(&b)
	return b.String()
}

// A connection goes back to the pool after an answer read to its end, and
// only then: not after a body closed early, not after "Connection:
// close", and not one the server closed while it sat idle (no resend
// needed: the send goes on a fresh connection).
func TestFastPathPool(t *testing.T) {
	var closeNext atomic.Bool
	url, _ := rawServer(t, func(n int, req *http.Request, body []byte) []byte {
		if req.URL.Path == "/close" {
			return []byte("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok")
		}
		if closeNext.Swap(false) {
			// Answer, then close without a word (llama-server's way).
			return []byte("HTTP/1.1 200 OK\r\nX-Test-Then-Close: 1\r\nContent-Length: 2\r\n\r\nok")
		}
		return []byte("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
	})
	client := NewHTTPClient(4)
	tr := client.Transport.(*h1Transport)
	defer tr.CloseIdleConnections()
	var dials atomic.Int64
	d := &net.Dialer{}
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return d.DialContext(ctx, network, addr)
	}
	do := func(path string, readAll bool) bool {
		t.Helper()
		var reused bool
		ctx := httptraceReused(context.Background(), &reused)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+path, strings.NewReader("{}"))
		resp, err := send(client, req)
		if err != nil {
			t.Fatal(err)
		}
		if readAll {
			_, _ = io.ReadAll(resp.Body)
		} else {
			_, _ = resp.Body.Read(make([]byte, 1))
		}
		resp.Body.Close()
		return reused
	}
	steps := []struct {
		path    string
		readAll bool
		reused  bool
		dials   int64
	}{
		{"/", true, false, 1},     // a first dial
		{"/", true, true, 1},      // read to the end: pooled
		{"/", false, true, 1},     // closed early: not pooled
		{"/", true, false, 2},     // so this one dials
		{"/close", true, true, 2}, // the server says close
		{"/", true, false, 3},     // so this one dials
		{"/", true, true, 3},      // and pools
	}
	for i, s := range steps {
		if got := do(s.path, s.readAll); got != s.reused || dials.Load() != s.dials {
			t.Fatalf("step %d (%s, read all %v): reused %v dials %d, want %v %d", i, s.path, s.readAll, got, dials.Load(), s.reused, s.dials)
		}
	}
	// The server closes the pooled connection while it is idle: the next
	// send sees it closed and dials, with no failed send to resend.
	closeNext.Store(true)
	do("/", true) // its answer ends the connection from the server's side
	waitServerClosed(t, tr)
	before := dials.Load()
	if reused := do("/", true); reused || dials.Load() != before+1 {
		t.Fatalf("a connection the server closed was reused (dials %d → %d)", before, dials.Load())
	}
}

// waitServerClosed waits until tr's one idle connection sees that the
// server closed it (the server's goroutine closes it when it gets to run,
// later on a loaded machine); on a system without the peek (aliveFunc)
// it fails.
func waitServerClosed(t *testing.T, tr *h1Transport) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		tr.mu.Lock()
		var c *h1Conn
		for _, cs := range tr.idle {
			if len(cs) == 1 {
				c = cs[0]
			}
		}
		tr.mu.Unlock()
		if c == nil {
			t.Fatal("no idle connection")
		}
		if !c.alive() {
			return
		}
	}
	t.Fatal("the idle connection never saw the server close it")
}

// httptraceReused records GotConn's Reused in *reused.
func httptraceReused(ctx context.Context, reused *bool) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { *reused = i.Reused }})
}

// A cancelled context ends a request blocked waiting for headers, and one
// blocked reading the body, with the context's error, at once.
func TestFastPathCancel(t *testing.T) {
	block := make(chan struct{})
	url, _ := rawServer(t, func(n int, req *http.Request, body []byte) []byte {
		if req.URL.Path == "/headers" {
			<-block
			return nil
		}
		return []byte("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial")
	})
	t.Cleanup(func() { close(block) }) // before the server's own cleanup waits for its handlers
	client := NewHTTPClient(1)
	defer client.CloseIdleConnections()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/headers", strings.NewReader("{}"))
	start := time.Now()
	if _, err := send(client, req); !errors.Is(err, context.Canceled) || time.Since(start) > 5*time.Second {
		t.Fatalf("waiting for headers: err %v after %v", err, time.Since(start))
	}
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	req, _ = http.NewRequestWithContext(ctx, http.MethodPost, url+"/body", strings.NewReader("{}"))
	resp, err := send(client, req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 7)
	if _, err := io.ReadFull(resp.Body, buf); err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(50*time.Millisecond, cancel)
	start = time.Now()
	if _, err := resp.Body.Read(buf); !errors.Is(err, context.Canceled) || time.Since(start) > 5*time.Second {
		t.Fatalf("reading the body: err %v after %v", err, time.Since(start))
	}
}

// What the fast path cannot send as net/http would goes to net/http: a
// header value net/http refuses gets net/http's error, and a body of
// unknown length is sent chunked.
func TestFastPathFallsBack(t *testing.T) {
	url, seen := rawServer(t, func(int, *http.Request, []byte) []byte {
		return []byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
	})
	client := NewHTTPClient(1)
	defer client.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer a\r\nX-Injected: 1")
	if _, err := send(client, req); err == nil || !strings.Contains(err.Error(), "invalid header field value") {
		t.Fatalf("err = %v", err)
	}
	req, _ = http.NewRequest(http.MethodPost, url, io.MultiReader(strings.NewReader("{"), strings.NewReader("}")))
	resp, err := send(client, req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if s := seen(); len(s) != 1 || !strings.Contains(s[0], "{}") {
		t.Fatalf("the server read %q", s)
	}
}

// A stream on the fast path is read on the request's own goroutine:
// open streams cost no transport goroutines (net/http keeps a reader and
// a writer goroutine for every connection).
func TestFastPathStreamsNeedNoTransportGoroutines(t *testing.T) {
	hold := make(chan struct{})
	started := make(chan struct{}, 64)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		started <- struct{}{}
		<-hold
	}))
	defer hs.Close()
	const streams = 32
	// The transport's goroutines while the streams are open: those in
	// net/http's persistent-connection loops (the fast path has none of
	// its own to count).
	open := func(fast bool) int {
		client := NewHTTPClient(streams)
		if !fast {
			client.Transport = client.Transport.(*h1Transport).Transport
		}
		defer client.CloseIdleConnections()
		defer hs.CloseClientConnections()
		var wg sync.WaitGroup
		defer wg.Wait()
		for range streams {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, _ := http.NewRequest(http.MethodPost, hs.URL, strings.NewReader("{}"))
				resp, err := send(client, req)
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}()
		}
		for range streams {
			<-started
		}
		n := transportGoroutines()
		for range streams {
			hold <- struct{}{}
		}
		return n
	}
	fast, slow := open(true), open(false)
	t.Logf("transport goroutines while %d streams are open: %d on the fast path, %d through net/http", streams, fast, slow)
	if fast != 0 {
		t.Errorf("the fast path ran %d transport goroutines for %d streams", fast, streams)
	}
	if slow != 2*streams {
		t.Errorf("net/http ran %d transport goroutines for %d streams, not its two per connection: the count does not see them", slow, streams)
	}
}

// transportGoroutines counts the goroutines in net/http's client
// connection loops (readLoop and writeLoop).
func transportGoroutines() int {
	buf := make([]byte, 8<<20)
	n := runtime.Stack(buf, true)
	count := 0
	for _, g := range strings.Split(string(buf[:n]), "\n\n") {
		if strings.Contains(g, "net/http.(*persistConn).readLoop(") || strings.Contains(g, "net/http.(*persistConn).writeLoop(") {
			count++
		}
	}
	return count
}

// twoTokenStream is a whole chunked SSE answer of two tokens.
var twoTokenStream = func() string {
	stream := "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
	for _, ev := range []string{
		`data: {"id":"a","choices":[{"index":0,"text":" x"}]}` + "\n\n",
		`data: {"id":"a","choices":[{"index":0,"text":" y","finish_reason":"length"}],"usage":{"prompt_tokens":3,"completion_tokens":2}}` + "\n\n",
		"data: [DONE]\n\n",
	} {
		stream += strconv.FormatInt(int64(len(ev)), 16) + "\r\n" + ev + "\r\n"
	}
	return stream + "0\r\n\r\n"
}()

// Bytes a server writes after a complete answer (a stray CRLF after a
// chunked stream's last chunk, in the same write) sit in the connection's
// read buffer when the answer ends. Pooled with them, the connection read
// them as the next answer's start: every second request failed
// `malformed HTTP response ""`. Such a connection is closed, as net/http
// closes one whose reader holds buffered bytes, and every request gets
// its answer on a fresh one.
func TestStrayBytesAfterAnAnswerAreNotPooled(t *testing.T) {
	stream := twoTokenStream + "\r\n" // the stray CRLF, in the same write
	url, seen := rawServer(t, func(int, *http.Request, []byte) []byte { return []byte(stream) })
	tg := &Target{BaseURL: url, Model: "m", Endpoint: Completions, Stream: true, HTTP: NewHTTPClient(1), StallTimeout: 30 * time.Second}
	defer tg.HTTP.CloseIdleConnections()
	const n = 8
	for i := 0; i < n; i++ {
		r := tg.Do(context.Background(), Request{Prompt: "p", MaxTokens: 2})
		if r.Err != nil {
			t.Fatalf("request %d: %v", i, r.Err)
		}
		if r.OutputTokens != 2 || r.ConnRetries != 0 || r.NetHTTP != "" {
			t.Fatalf("request %d: %d tokens, %d resends, net/http %q", i, r.OutputTokens, r.ConnRetries, r.NetHTTP)
		}
	}
	if got := len(seen()); got != n {
		t.Fatalf("the server read %d requests for %d sent", got, n)
	}
}

// An answer whose header line never ends is cut at the headers' bound
// (10 MiB, net/http's), with an error that names it, long before the
// server stops: before, the fast path held the line whole while it grew
// (one request reached 15.8 GB). Both paths keep the bound.
func TestEndlessResponseHeaderIsBounded(t *testing.T) {
	const stopAt = 64 << 20 // the server gives up here; a bounded client is long gone
	for _, tc := range []struct {
		name   string
		client func() *http.Client
	}{
		{"fast path", func() *http.Client { return NewHTTPClient(1) }},
		{"net/http", func() *http.Client {
			c := NewHTTPClient(1)
			c.Transport.(*h1Transport).DisableKeepAlives = true
			return c
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, sent := endlessHeaderServer(t, stopAt)
			tg := &Target{BaseURL: "http://" + addr, Model: "m", Endpoint: Completions, Stream: true, HTTP: tc.client(), StallTimeout: time.Minute}
			defer tg.HTTP.CloseIdleConnections()
			r := tg.Do(context.Background(), Request{Prompt: "p", MaxTokens: 2})
			if (r.NetHTTP == "") != (tc.name == "fast path") {
				t.Fatalf("went through net/http: %q", r.NetHTTP)
			}
			want := "response headers exceed 10 MiB"
			if tc.name == "net/http" {
				want = "server response headers exceeded 10485760 bytes"
			}
			if r.Err == nil || !strings.Contains(r.Err.Error(), want) {
				t.Fatalf("err %v, want %q", r.Err, want)
			}
			if got := sent.Load(); got >= stopAt {
				t.Fatalf("the client read all %d MiB the server sent before it failed", got>>20)
			}
		})
	}
}

// endlessHeaderServer answers every request with a header line that does
// not end, as fast as the client reads, until stopAt bytes were sent; sent
// counts them.
func endlessHeaderServer(t *testing.T, stopAt int64) (addr string, sent *atomic.Int64) {
	sent = &atomic.Int64{}
	addr = serveRawConns(t, func(c net.Conn) {
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			return
		}
		if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nX-Endless: "); err != nil {
			return
		}
		chunk := bytes.Repeat([]byte("a"), 64<<10)
		for sent.Load() < stopAt {
			n, err := c.Write(chunk)
			sent.Add(int64(n))
			if err != nil {
				return
			}
		}
	})
	return addr, sent
}

// A server that dribbles a header's bytes forever (one every 10 ms) still
// meets the stall timeout: bytes of headers do not kick the stall clock,
// so the headers must be whole within it.
func TestDribbledResponseHeaderStalls(t *testing.T) {
	addr := serveRawConns(t, func(c net.Conn) {
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			return
		}
		if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nX-Dribble: "); err != nil {
			return
		}
		for {
			time.Sleep(10 * time.Millisecond)
			if _, err := c.Write([]byte("a")); err != nil {
				return
			}
		}
	})
	const stall = 500 * time.Millisecond
	tg := &Target{BaseURL: "http://" + addr, Model: "m", Endpoint: Completions, Stream: true, HTTP: NewHTTPClient(1), StallTimeout: stall}
	defer tg.HTTP.CloseIdleConnections()
	start := time.Now()
	r := tg.Do(context.Background(), Request{Prompt: "p", MaxTokens: 2})
	took := time.Since(start)
	var se *StallError
	if !errors.As(r.Err, &se) || se.Headers {
		t.Fatalf("err %v, want a stall before the headers", r.Err)
	}
	// The server would dribble forever: the stall ended it, no sooner
	// than it says and long before a busy machine's delays could add up.
	if took < stall || took > stall+20*time.Second {
		t.Fatalf("the request ended after %v for a %v stall timeout", took, stall)
	}
}

// The Host a plan's headers set is the one sent, on the fast path, on
// net/http's transport and through a client that is not benchrun's:
// net/http ignores Header["Host"] (it sends Request.Host) and the fast
// path skipped it, so requests to a virtual-hosted gateway reached its
// default backend.
func TestPlanHostHeaderIsSent(t *testing.T) {
	var mu sync.Mutex
	var hosts []string
	url, _ := rawServer(t, func(_ int, req *http.Request, _ []byte) []byte {
		mu.Lock()
		hosts = append(hosts, req.Host)
		mu.Unlock()
		return []byte(twoTokenStream)
	})
	for _, tc := range transportPaths(true) {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			hosts = nil
			mu.Unlock()
			tg := &Target{BaseURL: url, Model: "m", Endpoint: Completions, Stream: true, HTTP: tc.client(),
				Headers: map[string]string{"host": "llm.gateway.example", "X-Tenant": "a"}, StallTimeout: 30 * time.Second}
			defer tg.HTTP.CloseIdleConnections()
			r := tg.Do(context.Background(), Request{Prompt: "p", MaxTokens: 2})
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			if (r.NetHTTP != "") != tc.netHTTP {
				t.Fatalf("net/http %q, want it %v", r.NetHTTP, tc.netHTTP)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(hosts) != 1 || hosts[0] != "llm.gateway.example" {
				t.Fatalf("the server got Host %q, want the plan's llm.gateway.example", hosts)
			}
		})
	}
	// Straight through the transport, as a caller outside Target (a health
	// probe) sends: the header's Host is the one written.
	req, _ := http.NewRequest(http.MethodGet, url+"/health", nil)
	req.Header.Set("Host", "probe.gateway.example")
	mu.Lock()
	hosts = nil
	mu.Unlock()
	client := NewHTTPClient(1)
	defer client.CloseIdleConnections()
	resp, err := client.Transport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(hosts) != 1 || hosts[0] != "probe.gateway.example" {
		t.Fatalf("the server got Host %q through the transport, want probe.gateway.example", hosts)
	}
}

// An HTTP/2-only server over plain TCP (x/net's http2.Server serving h2c
// with prior knowledge) answers benchrun's HTTP/1.1 request with its
// SETTINGS frame. Both paths say so (ErrHTTP2, naming HTTP/2 and what to
// do) instead of `malformed HTTP response "\x00\x00$\x04…"`, and
// HTTP2Answer finds it in a plain net/http client's error, as a health
// check must to fail at once instead of retrying for its whole window.
func TestHTTP2OnlyServerIsNamed(t *testing.T) {
	//lint:ignore SA1019 x/net/http2 serves one connection we hold (ServeConn); net/http's own h2c server hides the connection, and its close can reset the SETTINGS frame before the client reads it
	h2 := &http2.Server{}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "h2 only") })
	quiet := &http.Server{ErrorLog: log.New(io.Discard, "", 0)} // "bogus greeting" for each request
	addr := serveRawConns(t, func(c net.Conn) {
		nc := &noClose{Conn: c, wrote: make(chan struct{})}
		//lint:ignore SA1019 x/net/http2 serves one connection we hold (ServeConn); net/http's own h2c server hides the connection, and its close can reset the SETTINGS frame before the client reads it
		h2.ServeConn(nc, &http2.ServeConnOpts{Handler: handler, BaseConfig: quiet})
		// ServeConn returns on the bad preface while its SETTINGS frame
		// may still be on its way out (flushed on another goroutine),
		// and closed at once with the request unread the connection
		// would be reset, which can beat the frame to the client's read.
		// So: the frame written, then a close as net/http's server does
		// it, the write side first, then read what the client sent.
		select {
		case <-nc.wrote:
		case <-time.After(5 * time.Second):
		}
		_ = c.(*net.TCPConn).CloseWrite()
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, _ = io.Copy(io.Discard, c)
	})
	url := "http://" + addr

	// The server is what it claims: an HTTP/2 client with prior
	// knowledge gets its answer.
	//lint:ignore SA1019 x/net/http2 serves one connection we hold (ServeConn); net/http's own h2c server hides the connection, and its close can reset the SETTINGS frame before the client reads it
	h2c := &http.Client{Transport: &http2.Transport{AllowHTTP: true, DialTLSContext: func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}}
	resp, err := h2c.Get(url + "/health")
	if err != nil {
		t.Fatalf("the test server does not speak h2c: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	h2c.CloseIdleConnections()
	if resp.ProtoMajor != 2 || string(b) != "h2 only" {
		t.Fatalf("h2c answer %s %q", resp.Proto, b)
	}

	for _, tc := range transportPaths(false) {
		t.Run(tc.name, func(t *testing.T) {
			tg := &Target{BaseURL: url, Model: "m", Endpoint: Completions, Stream: true, HTTP: tc.client(), StallTimeout: 30 * time.Second}
			defer tg.HTTP.CloseIdleConnections()
			r := tg.Do(context.Background(), Request{Prompt: "p", MaxTokens: 2})
			if (r.NetHTTP != "") != tc.netHTTP {
				t.Fatalf("net/http %q, want it %v", r.NetHTTP, tc.netHTTP)
			}
			if !errors.Is(r.Err, ErrHTTP2) || !strings.Contains(r.Err.Error(), "the server answered in HTTP/2 (h2c prior knowledge); benchrun speaks HTTP/1.1 to http:// URLs") {
				t.Fatalf("err %v, want ErrHTTP2", r.Err)
			}
			if r.ConnRetries != 0 {
				t.Fatalf("resent %d times", r.ConnRetries)
			}
		})
	}

	// A client that is not benchrun's (a health check's GET): its error
	// says "malformed HTTP response", and HTTP2Answer reads it.
	plain := &http.Client{Transport: &http.Transport{}}
	defer plain.CloseIdleConnections()
	_, err = plain.Get(url + "/health")
	if err == nil || !strings.Contains(err.Error(), "malformed HTTP response") {
		t.Fatalf("net/http's own error: %v", err)
	}
	if h := HTTP2Answer(err); !errors.Is(h, ErrHTTP2) {
		t.Fatalf("HTTP2Answer(%v) = %v", err, h)
	}
}

// noClose is a connection whose Close is left to its owner; wrote is
// closed by its first write.
type noClose struct {
	net.Conn
	once  sync.Once
	wrote chan struct{}
}

func (c *noClose) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.once.Do(func() { close(c.wrote) })
	return n, err
}

func (*noClose) Close() error { return nil }

// looksHTTP2 tells an HTTP/2 server's first bytes from an HTTP/1 answer's
// and from other garbage; HTTP2Answer reads net/http's error text.
func TestLooksHTTP2(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    string
		want bool
	}{
		{"settings, 6 settings", "\x00\x00\x24\x04\x00\x00\x00\x00\x00", true},
		{"empty settings", "\x00\x00\x00\x04\x00\x00\x00\x00\x00", true},
		{"settings ack", "\x00\x00\x00\x04\x01\x00\x00\x00\x00", true},
		{"preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"[:9], true},
		{"status line", "HTTP/1.1 200 OK"[:9], false},
		{"headers frame", "\x00\x00\x24\x01\x04\x00\x00\x00\x01", false},
		{"settings on a stream", "\x00\x00\x24\x04\x00\x00\x00\x00\x01", false},
		{"settings, odd length", "\x00\x00\x25\x04\x00\x00\x00\x00\x00", false},
		{"short", "\x00\x00\x24\x04", false},
	} {
		if got := looksHTTP2([]byte(tc.b)); got != tc.want {
			t.Errorf("%s: looksHTTP2(%q) = %v, want %v", tc.name, tc.b, got, tc.want)
		}
	}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{errors.New(`Get "http://x/health": net/http: HTTP/1.x transport connection broken: malformed HTTP response "\x00\x00$\x04\x00\x00\x00\x00\x00"`), true},
		{fmt.Errorf("reading the answer: %w", ErrHTTP2), true},
		{errors.New(`malformed HTTP response ""`), false},
		{errors.New(`malformed HTTP response "<html>"`), false},
		{io.EOF, false},
		{nil, false},
	} {
		if got := HTTP2Answer(tc.err) != nil; got != tc.want {
			t.Errorf("HTTP2Answer(%v) found one: %v, want %v", tc.err, got, tc.want)
		}
	}
}

// TestSimulatorHugeHeaderIsBounded: the simulator's huge-header fault (a
// 16 MiB header before anything else) fails the request with the bound's
// error on both paths of the transport, and the next request succeeds.
func TestSimulatorHugeHeaderIsBounded(t *testing.T) {
	_, url := startSim(t, nil)
	for _, fast := range []bool{true, false} {
		tg := newTarget(url, 1)
		if !fast {
			tg.HTTP.Transport.(*h1Transport).DisableKeepAlives = true
		}
		tg.Headers = map[string]string{"X-Sim-Fault": "huge-header=16777216"}
		r := tg.Do(context.Background(), Request{Prompt: "hello", MaxTokens: 4})
		want := "response headers exceed 10 MiB"
		if !fast {
			want = "server response headers exceeded 10485760 bytes" // net/http's words
		}
		if r.Err == nil || !strings.Contains(r.Err.Error(), want) {
			t.Errorf("fast path %v: err %v, want %q", fast, r.Err, want)
		}
		tg.Headers = nil
		if r := tg.Do(context.Background(), Request{Prompt: "hello", MaxTokens: 4}); r.Err != nil {
			t.Errorf("fast path %v: the next request: %v", fast, r.Err)
		}
		tg.HTTP.CloseIdleConnections()
	}
}

// transportPath is one way a request goes out: benchrun's fast path,
// net/http through benchrun's transport (keep-alives off take it there),
// or, with plain, a plain net/http client besides.
type transportPath struct {
	name    string
	client  func() *http.Client
	netHTTP bool
}

func transportPaths(plain bool) []transportPath {
	paths := []transportPath{
		{"fast path", func() *http.Client { return NewHTTPClient(1) }, false},
		{"net/http transport", func() *http.Client {
			c := NewHTTPClient(1)
			c.Transport.(*h1Transport).DisableKeepAlives = true
			return c
		}, true},
	}
	if plain {
		paths = append(paths, transportPath{"another client", func() *http.Client { return &http.Client{Transport: &http.Transport{}} }, true})
	}
	return paths
}
