package sim

import (
	"cmp"
	"slices"
	"sync"
	"time"
)

// Event is one token-bearing write: the SSE event (or, for a non-streamed
// response, the body) carrying Tokens tokens, stamped immediately before it
// was written and flushed, so no client can have received it earlier. An
// embeddings response records one event with Tokens 0.
type Event struct {
	Time     time.Time // with a monotonic reading, for in-process comparisons
	UnixNano int64     // wall clock, for comparisons across processes
	Tokens   int
}

// RequestRecord is what the simulator knows about one request. It is the
// ground truth a client's measurements are joined to by ID.
type RequestRecord struct {
	Seq              uint64 // arrival order, from 1
	ID               string // the response id ("cmpl-42"); empty if rejected before one was given
	Model            string
	Endpoint         string // "completions", "chat", "embeddings"
	Stream           bool
	Received         time.Time
	ReceivedUnixNano int64
	Events           []Event
	PromptTokens     int
	CachedTokens     int // prompt tokens served from the prefix or prompt cache
	// PlannedTTFT is the first-token delay fixed mode planned for the
	// request (after a prompt-cache discount): the simulator's intent,
	// which its own lateness on a busy machine does not change.
	PlannedTTFT time.Duration
	// PlannedGaps are the answer gaps fixed mode drew for the request
	// (Config.ITLSpread; nil without it), in order.
	PlannedGaps      []time.Duration
	RemoteAddr       string // the client's address: one per TCP connection
	CompletionTokens int    // tokens actually written
	// ReasoningTokens is how many of them were reasoning (chat with a
	// Config.Reasoning phase; 0 otherwise).
	ReasoningTokens int
	// Planned is what a tool call's arguments or a structured answer was
	// planned to be (PlannedValid, PlannedInvalidJSON,
	// PlannedSchemaInvalid; "" when the request asked for neither);
	// ToolName the function called ("" for a structured answer);
	// ConstrainedText the arguments or the answer as written.
	Planned         string
	ToolName        string
	ConstrainedText string
	Status          int
	FinishReason    string // "length", "stop", "abort" (client gone, drop fault, shutdown)
	Fault           string // faults applied, as in X-Sim-Fault
	Error           string
	Finished        time.Time

	// AgentStep and AgentSteps are an agent session's step (1-based) and
	// the steps its session plans (Tools.AgentSteps, agent.go); 0 when
	// the request is not an agent step.
	AgentStep, AgentSteps int
}

// record is the live version: the handler appends under mu while Records may
// copy concurrently. Events are kept packed (16 bytes: a monotonic offset
// from the server's start and a count) because a long run keeps millions.
type record struct {
	mu   sync.Mutex
	base time.Time // the server's start, with its monotonic reading
	r    RequestRecord
	ev   []packedEvent
}

type packedEvent struct {
	off    time.Duration // since base
	tokens int64
}

func (rec *record) addEvent(t time.Time, tokens int) {
	rec.mu.Lock()
	rec.ev = append(rec.ev, packedEvent{off: t.Sub(rec.base), tokens: int64(tokens)})
	rec.r.CompletionTokens += tokens
	rec.mu.Unlock()
}

func (rec *record) update(f func(r *RequestRecord)) {
	rec.mu.Lock()
	f(&rec.r)
	rec.mu.Unlock()
}

func (rec *record) reserve(n int) {
	rec.mu.Lock()
	rec.ev = make([]packedEvent, 0, n)
	rec.mu.Unlock()
}

func (rec *record) snapshot() RequestRecord {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	out := rec.r
	out.Events = make([]Event, len(rec.ev))
	for i, e := range rec.ev {
		// base.Add keeps the monotonic reading, so in-process comparisons
		// with time.Since and Sub stay exact.
		t := rec.base.Add(e.off)
		out.Events[i] = Event{Time: t, UnixNano: t.UnixNano(), Tokens: int(e.tokens)}
	}
	return out
}

// recordLog keeps the most recent records in a ring.
type recordLog struct {
	mu   sync.Mutex
	max  int
	ring []*record
	next int // index of the oldest when full
	full bool
}

func (l *recordLog) add(rec *record) {
	if l.max == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.full {
		l.ring = append(l.ring, rec)
		if len(l.ring) == l.max {
			l.full = true
		}
		return
	}
	l.ring[l.next] = rec
	l.next = (l.next + 1) % l.max
}

func (l *recordLog) all() []*record {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.full {
		return append([]*record(nil), l.ring...)
	}
	out := make([]*record, 0, len(l.ring))
	out = append(out, l.ring[l.next:]...)
	return append(out, l.ring[:l.next]...)
}

