package loadgen

import (
	"reflect"
	"testing"
	"time"
)

// TestBoard: requests leave the board in due order, only once due, one
// per poll (a goroutine that readied two workers before it parks would
// put the first behind every runnable goroutine), to whoever polls first
// (the sender, a reader after an event, a worker that finished); every
// one that leaves is counted, and after close nothing leaves.
func TestBoard(t *testing.T) {
	start := time.Now()
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	var dispatched []int
	b := newBoard(start, func(j job) { dispatched = append(dispatched, j.i) })
	if _, ok := b.nextDue(); ok {
		t.Fatal("an empty board has a next due time")
	}
	for i, ms := range []int{10, 10, 20, 30, 40} {
		b.push(job{i: i, req: Request{Scheduled: at(ms)}})
	}
	if d, ok := b.nextDue(); !ok || !d.Equal(at(10)) {
		t.Fatalf("next due %v, %v; want %v", d, ok, at(10))
	}
	if b.poll(at(9)) || len(dispatched) != 0 {
		t.Fatalf("polled before anything was due: dispatched %v", dispatched)
	}
	for k, want := range [][]int{{0}, {0, 1}} {
		if !b.poll(at(10)) || !reflect.DeepEqual(dispatched, want) {
			t.Fatalf("poll %d at 10 ms: dispatched %v; want %v, one per poll", k+1, dispatched, want)
		}
	}
	if b.poll(at(19)) || len(dispatched) != 2 {
		t.Fatalf("dispatched %v before 20 ms", dispatched)
	}
	for b.poll(at(35)) {
	}
	if !reflect.DeepEqual(dispatched, []int{0, 1, 2, 3}) {
		t.Fatalf("at 35 ms dispatched %v; want [0 1 2 3]", dispatched)
	}
	if len(dispatched) != 4 {
		t.Fatalf("%d requests counted as leaving; want 4", len(dispatched))
	}
	if d, ok := b.nextDue(); !ok || !d.Equal(at(40)) {
		t.Fatalf("next due %v, %v; want %v", d, ok, at(40))
	}
	closed := false
	b.close(func() { closed = true })
	b.poll(at(100))
	if !closed || len(dispatched) != 4 {
		t.Fatalf("after close: dispatched %v, last ran %v", dispatched, closed)
	}
	var nilBoard *board
	nilBoard.poll(at(100)) // a request not sent by an open loop has none
}

// TestReaderPace: the sender leaves due requests to the readers only
// while they poll the board at least minPolls times per backstop span,
// judged over spans no shorter than backstop (a shorter one keeps the
// last verdict), and only readers' polls count (the sender's own polls
// would make it trust readers that are not there).
func TestReaderPace(t *testing.T) {
	start := time.Now()
	b := newBoard(start, func(job) {})
	var p readerPace
	p.since = start
	at := func(d time.Duration) time.Time { return start.Add(d) }
	steps := []struct {
		readerPolls, otherPolls int
		at                      time.Duration
		want                    bool
	}{
		{0, 0, backstop / 2, false},                   // too short a span to judge: the default
		{minPolls, 0, backstop, true},                 // minPolls in one span
		{minPolls - 1, 0, 2 * backstop, false},        // one short
		{minPolls, 0, 2*backstop + backstop/2, false}, // shorter than a span: verdict kept
		{3 * minPolls, 0, 4 * backstop, true},         // judged over the two spans since the last verdict
		{0, 10 * minPolls, 5 * backstop, false},       // the sender's and workers' polls do not count
		{2 * minPolls, 0, 7 * backstop, true},         // two spans, twice minPolls
	}
	for i, s := range steps {
		for range s.readerPolls {
			b.readerPoll(at(s.at))
		}
		for range s.otherPolls {
			b.poll(at(s.at))
		}
		if got := p.busy(b, at(s.at)); got != s.want {
			t.Fatalf("step %d (%d reader polls, %d others, at %v): busy %v; want %v", i, s.readerPolls, s.otherPolls, s.at, got, s.want)
		}
	}
	var nilBoard *board
	nilBoard.readerPoll(at(0)) // a stream not sent by an open loop has no board
}

// TestRecentTimes: the open loop's count of requests scheduled lately
// counts those at or after a time and forgets what is past its horizon.
func TestRecentTimes(t *testing.T) {
	var r recentTimes
	t0 := time.Now()
	for i := range 301 {
		r.add(t0.Add(time.Duration(i) * time.Millisecond))
	}
	last := t0.Add(300 * time.Millisecond)
	for _, tc := range []struct {
		back time.Duration
		want int
	}{
		{0, 1},
		{time.Millisecond / 2, 1},
		{10 * time.Millisecond, 11},
		{turnoverSpans * shortRequest, turnoverSpans*int(shortRequest/time.Millisecond) + 1},
		{time.Second, turnoverSpans*int(shortRequest/time.Millisecond) + 1}, // forgotten
	} {
		if got := r.since(last.Add(-tc.back)); got != tc.want {
			t.Errorf("since(last-%v) = %d, want %d", tc.back, got, tc.want)
		}
	}
	if len(r.at) > 2*(turnoverSpans*int(shortRequest/time.Millisecond)+1) {
		t.Errorf("%d times kept for a horizon of %v at one a millisecond", len(r.at), turnoverSpans*shortRequest)
	}
	// A burst at one instant counts whole.
	for range 50 {
		r.add(last)
	}
	if got := r.since(last); got != 51 {
		t.Errorf("after a burst of 50 at the last time: since(last) = %d, want 51", got)
	}
}
