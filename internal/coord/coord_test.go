package coord

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// serve starts a coordinator for n shards on loopback.
func serve(t *testing.T, n int, skew time.Duration) (*Server, string) {
	t.Helper()
	s := NewServer(n, 100*time.Millisecond)
	s.Now = func() time.Time { return time.Now().Add(skew) }
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	return s, hs.URL
}

// TestOffsetMeasured: a coordinator whose clock runs 250 ms ahead is
// measured as 250 ms ahead (within the loopback round trip), and its
// start instant comes back on the shard's own clock.
func TestOffsetMeasured(t *testing.T) {
	for _, skew := range []time.Duration{250 * time.Millisecond, -1700 * time.Millisecond, 0} {
		_, url := serve(t, 1, skew)
		ctx := context.Background()
		c, err := Join(ctx, url, 0, 1, "run-a")
		if err != nil {
			t.Fatal(err)
		}
		off, rtt := c.Offset()
		t.Logf("skew %v: offset %v rtt %v", skew, off, rtt)
		if d := off - skew; d > rtt/2+time.Millisecond || d < -rtt/2-time.Millisecond {
			t.Errorf("skew %v: measured offset %v (rtt %v): off by %v", skew, off, rtt, d)
		}
		before := time.Now()
		start, err := c.Barrier(ctx, "cell-1")
		if err != nil {
			t.Fatal(err)
		}
		// The start is the coordinator's now + lead (100 ms), on this clock.
		if lead := start.Sub(before); lead < 90*time.Millisecond || lead > 150*time.Millisecond {
			t.Errorf("skew %v: start %v after the barrier call, want ~100ms (the lead) on this clock", skew, lead)
		}
		c.Leave("")
	}
}

// TestBarrierWaitsForAll: three shards, one late by 300 ms: all get one
// start instant, after the late one arrived.
func TestBarrierWaitsForAll(t *testing.T) {
	s, url := serve(t, 3, 0)
	ctx := context.Background()
	var wg sync.WaitGroup
	starts := make([]time.Time, 3)
	arrived := make([]time.Time, 3)
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := Join(ctx, url, i, 3, "run")
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Leave("")
			for k, name := range []string{"sweep/a", "sweep/b"} {
				if i == 2 && k == 0 {
					time.Sleep(300 * time.Millisecond)
				}
				if k == 0 {
					arrived[i] = time.Now()
				}
				st, err := c.Barrier(ctx, name)
				if err != nil {
					t.Error(err)
					return
				}
				if k == 0 {
					starts[i] = st
				}
			}
		}()
	}
	wg.Wait()
	for i := 1; i < 3; i++ {
		if d := starts[i].Sub(starts[0]); d > 2*time.Millisecond || d < -2*time.Millisecond {
			t.Errorf("shard %d starts %v from shard 0", i, d)
		}
	}
	if !starts[0].After(arrived[2]) {
		t.Errorf("start %v is not after the late shard arrived (%v)", starts[0], arrived[2])
	}
	if st := s.Status(); len(st.Barriers) != 2 || st.Barriers[0] != "sweep/a" || len(st.Joined) != 3 {
		t.Errorf("status %+v", st)
	}
	ctx2, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := s.WaitAllLeft(ctx2); err != nil {
		t.Errorf("all left: %v", err)
	}
}

// TestShardGone: a shard that leaves early, or stops answering, releases
// the others' barrier with an error naming it (no one waits forever).
func TestShardGone(t *testing.T) {
	t.Run("left", func(t *testing.T) {
		_, url := serve(t, 2, 0)
		ctx := context.Background()
		a, err := Join(ctx, url, 0, 2, "a")
		if err != nil {
			t.Fatal(err)
		}
		b, err := Join(ctx, url, 1, 2, "b")
		if err != nil {
			t.Fatal(err)
		}
		go func() { time.Sleep(200 * time.Millisecond); b.Leave("health stage failed") }()
		_, err = a.Barrier(ctx, "sweep/x")
		if !errors.Is(err, ErrGone) || !strings.Contains(err.Error(), "shard 1/2 left (health stage failed)") {
			t.Errorf("barrier: %v", err)
		}
	})
	t.Run("silent", func(t *testing.T) {
		s, url := serve(t, 2, 0)
		s.deadAfter = 1500 * time.Millisecond
		ctx := context.Background()
		a, err := Join(ctx, url, 0, 2, "a")
		if err != nil {
			t.Fatal(err)
		}
		// Shard 1 joins by hand and never sends a heartbeat: a process
		// that died after joining.
		c := &Client{base: url, shard: 1, n: 2, http: http.DefaultClient}
		if err := c.post(ctx, "/v1/join", joinRequest{Shard: 1, Shards: 2, RunID: "b"}, nil); err != nil {
			t.Fatal(err)
		}
		began := time.Now()
		_, err = a.Barrier(ctx, "sweep/x")
		if !errors.Is(err, ErrGone) || !strings.Contains(err.Error(), "shard 1/2 stopped answering") {
			t.Errorf("barrier: %v", err)
		}
		if d := time.Since(began); d > 5*time.Second {
			t.Errorf("took %v to notice", d)
		}
	})
}

// TestJoinRefusals: a shard count that disagrees, or a second process
// with the same shard number, is refused with what to do.
func TestJoinRefusals(t *testing.T) {
	_, url := serve(t, 2, 0)
	ctx := context.Background()
	if _, err := Join(ctx, url, 0, 3, "x"); err == nil || !strings.Contains(err.Error(), "give every shard the same --shard i/N") {
		t.Errorf("count mismatch: %v", err)
	}
	a, err := Join(ctx, url, 1, 2, "one")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Leave("")
	if _, err := Join(ctx, url, 1, 2, "two"); err == nil || !strings.Contains(err.Error(), "same --shard") {
		t.Errorf("duplicate shard: %v", err)
	}
}

// TestJoinWaitsForCoordinator: a shard started before the coordinator
// keeps trying until it answers.
func TestJoinWaitsForCoordinator(t *testing.T) {
	s := NewServer(1, 0)
	addr := "127.0.0.1:0"
	// Find a free port, then start the coordinator on it a little later.
	l, stop, err := Serve(context.Background(), addr, s)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	go func() {
		time.Sleep(400 * time.Millisecond)
		_, stop2, err := Serve(context.Background(), l, s)
		if err != nil {
			t.Error(err)
			return
		}
		t.Cleanup(stop2)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Join(ctx, l, 0, 1, "r")
	if err != nil {
		t.Fatal(err)
	}
	c.Leave("")
	ctx2, cancel2 := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel2()
	if _, err := Join(ctx2, "127.0.0.1:1", 0, 1, "r"); err == nil || !strings.Contains(err.Error(), "not reachable") {
		t.Errorf("no coordinator: %v", err)
	}
}

// TestNeverJoined: a shard that never starts releases the others once
// the join wait has passed, and the coordinator does not wait for it to
// leave.
func TestNeverJoined(t *testing.T) {
	s, url := serve(t, 2, 0)
	s.joinWait = 700 * time.Millisecond
	ctx := context.Background()
	a, err := Join(ctx, url, 0, 2, "a")
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Barrier(ctx, "sweep/x")
	if !errors.Is(err, ErrGone) || !strings.Contains(err.Error(), "shard 1/2 never joined") {
		t.Errorf("barrier: %v", err)
	}
	a.Leave("failed")
	ctx2, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := s.WaitAllLeft(ctx2); err != nil {
		t.Errorf("waiting for a shard that never came: %v", err)
	}
}
