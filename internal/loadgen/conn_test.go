package loadgen

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/sim"
)

// closeAfterStreamServer answers every request with a short SSE stream
// whose headers promise keep-alive, then closes the TCP connection a little
// later without reading the next request: what llama-server does after
// every streamed response. It counts the requests it actually read.
func closeAfterStreamServer(t *testing.T, closeDelay time.Duration) (url string, served *atomic.Int64) {
	t.Helper()
	return closeAfterStreamServerBy(t, func(int64) time.Duration { return closeDelay })
}

// closeAfterStreamServerBy is closeAfterStreamServer closing its k-th
// connection (from 0) closeDelay(k) after the stream.
func closeAfterStreamServerBy(t *testing.T, closeDelay func(k int64) time.Duration) (url string, served *atomic.Int64) {
	t.Helper()
	served = &atomic.Int64{}
	var conns atomic.Int64
	done := make(chan struct{})
	addr := serveRawConns(t, func(c net.Conn) {
		k := conns.Add(1) - 1
		br := bufio.NewReader(c)
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		_, _ = ioDiscard(req)
		served.Add(1)
		fmt.Fprint(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5, max=100\r\nTransfer-Encoding: chunked\r\n\r\n")
		for _, ev := range []string{
			`data: {"id":"a","choices":[{"index":0,"text":" x"}]}` + "\n\n",
			`data: {"id":"a","choices":[{"index":0,"text":" y","finish_reason":"length"}],"usage":{"prompt_tokens":3,"completion_tokens":2}}` + "\n\n",
			"data: [DONE]\n\n",
		} {
			fmt.Fprintf(c, "%x\r\n%s\r\n", len(ev), ev)
		}
		fmt.Fprint(c, "0\r\n\r\n")
		select {
		case <-time.After(closeDelay(k)):
		case <-done:
		}
	})
	// Registered after serveRawConns's cleanup, so it runs first: the
	// held connections end before the cleanup waits for them.
	t.Cleanup(func() { close(done) })
	return "http://" + addr, served
}

func ioDiscard(r *http.Request) (int64, error) {
	defer r.Body.Close()
	var n int64
	buf := make([]byte, 4096)
	for {
		k, err := r.Body.Read(buf)
		n += int64(k)
		if err != nil {
			return n, nil
		}
	}
}

// A server that closes the connection after every stream while its
// headers promise keep-alive must not fail requests: a send that died on
// the stale pooled connection before any response byte is sent again on a
// fresh one, and counted. Without the resend, 6-25% of requests failed
// against a real llama-server.
func TestStaleKeepAliveConnectionIsResent(t *testing.T) {
	url, served := closeAfterStreamServer(t, 20*time.Millisecond)
	tg := &Target{BaseURL: url, Model: "m", Endpoint: Completions, Stream: true, HTTP: NewHTTPClient(4), StallTimeout: 5 * time.Second}
	defer tg.HTTP.CloseIdleConnections()
	const n = 30
	retries := 0
	for i := 0; i < n; i++ {
		r := tg.Do(context.Background(), Request{Prompt: "p", MaxTokens: 2})
		if r.Err != nil {
			t.Fatalf("request %d failed: %v (retries so far %d)", i, r.Err, retries)
		}
		if r.OutputTokens != 2 || len(r.Tokens) != 2 {
			t.Fatalf("request %d: %d tokens in %d events", i, r.OutputTokens, len(r.Tokens))
		}
		if r.ConnRetries > 0 && r.Sent.Before(r.Scheduled) {
			t.Fatalf("request %d: resent at %v before its schedule %v", i, r.Sent, r.Scheduled)
		}
		retries += r.ConnRetries
	}
	if retries == 0 {
		t.Fatal("no request met a stale connection: the test server does not reproduce the close-after-stream race")
	}
	if got := served.Load(); got != n {
		t.Fatalf("the server read %d requests for %d sent: a resend reached it twice or a request was lost", got, n)
	}
	t.Logf("%d of %d requests were resent after a stale connection", retries, n)
}

// A resend restamps the send time: TTFT is measured from the send the
// server saw, not from the one that died on a dead connection.
func TestStaleConnectionResendRestampsSent(t *testing.T) {
	url, _ := closeAfterStreamServer(t, 300*time.Millisecond)
	tg := &Target{BaseURL: url, Model: "m", Endpoint: Completions, Stream: true, HTTP: NewHTTPClient(4)}
	defer tg.HTTP.CloseIdleConnections()
	if r := tg.Do(context.Background(), Request{Prompt: "p", MaxTokens: 2}); r.Err != nil {
		t.Fatal(r.Err)
	}
	// The server closes 300 ms after the stream: wait for it so the pooled
	// connection is surely dead, then send on it.
	time.Sleep(400 * time.Millisecond)
	sched := time.Now()
	r := tg.Do(context.Background(), Request{Prompt: "p", MaxTokens: 2, Scheduled: sched})
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	if !r.Sent.After(sched) || r.Scheduled != sched {
		t.Fatalf("sent %v scheduled %v", r.Sent, r.Scheduled)
	}
	if ttft := r.TTFT(); ttft <= 0 || ttft > 200*time.Millisecond {
		t.Fatalf("ttft %v", ttft)
	}
}

// A request that failed on a fresh connection is not resent: only a
// pooled connection can be stale, and the server may have seen the rest.
func TestFreshConnectionFailureIsNotResent(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hj, _ := w.(http.Hijacker)
		c, _, _ := hj.Hijack()
		c.Close()
	}))
	defer hs.Close()
	tg := &Target{BaseURL: hs.URL, Model: "m", Endpoint: Completions, Stream: true, HTTP: NewHTTPClient(4)}
	r := tg.Do(context.Background(), Request{Prompt: "p", MaxTokens: 2})
	if r.Err == nil || r.ConnRetries != 0 {
		t.Fatalf("err %v retries %d", r.Err, r.ConnRetries)
	}
}

