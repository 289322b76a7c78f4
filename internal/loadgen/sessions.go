package loadgen

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benchrun/benchrun/internal/ktimer"
)

// Think-time distributions of a conversation.
const (
	ThinkFixed       = "fixed"
	ThinkExponential = "exponential"
)

// HistorySeparator joins a completions conversation: turn k's prompt is
// turn k-1's prompt, its answer as the server sent it, this separator and
// the new user text, so every earlier prompt and answer is a literal
// prefix of the next prompt (what a prefix cache can serve).
const HistorySeparator = "\n\n"

// Conversation is a load of multi-turn sessions: each session sends its
// turns one after another, turn k carrying every earlier turn's prompt and
// answer as history, so the prompt grows as in a real chat.
//
// How the history is sent: on the chat endpoint as messages (user,
// assistant, user, ..., then the new user message: the server's chat
// template renders them); on completions as one text, the earlier prompt
// and answer concatenated with HistorySeparator and the new user text.
// The answers sent back are the server's own (Result.Text), never a
// dataset's, so the history is exactly what the server has seen and
// generated.
type Conversation struct {
	// Turns is the most turns a session sends.
	Turns int
	// TurnsOf is how many turns session id plans (a dataset's
	// conversation may have fewer than Turns); nil: Turns.
	TurnsOf func(id int) int
	// User is the new user text of turn (1-based) of session id.
	User func(id, turn int) string
	// ID is the id of the pass's n-th session on its rows (passes and
	// shards interleave them so that they stay apart within the cell);
	// nil: n.
	ID func(n int) int
	// Think is the mean pause between an answer and the session's next
	// turn; ThinkDist is ThinkFixed (every pause Think) or
	// ThinkExponential (drawn per pause from Seed and the session).
	Think     time.Duration
	ThinkDist string
	Seed      uint64
	// Request is every turn's template (max tokens, body fields); Prompt
	// or Messages are set per turn.
	Request Request
	// ModelOf, when set, is the model session id names in every turn (a
	// model mix draws per session: a conversation stays with its model).
	ModelOf func(id int) string
}

// Validate reports a conversation that cannot run.
func (c *Conversation) Validate() error {
	switch {
	case c.Turns < 1:
		return fmt.Errorf("turns %d: want at least 1", c.Turns)
	case c.User == nil:
		return fmt.Errorf("a conversation needs its user texts")
	case c.Think < 0:
		return fmt.Errorf("think time %v: must not be negative", c.Think)
	}
	switch c.ThinkDist {
	case ThinkFixed, ThinkExponential, "":
	default:
		return fmt.Errorf("think time distribution %q: want fixed or exponential", c.ThinkDist)
	}
	return nil
}

func (c *Conversation) id(n int) int {
	if c.ID == nil {
		return n
	}
	return c.ID(n)
}

func (c *Conversation) turnsOf(id int) int {
	if c.TurnsOf == nil {
		return c.Turns
	}
	return min(c.TurnsOf(id), c.Turns)
}

// pause draws the next think time.
func (c *Conversation) pause(rng *rand.Rand) time.Duration {
	if c.Think <= 0 {
		return 0
	}
	if c.ThinkDist == ThinkExponential {
		return time.Duration(rng.ExpFloat64() * float64(c.Think))
	}
	return c.Think
}

