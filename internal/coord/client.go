package coord

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Client is one shard's link to the coordinator.
type Client struct {
	base      string
	shard, n  int
	http      *http.Client
	offset    time.Duration // coordinator clock − this clock
	rtt       time.Duration // round trip of the exchange the offset is from
	stopBeats context.CancelFunc
	beats     sync.WaitGroup
}

// Exchanges is how many time exchanges Join makes; the one with the
// smallest round trip gives the offset (its error is at most half of it).
const Exchanges = 8

// Join connects shard i of n to the coordinator at addr (host:port or an
// http:// URL), trying until ctx ends (the coordinator may come up after
// the shard: shard 0's pod, a Service not ready yet), measures this
// clock's offset from the coordinator's, joins, and starts heartbeats.
func Join(ctx context.Context, addr string, i, n int, runID string) (*Client, error) {
	base := addr
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	c := &Client{base: strings.TrimRight(base, "/"), shard: i, n: n, http: &http.Client{}}
	var last error
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		if last = c.measure(ctx); last == nil {
			break
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("coordinator %s not reachable: %w (last: %v)", addr, context.Cause(ctx), last)
		case <-time.After(wait):
		}
	}
	q := joinRequest{Shard: i, Shards: n, RunID: runID, OffsetMs: ms(c.offset), RTTMs: ms(c.rtt)}
	if err := c.post(ctx, "/v1/join", q, nil); err != nil {
		return nil, err
	}
	bctx, cancel := context.WithCancel(context.Background())
	c.stopBeats = cancel
	c.beats.Add(1)
	go func() {
		defer c.beats.Done()
		t := time.NewTicker(HeartbeatEvery)
		defer t.Stop()
		for {
			select {
			case <-bctx.Done():
				return
			case <-t.C:
				_ = c.post(bctx, "/v1/heartbeat", shardRequest{Shard: c.shard}, nil)
			}
		}
	}()
	return c, nil
}

// measure makes Exchanges time exchanges and keeps the offset of the one
// with the smallest round trip, as NTP's clock filter does: t0 sent, t1
// received there, t2 sent from there, t3 received here; offset =
// ((t1−t0) + (t2−t3)) / 2, round trip = (t3−t0) − (t2−t1).
func (c *Client) measure(ctx context.Context) error {
	best := time.Duration(-1)
	for range Exchanges {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/v1/time", nil)
		if err != nil {
			return err
		}
		t0 := time.Now()
		resp, err := c.http.Do(req)
		if err != nil {
			return err
		}
		var tr timeReply
		err = json.NewDecoder(resp.Body).Decode(&tr)
		t3 := time.Now()
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET /v1/time: HTTP %d: %v", resp.StatusCode, err)
		}
		// Wall-clock readings: the offset is between the two wall clocks
		// (t3−t0 alone would be monotonic, which is what we want for the
		// round trip).
		t1, t2 := time.Unix(0, tr.Recv), time.Unix(0, tr.Send)
		rtt := t3.Sub(t0) - t2.Sub(t1)
		off := (t1.Sub(t0.Round(0)) + t2.Sub(t3.Round(0))) / 2
		if best < 0 || rtt < best {
			best, c.offset, c.rtt = rtt, off, rtt
		}
	}
	return nil
}

// Offset is the measured offset of the coordinator's clock from this one
// (positive: the coordinator's is ahead) and the round trip it came from.
func (c *Client) Offset() (offset, rtt time.Duration) { return c.offset, c.rtt }

// Barrier waits until every shard has arrived at the named barrier and
// returns the common start instant on this machine's clock.
func (c *Client) Barrier(ctx context.Context, name string) (time.Time, error) {
	var rep barrierReply
	if err := c.post(ctx, "/v1/barrier", shardRequest{Shard: c.shard, Barrier: name}, &rep); err != nil {
		return time.Time{}, err
	}
	if rep.Error != "" {
		return time.Time{}, fmt.Errorf("coordinator: %s at %s: %w", rep.Error, name, ErrGone)
	}
	return time.Unix(0, rep.Start).Add(-c.offset), nil
}

// Leave tells the coordinator this shard is done (reason "" is "done")
// and stops the heartbeats.
func (c *Client) Leave(reason string) {
	if c.stopBeats != nil {
		c.stopBeats()
		c.beats.Wait()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = c.post(ctx, "/v1/leave", shardRequest{Shard: c.shard, Reason: cmpOr(reason, "done")}, nil)
}

func (c *Client) post(ctx context.Context, path string, body, into any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("coordinator %s: %w", path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		var e errorReply
		if json.Unmarshal(data, &e) == nil && e.Error != "" {
			return fmt.Errorf("coordinator %s: %s", path, e.Error)
		}
		return fmt.Errorf("coordinator %s: HTTP %d", path, resp.StatusCode)
	}
	if into != nil {
		if err := json.Unmarshal(data, into); err != nil {
			return fmt.Errorf("coordinator %s: reading the answer: %w", path, err)
		}
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
