package sweep

import (
	"sync"

	"github.com/benchrun/benchrun/internal/loadgen"
)

// promptBudget is about how many bytes of prompts one pass builds ahead.
const promptBudget = 64 << 20

// maxAhead and minAhead bound the prompts built ahead, whatever their size.
const (
	maxAhead = 4096
	minAhead = 2
)

// promptFeed hands a pass its prompts as the sends ask for them, built a
// bounded window ahead by one goroutine: the first window before the pass
// starts (so the first sends never wait), the rest while it runs, staying
// at most the window ahead of the furthest request asked for. Nothing it
// holds grows with the pass's requests: a point of ten million requests
// holds the same window as one of ten.
//
// Request i's prompt is always src.Prompt(pass, i): a send that asks for a
// prompt not in the window (the producer behind, or a session slower than
// the others whose slot was reused) builds it itself. Sends ask in any
// order, from any goroutine (closed-loop sessions ask concurrently).
type promptFeed struct {
	src  *loadgen.PromptSource
	pass int

	mu    sync.Mutex
	cond  *sync.Cond
	slots []promptSlot
	next  int  // the index the producer builds next
	high  int  // one past the furthest index asked for
	limit int  // the producer stops here (0: no end known)
	quit  bool // stop() was called
	done  chan struct{}
}

type promptSlot struct {
	i      int // -1: empty
	prompt string
}

// newPromptFeed starts building pass's prompts and returns once the first
// window is built. expected is the pass's request count when the pass
// sends exactly that many (0 when time bounds it): nothing past it is
// built. src must be Prepare()d.
func newPromptFeed(src *loadgen.PromptSource, pass, expected int) *promptFeed {
	f := &promptFeed{src: src, pass: pass, limit: expected, done: make(chan struct{})}
	f.cond = sync.NewCond(&f.mu)
	first := src.Prompt(pass, 0)
	ahead := maxAhead
	if n := len(first); n > 0 {
		ahead = min(max(promptBudget/n, minAhead), maxAhead)
	}
	if expected > 0 {
		ahead = min(ahead, expected)
	}
	f.slots = make([]promptSlot, ahead)
	for k := range f.slots {
		f.slots[k].i = -1
	}
	f.slots[0] = promptSlot{0, first}
	f.next = 1
	// The first window, before the pass starts.
	for f.next < ahead {
		f.slots[f.next] = promptSlot{f.next, src.Prompt(pass, f.next)}
		f.next++
	}
	go f.produce()
	return f
}

// produce keeps the window full until stop.
func (f *promptFeed) produce() {
	defer close(f.done)
	w := len(f.slots)
	f.mu.Lock()
	defer f.mu.Unlock()
	for {
		for !f.quit && (f.next >= f.high+w || f.limit > 0 && f.next >= f.limit) {
			f.cond.Wait()
		}
		if f.quit {
			return
		}
		// Sends that went past the producer built their own; the window
		// starts again at the furthest one asked for.
		f.next = max(f.next, f.high)
		if f.limit > 0 && f.next >= f.limit {
			continue
		}
		i := f.next
		f.mu.Unlock()
		p := f.src.Prompt(f.pass, i)
		f.mu.Lock()
		f.slots[i%w] = promptSlot{i, p}
		f.next = max(f.next, i+1)
	}
}

// prompt is request i's prompt.
func (f *promptFeed) prompt(i int) string {
	f.mu.Lock()
	if len(f.slots) == 0 { // stopped
		f.mu.Unlock()
		return f.src.Prompt(f.pass, i)
	}
	s := &f.slots[i%len(f.slots)]
	if s.i == i {
		p := s.prompt
		s.i, s.prompt = -1, ""
		if i+1 > f.high {
			f.high = i + 1
			f.cond.Signal()
		}
		f.mu.Unlock()
		return p
	}
	if i+1 > f.high {
		f.high = i + 1
		f.cond.Signal()
	}
	f.mu.Unlock()
	return f.src.Prompt(f.pass, i)
}

// stop ends the producer and drops the window.
func (f *promptFeed) stop() {
	f.mu.Lock()
	f.quit = true
	f.cond.Signal()
	f.mu.Unlock()
	<-f.done
	f.mu.Lock()
	f.slots = nil
	f.mu.Unlock()
}
