// Package coord keeps the shards of one sharded run in step. A
// coordinator (served by shard 0 in-process with --coordinate, or by
// `benchrun coordinate`) is joined by every shard; it measures each
// shard's clock offset the way NTP does (four timestamps per exchange,
// the exchange with the smallest round trip wins), holds a barrier before
// every cell until all shards have arrived, and then hands out one start
// instant a little ahead, on its own clock. Each shard converts that
// instant to its clock with its measured offset and sleeps to it on the
// monotonic clock. Because a shard arrives at cell k+1's barrier only
// once it has finished cell k, cells proceed in lockstep: cell k+1 starts
// on every shard after cell k ended on all of them.
//
// The protocol is JSON over HTTP, so that a shard can reach the
// coordinator through any Kubernetes Service and a person can look at
// /v1/status with curl. A shard that stops answering (its heartbeats stop)
// or leaves early releases every waiting barrier with an error naming it,
// so no shard waits for a peer that is gone.
package coord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// Defaults of the coordinator's timing.
const (
	// DefaultLead is how far ahead of the last arrival the start instant
	// is set: long enough for the answer to reach every shard (a round
	// trip in one cluster is well under a millisecond; the lead covers a
	// slow scheduler and a GC pause).
	DefaultLead = 200 * time.Millisecond
	// HeartbeatEvery is how often a shard tells the coordinator it is
	// alive, and DeadAfter how long a silent shard is waited for.
	HeartbeatEvery = time.Second
	DeadAfter      = 10 * time.Second
	// JoinWait is how long the first shard to join waits for the last
	// (pods scheduled minutes apart, images pulled on each node).
	JoinWait = 15 * time.Minute
)

// ShardState is what the coordinator knows of one shard (/v1/status).
type ShardState struct {
	Shard    int       `json:"shard"`
	RunID    string    `json:"run_id,omitempty"`
	Joined   time.Time `json:"joined"`
	LastSeen time.Time `json:"last_seen"`
	// OffsetMs and RTTMs are the shard's own measurement (coordinator
	// clock − shard clock; the exchange's round trip), as it reported.
	OffsetMs float64 `json:"clock_offset_ms"`
	RTTMs    float64 `json:"clock_rtt_ms"`
	// Barrier is the last barrier the shard arrived at.
	Barrier string `json:"barrier,omitempty"`
	// Left says why the shard left ("" while it runs).
	Left string `json:"left,omitempty"`
}

// Status is /v1/status.
type Status struct {
	Shards   int          `json:"shards"`
	Joined   []ShardState `json:"joined"`
	Barriers []string     `json:"barriers"` // released barriers, in order
}

// Server is the coordinator.
type Server struct {
	n    int
	lead time.Duration
	// Now is the coordinator's clock (time.Now; a test moves it to play
	// a coordinator whose clock disagrees with the shards').
	Now func() time.Time
	// deadAfter: how long a shard may be silent (DeadAfter); joinWait:
	// how long after the first shard joined the others may still join
	// (JoinWait).
	deadAfter, joinWait time.Duration
	firstJoin           time.Time

	mu       sync.Mutex
	shards   map[int]*ShardState
	barriers map[string]*barrier
	released []string
	changed  chan struct{} // closed and replaced on every change
}

type barrier struct {
	arrived map[int]bool
	start   time.Time // set once every shard arrived
}

// NewServer is a coordinator for n shards; lead ≤ 0 is DefaultLead.
func NewServer(n int, lead time.Duration) *Server {
	if lead <= 0 {
		lead = DefaultLead
	}
	return &Server{n: n, lead: lead, Now: time.Now, deadAfter: DeadAfter, joinWait: JoinWait,
		shards: map[int]*ShardState{}, barriers: map[string]*barrier{}, changed: make(chan struct{})}
}

