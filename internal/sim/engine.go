package sim

import (
	"container/list"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// seq is one sequence: a generation request, or one input of an embeddings
// request (which only needs a prefill). The handler reads avail/done; every
// other field belongs to the engine and is guarded by engine.mu.
type seq struct {
	promptTokens int
	blockHashes  []uint64 // chain hashes of the prompt's full KV blocks
	doneHashes   []uint64 // ... and of the prompt and output once finished (nil: none beyond the prompt's)
	target       int      // tokens to generate; 0 for embeddings

	avail   atomic.Int64  // tokens generated so far, published after each step
	done    atomic.Bool   // set after the final avail
	aborted atomic.Bool   // the handler gave up (client gone, fault, shutdown)
	cached  atomic.Int64  // prompt tokens found in the prefix cache at first admission
	notify  chan struct{} // capacity 1: "avail or done changed"

	// Engine state.
	generated     int
	computed      int // tokens whose KV is computed
	prefillTarget int // tokens to compute before decoding: the prompt, plus the output after a preemption
	blocks        int // KV blocks held
	admittedOnce  bool
	inRunning     bool
	inWaiting     bool
	stepPrefill   int
	stepDecode    int
	queuedAt      time.Time // when submitted, for the queue-time histogram
}

func newSeq(promptTokens int, hashes []uint64, target int) *seq {
	return &seq{
		promptTokens:  promptTokens,
		blockHashes:   hashes,
		target:        target,
		prefillTarget: promptTokens,
		notify:        make(chan struct{}, 1),
	}
}

func (q *seq) signal() {
	select {
	case q.notify <- struct{}{}:
	default:
	}
}

// engine is the continuous-batching model: one goroutine runs steps while
// there is work, and each step's results are published to the sequences'
// handlers through atomics and a one-slot channel, so the step loop never
// blocks on a slow client and no per-token timers exist.
type engine struct {
	cfg     EngineConfig
	tpc     int
	m       *metrics
	mu      sync.Mutex
	waiting []*seq // FIFO; preempted sequences go back to the front
	running []*seq // admission order; preemption takes from the back
	free    int    // free KV blocks
	total   int
	loopOn  bool
	closed  bool
	stop    chan struct{}
	wg      sync.WaitGroup
	rng     *rand.Rand
	prefix  *prefixCache
	batch   []*seq
	wake    []*seq

	nRunning, nWaiting, usedBlocks atomic.Int64
}

func newEngine(cfg EngineConfig, tpc int, seed int64, m *metrics) *engine {
	total := cfg.KVCacheTokens / cfg.BlockSize
	e := &engine{
		cfg:   cfg,
		tpc:   tpc,
		m:     m,
		free:  total,
		total: total,
		stop:  make(chan struct{}),
		rng:   rand.New(rand.NewPCG(uint64(seed), 0x5eed)),
	}
	if cfg.PrefixCache {
		e.prefix = newPrefixCache(total)
	}
	return e
}

func (e *engine) blocksFor(tokens int) int {
	return (tokens + e.cfg.BlockSize - 1) / e.cfg.BlockSize
}

// submit queues q and starts the step loop if it is idle. It reports false
// when the engine is closed.
func (e *engine) submit(q *seq) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return false
	}
	q.inWaiting = true
	q.queuedAt = time.Now()
	e.waiting = append(e.waiting, q)
	e.nWaiting.Store(int64(len(e.waiting)))
	if !e.loopOn {
		e.loopOn = true
		e.wg.Add(1)
		go e.loop()
	}
	return true
}

// abort removes q at once, freeing its KV blocks for the next step.
func (e *engine) abort(q *seq) {
	q.aborted.Store(true)
	e.mu.Lock()
	defer e.mu.Unlock()
	if q.inWaiting {
		e.waiting = removeSeq(e.waiting, q)
		q.inWaiting = false
	}
	if q.inRunning {
		e.running = removeSeq(e.running, q)
		q.inRunning = false
	}
	e.freeBlocks(q)
	e.publishGauges()
}

func removeSeq(list []*seq, q *seq) []*seq {
	for i, x := range list {
		if x == q {
			copy(list[i:], list[i+1:])
			list[len(list)-1] = nil
			return list[:len(list)-1]
		}
	}
	return list
}

func (e *engine) freeBlocks(q *seq) {
	e.free += q.blocks
	q.blocks = 0
}

func (e *engine) publishGauges() {
	e.nRunning.Store(int64(len(e.running)))
	e.nWaiting.Store(int64(len(e.waiting)))
	e.usedBlocks.Store(int64(e.total - e.free))
}

// close stops the loop; sequences still queued are left for their handlers,
// which see the server closed.
func (e *engine) close() {
	e.mu.Lock()
	if !e.closed {
		e.closed = true
		close(e.stop)
	}
	// Wake every handler still waiting; each sees the server closing.
	for _, q := range e.running {
		q.signal()
	}
	for _, q := range e.waiting {
		q.signal()
	}
	e.mu.Unlock()
	e.wg.Wait()
}