// A forced output length that did not arrive is a failed request, even
// when the stream ended properly.
func TestForcedLengthShortIsCutShort(t *testing.T) {
	url, _ := closeAfterStreamServer(t, time.Millisecond)
	tg := &Target{BaseURL: url, Model: "m", Endpoint: Completions, Stream: true, HTTP: NewHTTPClient(4)}
	r := tg.Do(context.Background(), Request{Prompt: "p", MaxTokens: 8, ExpectTokens: 8})
	if r.Err == nil || !strings.Contains(r.Err.Error(), "2 of the 8 forced output tokens") {
		t.Fatalf("err = %v", r.Err)
	}
}

// A proxy's HTML error page with status 200 says what arrived.
func TestHTMLAnswerSaysWhatArrived(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<html><body>502 Bad Gateway</body></html>")
	}))
	defer hs.Close()
	tg := &Target{BaseURL: hs.URL, Model: "m", Endpoint: Completions, Stream: true, HTTP: NewHTTPClient(4)}
	r := tg.Do(context.Background(), Request{Prompt: "p", MaxTokens: 2})
	if r.Err == nil || !strings.Contains(r.Err.Error(), "text/html") || !strings.Contains(r.Err.Error(), "502 Bad Gateway") {
		t.Fatalf("err = %v", r.Err)
	}
}

// A server that sends SSE comments and never a token kept the request
// alive forever (the stall timeout only measures silence): comments keep
// a connection open but are not progress toward a first token.
func TestKeepAliveCommentsDoNotCountAsFirstToken(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
			fmt.Fprint(w, ": ping\n\n")
			w.(http.Flusher).Flush()
		}
	}))
	defer hs.Close()
	tg := &Target{BaseURL: hs.URL, Model: "m", Endpoint: Completions, Stream: true, HTTP: NewHTTPClient(2),
		StallTimeout: time.Minute, FirstTokenTimeout: 300 * time.Millisecond}
	start := time.Now()
	r := tg.Do(context.Background(), Request{Prompt: "p", MaxTokens: 4})
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("took %v", took)
	}
	var fe *FirstTokenError
	if !errors.As(r.Err, &fe) || !fe.Bytes || !strings.Contains(r.Err.Error(), "keep-alive bytes") {
		t.Fatalf("err = %v", r.Err)
	}
}

// A server that keeps streaming past max_tokens is cut and named, not
// read forever.
func TestStreamPastMaxTokensIsCut(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 0; ; i++ {
			if r.Context().Err() != nil {
				return
			}
			fmt.Fprintf(w, "data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"text\":\" t%d\"}]}\n\n", i)
			w.(http.Flusher).Flush()
			time.Sleep(time.Millisecond)
		}
	}))
	defer hs.Close()
	tg := &Target{BaseURL: hs.URL, Model: "m", Endpoint: Completions, Stream: true, HTTP: NewHTTPClient(2), StallTimeout: time.Minute}
	r := tg.Do(context.Background(), Request{Prompt: "p", MaxTokens: 16})
	var ie *IgnoredMaxTokensError
	if !errors.As(r.Err, &ie) || ie.Events != overrunLimit(16)+1 {
		t.Fatalf("err = %v", r.Err)
	}
}

// A large request body (a 2048-token prompt) written to a connection the
// server has just closed fails mid-write ("use of closed network
// connection", a reset, a broken pipe) rather than with EOF: that is the
// same stale connection, and it is resent too. The flagship's 2048:128
// cell met it against the llama-server personality.
func TestStaleConnectionWithALargeBodyIsResent(t *testing.T) {
	url, served := closeAfterStreamServer(t, time.Millisecond)
	tg := &Target{BaseURL: url, Model: "m", Endpoint: Completions, Stream: true, HTTP: NewHTTPClient(4), StallTimeout: 5 * time.Second}
	defer tg.HTTP.CloseIdleConnections()
	prompt := strings.Repeat("word ", 64<<10)
	const n = 40
	for i := 0; i < n; i++ {
		if r := tg.Do(context.Background(), Request{Prompt: prompt, MaxTokens: 2}); r.Err != nil {
			t.Fatalf("request %d failed: %v", i, r.Err)
		}
		time.Sleep(time.Duration(i%3) * time.Millisecond) // meet the close at different moments
	}
	if got := served.Load(); got != n {
		t.Fatalf("the server read %d requests for %d sent", got, n)
	}
}

