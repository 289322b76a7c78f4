package machine

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestSamplesFloor: a request due while the machine stood still (a
// wake late by a millisecond or more) is late by what was left of that
// stop, any other by nothing; lateness below a millisecond is not a stop.
func TestSamplesFloor(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	at := func(v float64) time.Time { return t0.Add(ms(v)) }
	s := Samples{
		{Due: at(1), Late: ms(0.2)},  // not a stop
		{Due: at(2.2), Late: ms(10)}, // stopped 2.2 → 12.2
		{Due: at(13.2), Late: ms(0.9)},
		{Due: at(15.1), Late: ms(1)}, // stopped 15.1 → 16.1
		{Due: at(17.1), Late: 0},
	}
	cases := []struct {
		due  float64
		want float64
	}{
		{0, 0}, {1.1, 0}, {2.2, 10}, {5.2, 7}, {12.1, 0.1}, {12.2, 0}, {13.5, 0}, {15.6, 0.5}, {16.1, 0}, {30, 0},
	}
	for _, c := range cases {
		got := s.Floor([]time.Time{at(c.due)})
		if math.Abs(got.Max-c.want) > 1e-6 {
			t.Errorf("due at %g ms: floor %g ms; want %g", c.due, got.Max, c.want)
		}
	}
	if got := s.Floor(nil); got.N != 0 {
		t.Errorf("no requests: %d lags", got.N)
	}
	if got := s.Between(at(2.2), at(15.1)); len(got) != 3 || !got[0].Due.Equal(at(2.2)) || !got[2].Due.Equal(at(15.1)) {
		t.Errorf("between 2.2 and 15.1 ms: %v", got)
	}
	if got := s.Between(at(20), at(30)); len(got) != 0 {
		t.Errorf("between 20 and 30 ms: %v; want none", got)
	}
	if l := s.Lateness(); l.N != 5 || l.Max != 10 || l.Min != 0 {
		t.Errorf("lateness %+v", l)
	}
}

// TestProbeRefusesInsideAProbe: a process started as a probe that did
// not serve it must not start probes of its own, each of which would
// start another.
func TestProbeRefusesInsideAProbe(t *testing.T) {
	t.Setenv(ProbeEnv, "1")
	if p, err := StartProbe(); err == nil {
		p.Stop()
		t.Fatal("a probe process started another probe")
	}
}

// TestProbeKeepsOnlyWhatOpenKeepsNeed: a cell's window folds its samples
// and holds none of them (over a soak's cell of 30 minutes they were
// 75 MB); raw samples are kept only while a Keep is open, from the
// earliest open keep's start, and none once every keep is released.
func TestProbeKeepsOnlyWhatOpenKeepsNeed(t *testing.T) {
	p, err := StartProbe()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	measured := 0
	for cell := range 6 {
		w := p.Begin()
		time.Sleep(250 * time.Millisecond) // the probe flushes every 100 ms
		if rec := p.Record(); len(rec.Wake)+len(rec.Loop) != 0 {
			t.Errorf("cell %d: a window open, no keep: %d raw samples kept", cell, len(rec.Wake)+len(rec.Loop))
		}
		if m := w.End(); m.WakeP99Ms != nil && m.LateP99Ms != nil {
			measured++ // a starved probe may flush too late for one window
		}
	}
	if measured == 0 {
		t.Errorf("none of 6 windows measured anything: the samples they needed were dropped")
	}
	p.mu.Lock()
	open := len(p.windows)
	p.mu.Unlock()
	if open != 0 {
		t.Errorf("%d windows still folding after every End", open)
	}
	// Overlapping keeps: releasing the earlier one lets go of what only it
	// needed.
	releaseFirst := p.Keep()
	time.Sleep(150 * time.Millisecond)
	secondFrom := time.Now()
	releaseSecond := p.Keep()
	time.Sleep(250 * time.Millisecond)
	if rec := p.Record(); len(rec.Wake) == 0 || rec.Wake[0].Due.After(secondFrom) {
		t.Errorf("two keeps open: %d wake samples, none from before the second began", len(rec.Wake))
	}
	releaseFirst()
	for _, s := range p.Record().Wake {
		if s.Due.Before(secondFrom.Add(-time.Millisecond)) {
			t.Fatalf("a sample due %v before the open keep is still kept", secondFrom.Sub(s.Due))
		}
	}
	releaseSecond()
	if rec := p.Record(); len(rec.Wake)+len(rec.Loop) != 0 {
		t.Errorf("every keep released: %d samples still kept", len(rec.Wake)+len(rec.Loop))
	}
}

// TestWindowFoldIsTheRecordsLateness: a window's folded lateness is what
// sorting its samples gives — the max exactly, the percentiles within
// the histogram's resolution (1 µs, or 0.1 %) of the order statistics
// around their rank — over shapes a machine gives (a floor of tens of
// µs, a tail of stalls of milliseconds), and samples due before the
// window are not in it.
func TestWindowFoldIsTheRecordsLateness(t *testing.T) {
	from := time.Unix(1000, 0)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{5, 100, 10_000, 200_000} {
		f := newWindowFold(from)
		f.add('l', Sample{Due: from.Add(-time.Millisecond), Late: time.Hour}) // before the window
		var s Samples
		for i := range n {
			late := time.Duration(20_000 + rng.IntN(80_000)) // 20-100 µs
			if rng.IntN(100) == 0 {
				late = time.Duration(1+rng.IntN(12))*time.Millisecond + time.Duration(rng.IntN(1000))
			}
			x := Sample{Due: from.Add(time.Duration(i) * time.Millisecond), Late: late}
			s = append(s, x)
			f.add('l', x)
		}
		sorted := make([]float64, n)
		for i, x := range s {
			sorted[i] = float64(x.Late) / 1e6
		}
		slices.Sort(sorted)
		want := s.Lateness()
		if f.loop.n() != int64(n) || f.wake.n() != 0 {
			t.Fatalf("n=%d: folded %d loop, %d wake samples", n, f.loop.n(), f.wake.n())
		}
		if got := f.loop.maxMs(); got != want.Max {
			t.Errorf("n=%d: max %v, want %v", n, got, want.Max)
		}
		for _, p := range []float64{50, 99} {
			got, interpolated := f.loop.percentileMs(p), want.P50
			if p == 99 {
				interpolated = want.P99
			}
			r := p / 100 * float64(n-1)
			lo, hi := sorted[max(0, int(math.Floor(r))-1)], sorted[min(n-1, int(math.Ceil(r))+1)]
			if got < lo*0.999-0.001 || got > hi*1.001+0.001 {
				t.Errorf("n=%d: p%v %.4f ms, the order statistics around its rank %.4f..%.4f (sorting's interpolated %.4f)", n, p, got, lo, hi, interpolated)
			}
		}
	}
	if b := newLateFold().h.ByteSize(); b > 256<<10 {
		t.Errorf("a path's histogram holds %d bytes", b)
	}
}