// wake tells every waiting barrier to look again; mu is held.
func (s *Server) wake() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Handler serves the protocol.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/time", func(w http.ResponseWriter, r *http.Request) {
		recv := s.Now()
		writeJSON(w, http.StatusOK, timeReply{Recv: recv.UnixNano(), Send: s.Now().UnixNano()})
	})
	mux.HandleFunc("POST /v1/join", s.join)
	mux.HandleFunc("POST /v1/heartbeat", s.update(func(*ShardState, shardRequest) {}))
	mux.HandleFunc("POST /v1/barrier", s.barrier)
	mux.HandleFunc("POST /v1/leave", s.update(func(sh *ShardState, q shardRequest) { sh.Left = cmpOr(q.Reason, "left") }))
	mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, s.Status())
	})
	return mux
}

// Status is the coordinator's view of the shards.
func (s *Server) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{Shards: s.n, Barriers: slices.Clone(s.released)}
	for i := range s.n {
		if sh, ok := s.shards[i]; ok {
			st.Joined = append(st.Joined, *sh)
		}
	}
	return st
}

// allLeft: every shard left or is gone; mu is held.
func (s *Server) allLeft() bool {
	if len(s.shards) < s.n {
		return s.joinExpired() // the missing never came
	}
	now := s.Now()
	for _, sh := range s.shards {
		// A shard that stopped answering will not say goodbye.
		if sh.Left == "" && now.Sub(sh.LastSeen) <= s.deadAfter {
			return false
		}
	}
	return true
}

// joinExpired: the first shard joined longer than joinWait ago and some
// never did; mu is held.
func (s *Server) joinExpired() bool {
	return !s.firstJoin.IsZero() && s.Now().Sub(s.firstJoin) > s.joinWait
}

