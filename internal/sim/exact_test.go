package sim

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/machine"
	"github.com/benchrun/benchrun/internal/machine/machinetest"
)

// TestFixedModeExact holds fixed mode to its schedule as a client sees
// it: over real HTTP on loopback, with requests timed from their arrival
// (the kernel's receive stamp, as Serve does), the median gap between
// written events within 1% of --itl and the median first event within 1%
// of --ttft after arrival, at 1, 4, 16 and 64 streams, for 5 ms / 20 ms
// and for a 10% slower 5.5 ms / 22 ms (which must then read 10% slower).
//
// The precision is judged against what the machine allowed during each
// level: a probe process beside it measures how late a server-like event
// loop ran (machine.Probe). On a quiet machine (its p99 under 1 ms) the
// median of that lateness, about 0.04 ms, is added to the 1%: Go timers,
// which an idle process wakes to the millisecond, missed by 5% (gaps of
// 4.3 or 5.3 ms) and fail that. On a busy one (other processes holding
// the cores: with four CPU-bound neighbours the simulator's medians at 16
// and 64 streams moved 0.3-1.3 ms while the light probe's median did not)
// the claim is not "1%", and the check allows the probe's p99 instead, and
// says so.
func TestFixedModeExact(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector slows every event by more than the 1% judged here")
	}
	for _, sched := range []struct{ ttft, itl time.Duration }{{20 * time.Millisecond, 5 * time.Millisecond}, {22 * time.Millisecond, 5500 * time.Microsecond}} {
		for _, conc := range []int{1, 4, 16, 64} {
			t.Run(fmt.Sprintf("ttft=%v,itl=%v,c=%d", sched.ttft, sched.itl, conc), func(t *testing.T) {
				neighbours := machinetest.Start()
				cfg := DefaultConfig()
				cfg.TTFT, cfg.ITL = sched.ttft, sched.itl
				s, url := serveStamped(t, cfg)
				probe, err := machine.StartProbe()
				if err != nil {
					t.Fatal(err)
				}
				defer probe.Stop()
				win := probe.Begin()
				c := testClient()
				const tokens = 24
				requests := max(4*conc, 16)
				var wg sync.WaitGroup
				work := make(chan struct{}, requests)
				for range requests {
					work <- struct{}{}
				}
				close(work)
				// Staggered over one request's length, as a closed loop
				// settles after its warm-up: started together, the streams'
				// deadlines would all fall at once, and the median would be
				// the middle of a burst of writes.
				span := sched.ttft + tokens*sched.itl
				for i := range conc {
					wg.Add(1)
					go func() {
						defer wg.Done()
						time.Sleep(span * time.Duration(i) / time.Duration(conc))
						for range work {
							if res := readStream(context.Background(), c, url+"/v1/completions", streamBody(tokens)); res.err != nil || !res.done {
								t.Errorf("stream: %v", res.err)
							}
						}
					}()
				}
				wg.Wait()
				m := win.End()
				if m.LateP50Ms == nil {
					t.Fatal("the probe took no samples")
				}
				allowMs, machine := *m.LateP50Ms, "quiet"
				if m.LateP99Ms != nil && *m.LateP99Ms > 1 {
					allowMs, machine = *m.LateP99Ms, "busy"
				}
				allow := time.Duration(allowMs * float64(time.Millisecond))
				var gaps, ttfts []time.Duration
				for _, r := range s.Records() {
					if len(r.Events) != tokens {
						t.Fatalf("%s: %d events, want %d", r.ID, len(r.Events), tokens)
					}
					ttfts = append(ttfts, r.Events[0].Time.Sub(r.Received))
					for k := 1; k < len(r.Events); k++ {
						gaps = append(gaps, r.Events[k].Time.Sub(r.Events[k-1].Time))
					}
				}
				slices.Sort(gaps)
				slices.Sort(ttfts)
				gap, ttft := gaps[len(gaps)/2], ttfts[len(ttfts)/2]
				t.Logf("median gap %v (want %v), median TTFT %v (want %v); machine %s: event loop late p50 %.3f ms p99 %s ms; allowed 1%% + %v", gap, sched.itl, ttft, sched.ttft, machine, *m.LateP50Ms, fmtMs(m.LateP99Ms), allow)
				var off []string
				if d := (gap - sched.itl).Abs(); d > sched.itl/100+allow {
					off = append(off, fmt.Sprintf("median gap %v is %v off %v: over 1%% (%v) and what the %s machine allowed (%v)", gap, d, sched.itl, sched.itl/100, machine, allow))
				}
				if d := (ttft - sched.ttft).Abs(); d > sched.ttft/100+allow {
					off = append(off, fmt.Sprintf("median TTFT from arrival %v is %v off %v: over 1%% (%v) and what the %s machine allowed (%v)", ttft, d, sched.ttft, sched.ttft/100, machine, allow))
				}
				// The light probe does not wait for a core as the simulator
				// does when other processes hold them (at 64 streams beside
				// them the median gap read 16 µs, every event coalesced,
				// with the probe's p99 at 9.7 ms): then the claim is
				// inconclusive (measuretest).
				if len(off) > 0 {
					t.Log(strings.Join(off, "; "))
					neighbours.Judge(t, "the simulator's schedule within 1% and the machine's lateness")
					t.Error(strings.Join(off, "; "))
				}
			})
		}
	}
}

// serveStamped serves cfg as Serve does (requests timed from the kernel's
// receive stamp) on a loopback listener for the test's lifetime.
func serveStamped(t *testing.T, cfg Config) (*Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := New(cfg)
	srv := &http.Server{Handler: s, ConnContext: withConn}
	go srv.Serve(arrivalListener{ln})
	t.Cleanup(func() {
		s.Close()
		srv.Close()
	})
	return s, "http://" + ln.Addr().String()
}

func fmtMs(p *float64) string {
	if p == nil {
		return "–"
	}
	return fmt.Sprintf("%.3f", *p)
}
