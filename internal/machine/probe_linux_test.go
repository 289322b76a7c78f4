//go:build linux

package machine

import (
	"syscall"
	"testing"
	"time"
)

// TestProbeSeesAStop stops the probe process for 80 ms with SIGSTOP, a
// stop whose start and end the test knows: on both paths the probe must
// report a wait late by about as much, spanning the stop, and the
// floor of a request due in the middle of the stop must be what was left
// of it. Stop must end the probe process.
func TestProbeSeesAStop(t *testing.T) {
	p, err := StartProbe()
	if err != nil {
		t.Fatal(err)
	}
	p.Keep()
	time.Sleep(200 * time.Millisecond)
	pid := p.cmd.Process.Pid
	stopped := time.Now()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(80 * time.Millisecond)
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resumed := time.Now()
	time.Sleep(200 * time.Millisecond)
	rec, err := p.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if ps := p.cmd.ProcessState; ps == nil || !ps.Exited() {
		t.Fatalf("the probe process did not exit: %v", ps)
	}
	s := rec.Wake
	if len(s) < 200 || len(rec.Loop) < 100 {
		t.Fatalf("%d wake and %d loop samples in about 480 ms; want one per ms and one per 2 ms or so", len(s), len(rec.Loop))
	}
	stop := resumed.Sub(stopped)
	for _, path := range []struct {
		name    string
		samples Samples
		period  time.Duration
	}{{"wake", s, wakePeriod}, {"loop", rec.Loop, loopPeriod}} {
		var worst Sample
		for _, w := range path.samples {
			if w.Late > worst.Late {
				worst = w
			}
		}
		if worst.Late < stop-10*time.Millisecond-path.period || worst.Late > stop+30*time.Millisecond {
			t.Errorf("%s: latest wait %v late; the probe was stopped for %v", path.name, worst.Late, stop)
		}
		// The late wait spans the stop: due by its start (or before it,
		// when a busy machine had the probe waiting already) and served
		// as it ended.
		served := worst.Due.Add(worst.Late)
		if worst.Due.After(stopped.Add(5*time.Millisecond)) || served.Before(resumed.Add(-2*time.Millisecond)) || served.After(resumed.Add(30*time.Millisecond)) {
			t.Errorf("%s: the late wait was due %v after the stop began and served %v after it ended; want due by its start, served as it ended", path.name, worst.Due.Sub(stopped), served.Sub(resumed))
		}
	}
	mid := stopped.Add(stop / 2)
	if f := s.Floor([]time.Time{mid}); f.Max < msf(stop/2)-10 || f.Max > msf(stop/2)+30 {
		t.Errorf("a request due halfway through an %v stop: floor %.1f ms; want about %.1f", stop, f.Max, msf(stop/2))
	}
	// After the stop, the floor is only what the machine does anyway: no
	// more than the latest of the probe's wakes in the stop's wake (0 on
	// a quiet machine; beside busy neighbours a wake may run 0.4 ms late).
	after := s.Between(resumed.Add(50*time.Millisecond), resumed.Add(200*time.Millisecond)).Lateness()
	if f := s.Floor([]time.Time{resumed.Add(100 * time.Millisecond)}); f.Max > after.Max {
		t.Errorf("a request due 100 ms after the stop: floor %.1f ms; want no more than the machine's own lateness then (%.1f ms)", f.Max, after.Max)
	}
}

func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