// RunSessions sends a conversation load and waits for every session it
// started. l.Concurrency sessions run at once in a closed loop (each
// starts its next session when the last one ends), or, with l.Schedule,
// sessions arrive on the schedule (an open loop of session arrivals;
// l.MaxInFlight caps the sessions in progress).
//
// The stop: a session starts while the turns planned by the sessions
// started so far are fewer than l.Requests and the pass is younger than
// l.Duration (and until both minimums are met, as in Run); a session that
// started sends all its turns, so every session is whole. A session ends
// early at a failed turn: without its answer there is no history to
// carry on with.
//
// onResult receives every turn's result, with its index in send order
// and Session, Turn and HistoryTokens set: the history is the turn
// before's usage prompt_tokens + completion_tokens (that prompt carried
// every earlier turn), 0 on a first turn, unknown (HistoryKnown false)
// when the turn before reported no usage.
func RunSessions(ctx context.Context, t *Target, l Load, conv Conversation, onResult func(i int, r Result)) (RunStats, error) {
	if err := l.Validate(); err != nil {
		return RunStats{}, err
	}
	if err := conv.Validate(); err != nil {
		return RunStats{}, err
	}
	if t.Endpoint != Completions && !t.Endpoint.chatShaped() {
		return RunStats{}, fmt.Errorf("conversations need the completions, chat, responses or messages endpoint, not %s", t.Endpoint)
	}
	if l.Counters == nil {
		l.Counters = &Counters{}
	}
	c := l.Counters
	var sent atomic.Int64
	var mu sync.Mutex
	planned := 0
	// claim lets the pass's n-th session start at offset off when the
	// load lets it, counting its turns.
	claim := func(n int, off time.Duration) bool {
		mu.Lock()
		defer mu.Unlock()
		if l.done(planned, off) {
			return false
		}
		planned += max(conv.turnsOf(conv.id(n)), 1)
		return true
	}
	session := func(n int, due time.Time) {
		id := conv.id(n)
		turns := conv.turnsOf(id)
		rng := rand.New(rand.NewPCG(conv.Seed, uint64(id)))
		var msgs []Message
		var text string
		history, known := 0, true
		thinking := false // due is the end of a think time
		for k := 1; k <= turns && ctx.Err() == nil; k++ {
			user := conv.User(id, k)
			req := conv.Request
			if conv.ModelOf != nil {
				req.Model = conv.ModelOf(id)
			}
			req.KeepText = k < turns
			req.Scheduled = due
			if t.Endpoint.chatShaped() {
				// The Responses API takes the messages as its input
				// items, the Messages API as its messages (apiBody).
				req.Prompt = ""
				req.Messages = append(msgs[:len(msgs):len(msgs)], Message{Role: "user", Content: user})
			} else if k == 1 {
				req.Prompt = user
			} else {
				req.Prompt = text + HistorySeparator + user
			}
			// The turn is built, body and all, while its session thinks
			// (the answer it carries is in), so only the wake separates
			// the end of the think time from the send.
			if thinking {
				t.prepare(&req)
				if !thinkUntil(ctx, due) {
					return
				}
			}
			i := int(sent.Add(1) - 1)
			c.Sent.Add(1)
			r := t.Do(ctx, req)
			r.Session, r.Turn, r.HistoryTokens, r.HistoryKnown = id, k, history, known
			c.finished(&r)
			onResult(i, r)
			if !r.OK() || k == turns {
				return
			}
			history, known = r.InputTokens+r.OutputTokens, r.UsageReported
			if !r.UsageReported {
				history = 0
			}
			msgs = append(req.Messages, Message{Role: "assistant", Content: r.Text})
			text = req.Prompt + r.Text
			// The next turn is due a think time after the answer is in:
			// its send lag is how late the client sent it after that.
			// Without a pause it goes at once, as a closed loop's next
			// request (no schedule, no lag).
			due, thinking = time.Time{}, false
			if pause := conv.pause(rng); pause > 0 {
				due, thinking = time.Now().Add(pause), true
			}
		}
	}

	st := driveSessions(ctx, l, claim, session)
	st.Sent = int(sent.Load())
	return st, nil
}

// thinkUntil sleeps a session's think time until due or until ctx
// ends; it reports whether due came. It wakes as the open loop's sender
// does (preciseWait): the next turn's send lag is how late it went after
// due, and the runtime's timers alone would put up to a millisecond of
// their own in it. The kernel timer is the session's own for the pause
// (one open file while it thinks; where none can be had, the runtime's).
func thinkUntil(ctx context.Context, due time.Time) bool {
	t := ktimer.New(ctx)
	t.PreciseFrom = preciseWait
	defer t.Stop()
	return t.SleepUntil(due)
}
