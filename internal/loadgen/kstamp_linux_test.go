//go:build linux

package loadgen

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/measure"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/sim"
	"github.com/benchrun/benchrun/internal/sim/simtest"
	"golang.org/x/sys/unix"
)

// checkStampsMatchEvents holds every kernel-stamped event to its own
// bytes: a stamp is never earlier than the simulator's write of that event
// (stamped just before it), and an event that did not share its read with
// the next one is stamped before the next one was written.
func checkStampsMatchEvents(t *testing.T, srv *sim.Server, rs []Result) {
	t.Helper()
	for _, r := range rs {
		if r.Err != nil {
			t.Fatalf("request failed: %v", r.Err)
		}
		if r.StampSource != StampKernel || len(r.StampDelays) != len(r.Tokens) || r.StampMissing != 0 {
			t.Fatalf("stamp source %q (%s), %d delays for %d events, %d missing", r.StampSource, r.StampNote, len(r.StampDelays), len(r.Tokens), r.StampMissing)
		}
		rec, ok := srv.Record(r.ResponseID)
		if !ok || len(rec.Events) != len(r.Tokens) {
			t.Fatalf("%s: no record or %d events written for %d read", r.ResponseID, len(rec.Events), len(r.Tokens))
		}
		for k, ev := range rec.Events {
			at := r.Tokens[k].At
			if d := r.StampDelays[k]; d < 0 || d > time.Second {
				t.Errorf("event %d: stamp delay %v", k, d)
			}
			if at.Before(ev.Time) {
				t.Errorf("event %d stamped %v before the server wrote it", k, ev.Time.Sub(at))
			}
			shares := k+1 < len(r.Tokens) && r.Tokens[k+1].At.UnixNano() == at.UnixNano()
			if k+1 < len(rec.Events) && !shares && !at.Before(rec.Events[k+1].Time) {
				t.Errorf("event %d stamped %v after the server wrote event %d, without sharing its read", k, at.Sub(rec.Events[k+1].Time), k+1)
			}
		}
	}
}

func TestKernelStampsOnLoopback(t *testing.T) {
	srv, url := startSim(t, func(c *sim.Config) {
		c.TTFT = 5 * time.Millisecond
		c.ITL = 10 * time.Millisecond
	})
	tg := newTarget(url, 4)
	defer tg.HTTP.CloseIdleConnections()
	var rs []Result
	for range 3 {
		rs = append(rs, tg.Do(context.Background(), Request{Prompt: "a b c", MaxTokens: 8, Body: map[string]any{"ignore_eos": true}}))
	}
	checkStampsMatchEvents(t, srv, rs)
	// The cell: kernel stamps, their delays as the row's percentiles, and
	// the request rows carry each event's delay.
	var row results.Cell
	// (A busy machine may make events share reads, which the note says.)
	// Plain HTTP took the fast path, so the notes say nothing of net/http.
	if note := CellNotes(&row, rs); strings.Contains(note, "no usable") || strings.Contains(note, "user-space stamps:") || strings.Contains(note, "net/http") {
		t.Errorf("note %q", note)
	}
	q := RequestRows(row, rs)
	measure.FillCell(&row, results.AsRequests(q), measure.CellWindow{}, measure.SLO{})
	if row.StampSource != StampKernel || row.StampDelayP50Ms == nil || row.StampDelayP99Ms == nil || *row.StampDelayP99Ms < *row.StampDelayP50Ms {
		t.Errorf("row stamps: %q %v %v", row.StampSource, row.StampDelayP50Ms, row.StampDelayP99Ms)
	}
	if len(q[0].StampDelaysMs) != len(rs[0].Tokens) || q[0].StampDelaysMs[0] != millis(rs[0].StampDelays[0]) {
		t.Errorf("request row stamp delays %v for %v", q[0].StampDelaysMs, rs[0].StampDelays)
	}
}

