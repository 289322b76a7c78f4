package merge

import (
	"cmp"
	"container/heap"
	"iter"
	"slices"
	"sync"
	"time"

	"github.com/benchrun/benchrun/internal/measure"
	"github.com/benchrun/benchrun/internal/results"
)

// shardRows are one shard's request rows of one cell, read from its run
// directory at each reading and never held: the cell's stage's rows (a
// model mix's per-model row: its model's rows of the pooled row), on the
// coordinator's clock. scan's one reading finds what the merge's record
// and its ordering need.
type shardRows struct {
	stored   results.Requests // nil: the shard has none
	stage    string
	model    string // a per-model row's model
	perModel bool
	offset   time.Duration // the coordinator's clock − the shard's

	// What scan found: the rows, the first send, and how much earlier
	// than an earlier row's a row was sent at most (a shard's rows are
	// in send order, whose times a busy client can swap by a little).
	n        int
	first    time.Time
	disorder time.Duration
}

// count is how many rows scan found (0 for none).
func (s *shardRows) count() int {
	if s == nil {
		return 0
	}
	return s.n
}

// firstSend is the earliest send scan found (zero for none).
func (s *shardRows) firstSend() time.Time {
	if s == nil {
		return time.Time{}
	}
	return s.first
}

// heldRows are rows in memory as a shard's (a test's), scanned.
func heldRows(stage string, reqs []results.Request) *shardRows {
	s := &shardRows{stored: results.RequestSlice(reqs), stage: stage}
	s.scan() // rows in memory: no error
	return s
}

// each yields the shard's rows of the cell, each a copy on the
// coordinator's clock; the error is why the reading stopped early.
func (s *shardRows) each(yield func(*results.Request) bool) error {
	if s == nil || s.stored == nil {
		return nil
	}
	for r := range s.stored.All() {
		if r.Stage != s.stage || (s.perModel && r.Model != s.model) {
			continue
		}
		q := *r
		q.SentAt = q.SentAt.Add(s.offset)
		if !yield(&q) {
			return nil
		}
	}
	return s.stored.Err()
}

// scan reads the rows once for their count, first send and disorder.
func (s *shardRows) scan() error {
	var latest time.Time
	return s.each(func(q *results.Request) bool {
		s.n++
		if s.first.IsZero() || q.SentAt.Before(s.first) {
			s.first = q.SentAt
		}
		if q.SentAt.Before(latest) {
			s.disorder = max(s.disorder, latest.Sub(q.SentAt))
		} else {
			latest = q.SentAt
		}
		return true
	})
}

// pooled are a merged cell's request rows as results.Requests: its
// shards' rows (scanned) in the order sorting them all by send time
// would give (stably: shard by shard, then each shard's order), merged as
// they are read, and numbered 0, 1, … as the merged run's attempt 1. What
// a reading holds is the rows sent within the shards' disorder of the
// one it yields next, not the cell's rows: a merge's memory does not grow
// with a cell's length (a two-shard 30-minute soak's pooled rows were
// 1.4 GB held). unsorted yields the first shard's rows as they are: the
// row of a cell without a load to split.
type pooled struct {
	shards     []*shardRows // in shard order
	runID      string
	userStamps bool // every row on its user-space stamps (oneClock)
	unsorted   bool

	mu  sync.Mutex
	err error
}

func (p *pooled) Len() int {
	if p.unsorted {
		return p.shards[0].n
	}
	n := 0
	for _, s := range p.shards {
		n += s.n
	}
	return n
}

func (p *pooled) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

func (p *pooled) setErr(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.err = err
}

// pending is a row read ahead of its turn: its shard (the index into
// pooled.shards) and its place in the shard's rows break ties of send
// time as a stable sort would.
type pending struct {
	q            results.Request
	shard, index int
}

type pendingHeap []pending

func (h pendingHeap) Len() int { return len(h) }
func (h pendingHeap) Less(i, j int) bool {
	if c := h[i].q.SentAt.Compare(h[j].q.SentAt); c != 0 {
		return c < 0
	}
	return cmp.Or(cmp.Compare(h[i].shard, h[j].shard), cmp.Compare(h[i].index, h[j].index)) < 0
}
func (h pendingHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *pendingHeap) Push(x any)   { *h = append(*h, x.(pending)) }
func (h *pendingHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func (p *pooled) All() iter.Seq[*results.Request] {
	return func(yield func(*results.Request) bool) {
		p.setErr(nil)
		seq := int64(0)
		emit := func(q *results.Request) bool {
			q.RunID, q.Attempt, q.Seq = p.runID, 1, seq
			seq++
			if p.userStamps && len(q.StampDelaysMs) > 0 {
				// What UserStamps moves is the row's own, not the
				// reader's (rows held in memory are read again).
				for _, f := range []**float64{&q.TTFTMs, &q.TTFTSchedMs, &q.E2ELMs, &q.E2ELSchedMs} {
					if *f != nil {
						*f = results.Some(**f)
					}
				}
				q.ChunkGapsMs = slices.Clone(q.ChunkGapsMs)
				measure.UserStamps(q)
			}
			return yield(q)
		}
		if p.unsorted {
			if err := p.shards[0].each(emit); err != nil {
				p.setErr(err)
			}
			return
		}
		p.merge(emit)
	}
}

// reader is one shard's rows being read by a merge.
type reader struct {
	next     func() (*results.Request, bool)
	stop     func()
	read     int       // rows read
	frontier time.Time // the latest send read
	done     bool
}

// merge yields the shards' rows in send order. A row is yielded once
// no row still unread can come before it: every shard not read to its
// end has read a row sent more than its disorder after it (a later row
// of a shard is sent at least its disorder before the latest read).
func (p *pooled) merge(yield func(*results.Request) bool) {
	readers := make([]*reader, len(p.shards))
	errs := make([]error, len(p.shards))
	for i, s := range p.shards {
		next, stop := iter.Pull(func(yield func(*results.Request) bool) {
			errs[i] = s.each(yield)
		})
		readers[i] = &reader{next: next, stop: stop}
	}
	defer func() {
		for _, r := range readers {
			r.stop()
		}
		for _, err := range errs {
			if err != nil {
				p.setErr(err)
				return
			}
		}
	}()
	var h pendingHeap
	safe := func(at time.Time) bool {
		for i, r := range readers {
			if !r.done && (r.read == 0 || !r.frontier.Add(-p.shards[i].disorder).After(at)) {
				return false
			}
		}
		return true
	}
	for {
		for len(h) == 0 || !safe(h[0].q.SentAt) {
			// Read on from the shard that holds the next row up most
			// (one not read yet first).
			at := -1
			var bar time.Time
			for i, r := range readers {
				if r.done {
					continue
				}
				if r.read == 0 {
					at = i
					break
				}
				if b := r.frontier.Add(-p.shards[i].disorder); at < 0 || b.Before(bar) {
					at, bar = i, b
				}
			}
			if at < 0 {
				break // every shard read to its end
			}
			behind := readers[at]
			q, ok := behind.next()
			if !ok {
				behind.done = true
				continue
			}
			heap.Push(&h, pending{q: *q, shard: at, index: behind.read})
			behind.read++
			if q.SentAt.After(behind.frontier) {
				behind.frontier = q.SentAt
			}
		}
		if len(h) == 0 {
			return
		}
		next := heap.Pop(&h).(pending)
		if !yield(&next.q) {
			return
		}
	}
}
