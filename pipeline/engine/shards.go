package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/benchrun/benchrun/internal/coord"
	"github.com/benchrun/benchrun/internal/rundir"
	"github.com/benchrun/benchrun/pipeline"
)

// shardSync keeps this process's cells in step with the other shards of
// a sharded run: through a coordinator when one is given (every cell
// starts on every shard at one instant, after the previous cell ended on
// all of them), else with --start-at alone (the run's first cell starts
// at that instant; later cells follow this shard's own pace).
type shardSync struct {
	shard, shards int
	startAt       time.Time
	client        *coord.Client
	server        *coord.Server
	stopServer    func()

	mu       sync.Mutex
	usedAt   bool // startAt handed out (without a coordinator)
	record   rundir.ShardRecord
	progress func(format string, args ...any)
}

// JoinTimeout bounds how long a shard waits for its coordinator to
// answer at the start of the run (shard 0's pod may be scheduled last).
var JoinTimeout = 10 * time.Minute

// openShards sets up the run's shard synchronisation from the options;
// nil when the run is not sharded.
func openShards(ctx context.Context, opts Options, runID string, progress func(string, ...any)) (*shardSync, error) {
	if opts.Shards <= 1 {
		if opts.Coordinator != "" || opts.Coordinate != "" {
			return nil, errors.New("--coordinator and --coordinate keep shards in step: give --shard i/N too")
		}
		return nil, nil
	}
	s := &shardSync{shard: opts.Shard, shards: opts.Shards, startAt: opts.StartAt, progress: progress}
	s.record = rundir.ShardRecord{Shard: opts.Shard, Shards: opts.Shards}
	if !opts.StartAt.IsZero() {
		at := opts.StartAt.UTC()
		s.record.StartAt = &at
	}
	addr := opts.Coordinator
	if opts.Coordinate != "" {
		if opts.Shard != 0 {
			return nil, fmt.Errorf("--coordinate: shard %d/%d was asked to serve the coordinator; only shard 0 serves it (give the others --coordinator HOST:PORT)", opts.Shard, opts.Shards)
		}
		s.server = coord.NewServer(opts.Shards, 0)
		bound, stop, err := coord.Serve(ctx, opts.Coordinate, s.server)
		if err != nil {
			return nil, err
		}
		s.stopServer, s.record.Served = stop, true
		if addr == "" {
			addr = bound
		}
		progress("benchrun: shard 0/%d: serving the coordinator on %s", opts.Shards, bound)
	}
	if addr == "" {
		return s, nil
	}
	s.record.Coordinator = addr
	jctx, cancel := context.WithTimeout(ctx, JoinTimeout)
	defer cancel()
	progress("benchrun: shard %d/%d: joining the coordinator at %s", opts.Shard, opts.Shards, addr)
	c, err := coord.Join(jctx, addr, opts.Shard, opts.Shards, runID)
	if err != nil {
		s.close(err.Error())
		return nil, fmt.Errorf("shard %d/%d: %w", opts.Shard, opts.Shards, err)
	}
	s.client = c
	off, rtt := c.Offset()
	offMs, rttMs := msOf(off), msOf(rtt)
	s.record.ClockOffsetMs, s.record.ClockRTTMs = &offMs, &rttMs
	progress("benchrun: shard %d/%d: clock offset from the coordinator %+.3f ms (round trip %.3f ms)", opts.Shard, opts.Shards, offMs, rttMs)
	return s, nil
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// cellStart is Env.CellStart's work: the instant the named cell starts
// on every shard (zero: now).
func (s *shardSync) cellStart(ctx context.Context, barrier string) (time.Time, error) {
	if s == nil {
		return time.Time{}, nil
	}
	if s.client == nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.usedAt {
			return time.Time{}, nil
		}
		s.usedAt = true
		return s.startAt, nil
	}
	began := time.Now()
	at, err := s.client.Barrier(ctx, barrier)
	if err != nil {
		return time.Time{}, err
	}
	s.mu.Lock()
	if !s.usedAt {
		// --start-at with a coordinator: the first cell's "not before".
		s.usedAt = true
		if s.startAt.After(at) {
			at = s.startAt
		}
	}
	s.record.Barriers++
	s.record.BarrierWaitMaxMs = max(s.record.BarrierWaitMaxMs, msOf(time.Since(began)))
	s.mu.Unlock()
	return at, nil
}

// Record is the shard's account for the manifest.
func (s *shardSync) Record() *rundir.ShardRecord {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.record
	return &r
}

// close leaves the coordinator; a process that serves it keeps serving
// until every shard left (they may still be in their last cell), for at
// most LeaveWait.
func (s *shardSync) close(reason string) {
	if s == nil {
		return
	}
	if s.client != nil {
		s.client.Leave(reason)
	}
	if s.server != nil {
		ctx, cancel := context.WithTimeout(context.Background(), LeaveWait)
		defer cancel()
		if err := s.server.WaitAllLeft(ctx); err != nil {
			s.progress("benchrun: coordinator: not every shard left within %s; stopping it", LeaveWait)
		}
		s.stopServer()
	}
}

// LeaveWait bounds how long shard 0 serves the coordinator after its own
// run ended, for the shards still finishing.
var LeaveWait = 2 * time.Minute

// leaveReason says how this shard's run went, for its peers: "done", or
// the stages that failed.
func (r *runner) leaveReason() string {
	var failed []string
	for _, n := range r.g.Nodes {
		if st := r.states[n.Spec.Name]; st.status == pipeline.StatusFailed {
			failed = append(failed, n.Spec.Name)
		}
	}
	if len(failed) == 0 {
		return "done"
	}
	return "its stage " + strings.Join(failed, ", ") + " failed"
}