func (l *recordLog) reset() {
	l.mu.Lock()
	l.ring, l.next, l.full = nil, 0, false
	l.mu.Unlock()
}

// Records returns a copy of the kept request records, oldest first,
// including requests still in flight.
func (s *Server) Records() []RequestRecord {
	recs := s.records.all()
	out := make([]RequestRecord, len(recs))
	for i, r := range recs {
		out[i] = r.snapshot()
	}
	return out
}

// Record returns the record with the given response id.
func (s *Server) Record(id string) (RequestRecord, bool) {
	for _, r := range s.records.all() {
		r.mu.Lock()
		match := r.r.ID == id
		r.mu.Unlock()
		if match {
			return r.snapshot(), true
		}
	}
	return RequestRecord{}, false
}

// ResetRecords forgets every kept record (e.g. between test phases).
func (s *Server) ResetRecords() { s.records.reset() }

// Debug JSON shapes (GET /debug/requests).
type eventJSON struct {
	UnixNano int64 `json:"unix_nano"`
	Tokens   int   `json:"tokens"`
}

type recordJSON struct {
	Seq              uint64      `json:"seq"`
	ID               string      `json:"id"`
	Model            string      `json:"model"`
	Endpoint         string      `json:"endpoint"`
	Stream           bool        `json:"stream"`
	ReceivedUnixNano int64       `json:"received_unix_nano"`
	Events           []eventJSON `json:"events"`
	PromptTokens     int         `json:"prompt_tokens"`
	CachedTokens     int         `json:"cached_tokens"`
	RemoteAddr       string      `json:"remote_addr,omitempty"`
	CompletionTokens int         `json:"completion_tokens"`
	Status           int         `json:"status"`
	FinishReason     string      `json:"finish_reason,omitempty"`
	Fault            string      `json:"fault,omitempty"`
	Error            string      `json:"error,omitempty"`
	FinishedUnixNano int64       `json:"finished_unix_nano,omitempty"`
}

func toJSON(r RequestRecord) recordJSON {
	ev := make([]eventJSON, len(r.Events))
	for i, e := range r.Events {
		ev[i] = eventJSON{UnixNano: e.UnixNano, Tokens: e.Tokens}
	}
	var fin int64
	if !r.Finished.IsZero() {
		fin = r.Finished.UnixNano()
	}
	return recordJSON{
		Seq: r.Seq, ID: r.ID, Model: r.Model, Endpoint: r.Endpoint, Stream: r.Stream,
		ReceivedUnixNano: r.ReceivedUnixNano, Events: ev,
		PromptTokens: r.PromptTokens, CachedTokens: r.CachedTokens, RemoteAddr: r.RemoteAddr, CompletionTokens: r.CompletionTokens,
		Status: r.Status, FinishReason: r.FinishReason, Fault: r.Fault, Error: r.Error,
		FinishedUnixNano: fin,
	}
}

// unixNano is t's wall-clock time derived from the server's start plus the
// monotonic time since, the same way event times are, so differences of
// UnixNano values equal differences of the monotonic times exactly even if
// the wall clock is adjusted during a run.
func (s *Server) unixNano(t time.Time) int64 {
	return s.started.Add(t.Sub(s.started)).UnixNano()
}

// liveRequests are the generation requests in flight, for llama-server's
// /slots: what each slot holds. Bounded by what is in flight.
type liveRequests struct {
	mu  sync.Mutex
	set map[*record]struct{}
}

func (l *liveRequests) add(rec *record) {
	l.mu.Lock()
	if l.set == nil {
		l.set = map[*record]struct{}{}
	}
	l.set[rec] = struct{}{}
	l.mu.Unlock()
}

func (l *liveRequests) remove(rec *record) {
	l.mu.Lock()
	delete(l.set, rec)
	l.mu.Unlock()
}

// slotUse is what one busy slot holds.
type slotUse struct {
	prompt, cached, decoded int
}

// busiest is what the oldest n requests in flight hold, oldest first (the
// simulator does not pin requests to slots; the first slots show them).
func (l *liveRequests) busiest(n int) []slotUse {
	l.mu.Lock()
	recs := make([]*record, 0, len(l.set))
	for rec := range l.set {
		recs = append(recs, rec)
	}
	l.mu.Unlock()
	slices.SortFunc(recs, func(a, b *record) int { return cmp.Compare(a.r.Seq, b.r.Seq) }) // Seq is set before add, never after
	out := make([]slotUse, 0, min(n, len(recs)))
	for _, rec := range recs {
		rec.mu.Lock()
		out = append(out, slotUse{prompt: rec.r.PromptTokens, cached: rec.r.CachedTokens, decoded: rec.r.CompletionTokens})
		rec.mu.Unlock()
	}
	return out[:min(n, len(out))]
}
