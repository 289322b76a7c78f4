package loadgen

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/sim"
	"github.com/benchrun/benchrun/internal/stats"
)

// itlErrors is one accuracy run: for every inter-token gap, the measured
// gap minus the true one (the server's write records), in ms, with the
// kernel stamps and with the user-space stamps of the same events, and
// every event's stamp delay (user − kernel).
type itlErrors struct {
	kernel, user, delays []float64
	source, note         string
	missing              int       // events that kept their user stamp
	early                int       // ref: kernel stamps before their event's write
	late, lateShared     int       // ref: stamps after it; of them, events sharing the next one's stamp
	foreign              int       // ref: stamps of events alone in their read at or after the next event's write
	lateBy               []float64 // ref: how far after its write an event alone in its read was stamped, ms
	shared               int       // events whose kernel stamp is the next event's
	alone                []float64 // kernel gap errors between events that shared no stamp
	writes               []float64 // ref: each write's duration, ms
	cpuPerEvent          float64   // ref: the client process's CPU per token event, µs
}

// accuracyCase is a load of the accuracy benchmark: conc streams, closed
// loop, the simulator writing a token every itl.
type accuracyCase struct {
	conc, requests, osl int
	itl                 time.Duration
}

var accuracyCases = []accuracyCase{
	{conc: 1, requests: 20, osl: 64, itl: 5 * time.Millisecond},
	{conc: 64, requests: 256, osl: 32, itl: 10 * time.Millisecond},
	{conc: 256, requests: 768, osl: 32, itl: 25 * time.Millisecond},
}

// refuseStamps makes every connection dialed until the returned func runs
// fall back to user-space stamps, as a kernel that refuses the option does.
func refuseStamps() (restore func()) {
	prev := enableRxStamps
	enableRxStamps = func(int) error { return errRefused }
	return func() { enableRxStamps = prev }
}

var errRefused = errors.New("refused by the test")

// measureITLErrors runs tc against a server that records when it wrote
// every event and compares every gap with the true one. server "sim" is
// the in-process simulator (its write records, stamped just before each
// write); "ref" is the reference server in a child process (stamped just
// before and just after each write; the truth is the time before, and
// out.outside counts the kernel stamps that fall outside the write).
// With kernel false the kernel refuses the option: today's path (read,
// user-space stamps).
func measureITLErrors(tb testing.TB, tc accuracyCase, server string, kernel bool) itlErrors {
	tb.Helper()
	if !kernel {
		defer refuseStamps()()
	}
	var srv *sim.Server
	var url string
	if server == "sim" {
		srv, url = startSim(tb, func(c *sim.Config) {
			c.TTFT = 10 * time.Millisecond
			c.ITL = tc.itl
		})
	} else {
		url = startRefServer(tb, 10*time.Millisecond, tc.itl)
	}
	tg := newTarget(url, tc.conc)
	defer tg.HTTP.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	RunClosed(ctx, tg, tc.conc, tc.conc, func(int) Request { return Request{Prompt: "warm", MaxTokens: 1} }, func(int, Result) {})
	if srv != nil {
		srv.ResetRecords()
	} else {
		refRecords(tb, url)
	}
	var mu sync.Mutex
	var rs []Result
	cpu0 := processCPU()
	RunClosed(ctx, tg, tc.conc, tc.requests, func(int) Request {
		return Request{Prompt: "the quick brown fox", MaxTokens: tc.osl, Body: map[string]any{"ignore_eos": true}}
	}, func(_ int, r Result) {
		mu.Lock()
		rs = append(rs, r)
		mu.Unlock()
	})
	cpu := processCPU() - cpu0
	var refs map[string]refRecord
	if srv == nil {
		refs = refRecords(tb, url)
	}
	var out itlErrors
	for _, r := range rs {
		if r.Err != nil {
			tb.Fatalf("request failed: %v", r.Err)
		}
		if out.source == "" {
			out.source, out.note = r.StampSource, r.StampNote
		} else if r.StampSource != out.source {
			tb.Fatalf("stamp source %q and %q (%s) in one run", out.source, r.StampSource, r.StampNote)
		}
		out.missing += r.StampMissing
		out.shared += r.StampShared
		sharesNext := func(k int) bool {
			// A kernel-stamped time's wall reading is the kernel stamp.
			return r.StampSource == StampKernel && k+1 < len(r.Tokens) && r.Tokens[k].At.UnixNano() == r.Tokens[k+1].At.UnixNano()
		}
		// truth[k]: when the server wrote event k (Unix ns)
		var truth []int64
		if srv != nil {
			rec, ok := srv.Record(r.ResponseID)
			if !ok {
				tb.Fatalf("%s: no simulator record", r.ResponseID)
			}
			for _, ev := range rec.Events {
				truth = append(truth, ev.UnixNano)
			}
		} else {
			ws := refs[r.ResponseID].Writes
			for k, w := range ws {
				truth = append(truth, w.Before)
				if k < len(r.Tokens) && r.StampSource == StampKernel {
					at := r.Tokens[k].At.UnixNano()
					switch {
					case at < w.Before:
						out.early++
					case at > w.After && sharesNext(k):
						out.late++
						out.lateShared++
					case at > w.After:
						out.late++
						out.lateBy = append(out.lateBy, float64(at-w.After)/1e6)
					}
					if !sharesNext(k) && k+1 < len(ws) && at >= ws[k+1].Before {
						out.foreign++
					}
				}
				out.writes = append(out.writes, float64(w.After-w.Before)/1e6)
			}
		}
		if len(truth) != len(r.Tokens) {
			tb.Fatalf("%s: client saw %d token events, the server wrote %d", r.ResponseID, len(r.Tokens), len(truth))
		}
		user := func(k int) time.Time {
			if len(r.StampDelays) == len(r.Tokens) {
				return r.Tokens[k].At.Add(r.StampDelays[k])
			}
			return r.Tokens[k].At
		}
		for k := range r.Tokens {
			if len(r.StampDelays) == len(r.Tokens) {
				out.delays = append(out.delays, msf(r.StampDelays[k]))
			}
			if k == 0 {
				continue
			}
			want := time.Duration(truth[k] - truth[k-1])
			out.kernel = append(out.kernel, msf(r.Tokens[k].At.Sub(r.Tokens[k-1].At)-want))
			out.user = append(out.user, msf(user(k).Sub(user(k-1))-want))
			if r.StampSource == StampKernel && !sharesNext(k-1) && !sharesNext(k) {
				out.alone = append(out.alone, out.kernel[len(out.kernel)-1])
			}
		}
	}
	out.cpuPerEvent = float64(cpu) / 1e3 / float64(tc.requests*tc.osl)
	if want := tc.requests * (tc.osl - 1); len(out.kernel) != want {
		tb.Fatalf("compared %d gaps, want %d", len(out.kernel), want)
	}
	return out
}

