package sweep

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/loadgen"
)

func TestSliceEvery(t *testing.T) {
	for _, c := range []struct {
		slice, dur, want time.Duration
	}{
		{0, time.Hour, 6 * time.Minute},                 // measure.AutoSlices of the pass
		{time.Minute, time.Hour, time.Minute},           // the plan's
		{time.Millisecond, time.Hour, 36 * time.Second}, // at most 100 lines a pass
		{0, 5 * time.Second, time.Second},               // a second apart at least
	} {
		if got := sliceEvery(c.slice, c.dur); got != c.want {
			t.Errorf("sliceEvery(%s, %s) = %s; want %s", c.slice, c.dur, got, c.want)
		}
	}
}

// syncBuffer is a bytes.Buffer the slice lines' goroutine and the test
// share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestSliceLinesDuringAPass: a long timed pass prints a line per slice
// while it runs, with the slice's own counts, and none after it ends.
func TestSliceLinesDuringAPass(t *testing.T) {
	defer func(m time.Duration) { sliceProgressMin = m }(sliceProgressMin)
	sliceProgressMin = 0
	var out syncBuffer
	v := newProgress(&out).point(1, 1, "32:64 rate=10/s")
	v.slice = time.Second
	c := &loadgen.Counters{}
	v.pass(0, true, 0, c, 3*time.Second)
	c.Done.Add(7)
	time.Sleep(1200 * time.Millisecond)
	c.Done.Add(5)
	c.Failed.Add(1)
	time.Sleep(1000 * time.Millisecond)
	v.endPass()
	time.Sleep(1200 * time.Millisecond) // nothing more once the pass ended
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines; want one per slice of the pass so far (2):\n%s", len(lines), out.String())
	}
	for i, want := range []string{
		"[1/1] 32:64 rate=10/s timed: slice 1/3 (0s–1s): 7 done (7.0 req/s), 0 failed; 7 done in all, ",
		"[1/1] 32:64 rate=10/s timed: slice 2/3 (1s–2s): 5 done (5.0 req/s), 1 failed; 12 done in all, ",
	} {
		if !strings.HasPrefix(strings.TrimSpace(lines[i]), want) || !strings.HasSuffix(lines[i], " left") {
			t.Errorf("line %d: %q; want %q, then the time left", i+1, strings.TrimSpace(lines[i]), want)
		}
	}
}
