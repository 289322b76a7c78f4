package machine

import (
	"math"
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

// TestProbeKeepsOnlyWhatOpenWindowsNeed: the probe holds samples while a
// window is open, from the earliest open window's start, and none once
// every window has ended: over a stage of many cells what it holds
// follows one cell, not the stage (it grew 40-60 KB a second and was
// copied whole at each cell's end).
func TestProbeKeepsOnlyWhatOpenWindowsNeed(t *testing.T) {
	p, err := StartProbe()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	time.Sleep(50 * time.Millisecond)
	if rec := p.Record(); len(rec.Wake)+len(rec.Loop) != 0 {
		t.Errorf("no window open: %d samples kept", len(rec.Wake)+len(rec.Loop))
	}
	most, measured := 0, 0
	for cell := range 6 {
		w := p.Begin()
		time.Sleep(250 * time.Millisecond) // the probe flushes every 100 ms
		rec := p.Record()
		most = max(most, len(rec.Wake))
		for _, s := range rec.Wake {
			if s.Due.Before(w.from) {
				t.Fatalf("cell %d: a sample due %v before its window opened", cell, w.from.Sub(s.Due))
			}
		}
		if m := w.End(); m.WakeP99Ms != nil {
			measured++ // a starved probe may flush too late for one window
		}
		if rec := p.Record(); len(rec.Wake)+len(rec.Loop) != 0 {
			t.Errorf("cell %d ended: %d samples still kept", cell, len(rec.Wake)+len(rec.Loop))
		}
	}
	// 250 ms at one wake a millisecond; a busy machine wakes less often.
	if most > 400 {
		t.Errorf("a 250 ms window held %d wake samples", most)
	}
	if measured == 0 {
		t.Errorf("none of 6 windows measured anything: the samples they needed were dropped")
	}
	// Overlapping windows: ending the earlier one lets go of what only it
	// needed.
	first := p.Begin()
	time.Sleep(150 * time.Millisecond)
	second := p.Begin()
	time.Sleep(250 * time.Millisecond)
	first.End()
	for _, s := range p.Record().Wake {
		if s.Due.Before(second.from) {
			t.Fatalf("a sample due %v before the open window is still kept", second.from.Sub(s.Due))
		}
	}
	second.End()
}
