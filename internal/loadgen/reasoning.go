package loadgen

import (
	"errors"
	"time"
)

// EventKind is what a token-bearing event carried: the per-request event
// model every answer shape maps onto (chat deltas today; the Responses
// and Messages APIs' event types map onto the same kinds), so that the
// time to the first answer and the split of the output are read one way.
type EventKind uint8

const (
	// EventAnswer: answer text (a completion's text, delta.content,
	// message.content), and every event of an answer shape that does not
	// say (embeddings, transcriptions). The zero value, so an event
	// built without a kind is an answer, as every event was before
	// reasoning was told apart.
	EventAnswer EventKind = iota
	// EventReasoning: reasoning only (delta.reasoning_content or
	// delta.reasoning, with no answer beside it): what a thinking model
	// writes before its answer, which no user reads as the answer.
	EventReasoning
	// EventToolCall: a tool call (delta.tool_calls), an answer of its own.
	EventToolCall
)

// String names the kind as the docs do.
func (k EventKind) String() string {
	switch k {
	case EventReasoning:
		return "reasoning"
	case EventToolCall:
		return "tool_call"
	}
	return "answer"
}

// Answer says the event is part of the answer (text or a tool call).
func (k EventKind) Answer() bool { return k != EventReasoning }

// kindOf is the kind of a token-bearing event: an event carrying answer
// text or a tool call beside reasoning (a server that sends the turn
// from thinking to answering in one delta) is the answer's, since the
// answer has begun when it arrives.
func kindOf(c *chunkInfo) EventKind {
	switch {
	case c.HasToolCall && !c.hasAnswerText():
		return EventToolCall
	case c.HasAnswer:
		return EventAnswer
	case c.HasReasoning:
		return EventReasoning
	}
	return EventAnswer
}

// hasAnswerText: the event carries answer text (not only a tool call).
func (c *chunkInfo) hasAnswerText() bool { return len(c.Text) > 0 }

// Reasoning counts' sources (Result.ReasoningSource).
const (
	// ReasoningFromUsage: usage.completion_tokens_details.reasoning_tokens.
	ReasoningFromUsage = "usage"
	// ReasoningFromEvents: the tokens of the reasoning events (one per
	// event unless the usage said more per event).
	ReasoningFromEvents = "events"
	// ReasoningUnknown: a whole (non-streamed) answer carried reasoning
	// and its usage did not say how many tokens it took.
	ReasoningUnknown = "unknown"
)

// firstOf is the time from the send to the first event whose kind
// passes keep; false when no such event arrived.
func (r *Result) firstOf(keep func(EventKind) bool) (time.Duration, bool) {
	for _, e := range r.Tokens {
		if keep(e.Kind) {
			return e.At.Sub(r.Sent), true
		}
	}
	return 0, false
}

// TTFO is the time to the first answer (output) token: the first event
// of answer text or a tool call, minus the send; false when none came
// (the request's reasoning used up max_tokens, or it failed). On a model
// that does not think it equals TTFT.
func (r *Result) TTFO() (time.Duration, bool) { return r.firstOf(EventKind.Answer) }

// TTFR is the time to the first reasoning token; false when the request
// did not reason (or the server did not show it).
func (r *Result) TTFR() (time.Duration, bool) {
	return r.firstOf(func(k EventKind) bool { return k == EventReasoning })
}

// TTFTC is the time to the first tool-call token: the first event
// carrying a tool call (its arguments, or a call whole); false when no
// call came. Where the answer is the call, it equals TTFO.
func (r *Result) TTFTC() (time.Duration, bool) {
	return r.firstOf(func(k EventKind) bool { return k == EventToolCall })
}

// Answered says an answer (text or a tool call) arrived.
func (r *Result) Answered() bool {
	_, ok := r.TTFO()
	return ok
}

// lastOf is the time from the send to the last event of kind k.
func (r *Result) lastOf(k EventKind) (time.Duration, bool) {
	for i := len(r.Tokens) - 1; i >= 0; i-- {
		if r.Tokens[i].Kind == k {
			return r.Tokens[i].At.Sub(r.Sent), true
		}
	}
	return 0, false
}

// splitTokens sets ReasoningTokens and AnswerTokens once OutputTokens and
// each event's tokens are settled: the reasoning count from the usage
// where the server reported it, otherwise the reasoning events' tokens;
// the answer is the rest of the output.
func (r *Result) splitTokens(whole bool, sawReasoning bool) {
	switch {
	case r.usageReasoningSet:
		r.ReasoningTokens, r.ReasoningSource = r.usageReasoning, ReasoningFromUsage
	case whole && sawReasoning:
		r.ReasoningTokens, r.ReasoningSource = 0, ReasoningUnknown
		r.AnswerTokens = 0
		return
	default:
		n := 0
		for _, e := range r.Tokens {
			if e.Kind == EventReasoning {
				n += e.Tokens
			}
		}
		r.ReasoningTokens, r.ReasoningSource = n, ReasoningFromEvents
	}
	r.AnswerTokens = max(r.OutputTokens-r.ReasoningTokens, 0)
}

// TokensUnshown says the answer ended without a token event (ErrNoTokens)
// while its usage counts output tokens: the server generated them and
// showed none. Ollama's /v1/completions on a thinking model does this:
// its completions chunks carry the answer's text only and drop the
// thinking, so a 1-token probe's one token arrives as an empty text and
// completion_tokens 1. A health probe asks whether the server generates,
// which such an answer shows.
func (r *Result) TokensUnshown() bool {
	return errors.Is(r.Err, ErrNoTokens) && r.UsageReported && r.OutputTokens > 0
}