// flushPrefix forgets every cached prefix (SGLang's /flush_cache).
func (e *engine) flushPrefix() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.prefix != nil {
		e.prefix = newPrefixCache(e.prefix.cap)
	}
}

// maxCatchUp bounds how far the step loop may run behind its timeline
// before it gives up catching up.
const maxCatchUp = 250 * time.Millisecond

func (e *engine) loop() {
	defer e.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var deadline time.Time
	for {
		e.mu.Lock()
		cost := e.schedule()
		if len(e.batch) == 0 {
			e.loopOn = false
			e.publishGauges()
			e.mu.Unlock()
			return
		}
		e.publishGauges()
		e.mu.Unlock()

		// Steps follow an ideal timeline, each ending cost after the
		// previous one, like a GPU that keeps stepping while the API server
		// streams: timer lateness and time spent writing to clients (which,
		// with thousands of streams on one core, can be as long as a step)
		// do not stretch the step period; late steps run back to back and
		// a slow handler sends the tokens it missed as one bigger event, as
		// vLLM's frontend does. Only after idling, or a lag beyond
		// maxCatchUp (a stopped process), does the timeline restart.
		now := time.Now()
		if deadline.IsZero() || now.Sub(deadline) > maxCatchUp {
			deadline = now
		}
		deadline = deadline.Add(cost)
		if d := time.Until(deadline); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-e.stop:
				e.mu.Lock()
				e.loopOn = false
				e.mu.Unlock()
				return
			}
		} else {
			select {
			case <-e.stop:
				e.mu.Lock()
				e.loopOn = false
				e.mu.Unlock()
				return
			default:
			}
		}

		e.mu.Lock()
		e.apply()
		e.publishGauges()
		wake := e.wake
		e.mu.Unlock()
		for _, q := range wake {
			q.signal()
		}
	}
}

// schedule builds the next step into e.batch and returns its cost. Like
// vLLM's V1 scheduler: running sequences first (decodes and unfinished
// prefill chunks), then admission from the waiting queue in FIFO order while
// the sequence limit, the token budget and the KV cache allow.
func (e *engine) schedule() time.Duration {
	cfg := e.cfg
	e.batch = e.batch[:0]
	budget := cfg.MaxBatchedTokens
	prefillTokens, decodes, ctxTokens := 0, 0, 0
	hasPrefill := false

	for i := 0; i < len(e.running); i++ {
		q := e.running[i]
		q.stepPrefill, q.stepDecode = 0, 0
		if left := q.prefillTarget - q.computed; left > 0 {
			n := left
			if cfg.ChunkedPrefill {
				n = min(n, budget)
			} else if n > budget && hasPrefill {
				continue
			}
			if n <= 0 {
				continue
			}
			q.stepPrefill = n
			budget -= n
			prefillTokens += n
			hasPrefill = true
			e.batch = append(e.batch, q)
			continue
		}
		// Decode: the KV cache must hold the tokens this step adds; when it
		// cannot, preempt the most recently admitted sequence (recompute
		// later), as vLLM does, until it can.
		n := min(e.tpc, q.target-q.generated)
		if n <= 0 || n > budget {
			continue // decodes count against the token budget too, as in vLLM
		}
		need := e.blocksFor(q.computed+n) - q.blocks
		self := false
		for need > e.free {
			victim := e.running[len(e.running)-1]
			e.preempt(victim)
			if victim == q {
				self = true
				break
			}
		}
		if self {
			break
		}
		e.free -= need
		q.blocks += need
		q.stepDecode = n
		budget -= n
		decodes++
		ctxTokens += q.computed
		e.batch = append(e.batch, q)
	}

	// Admission. A watermark of 1% of the blocks is kept free so that running
	// sequences can grow before new ones crowd them out (vLLM does the same).
	watermark := e.total / 100
	for len(e.waiting) > 0 && len(e.running) < cfg.MaxNumSeqs && budget > 0 {
		q := e.waiting[0]
		if q.aborted.Load() {
			e.waiting = e.waiting[1:]
			q.inWaiting = false
			continue
		}
		hit := 0
		if e.prefix != nil {
			hit = e.prefix.lookup(q.blockHashes) * cfg.BlockSize
			// At least one token is always computed, to produce logits.
			hit = min(hit, q.prefillTarget-1)
			hit = max(hit, 0)
		}
		left := q.prefillTarget - hit
		n := left
		if cfg.ChunkedPrefill {
			n = min(n, budget)
		} else if n > budget && hasPrefill {
			break
		}
		need := e.blocksFor(q.prefillTarget + 1)
		if need > e.free-watermark && !(len(e.running) == 0 && need <= e.free) {
			break // head-of-line: FIFO admission waits for KV space
		}
		e.waiting[0] = nil
		e.waiting = e.waiting[1:]
		q.inWaiting = false
		e.free -= need
		q.blocks = need
		q.computed = hit
		q.inRunning = true
		e.running = append(e.running, q)
		if !q.admittedOnce {
			q.admittedOnce = true
			q.cached.Store(int64(hit))
			e.m.prefixQueries.Add(uint64(q.promptTokens))
			e.m.prefixHits.Add(uint64(hit))
			e.m.queue.observe(time.Since(q.queuedAt))
		}
		q.stepPrefill, q.stepDecode = n, 0
		budget -= n
		prefillTokens += n
		hasPrefill = true
		e.batch = append(e.batch, q)
	}

	if len(e.batch) == 0 {
		return 0
	}
	cost := cfg.StepBase +
		time.Duration(decodes)*cfg.PerSeq +
		time.Duration(prefillTokens)*cfg.PerPrefillToken +
		time.Duration(ctxTokens)*cfg.PerContextToken
	if cfg.Jitter > 0 {
		f := 1 + cfg.Jitter*e.rng.NormFloat64()
		cost = time.Duration(math.Max(0, f) * float64(cost))
	}
	e.m.steps.Add(1)
	e.m.stepBusySlots.Add(uint64(len(e.batch)))
	return cost
}