// A server that reads a request, holds it, then closes its connection
// without an answer (a crash on it: the simulator's hang-up fault) failed
// that request. It is not resent as a stale keep-alive connection: before,
// a hang-up on a pooled connection went again on a fresh one and was
// recorded as that one's fast success, so a server dropping half its
// requests measured healthy. Each dropped request fails, says so, and
// keeps the time the server held it.
func TestHeldAndDroppedRequestIsNotResent(t *testing.T) {
	const hold = 400 * time.Millisecond
	s, url := startSim(t, func(c *sim.Config) { c.Faults.HangUpRate, c.Faults.HangUp = 0.5, hold })
	tg := newTarget(url, 1)
	defer tg.HTTP.CloseIdleConnections()
	const n = 12
	failed, afterSuccess := 0, 0
	prevOK := false
	for i := 0; i < n; i++ {
		r := tg.Do(context.Background(), Request{Prompt: "p", MaxTokens: 2})
		if r.Err == nil {
			prevOK = true
			continue
		}
		failed++
		if prevOK {
			afterSuccess++ // on the pooled connection the success left
		}
		prevOK = false
		if !strings.Contains(r.Err.Error(), "the server closed the connection") || !strings.Contains(r.Err.Error(), "without an answer") {
			t.Errorf("request %d: err %v, want the server's close named", i, r.Err)
		}
		if r.ConnRetries != 0 {
			t.Errorf("request %d: resent %d times after the server held it", i, r.ConnRetries)
		}
		if took := r.Finished.Sub(r.Sent); took < hold {
			t.Errorf("request %d: failed %v after its send, before the server's %v hold: the hold's cost is hidden", i, took, hold)
		}
	}
	hungUp := 0
	recs := s.Records()
	for _, rec := range recs {
		if strings.Contains(rec.Fault, "hang-up") {
			hungUp++
		}
	}
	if len(recs) != n {
		t.Errorf("the server read %d requests for %d sent: dropped requests were resent", len(recs), n)
	}
	if failed != hungUp {
		t.Errorf("%d requests failed, the server hung up on %d: the others were hidden by resends", failed, hungUp)
	}
	if afterSuccess == 0 {
		t.Fatalf("no hang-up met a pooled connection (%d hang-ups in %d requests): the test does not reproduce the resend", hungUp, n)
	}
	t.Logf("%d of %d requests hung up, %d on a pooled connection", hungUp, n, afterSuccess)
}

// A server that closes every connection right after its answer while
// promising keep-alive (llama-server) stops being pooled once nearly
// every pooled connection was found closed, so that when its close later
// comes late (a loaded server: here 150 ms after the answer, beyond the
// resend's window) no request is sent into it and lost; a server that
// keeps its connections stays pooled.
func TestServerThatClosesEveryConnectionIsNotPooled(t *testing.T) {
	closing, served := closeAfterStreamServerBy(t, func(k int64) time.Duration {
		if k < 12 {
			return 0 // closes at once: found closed when next taken
		}
		return 150 * time.Millisecond // later, its close crosses the next request
	})
	keeping := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"id":"a","choices":[{"index":0,"text":" x","finish_reason":"length"}]}`+"\n\ndata: [DONE]\n\n")
	}))
	defer keeping.Close()
	for _, tc := range []struct {
		name      string
		url       string
		wantReuse bool
	}{{"closes after every answer", closing, false}, {"keeps its connections", keeping.URL, true}} {
		t.Run(tc.name, func(t *testing.T) {
			tg := &Target{BaseURL: tc.url, Model: "m", Endpoint: Completions, Stream: true, HTTP: NewHTTPClient(4), StallTimeout: 5 * time.Second}
			defer tg.HTTP.CloseIdleConnections()
			const n = 40
			reusedLate := 0
			for i := range n {
				var reused atomic.Bool
				ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
					if info.Reused {
						reused.Store(true)
					}
				}})
				r := tg.Do(ctx, Request{Prompt: "p", MaxTokens: 2})
				if r.Err != nil {
					t.Fatalf("request %d failed: %v", i, r.Err)
				}
				if i >= n/2 && reused.Load() {
					reusedLate++
				}
				if i < 12 {
					time.Sleep(10 * time.Millisecond) // the close arrives before the next request
				}
			}
			switch {
			case tc.wantReuse && reusedLate == 0:
				t.Errorf("a server that keeps its connections: none of the last %d requests went on a pooled one", n/2)
			case !tc.wantReuse && reusedLate > 0:
				t.Errorf("a server that closes every connection: %d of the last %d requests went on a pooled one", reusedLate, n/2)
			case !tc.wantReuse && served.Load() != n:
				t.Errorf("the server read %d requests for %d sent", served.Load(), n)
			}
		})
	}
}