// processCPU is this process's CPU time so far (user + system, all
// threads), ns; 0 where it cannot be read.
func processCPU() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// errStats is the distribution of errors: signed percentiles and those of
// their magnitude.
type errStats struct {
	n                         int
	p1, p50, p99              float64 // signed
	absP50, absP90, absP99, m float64 // |error|; m: the largest
}

func summarizeErrors(xs []float64) errStats {
	s := stats.Summarize(xs)
	abs := make([]float64, len(xs))
	for i, x := range xs {
		abs[i] = math.Abs(x)
	}
	a := stats.Summarize(abs)
	return errStats{n: s.N, p1: stats.Percentile(xs, 1), p50: s.P50, p99: s.P99, absP50: a.P50, absP90: a.P90, absP99: a.P99, m: a.Max}
}

func (e errStats) String() string {
	return fmt.Sprintf("n %5d  signed p1 %+7.3f p50 %+7.3f p99 %+7.3f  |err| p50 %6.3f p90 %6.3f p99 %6.3f max %7.3f", e.n, e.p1, e.p50, e.p99, e.absP50, e.absP90, e.absP99, e.m)
}

// BenchmarkStampAccuracy measures benchrun's inter-token-gap error
// (measured − true ITL) at concurrency 1, 64 and 256 against two servers
// that record when they wrote every event: the reference server in a
// child process ("ref") and the in-process simulator ("sim"). Each runs
// with kernel receive stamps ("kernel": the kernel stamps and, from the
// same events, the user-space ones) and with the kernel's option refused
// ("off": read and user-space stamps, as before kernel stamps). Against
// the reference server, kernel stamps must hold |error| p50 within
// 0.1 ms and p99 within 1 ms, and every kernel stamp must fall inside
// its event's write.
//
//	go test ./internal/loadgen -run '^$' -bench StampAccuracy -benchtime 1x -v
func BenchmarkStampAccuracy(b *testing.B) {
	for _, server := range []string{"ref", "sim"} {
		for _, tc := range accuracyCases {
			for _, mode := range []string{"kernel", "off"} {
				b.Run(fmt.Sprintf("%s/c%d/%s", server, tc.conc, mode), func(b *testing.B) {
					for i := 0; i < b.N; i++ {
						e := measureITLErrors(b, tc, server, mode == "kernel")
						k, u := summarizeErrors(e.kernel), summarizeErrors(e.user)
						if mode == "off" {
							if e.source != StampUser {
								b.Fatalf("stamp source %q with the option refused", e.source)
							}
							b.Logf("%s c=%d itl %v, user stamps (read):   %v", server, tc.conc, tc.itl, u)
							if server == "ref" {
								b.Logf("%s c=%d client CPU %.2f µs per token event", server, tc.conc, e.cpuPerEvent)
								b.ReportMetric(e.cpuPerEvent, "cpu-us/event")
							}
							b.ReportMetric(u.absP50, "err-p50-ms")
							b.ReportMetric(u.absP99, "err-p99-ms")
							continue
						}
						if e.source != StampKernel {
							b.Fatalf("stamp source %q (%s)", e.source, e.note)
						}
						d := stats.Summarize(e.delays)
						b.Logf("%s c=%d itl %v, kernel stamps:         %v", server, tc.conc, tc.itl, k)
						b.Logf("%s c=%d itl %v, user stamps (recvmsg): %v", server, tc.conc, tc.itl, u)
						b.Logf("%s c=%d stamp delay (user − kernel) ms: p50 %.3f p90 %.3f p99 %.3f p99.9 %.3f max %.3f; %d events without a kernel stamp, %d sharing the next one's (%.2f%%)",
							server, tc.conc, d.P50, d.P90, d.P99, d.P999, d.Max, e.missing, e.shared, 100*float64(e.shared)/float64(len(e.delays)))
						b.Logf("%s c=%d itl %v, kernel, gaps between events alone in their read: %v", server, tc.conc, tc.itl, summarizeErrors(e.alone))
						b.ReportMetric(k.absP50, "err-p50-ms")
						b.ReportMetric(k.absP99, "err-p99-ms")
						b.ReportMetric(u.absP99, "user-err-p99-ms")
						b.ReportMetric(d.P50, "delay-p50-ms")
						b.ReportMetric(d.P99, "delay-p99-ms")
						if server != "ref" {
							continue
						}
						w := stats.Summarize(e.writes)
						lb := stats.Summarize(e.lateBy)
						b.Logf("%s c=%d server write (before→after) ms: p50 %.3f p99 %.3f max %.3f; of %d kernel stamps %d before their write, %d after it: %d sharing the next event's stamp, %d alone (late by p50 %.3f max %.3f ms: the receive softirq ran after the write returned); %d alone at or after the next write",
							server, tc.conc, w.P50, w.P99, w.Max, len(e.delays), e.early, e.late, e.lateShared, len(e.lateBy), lb.P50, lb.Max, e.foreign)
						b.ReportMetric(float64(e.early+e.foreign), "foreign-stamps")
						b.Logf("%s c=%d client CPU %.2f µs per token event", server, tc.conc, e.cpuPerEvent)
						b.ReportMetric(e.cpuPerEvent, "cpu-us/event")
						if k.absP50 > 0.1 || k.absP99 > 1 {
							// Beyond the bound, say whether benchrun read
							// late (events sharing a read: the machine was
							// busy) or stamped wrong.
							load, _ := os.ReadFile("/proc/loadavg")
							b.Errorf("kernel-stamp ITL error |p50| %.3f ms (bound 0.1), |p99| %.3f ms (bound 1); %.2f%% of events shared a read with the next (stamp delay p99 %.3f ms for a %v gap), gaps between events alone in their read |p99| %.3f ms; load average %s",
								k.absP50, k.absP99, 100*float64(e.shared)/float64(len(e.delays)), d.P99, tc.itl, summarizeErrors(e.alone).absP99, strings.TrimSpace(string(load)))
						}
						if e.early > 0 || e.foreign > 0 {
							// A stamp is never earlier than its event's
							// write, and an event alone in its read is
							// stamped before the next event is written.
							b.Errorf("%d kernel stamps before their event's write, %d alone in their read but after the next write: stamps of other bytes", e.early, e.foreign)
						}
					}
				})
			}
		}
	}
}