// Through TLS the stamps are the TCP connection's under tls.Conn.
func TestKernelStampsThroughTLS(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.EOSProb, cfg.MaxRecords, cfg.TTFT, cfg.ITL = 0, 100, 5*time.Millisecond, 10*time.Millisecond
	srv := simtest.NewSimFrom(t, cfg)
	hs := httptest.NewTLSServer(srv)
	t.Cleanup(func() { hs.CloseClientConnections(); hs.Close() })
	tg := newTarget(hs.URL, 1)
	tg.HTTP.Transport.(*h1Transport).TLSClientConfig = hs.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	defer tg.HTTP.CloseIdleConnections()
	var rs []Result
	for range 2 {
		rs = append(rs, tg.Do(context.Background(), Request{Prompt: "a b c", MaxTokens: 8, Body: map[string]any{"ignore_eos": true}}))
	}
	checkStampsMatchEvents(t, srv, rs)
	// TLS is net/http's, and the row says so.
	var row results.Cell
	if note := CellNotes(&row, rs); !strings.Contains(note, "2 of 2 requests went through Go's net/http transport") || !strings.Contains(note, "TLS") {
		t.Errorf("note %q", note)
	}
}

// A kernel that refuses the option leaves today's stamps, and the row
// says why.
func TestKernelStampsRefusedFallsBack(t *testing.T) {
	defer refuseStamps()()
	_, url := startSim(t, func(c *sim.Config) { c.TTFT, c.ITL = time.Millisecond, time.Millisecond })
	tg := newTarget(url, 1)
	defer tg.HTTP.CloseIdleConnections()
	r := tg.Do(context.Background(), Request{Prompt: "a b c", MaxTokens: 4, Body: map[string]any{"ignore_eos": true}})
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	if r.StampSource != StampUser || r.StampDelays != nil || !strings.Contains(r.StampNote, "setsockopt SO_TIMESTAMPING: refused by the test") {
		t.Fatalf("source %q, delays %v, note %q", r.StampSource, r.StampDelays, r.StampNote)
	}
	var row results.Cell
	note := CellStamps(&row, []Result{r})
	if row.StampSource != StampUser || row.StampDelayP50Ms != nil || !strings.Contains(note, "user-space stamps") || !strings.Contains(note, "refused by the test") {
		t.Errorf("row %q %v, note %q", row.StampSource, row.StampDelayP50Ms, note)
	}
	if q := RequestRows(row, []Result{r}); len(q[0].StampDelaysMs) != 0 {
		t.Errorf("stamp delays %v without kernel stamps", q[0].StampDelaysMs)
	}
	// A non-streamed request has no per-event stamps to speak of.
	tg.Stream = false
	if r := tg.Do(context.Background(), Request{Prompt: "a", MaxTokens: 2}); r.Err != nil || r.StampSource != "" {
		t.Errorf("non-streamed: source %q, err %v", r.StampSource, r.Err)
	}
}

// A client the caller built dials plain connections: user stamps, said so.
func TestKernelStampsForeignClient(t *testing.T) {
	_, url := startSim(t, func(c *sim.Config) { c.TTFT, c.ITL = time.Millisecond, time.Millisecond })
	tg := newTarget(url, 1)
	tg.HTTP = &http.Client{Transport: &http.Transport{}}
	r := tg.Do(context.Background(), Request{Prompt: "a b c", MaxTokens: 3, Body: map[string]any{"ignore_eos": true}})
	if r.Err != nil || r.StampSource != StampUser || !strings.Contains(r.StampNote, "NewHTTPClient") {
		t.Fatalf("err %v, source %q, note %q", r.Err, r.StampSource, r.StampNote)
	}
}

// tcpPair is a kernel-stamping client connection and the server's end.
func tcpPair(t *testing.T) (*kconn, net.Conn) { return tcpPairTB(t) }

func tcpPairTB(t testing.TB) (*kconn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	acc := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		acc <- c
	}()
	c, err := stampDial((&net.Dialer{}).DialContext)(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s := <-acc
	t.Cleanup(func() { c.Close(); s.Close() })
	k, ok := c.(*kconn)
	if !ok || k.why != "" {
		t.Fatalf("dialed %T (%v)", c, k)
	}
	return k, s
}