// WaitAllLeft returns once every shard joined and left, or ctx ends.
func (s *Server) WaitAllLeft(ctx context.Context) error {
	for {
		s.mu.Lock()
		done, ch := s.allLeft(), s.changed
		s.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

type timeReply struct {
	Recv int64 `json:"recv_unix_ns"`
	Send int64 `json:"send_unix_ns"`
}

type joinRequest struct {
	Shard    int     `json:"shard"`
	Shards   int     `json:"shards"`
	RunID    string  `json:"run_id"`
	OffsetMs float64 `json:"clock_offset_ms"`
	RTTMs    float64 `json:"clock_rtt_ms"`
}

type shardRequest struct {
	Shard   int    `json:"shard"`
	Barrier string `json:"barrier,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

type barrierReply struct {
	Start int64  `json:"start_unix_ns,omitempty"`
	Error string `json:"error,omitempty"`
}

type errorReply struct {
	Error string `json:"error"`
}

func (s *Server) join(w http.ResponseWriter, r *http.Request) {
	var q joinRequest
	if err := json.NewDecoder(r.Body).Decode(&q); err != nil {
		writeJSON(w, http.StatusBadRequest, errorReply{"reading the join: " + err.Error()})
		return
	}
	if q.Shards != s.n {
		writeJSON(w, http.StatusConflict, errorReply{fmt.Sprintf("this coordinator keeps %d shards in step, shard %d says there are %d: give every shard the same --shard i/N", s.n, q.Shard, q.Shards)})
		return
	}
	if q.Shard < 0 || q.Shard >= s.n {
		writeJSON(w, http.StatusConflict, errorReply{fmt.Sprintf("shard %d is not one of 0..%d", q.Shard, s.n-1)})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.Now()
	if prev, ok := s.shards[q.Shard]; ok && prev.Left == "" && prev.RunID != q.RunID {
		writeJSON(w, http.StatusConflict, errorReply{fmt.Sprintf("shard %d joined already (run %s): two processes were given the same --shard", q.Shard, prev.RunID)})
		return
	}
	if s.firstJoin.IsZero() {
		s.firstJoin = now
	}
	s.shards[q.Shard] = &ShardState{Shard: q.Shard, RunID: q.RunID, Joined: now, LastSeen: now, OffsetMs: q.OffsetMs, RTTMs: q.RTTMs}
	s.wake()
	writeJSON(w, http.StatusOK, struct{}{})
}

// update applies a shard's heartbeat or goodbye to its state.
func (s *Server) update(apply func(*ShardState, shardRequest)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var q shardRequest
		if err := json.NewDecoder(r.Body).Decode(&q); err != nil {
			writeJSON(w, http.StatusBadRequest, errorReply{err.Error()})
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if sh, ok := s.shards[q.Shard]; ok {
			sh.LastSeen = s.Now()
			apply(sh, q)
		}
		s.wake()
		writeJSON(w, http.StatusOK, struct{}{})
	}
}

// barrier answers once every shard arrived at the named barrier (with
// the start instant), or a shard is gone (with why), or the request ends.
func (s *Server) barrier(w http.ResponseWriter, r *http.Request) {
	var q shardRequest
	if err := json.NewDecoder(r.Body).Decode(&q); err != nil || q.Barrier == "" {
		writeJSON(w, http.StatusBadRequest, errorReply{"a barrier request names its shard and barrier"})
		return
	}
	s.mu.Lock()
	sh, ok := s.shards[q.Shard]
	if !ok {
		s.mu.Unlock()
		writeJSON(w, http.StatusConflict, errorReply{fmt.Sprintf("shard %d has not joined", q.Shard)})
		return
	}
	sh.LastSeen, sh.Barrier = s.Now(), q.Barrier
	b := s.barriers[q.Barrier]
	if b == nil {
		b = &barrier{arrived: map[int]bool{}}
		s.barriers[q.Barrier] = b
	}
	b.arrived[q.Shard] = true
	if len(b.arrived) == s.n && b.start.IsZero() {
		b.start = s.Now().Add(s.lead)
		s.released = append(s.released, q.Barrier)
	}
	s.wake()
	s.mu.Unlock()

	check := time.NewTicker(HeartbeatEvery)
	defer check.Stop()
	for {
		s.mu.Lock()
		start, why, ch := b.start, s.gone(b), s.changed
		s.mu.Unlock()
		switch {
		case !start.IsZero():
			writeJSON(w, http.StatusOK, barrierReply{Start: start.UnixNano()})
			return
		case why != "":
			writeJSON(w, http.StatusOK, barrierReply{Error: why})
			return
		}
		select {
		case <-ch:
		case <-check.C: // a silent shard turns dead with time alone
		case <-r.Context().Done():
			return
		}
	}
}

// gone says why a barrier can never be released: a shard that has not
// arrived left or stopped answering; "" while it still can. mu is held.
func (s *Server) gone(b *barrier) string {
	now := s.Now()
	var why []string
	for i := range s.n {
		if b.arrived[i] {
			continue
		}
		sh, ok := s.shards[i]
		switch {
		case !ok && s.joinExpired():
			why = append(why, fmt.Sprintf("shard %d/%d never joined (waited %s)", i, s.n, s.joinWait))
		case !ok:
			continue // not joined yet: joining is waited for
		case sh.Left != "":
			why = append(why, fmt.Sprintf("shard %d/%d left (%s)", i, s.n, sh.Left))
		case now.Sub(sh.LastSeen) > s.deadAfter:
			why = append(why, fmt.Sprintf("shard %d/%d stopped answering %.0fs ago", i, s.n, now.Sub(sh.LastSeen).Seconds()))
		}
	}
	return strings.Join(why, "; ")
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Serve serves the coordinator on addr (":7070", "0.0.0.0:7070") until
// ctx ends; the listener is open when it returns without error, and the
// returned function stops the server.
func Serve(ctx context.Context, addr string, s *Server) (string, func(), error) {
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("coordinator: listening on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	stop := func() {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			_ = srv.Close()
		}
	}
	return l.Addr().String(), stop, nil
}

// ErrGone is wrapped by a barrier that can never be released.
var ErrGone = errors.New("a shard is gone")