// preempt frees q's KV and requeues it at the front; it will recompute its
// prompt and what it has generated so far.
func (e *engine) preempt(q *seq) {
	e.running = removeSeq(e.running, q)
	q.inRunning = false
	e.freeBlocks(q)
	q.computed = 0
	q.prefillTarget = q.promptTokens + q.generated
	q.stepPrefill, q.stepDecode = 0, 0
	q.inWaiting = true
	e.waiting = append([]*seq{q}, e.waiting...)
	e.m.preemptions.Add(1)
}

// apply publishes the results of the step just slept through.
func (e *engine) apply() {
	e.wake = e.wake[:0]
	finished := false
	for _, q := range e.batch {
		if q.aborted.Load() || !q.inRunning {
			continue // aborted or preempted during the step
		}
		switch {
		case q.stepPrefill > 0:
			q.computed += q.stepPrefill
			if q.computed < q.prefillTarget {
				continue
			}
			if e.prefix != nil {
				e.prefix.insert(q.blockHashes)
			}
			if q.generated < q.target {
				// The step that completes a prefill samples one token.
				q.generated++
			}
		case q.stepDecode > 0:
			q.computed += q.stepDecode
			q.generated += q.stepDecode
		default:
			continue
		}
		q.stepPrefill, q.stepDecode = 0, 0
		q.avail.Store(int64(q.generated))
		if q.generated >= q.target {
			if e.prefix != nil && q.doneHashes != nil {
				// The output's KV stays cached with the prompt's, as
				// vLLM's filled blocks do: a conversation's next turn
				// finds its history computed.
				e.prefix.insert(q.doneHashes)
			}
			q.done.Store(true)
			q.inRunning = false
			e.freeBlocks(q)
			finished = true
		}
		e.wake = append(e.wake, q)
	}
	if finished {
		kept := e.running[:0]
		for _, q := range e.running {
			if q.inRunning {
				kept = append(kept, q)
			}
		}
		clear(e.running[len(kept):])
		e.running = kept
	}
}

// prefixCache remembers which prompt blocks have KV computed, by chained
// block hash, in LRU order. Its capacity is the cache's block count: a
// first-order stand-in for vLLM keeping freed blocks' contents until reuse.
type prefixCache struct {
	cap int
	ll  *list.List
	m   map[uint64]*list.Element
}

func newPrefixCache(capacity int) *prefixCache {
	return &prefixCache{cap: capacity, ll: list.New(), m: make(map[uint64]*list.Element)}
}

// lookup returns how many leading blocks are cached.
func (p *prefixCache) lookup(hashes []uint64) int {
	n := 0
	for _, h := range hashes {
		el, ok := p.m[h]
		if !ok {
			break
		}
		p.ll.MoveToFront(el)
		n++
	}
	return n
}

func (p *prefixCache) insert(hashes []uint64) {
	for _, h := range hashes {
		if el, ok := p.m[h]; ok {
			p.ll.MoveToFront(el)
			continue
		}
		p.m[h] = p.ll.PushFront(h)
		for p.ll.Len() > p.cap {
			old := p.ll.Back()
			p.ll.Remove(old)
			delete(p.m, old.Value.(uint64))
		}
	}
}

// blockHashes chains a hash over each full block of ids, so a block's hash
// identifies the whole prefix up to it (as vLLM's prefix caching does).
func blockHashes(ids []int, blockSize int) []uint64 {
	n := len(ids) / blockSize
	out := make([]uint64, n)
	h := uint64(0xcbf29ce484222325)
	for b := 0; b < n; b++ {
		for _, id := range ids[b*blockSize : (b+1)*blockSize] {
			h = mix(h ^ uint64(id))
		}
		out[b] = h
	}
	return out
}