// A read's stamp is the arrival of the last bytes it delivered: two writes
// 30 ms apart read at once carry the second's stamp.
func TestKernelStampIsTheLastSegments(t *testing.T) {
	c, s := tcpPair(t)
	w := func(b string) (before, after int64) {
		before = time.Now().UnixNano()
		if _, err := s.Write([]byte(b)); err != nil {
			t.Fatal(err)
		}
		return before, time.Now().UnixNano()
	}
	buf := make([]byte, 64)
	b0, a0 := w("one")
	n, err := c.Read(buf)
	if err != nil || string(buf[:n]) != "one" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	if st := c.lastRxStamp(); st < b0 || st > a0+int64(50*time.Millisecond) {
		t.Errorf("stamp %d ns from the write", st-b0)
	}
	w("two")
	time.Sleep(30 * time.Millisecond)
	b2, _ := w("three")
	time.Sleep(10 * time.Millisecond) // both are in the socket before the read
	n, err = c.Read(buf)
	if err != nil || string(buf[:n]) != "twothree" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	if st := c.lastRxStamp(); st < b2 {
		t.Errorf("a read of two writes 30 ms apart is stamped %v before the second", time.Duration(b2-st))
	}
	// Deadlines and EOF behave as TCPConn's.
	c.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	var ne net.Error
	if _, err := c.Read(buf); !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("read past the deadline: %v", err)
	}
	c.SetReadDeadline(time.Time{})
	s.Close()
	if _, err := c.Read(buf); err != io.EOF {
		t.Errorf("read after the peer closed: %v, want EOF", err)
	}
	c.Close()
	if _, err := c.Read(buf); !errors.Is(err, net.ErrClosed) {
		t.Errorf("read after Close: %v", err)
	}
}

// Malformed control messages give no stamp, never a panic.
func TestRxStampParse(t *testing.T) {
	for _, oob := range [][]byte{nil, {1, 2, 3}, make([]byte, 16), {0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0, 1, 0, 0, 0, 0x25, 0, 0, 0}} {
		if st := rxStamp(oob); st != 0 {
			t.Errorf("rxStamp(%v) = %d", oob, st)
		}
	}
}

// BenchmarkStampRead is the CPU cost of one read of one event-sized
// write (a simulator chunk, 200 bytes) through a loopback socket: the
// TCPConn's read against kconn's recvmsg with its control message. Each
// op is the server's write plus the client's read, on one locked thread,
// and cpu-ns/op is that thread's CPU time (a busy machine inflates ns/op,
// not it); read-cpu-ns/op is the read's part alone (from the thread's CPU
// clock around it, whose own reads are in both). The difference between
// the two modes is recvmsg's price.
func BenchmarkStampRead(b *testing.B) {
	event := simStream(1)[:200]
	for _, mode := range []string{"read", "recvmsg"} {
		b.Run(mode, func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			c, s := tcpPairTB(b)
			var r net.Conn = c
			if mode == "read" {
				r = c.TCPConn
			}
			buf := make([]byte, 4096)
			b.ReportAllocs()
			cpu0 := threadCPU()
			var readCPU int64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := s.Write(event); err != nil {
					b.Fatal(err)
				}
				r0 := threadClock()
				got := 0
				for got < len(event) {
					n, err := r.Read(buf)
					if err != nil {
						b.Fatal(err)
					}
					got += n
				}
				readCPU += threadClock() - r0
			}
			b.StopTimer()
			b.ReportMetric(float64(threadCPU()-cpu0)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(readCPU)/float64(b.N), "read-cpu-ns/op")
			if mode == "recvmsg" && c.lastRxStamp() == 0 {
				b.Fatal("no kernel stamp")
			}
		})
	}
}

// threadClock is the calling thread's CPU clock, ns.
func threadClock() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return ts.Nano()
}

// threadCPU is the calling thread's CPU time (user + system), ns.
func threadCPU() int64 {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
