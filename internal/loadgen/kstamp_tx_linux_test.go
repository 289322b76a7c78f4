//go:build linux

package loadgen

import (
	"context"
	"fmt"
	"io"
	"net"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/stats"
	"golang.org/x/sys/unix"
)

// The send side: does the time benchrun stamps a request's send (a, just
// before client.Do) differ from when the request left, by the kernel's
// software transmit timestamp of its last byte? BenchmarkSendStamp
// measures it; the answer decides whether kernel transmit stamps are
// worth taking (docs/METRICS.md).

// txStampFlags: receive stamps as kconn asks for them, plus software
// transmit stamps keyed by byte (OPT_ID) and without the packet (TSONLY).
const txStampFlags = rxStampFlags | unix.SOF_TIMESTAMPING_TX_SOFTWARE | unix.SOF_TIMESTAMPING_OPT_ID | unix.SOF_TIMESTAMPING_OPT_TSONLY

// txWrite is one Write on a connection: when it was called (the user
// clock) and the kernel's transmit stamp of its last byte (0: none), wall
// clock in Unix ns.
type txWrite struct{ start, tx int64 }

// txConn is a kconn that also records every write's transmit stamp.
type txConn struct {
	*kconn
	mu     sync.Mutex
	writes []txWrite
	oob    [512]byte
	buf    [64]byte
}

func (c *txConn) Write(p []byte) (int, error) {
	start := time.Now().UnixNano()
	n, err := c.kconn.Write(p)
	// On loopback the packet is stamped inside the send: its stamp is on
	// the error queue when Write returns.
	var tx int64
	c.kconn.rc.Control(func(fd uintptr) {
		for {
			_, oobn, _, _, err := unix.Recvmsg(int(fd), c.buf[:], c.oob[:], unix.MSG_ERRQUEUE|unix.MSG_DONTWAIT)
			if err != nil {
				return
			}
			if st := rxStamp(c.oob[:oobn]); st != 0 {
				tx = st
			}
		}
	})
	c.mu.Lock()
	c.writes = append(c.writes, txWrite{start, tx})
	c.mu.Unlock()
	return n, err
}

// ReadFrom would write around Write (TCPConn.ReadFrom is promoted).
func (c *txConn) ReadFrom(r io.Reader) (int64, error) {
	return io.Copy(struct{ io.Writer }{c}, r)
}

// sendGaps is, per request, how long after its send stamp (a) the
// transport called Write, and when the kernel stamped its last byte out.
type sendGaps struct {
	toWrite, toTx, writeToTx []float64 // ms
	noTx                     int
}

func measureSendGaps(tb testing.TB, tc accuracyCase) sendGaps {
	tb.Helper()
	url := startRefServer(tb, 10*time.Millisecond, tc.itl)
	tg := newTarget(url, tc.conc)
	tr := tg.HTTP.Transport.(*h1Transport)
	var mu sync.Mutex
	conns := map[string]*txConn{}
	dial := stampDial((&net.Dialer{Timeout: 10 * time.Second}).DialContext)
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		k := c.(*kconn)
		var serr error
		k.rc.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPING, txStampFlags)
		})
		if serr != nil {
			tb.Fatalf("transmit stamps: %v", serr)
		}
		t := &txConn{kconn: k}
		mu.Lock()
		conns[c.LocalAddr().String()] = t
		mu.Unlock()
		return t, nil
	}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	RunClosed(ctx, tg, tc.conc, tc.conc, func(int) Request { return Request{Prompt: "warm", MaxTokens: 1} }, func(int, Result) {})
	refRecords(tb, url)
	var rs []Result
	RunClosed(ctx, tg, tc.conc, tc.requests, func(int) Request {
		return Request{Prompt: "the quick brown fox", MaxTokens: tc.osl, Body: map[string]any{"ignore_eos": true}}
	}, func(_ int, r Result) {
		mu.Lock()
		rs = append(rs, r)
		mu.Unlock()
	})
	refs := refRecords(tb, url)
	var g sendGaps
	for _, r := range rs {
		if r.Err != nil {
			tb.Fatalf("request failed: %v", r.Err)
		}
		c := conns[refs[r.ResponseID].Addr]
		if c == nil {
			tb.Fatalf("%s: no connection %q", r.ResponseID, refs[r.ResponseID].Addr)
		}
		c.mu.Lock()
		a := r.Sent.UnixNano()
		i := sort.Search(len(c.writes), func(i int) bool { return c.writes[i].start >= a })
		if i == len(c.writes) {
			c.mu.Unlock()
			tb.Fatalf("%s: no write after its send", r.ResponseID)
		}
		w := c.writes[i]
		c.mu.Unlock()
		g.toWrite = append(g.toWrite, float64(w.start-a)/1e6)
		if w.tx == 0 {
			g.noTx++
			continue
		}
		g.toTx = append(g.toTx, float64(w.tx-a)/1e6)
		g.writeToTx = append(g.writeToTx, float64(w.tx-w.start)/1e6)
	}
	return g
}

// BenchmarkSendStamp measures, at concurrency 1, 64 and 256 against the
// reference server, the gap between a request's user-space send stamp
// (a) and the kernel's software transmit stamp of its last byte, split
// into the time to the transport's Write call (its write goroutine being
// scheduled) and from the call to the stamp (the syscall).
//
//	go test ./internal/loadgen -run '^$' -bench SendStamp -benchtime 1x -v
func BenchmarkSendStamp(b *testing.B) {
	for _, tc := range accuracyCases {
		b.Run(fmt.Sprintf("c%d", tc.conc), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				g := measureSendGaps(b, tc)
				w, t, s := stats.Summarize(g.toWrite), stats.Summarize(g.toTx), stats.Summarize(g.writeToTx)
				b.Logf("c=%d: %d requests, %d without a transmit stamp; ms after a: Write called p50 %.3f p99 %.3f max %.3f; transmit stamp p50 %.3f p99 %.3f max %.3f; Write→stamp p50 %.3f p99 %.3f max %.3f",
					tc.conc, w.N, g.noTx, w.P50, w.P99, w.Max, t.P50, t.P99, t.Max, s.P50, s.P99, s.Max)
				b.ReportMetric(t.P50, "a-to-tx-p50-ms")
				b.ReportMetric(t.P99, "a-to-tx-p99-ms")
				b.ReportMetric(s.P99, "write-to-tx-p99-ms")
			}
		})
	}
}
