// Package loadgen is benchrun's load generator: an HTTP/SSE client for
// OpenAI-compatible servers that stamps every event with the monotonic
// clock, closed- and open-loop schedules, and prompt sources. It is a
// library usable without plans: it imports nothing from pipeline or stages.
package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/benchrun/benchrun/internal/httpsafe"
	"github.com/benchrun/benchrun/internal/loadgen/sse"
	"github.com/benchrun/benchrun/internal/safetext"
)

// Endpoint selects the API a request goes to.
type Endpoint string

// Endpoints.
const (
	Completions Endpoint = "completions"
	Chat        Endpoint = "chat"
	Embeddings  Endpoint = "embeddings"
	// Transcriptions is OpenAI's speech-to-text API: a multipart upload
	// of Request.Audio, answered with the text in one body.
	Transcriptions Endpoint = "transcriptions"
)

// oneBody reports whether the endpoint answers in one body whatever
// Target.Stream says (no token events to time).
func (e Endpoint) oneBody() bool { return e == Embeddings || e == Transcriptions || e == Rerank }

// Path returns the endpoint's URL path.
func (e Endpoint) Path() string {
	switch e {
	case Chat:
		return "/v1/chat/completions"
	case Embeddings:
		return "/v1/embeddings"
	case Transcriptions:
		return "/v1/audio/transcriptions"
	case Responses:
		return "/v1/responses"
	case Messages:
		return "/v1/messages"
	case Rerank:
		return "/v1/rerank"
	default:
		return "/v1/completions"
	}
}

// Target is a server and how to talk to it.
type Target struct {
	BaseURL  string
	Model    string
	Endpoint Endpoint
	Stream   bool
	// Headers are sent with every request (an Authorization header, say).
	Headers map[string]string
	// ExtraBody fields are merged into every request body (ignore_eos, min_tokens, ...).
	ExtraBody map[string]any
	// HTTP is the client; nil means a client sized for the load (NewHTTPClient).
	HTTP *http.Client
	// APIKey, when set, is sent as "Authorization: Bearer <key>". It is
	// never written to a log, an error or a row.
	APIKey string
	// ContinuousUsage asks for usage on every streamed chunk (vLLM's
	// stream_options.continuous_usage_stats), so tokens per event come from
	// the server instead of being counted. Servers that do not know the
	// option usually ignore it; some reject it, so it is off by default.
	ContinuousUsage bool
	// StallTimeout ends a request when no byte (headers or body) arrives
	// for this long (0: wait forever). Without it a server that stops
	// writing but keeps the connection open would hang the cell until
	// something else cancels it.
	StallTimeout time.Duration
	// Timeout bounds one request from send to its last byte (0: none).
	Timeout time.Duration
	// FirstTokenTimeout bounds the wait for the first token-bearing event
	// (0: none). Unlike the stall timeout, bytes that carry no token (SSE
	// comments such as ": ping", role-only chunks) do not reset it: they
	// keep a connection alive but are not progress.
	FirstTokenTimeout time.Duration
	// Dimension, for embeddings, is the vector length every answer must
	// have (nil: any, as long as each vector is finite and not all zeros).
	Dimension *Dimension
	// Check is what every answer is checked against: the tools the
	// requests offer and the structured output they ask for (tools.go;
	// nil: nothing, though tool calls are still counted).
	Check *AnswerCheck
}

// String describes the target without its secrets.
func (t *Target) String() string {
	return fmt.Sprintf("%s %s (model %s, stream %v)", t.BaseURL, t.Endpoint.Path(), t.Model, t.Stream)
}

// NewHTTPClient returns a client whose connection pool holds maxConns idle
// connections per host, so a closed loop of that concurrency reuses
// connections instead of paying a TCP handshake per request. On Linux its
// connections ask the kernel to timestamp the data they receive, and
// streamed events are timed by those stamps (kstamp.go).
func NewHTTPClient(maxConns int) *http.Client {
	if maxConns < 16 {
		maxConns = 16
	}
	return &http.Client{CheckRedirect: httpsafe.NoRedirects, Transport: newH1Transport(&http.Transport{
		Proxy:               nil, // benchmarks talk to the server, never through a proxy
		DialContext:         stampDial((&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext),
		MaxIdleConns:        maxConns,
		MaxIdleConnsPerHost: maxConns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true, // compression would buffer tokens and skew timing
		ForceAttemptHTTP2:   false,
		// net/http's default, said: the fast path keeps the same bound.
		MaxResponseHeaderBytes: maxResponseHeaderBytes,
	})}
}

// Request is one request to send.
type Request struct {
	Prompt    string
	MaxTokens int
	// Scheduled is when the schedule wanted the request sent; zero means "now".
	Scheduled time.Time
	// Body fields are merged into this request's body after the target's
	// ExtraBody (min_tokens for this cell, say).
	Body map[string]any
	// ExpectTokens, when positive, is the output length the request forces
	// (ignore_eos/min_tokens): a response with fewer tokens was cut short,
	// whatever the stream's end looked like.
	ExpectTokens int
	// ISL and OSL are the lengths drawn for this request from the cell's
	// distributions (0: the cell's own lengths), recorded on its row.
	ISL, OSL int
	// Model, when set, is the served model this request names in place
	// of the target's (a mix of a base model and its adapters).
	Model string
	// Inputs, for embeddings, is the batch: several texts in one request
	// (input as a list); without it Prompt is the one input.
	Inputs []string
	// TopN, for rerank, asks for the best TopN documents only (0: all);
	// Prompt is the query and Inputs the documents.
	TopN int
	// References are the expected vectors of Inputs (nil entries: none):
	// the cosine similarity of each answer to its reference is reported
	// in Result.Cosines.
	References [][]float32
	// Images are data URIs (data:image/png;base64,...) sent with the chat
	// prompt as OpenAI's image_url content parts.
	Images []string
	// Audio is the file a transcription request uploads (a WAV), of
	// AudioSeconds.
	Audio        []byte
	AudioSeconds float64
	// Messages, for chat, is the whole conversation sent (earlier turns'
	// user and assistant messages, then the new user message) in place
	// of Prompt (RunSessions builds it).
	Messages []Message
	// KeepText asks for the answer's text in Result.Text (a conversation
	// sends it back as the next turn's history).
	KeepText bool
	// Check, when set, is this request's own answer check (a dataset
	// line's tools) in place of the target's.
	Check *AnswerCheck

	encoded *encodedBody // built ahead of the send (prepare.go)
}

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	// ToolCalls are an assistant message's calls, ToolCallID the call a
	// `role: "tool"` message answers (agent sessions, agent.go).
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

// promptBytes is the length of the text the request sends as its prompt.
func (r *Request) promptBytes() int {
	n := len(r.Prompt)
	for _, m := range r.Messages {
		n += len(m.Content)
	}
	return n
}

// Result is one request's measurements. Every time carries Go's monotonic
// clock reading, so differences are immune to wall-clock steps.
type Result struct {
	Scheduled time.Time // s: when the schedule wanted it sent
	Sent      time.Time // a: just before the request was written
	// Tokens holds the arrival time of every token-bearing event (c1..cK)
	// and how many tokens it carried.
	Tokens []TokenEvent
	// Finished is when the response was fully read (after [DONE]).
	Finished time.Time

	InputTokens  int
	OutputTokens int
	// ISL and OSL are the lengths the request asked for when they were
	// drawn for it (Request.ISL, Request.OSL; 0: the cell's own).
	ISL, OSL int
	// AskedModel is the model the request named when it named its own
	// (Request.Model; "": the target's).
	AskedModel string
	// UsageReported says the counts came from the server's usage object;
	// otherwise OutputTokens counts token-bearing events.
	UsageReported bool
	// ContinuousUsage: tokens per event came from per-chunk usage deltas.
	ContinuousUsage bool
	// TokensEstimated: the server reported more tokens than token events
	// without saying which event carried how many, so each event's count is
	// the even share.
	TokensEstimated bool
	ResponseID      string
	// Model is the model the server said answered (the response's
	// "model"); "" when it did not say.
	Model      string
	StatusCode int
	// ConnRetries counts sends that failed on a reused keep-alive
	// connection the server had already closed, before any response byte:
	// the server never saw them, so the request went again on a fresh
	// connection with its send time restamped.
	ConnRetries int
	Err         error
	// Embeddings: the vectors the answer carried, their length, and the
	// cosine similarity of each to its reference (Request.References).
	Vectors    int
	Dimensions int
	Cosines    []float64
	// Documents is how many documents a rerank answer scored.
	Documents int
	// AudioSeconds is the request's audio length (transcriptions).
	AudioSeconds float64
	// CachedTokens is the answer's usage.prompt_tokens_details.cached_tokens
	// (the prompt tokens the server's prefix cache served), when
	// CachedReported: servers that do not say leave it unreported, and 0
	// reported is a miss.
	CachedTokens   int
	CachedReported bool
	// Text is the answer's text (only when Request.KeepText).
	Text string
	// Conversations (RunSessions): the session (0-based) and its turn
	// (1-based; 0: not a conversation), and the tokens of the earlier
	// turns the prompt carried (the turn before's usage prompt_tokens +
	// completion_tokens, 0 on a first turn) when HistoryKnown: unknown
	// when the turn before reported no usage.
	Session, Turn int
	HistoryTokens int
	HistoryKnown  bool
	// Agent sessions (RunAgents): the step (1-based; 0: not an agent
	// step), the tool time before it (the step before's calls played,
	// 0 on step 1), and, with Request.KeepText, the calls the answer
	// made, which the next step sends back.
	Step     int
	ToolTime time.Duration
	Calls    []ToolCallMade

	// StampSource is the clock of the token events' times: StampKernel
	// (the kernel's receive timestamps), StampUser (StampNote says why),
	// "" for a request that was not streamed.
	StampSource string
	StampNote   string
	// NetHTTP is why the request went through Go's net/http transport
	// instead of the HTTP/1.1 fast path (h1Transport): "" when it took
	// the fast path.
	NetHTTP string
	// StampDelays[k], with kernel stamps, is how much later the client's
	// own clock read token event k than the kernel stamped its bytes:
	// Tokens[k].At + StampDelays[k] is the user-space stamp. It is 0 for
	// an event whose read carried no usable kernel stamp (StampMissing
	// counts them), which keeps its user stamp.
	StampDelays  []time.Duration
	StampMissing int
	// StampShared counts token events that came in one socket read with
	// the next one, so carry the later bytes' arrival (kstamp.go).
	StampShared int
	// ReasoningTokens and AnswerTokens split OutputTokens (reasoning.go):
	// ReasoningSource says where the reasoning count came from
	// (ReasoningFromUsage, ReasoningFromEvents, or ReasoningUnknown: a
	// whole answer that carried reasoning without a count, when both
	// are 0 and mean nothing). A model that does not think has 0
	// reasoning tokens, counted.
	ReasoningTokens int
	AnswerTokens    int
	ReasoningSource string
	// usageReasoning is the last usage's reasoning_tokens, when
	// usageReasoningSet (the server said).
	usageReasoning    int
	usageReasoningSet bool

	// Check is the answer's tool calls and structured output, counted
	// and checked once the request ended (tools.go); answers holds what
	// the check needs only until then.
	Check   ToolCheck
	answers *answerAcc
}

// TokenEvent is one token-bearing event.
type TokenEvent struct {
	At     time.Time
	Tokens int
	// Kind is what the event carried: reasoning, answer text, a tool call.
	Kind EventKind
}

// OK reports whether the request succeeded with at least one token (or, for
// embeddings, a response).
func (r *Result) OK() bool { return r.Err == nil }

// TTFT is c1 - a.
func (r *Result) TTFT() time.Duration {
	if len(r.Tokens) == 0 {
		return 0
	}
	return r.Tokens[0].At.Sub(r.Sent)
}

// E2EL is cK - a (the last token-bearing event, not [DONE]).
func (r *Result) E2EL() time.Duration {
	if len(r.Tokens) == 0 {
		return r.Finished.Sub(r.Sent)
	}
	return r.Tokens[len(r.Tokens)-1].At.Sub(r.Sent)
}

// SendLag is a - s.
func (r *Result) SendLag() time.Duration {
	if r.Scheduled.IsZero() {
		return 0
	}
	return r.Sent.Sub(r.Scheduled)
}

// HTTPError is a non-2xx answer.
type HTTPError struct {
	Status int
	Body   string
}

func (e *HTTPError) Error() string {
	return fmt.Sprintf("HTTP %d: %s", e.Status, e.Body)
}

// StreamError is an error object the server sent inside the stream.
type StreamError struct{ Message string }

func (e *StreamError) Error() string { return "server error in stream: " + e.Message }

// StallError: the server sent nothing for Timeout (Target.StallTimeout).
type StallError struct {
	Timeout time.Duration
	// Events is how many token events had arrived; Headers says whether
	// the response headers had.
	Events  int
	Headers bool
}

func (e *StallError) Error() string {
	if !e.Headers {
		return fmt.Sprintf("stalled: no response headers within %v (the stall timeout)", e.Timeout)
	}
	return fmt.Sprintf("stalled: no bytes for %v after %d token events (the stall timeout)", e.Timeout, e.Events)
}

// FirstTokenError: no token-bearing event within Target.FirstTokenTimeout,
// whatever else arrived (keep-alive comments, a role chunk).
type FirstTokenError struct {
	Timeout time.Duration
	Bytes   bool // something arrived meanwhile
}

func (e *FirstTokenError) Error() string {
	if e.Bytes {
		return fmt.Sprintf("no first token within %v (the first-token timeout); the server sent only keep-alive bytes meanwhile", e.Timeout)
	}
	return fmt.Sprintf("no first token within %v (the first-token timeout)", e.Timeout)
}

// IgnoredMaxTokensError: the server kept streaming past max_tokens (plus a
// margin), so the stream was cut: it ignores the limit.
type IgnoredMaxTokensError struct {
	MaxTokens, Events int
}

func (e *IgnoredMaxTokensError) Error() string {
	return fmt.Sprintf("the server ignored max_tokens %d: the stream was cut after %d token events", e.MaxTokens, e.Events)
}

// overrunLimit is how many token events past max_tokens a stream may run
// before it is cut: a little slack for servers that count differently.
func overrunLimit(maxTokens int) int { return maxTokens + max(8, maxTokens/10) }

// TimeoutError: the request as a whole took longer than Target.Timeout.
type TimeoutError struct {
	Timeout time.Duration
	Events  int
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("request timed out after %v with %d token events (the request timeout)", e.Timeout, e.Events)
}

// ErrNoTokens means the response ended without a single token.
var ErrNoTokens = errors.New("response carried no tokens")

// UsageError: the server's usage counts cannot be true (negative, more
// output tokens than max_tokens allows or than the stream could carry,
// more prompt tokens than the prompt could hold). Taken as they came, they
// gave negative and absurd throughputs with status ok.
type UsageError struct{ Detail string }

func (e *UsageError) Error() string { return "impossible usage from the server: " + e.Detail }

// maxTokensPerEvent bounds how many tokens one streamed event can carry
// (speculative decoding packs a few; nothing packs this many).
const maxTokensPerEvent = 64

// impossibleUsage checks the reported counts against what was asked and
// what arrived.
func impossibleUsage(res *Result, req Request, streamed, offeredTools bool) error {
	in, out := res.InputTokens, res.OutputTokens
	switch {
	case in < 0 || out < 0:
		return &UsageError{fmt.Sprintf("prompt_tokens %d, completion_tokens %d", in, out)}
	case req.MaxTokens > 0 && out > overrunLimit(req.MaxTokens):
		return &UsageError{fmt.Sprintf("completion_tokens %d for max_tokens %d", out, req.MaxTokens)}
	case streamed && len(res.Tokens) > 0 && out > maxTokensPerEvent*len(res.Tokens) && !res.sawKind(EventToolCall) && !offeredTools:
		// A tool call may come whole in one event (Ollama holds the
		// call's text back until it parsed it), so its tokens are not
		// bounded per event; and where tools were offered, so may a text
		// answer that could have been a call until its end (Ollama
		// v0.17.4 sent stories260K's 96 tokens in one content event).
		return &UsageError{fmt.Sprintf("completion_tokens %d over %d streamed token events", out, len(res.Tokens))}
	case req.promptBytes() > 0 && in > req.promptBytes()+4096*max(len(req.Messages), 1):
		// A token covers at least a byte of text; a chat template adds
		// far fewer than 4096 per message.
		return &UsageError{fmt.Sprintf("prompt_tokens %d for a prompt of %d bytes", in, req.promptBytes())}
	case res.CachedReported && (res.CachedTokens < 0 || res.CachedTokens > in):
		return &UsageError{fmt.Sprintf("cached_tokens %d of prompt_tokens %d", res.CachedTokens, in)}
	}
	return nil
}

// CutShortError: the stream ended (the server closed it cleanly) without
// [DONE] and without a finish reason, or with fewer tokens than a forced
// output length asked for. Ollama does this when its runner dies mid-stream.
type CutShortError struct {
	Events, Tokens, Want int
	NoEnd                bool // neither [DONE] nor a finish_reason arrived
}

func (e *CutShortError) Error() string {
	if e.NoEnd {
		return fmt.Sprintf("stream cut short: it ended after %d token events without [DONE] or a finish reason (the server stopped mid-stream)", e.Events)
	}
	return fmt.Sprintf("stream cut short: %d of the %d forced output tokens arrived", e.Tokens, e.Want)
}

// maxConnRetries bounds the resends of one request after stale pooled
// connections: each one is a different dead connection taken from the pool.
const maxConnRetries = 4

// staleCloseWindow is how soon after a request was sent on a pooled
// connection the server's close (an end of file, a reset) must come for
// the request to be resent: later, the request failed.
//
// Why a window: a keep-alive connection the server closed while it sat
// idle (its idle timeout; llama-server's close after every stream) is
// found dead before the send where the platform can tell (aliveFunc), and
// otherwise the close crossed the request on the wire: the server never
// read it, and its FIN or RST comes back within one round trip of the
// write. That is net/http's rule too: it resends a request that was not
// written, or whose connection the server closed as idle
// (errServerClosedIdle), and nothing the server may have seen. A close
// that comes later is a server that held the request and dropped it (a
// crash on it): resending it on a fresh connection recorded a server that
// dropped 5 requests in 6 as healthy, each failure a fast success. 100 ms
// is above the round trip to any server a benchmark reaches over loopback,
// a LAN or one region, with room for a busy client's scheduling, and far
// below the time an LLM server takes to fail on a request it worked on;
// what a resend can hide is at most that.
const staleCloseWindow = 100 * time.Millisecond

// staleConn reports whether err is what a send on a pooled keep-alive
// connection that the server had closed looks like, before any response
// byte: the server never read the request, so sending it again is safe.
func staleConn(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	// "use of closed network connection": the transport saw the close
	// (its read side) while it was still writing a large body to it.
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed) ||
		strings.Contains(msg, "server closed idle connection") || strings.Contains(msg, "use of closed network connection") ||
		strings.HasSuffix(msg, ": EOF") || strings.Contains(msg, "connection reset by peer") || strings.Contains(msg, "broken pipe")
}

// body is the request's body and its Content-Type.
func (t *Target) body(req Request) ([]byte, string, error) {
	if t.Endpoint == Transcriptions {
		return t.multipartBody(req)
	}
	if out, ok := t.fastBody(req); ok && !mapBodyOnly {
		return out, "application/json", nil
	}
	b := map[string]any{"model": t.modelOf(req)}
	api := t.apiBody(b, req)
	switch t.Endpoint {
	case Responses, Messages, Rerank:
		// apiBody wrote their fields.
	case Chat:
		if len(req.Images) > 0 {
			parts := []map[string]any{{"type": "text", "text": req.Prompt}}
			for _, u := range req.Images {
				parts = append(parts, map[string]any{"type": "image_url", "image_url": map[string]string{"url": u}})
			}
			b["messages"] = []map[string]any{{"role": "user", "content": parts}}
		} else if req.Messages != nil {
			b["messages"] = req.Messages
		} else {
			b["messages"] = []map[string]string{{"role": "user", "content": req.Prompt}}
		}
	case Embeddings:
		if req.Inputs != nil {
			b["input"] = req.Inputs
		} else {
			b["input"] = req.Prompt
		}
	default:
		b["prompt"] = req.Prompt
	}
	if t.Endpoint != Embeddings && !api {
		if req.MaxTokens > 0 {
			b["max_tokens"] = req.MaxTokens
		}
		b["stream"] = t.Stream
		if t.Stream {
			so := map[string]any{"include_usage": true}
			if t.ContinuousUsage {
				so["continuous_usage_stats"] = true
			}
			b["stream_options"] = so
		}
	}
	for k, v := range t.ExtraBody {
		b[k] = v
	}
	for k, v := range req.Body {
		b[k] = v
	}
	if api {
		t.apiControls(b)
		t.apiConstraints(b)
	}
	out, err := json.Marshal(b)
	return out, "application/json", err
}

// Do sends one request and measures it. It never panics on bad input from
// the server: every failure ends up in Result.Err.
func (t *Target) Do(ctx context.Context, req Request) Result {
	res := Result{Scheduled: req.Scheduled, ISL: req.ISL, OSL: req.OSL, AskedModel: req.Model}
	res.AudioSeconds = req.AudioSeconds
	body, contentType, err := req.bodyFor(t)
	if err != nil {
		res.Err = fmt.Errorf("building request: %w", err)
		return res
	}
	url := strings.TrimRight(t.BaseURL, "/") + t.Endpoint.Path()
	client := t.HTTP
	if client == nil {
		client = httpsafe.Client
	}
	ctx, g := t.guard(ctx, &res)
	defer g.release()
	wd := g.wd
	res.NetHTTP = netHTTPReason(client, url)
	st := new(sendTrace)
	resp := t.post(ctx, client, url, body, contentType, wd, &res, st)
	if resp == nil {
		return res
	}
	if cs := st.conn.Load(); cs != nil && cs.w != nil {
		// a is when the request's first byte was written (sendStamper).
		if at, ok := cs.w.firstWrite(); ok && at.After(res.Sent) {
			res.Sent = at
		}
	}
	if res.Scheduled.IsZero() {
		res.Scheduled = res.Sent
	}
	defer resp.Body.Close()
	res.StatusCode = resp.StatusCode
	var rbody io.Reader = resp.Body
	if wd != nil {
		wd.headers.Store(true)
		wd.kick()
		wd.body = watchedReader{r: resp.Body, wd: wd}
		rbody = &wd.body
	}
	streamed := t.Stream && !t.Endpoint.oneBody()
	res.answers = newAnswerAcc(t.checkFor(req))
	if res.Err = unusableAnswer(resp, rbody, streamed); res.Err != nil {
		res.Finished = time.Now()
		return res
	}
	switch {
	case streamed && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json"):
		// Asked to stream, the server sent one JSON body: an error object
		// (reported as such) or a server that ignores "stream". Timing one
		// body as a stream would make ttft = e2el without saying so.
		if err := wd.explain(ctx, t.readWhole(rbody, resp.ContentLength, req, &res)); err != nil {
			res.Err = err
		} else {
			res.Err = errors.New("the server answered with one JSON body instead of an SSE stream; set stream: false for it")
		}
		res.Tokens = nil
		res.Finished = time.Now()
		return res
	case streamed:
		t.readStreamed(ctx, wd, resp, rbody, req, &res, st.conn.Load(), g.firstToken)
	default:
		res.Err = wd.explain(ctx, t.readWhole(rbody, resp.ContentLength, req, &res))
		res.Finished = time.Now()
	}
	if res.Err == nil {
		res.Err = t.answerError(&res, req, streamed)
	}
	if res.Err == nil {
		if req.KeepText {
			res.Calls = res.answers.made()
		}
		res.answers.finish(&res)
	}
	res.answers = nil
	return res
}

// requestGuards are the timers that end one request early (Target's
// StallTimeout, Timeout and FirstTokenTimeout): they cancel the request's
// own context with a cause that says which one fired, and the watchdog
// replaces the "context canceled" the transport then returns by that
// cause (explain).
type requestGuards struct {
	wd         *watchdog // nil: no timeout is set
	stall      bool      // wd's stall clock runs
	cancel     context.CancelCauseFunc
	total      *time.Timer
	firstToken *time.Timer // stopped by the first token event
}

// guard arms the target's timeouts for a request whose result is res,
// returning the request's context.
func (t *Target) guard(ctx context.Context, res *Result) (context.Context, requestGuards) {
	var g requestGuards
	if t.StallTimeout > 0 || t.Timeout > 0 {
		ctx = g.watch(ctx, res, t.StallTimeout)
		if t.Timeout > 0 {
			cancel := g.cancel
			g.total = time.AfterFunc(t.Timeout, func() {
				cancel(&TimeoutError{Timeout: t.Timeout})
			})
		}
		if t.StallTimeout > 0 {
			g.wd.start()
			g.stall = true
		}
	}
	if t.FirstTokenTimeout > 0 && !t.Endpoint.oneBody() {
		if g.wd == nil {
			ctx = g.watch(ctx, res, 0)
		}
		w := g.wd
		g.firstToken = time.AfterFunc(t.FirstTokenTimeout, func() {
			if !w.headers.Load() && t.StallTimeout > 0 && t.StallTimeout <= t.FirstTokenTimeout {
				// Nothing at all arrived: that is the stall it also is
				// (both limits are equal by default), said as such.
				w.cancel(&StallError{Timeout: t.StallTimeout})
				return
			}
			w.cancel(&FirstTokenError{Timeout: t.FirstTokenTimeout, Bytes: w.headers.Load()})
		})
	}
	return ctx, g
}

// watch makes the guards' watchdog (stall: its stall timeout, 0: none)
// and the cancellable context it ends.
func (g *requestGuards) watch(ctx context.Context, res *Result, stall time.Duration) context.Context {
	g.wd = &watchdog{stall: stall}
	ctx, g.cancel = context.WithCancelCause(ctx)
	g.wd.cancel, g.wd.res = g.cancel, res
	return ctx
}

// release disarms the guards once the request is done.
func (g *requestGuards) release() {
	if g.firstToken != nil {
		g.firstToken.Stop()
	}
	if g.stall {
		g.wd.stop()
	}
	if g.total != nil {
		g.total.Stop()
	}
	if g.cancel != nil {
		g.cancel(nil)
	}
}

// noRedirects is httpsafe.NoRedirects's code: a client whose
// CheckRedirect is it follows no redirect.
var noRedirects = reflect.ValueOf(httpsafe.NoRedirects).Pointer()

// send is client.Do(req), for a client that follows no redirect
// (httpsafe.NoRedirects, as NewHTTPClient's) and has a transport, no
// cookie jar and no overall timeout, to a URL without credentials (which
// Client.Do turns into basic auth), without Client.Do's redirect machinery:
// that copies every request's headers in case a redirect follows, and
// benchrun follows none. A redirect is refused as httpsafe.NoRedirects
// refuses it, and errors read as Client.Do's do.
func send(client *http.Client, req *http.Request) (*http.Response, error) {
	if client.CheckRedirect == nil || reflect.ValueOf(client.CheckRedirect).Pointer() != noRedirects || client.Jar != nil || client.Timeout != 0 || client.Transport == nil || req.URL.User != nil {
		return client.Do(req)
	}
	resp, err := client.Transport.RoundTrip(req)
	if err != nil {
		return nil, &url.Error{Op: urlOp(req.Method), URL: req.URL.Redacted(), Err: err}
	}
	switch resp.StatusCode {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		loc, lerr := resp.Location()
		if lerr != nil {
			return resp, nil // no Location: Client.Do returns the answer as it is
		}
		// As Client.Do: the answer, its body closed, with the error that
		// names the Location as the server wrote it.
		resp.Body.Close()
		return resp, &url.Error{Op: urlOp(req.Method), URL: resp.Header.Get("Location"), Err: &httpsafe.RedirectError{Status: resp.StatusCode, Location: loc.Redacted()}}
	}
	return resp, nil
}

// urlOp is the operation a url.Error from Client.Do names: "Post".
func urlOp(method string) string {
	return method[:1] + strings.ToLower(method[1:])
}

// sendTrace is what a request learns from net/http about the connection
// it went on: whether it came from the pool, and its kernel stamps. One
// per request, whatever the number of tries, with its trace hook bound
// once.
type sendTrace struct {
	// reused: the try's connection came from the pool, so a failure
	// before the first response byte may be a stale keep-alive
	// connection (a server that closes after every stream while its
	// headers promise keep-alive: llama-server, proxies).
	reused atomic.Bool
	conn   atomic.Pointer[connStamp] // the connection's kernel stamps
	trace  httptrace.ClientTrace
}

func (st *sendTrace) gotConn(i httptrace.GotConnInfo) {
	st.reused.Store(i.Reused)
	s, w, why := connStamps(i.Conn)
	if w != nil {
		w.beginRequest()
	}
	st.conn.Store(&connStamp{s, w, why})
}

// post sends the request and returns the response, or nil when it
// failed (res.Err says why). A send that fails on a stale pooled
// connection (staleConn, within staleCloseWindow of the send) goes again.
// st learns the connection each try went on.
func (t *Target) post(ctx context.Context, client *http.Client, url string, body []byte, contentType string, wd *watchdog, res *Result, st *sendTrace) *http.Response {
	st.trace.GotConn = st.gotConn
	tctx := httptrace.WithClientTrace(ctx, &st.trace)
	for {
		hreq, err := http.NewRequestWithContext(tctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			res.Err = fmt.Errorf("building request: %w", err)
			return nil
		}
		hreq.Header.Set("Content-Type", contentType)
		if t.Stream && !t.Endpoint.oneBody() {
			hreq.Header.Set("Accept", "text/event-stream")
		}
		t.setAuth(hreq)
		t.setAPIHeaders(hreq.Header)
		st.reused.Store(false)
		res.Sent = time.Now()
		resp, err := send(client, hreq)
		if err == nil {
			return resp
		}
		held := time.Since(res.Sent)
		closed := ctx.Err() == nil && staleConn(err)
		if closed && st.reused.Load() && held <= staleCloseWindow && res.ConnRetries < maxConnRetries {
			res.ConnRetries++
			continue
		}
		if res.Scheduled.IsZero() {
			res.Scheduled = res.Sent
		}
		if h2 := HTTP2Answer(err); h2 != nil {
			err = h2 // net/http's path said only "malformed HTTP response"
		}
		if closed {
			// Not resent: the server held the request before it closed
			// the connection (or the connection was fresh), so it may
			// have worked on it; the failure and its time are the
			// server's.
			err = fmt.Errorf("the server closed the connection %v after the request was sent, without an answer: %w", held.Round(time.Millisecond), err)
		}
		res.Err = wd.explain(ctx, fmt.Errorf("sending request: %w", err))
		res.Finished = time.Now()
		return nil
	}
}

// unusableAnswer is the error of an answer that cannot be read as one
// (nil: it can): a non-2xx status, a compressed body, or a proxy's HTML
// page. rbody is resp's body as the request reads it.
func unusableAnswer(resp *http.Response, rbody io.Reader, streamed bool) error {
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(rbody, 2048))
		return &HTTPError{Status: resp.StatusCode, Body: errorMessage(b)}
	}
	if ce := resp.Header.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
		// benchrun asks for no compression (it buffers tokens and skews
		// their times); a body compressed anyway would fail to parse as
		// "unexpected EOF" without saying why.
		return fmt.Errorf("the server compressed its answer (Content-Encoding: %s) though benchrun asked for none: compression holds tokens back and skews their times; turn it off on the server or the proxy before it", ce)
	}
	if ct := resp.Header.Get("Content-Type"); strings.HasPrefix(ct, "text/html") {
		// A proxy's or gateway's error page with a 200: say what arrived
		// rather than fail later with "unexpected EOF" or "malformed".
		b, _ := io.ReadAll(io.LimitReader(rbody, 200))
		return fmt.Errorf("the server answered %d with Content-Type %q instead of %s (a proxy's page?); it begins %q",
			resp.StatusCode, ct, map[bool]string{true: "an SSE stream", false: "JSON"}[streamed], truncate(b, 120))
	}
	return nil
}

// readStreamed reads a streamed answer into res, its token events timed
// by the kernel's stamps of the connection (cs) where it has them.
func (t *Target) readStreamed(ctx context.Context, wd *watchdog, resp *http.Response, rbody io.Reader, req Request, res *Result, cs *connStamp, firstToken *time.Timer) {
	n := tokenCapacity(req)
	if n > 0 {
		res.Tokens = make([]TokenEvent, 0, n)
	}
	var st *stampReader
	if cs != nil && cs.s != nil {
		st = &stampReader{r: rbody, c: cs.s}
		rbody = st
		if n > 0 {
			res.StampDelays = make([]time.Duration, 0, n)
		}
	} else if cs != nil {
		res.StampSource, res.StampNote = StampUser, cs.why
	} else {
		res.StampSource, res.StampNote = StampUser, "the HTTP client reported no connection (httptrace)"
	}
	res.Err = wd.explain(ctx, readEvents(rbody, res, firstToken, req.MaxTokens, req.KeepText, boardOf(ctx), scanFor(t.Endpoint)))
	if st != nil {
		st.finish(res)
	}
	res.Finished = time.Now()
	if res.Err == nil {
		// Read the rest (the chunked terminator after [DONE]) so the
		// connection goes back to the pool instead of being closed; a
		// server that holds the stream open after [DONE] gets 50 ms
		// (closing the body ends the read).
		stop := time.AfterFunc(50*time.Millisecond, func() { resp.Body.Close() })
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		stop.Stop()
	}
}

// answerError is the error of an answer read without one that still
// cannot count: no token, impossible usage, or fewer tokens than forced.
func (t *Target) answerError(res *Result, req Request, streamed bool) error {
	if len(res.Tokens) == 0 && !t.Endpoint.oneBody() {
		return ErrNoTokens
	}
	if res.UsageReported {
		if err := impossibleUsage(res, req, streamed, t.offersTools(req)); err != nil {
			return err
		}
	}
	if req.ExpectTokens > 0 && res.OutputTokens < req.ExpectTokens {
		return &CutShortError{Events: len(res.Tokens), Tokens: res.OutputTokens, Want: req.ExpectTokens}
	}
	return nil
}

// errorMessage extracts OpenAI's {"error":{"message":...}} or returns the body.
//
// The message is a server's text, made safe to write (internal/safetext):
// a proxy's latin-1 page or a terminal escape it holds goes everywhere an
// error goes.
func errorMessage(b []byte) string { return safetext.String(rawErrorMessage(b)) }

func rawErrorMessage(b []byte) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
		Message string `json:"message"`
	}
	if json.Unmarshal(b, &e) == nil {
		if e.Error.Message != "" {
			return e.Error.Message
		}
		if e.Message != "" {
			return e.Message
		}
	}
	return strings.TrimSpace(string(b))
}

// streamBufferSize is the SSE reader's initial buffer: a few typical
// events. It grows for long events, so it only bounds memory per idle
// stream (thousands of streams at once must stay cheap).
const streamBufferSize = 2 << 10

// readStream reads an SSE response, stamping every token-bearing event.
// The per-event path scans the JSON instead of decoding it (scan.go), so
// the client adds no allocation per event beyond the stamp it appends.
// b, when the request came from an open loop, is that loop's board of
// requests waiting for their time: the reader hands over any that are
// due after each event (see board).
func readStream(r io.Reader, res *Result, firstToken *time.Timer, maxTokens int, keepText bool, b *board) error {
	return readEvents(r, res, firstToken, maxTokens, keepText, b, scanChunk)
}

// readEvents is readStream with each event read by scan: a chat or
// completions chunk's reader, or the Responses or Messages API's
// (scanFor).
func readEvents(r io.Reader, res *Result, firstToken *time.Timer, maxTokens int, keepText bool, b *board, scan func([]byte) (chunkInfo, error)) error {
	sr := sse.NewReaderSize(r, streamBufferSize)
	st, _ := r.(*stampReader) // kernel receive stamps (kstamp.go)
	var text []byte           // the answer's text, when kept
	defer func() {
		if keepText {
			res.Text = string(text)
		}
	}()
	counted := 0
	// usageAt[k] is the cumulative completion_tokens the k-th token event
	// carried (-1: none); when every token event carries a rising count the
	// server sends continuous usage and the deltas are tokens per event.
	var usageAt []int
	continuous := true
	finished := false // a finish_reason arrived
	for {
		ev, err := sr.Next()
		if err != nil {
			if err := streamEnd(sr, err, counted, finished); err != nil {
				return err
			}
			break
		}
		at := time.Now()
		b.readerPoll(at)
		if sse.IsDone(ev.Data) {
			break
		}
		if len(ev.Data) == 0 {
			continue // a keep-alive event with no data
		}
		c, err := scan(ev.Data)
		if err != nil {
			return fmt.Errorf("malformed event after %d token events: %w (data %q)", counted, err, truncate(ev.Data, 80))
		}
		if c.HasError || ev.Type == "error" {
			return &StreamError{Message: apiErrorMessage(ev.Data)}
		}
		if c.HasFinish {
			finished = true
		}
		res.noteChunk(&c)
		res.noteAnswer(&c)
		if c.Last {
			break // the API's [DONE]
		}
		if keepText && len(c.Text) > 0 {
			if c.TextEscaped {
				t, err := unquoteJSON(c.Text)
				if err != nil {
					return fmt.Errorf("malformed text after %d token events: %w", counted, err)
				}
				text = append(text, t...)
			} else {
				text = append(text, c.Text...)
			}
		}
		if !c.HasText {
			continue
		}
		if counted == 0 && firstToken != nil {
			firstToken.Stop()
		}
		res.stampToken(st, at, kindOf(&c))
		counted++
		if maxTokens > 0 && counted > overrunLimit(maxTokens) {
			return &IgnoredMaxTokensError{MaxTokens: maxTokens, Events: counted}
		}
		if c.HasUsage && c.CompletionTokens > 0 && continuous {
			usageAt = append(usageAt, c.CompletionTokens)
		} else {
			continuous = false
		}
	}
	res.settleTokens(counted, continuous, usageAt)
	res.splitTokens(false, false)
	return nil
}

// streamEnd is what the error from the SSE reader means for a stream
// after counted token events: nil for a clean end.
func streamEnd(sr *sse.Reader, err error, counted int, finished bool) error {
	if (err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF)) && counted == 0 {
		// A bare JSON body where an SSE stream was due (an error
		// object with a 200 and text/event-stream): the server's own
		// words, not "unexpected EOF".
		if line := bytes.TrimSpace(sr.Ignored()); len(line) > 0 && line[0] == '{' {
			if msg := errorMessage(line); msg != "" {
				return &StreamError{Message: msg}
			}
		}
	}
	if err == io.EOF {
		// A stream that ends without [DONE] is accepted when the
		// server said the sequence finished (a finish_reason); one that
		// just stops was cut short (Ollama ends the stream cleanly when
		// its runner dies), however clean its end looked.
		if !finished && counted > 0 {
			return &CutShortError{Events: counted, NoEnd: true}
		}
		return nil
	}
	return fmt.Errorf("reading stream after %d token events: %w", counted, err)
}

// noteChunk takes from a streamed chunk the response's id and model (the
// first ones sent) and its usage (the last non-zero one).
func (res *Result) noteChunk(c *chunkInfo) {
	if res.ResponseID == "" && len(c.ID) > 0 {
		if c.IDEscaped {
			res.ResponseID, _ = unquoteJSON(c.ID)
		} else {
			res.ResponseID = string(c.ID)
		}
	}
	if res.Model == "" && len(c.Model) > 0 {
		if c.ModelEscaped {
			res.Model, _ = unquoteJSON(c.Model)
		} else {
			res.Model = string(c.Model)
		}
	}
	if c.HasUsage && (c.PromptTokens > 0 || c.CompletionTokens > 0) {
		// Some servers send zero usage on every chunk and the real one
		// last: only a non-zero usage counts.
		if !c.KeepPrompt {
			res.InputTokens = c.PromptTokens
			// The cached share comes with the usage it belongs to.
			res.CachedTokens, res.CachedReported = c.CachedTokens, c.HasCached
		}
		res.OutputTokens = c.CompletionTokens
		res.UsageReported = true
		res.usageReasoning, res.usageReasoningSet = c.ReasoningTokens, c.HasReasoningTokens
	}
}

// stampToken appends a token event read at at (the user-space clock),
// timed by the kernel's stamp when st has one.
func (res *Result) stampToken(st *stampReader, at time.Time, kind EventKind) {
	user := at
	if st != nil {
		at, _ = st.stamp(at)
	}
	// One stream's bytes arrive in order: an event is never
	// before the one it follows. A stamp from another source
	// (the kernel's for one read, the clock's for the next) may
	// say so by a few microseconds; the later event then shares
	// the earlier one's time (a gap of 0, as events of one read
	// have), never a negative gap.
	if n := len(res.Tokens); n > 0 && at.Before(res.Tokens[n-1].At) {
		at = res.Tokens[n-1].At
	}
	if st != nil {
		// The delay is the time kept back from the user-space
		// read, so userStamps restores it exactly.
		res.StampDelays = append(res.StampDelays, user.Sub(at))
	}
	res.Tokens = append(res.Tokens, TokenEvent{At: at, Tokens: 1, Kind: kind})
}

// settleTokens sets the output count and each token event's tokens once
// the stream has ended: from the usage when the server reported it
// (continuous usage, else an even share), else one per event.
func (res *Result) settleTokens(counted int, continuous bool, usageAt []int) {
	switch {
	case !res.UsageReported:
		res.OutputTokens = counted
	case continuous && counted > 0 && tokensFromUsage(res.Tokens, usageAt, res.OutputTokens):
		res.ContinuousUsage = true
	case counted > 0 && res.OutputTokens != counted:
		// Several tokens per event (speculative decoding) without per-event
		// usage: spread the reported count over the events evenly.
		res.TokensEstimated = true
		per := res.OutputTokens / counted
		extra := res.OutputTokens % counted
		for i := range res.Tokens {
			res.Tokens[i].Tokens = per
			if i < extra {
				res.Tokens[i].Tokens++
			}
		}
	}
}

// tokensFromUsage sets each event's tokens from the rise of the cumulative
// completion_tokens, when the counts rise strictly and end at the final
// usage. It reports whether it did.
func tokensFromUsage(events []TokenEvent, cum []int, final int) bool {
	if len(cum) != len(events) || cum[len(cum)-1] != final {
		return false
	}
	prev := 0
	for _, u := range cum {
		if u <= prev {
			return false
		}
		prev = u
	}
	prev = 0
	for i, u := range cum {
		events[i].Tokens = u - prev
		prev = u
	}
	return true
}

// Caps on a whole (non-streamed) answer: a completion's or a
// transcription's body, and an embedding batch's, which grows with its
// inputs (a 4,096-float vector in JSON text is about 80 KB). Past the cap
// the body is not read further: a server whose body never ends costs
// this much memory per request, not all of it.
const (
	maxBodyBytes          = 4 << 20
	maxBodyBytesPerVector = 256 << 10
)

// BodyTooLargeError is a whole answer over its cap.
type BodyTooLargeError struct{ Limit int64 }

func (e *BodyTooLargeError) Error() string {
	return fmt.Sprintf("the response body is over %.1f MiB and was not read further (a body that never ends?)", float64(e.Limit)/(1<<20))
}

// bodyLimit is the cap on req's whole answer.
func (t *Target) bodyLimit(req Request) int64 {
	if t.Endpoint == Embeddings {
		return maxBodyBytes + int64(max(len(req.Inputs), 1))*maxBodyBytesPerVector
	}
	return maxBodyBytes
}

// readWhole reads a whole answer of size bytes (-1: unknown) from r.
func (t *Target) readWhole(r io.Reader, size int64, req Request, res *Result) error {
	ep := t.Endpoint
	limit := t.bodyLimit(req)
	b, err := readAtMost(r, limit+1, size)
	at := time.Now()
	if err != nil {
		return fmt.Errorf("reading response: %w", err)
	}
	if int64(len(b)) > limit {
		return &BodyTooLargeError{Limit: limit}
	}
	switch ep {
	case Transcriptions:
		return readTranscription(b, at, res)
	case Responses, Messages:
		return t.readWholeAPI(b, at, req, res)
	case Rerank:
		return readRerank(b, at, req, res)
	}
	// The body is read as a streamed event is (scanChunk), without
	// decoding it into Go values: the same keys, the same rules, and no
	// allocation but the strings kept.
	c, err := scanChunk(b)
	if err != nil {
		return fmt.Errorf("malformed response: %w (body %q)", err, truncate(b, 80))
	}
	if c.HasError {
		return &StreamError{Message: errorMessage(b)}
	}
	res.noteChunk(&c)
	res.noteAnswer(&c)
	if c.HasUsage {
		// A whole answer's usage is its one report, zeros included.
		res.InputTokens, res.OutputTokens = c.PromptTokens, c.CompletionTokens
		res.UsageReported = true
		res.CachedTokens, res.CachedReported = c.CachedTokens, c.HasCached
		res.usageReasoning, res.usageReasoningSet = c.ReasoningTokens, c.HasReasoningTokens
	}
	if req.KeepText && len(c.Text) > 0 {
		res.Text = string(c.Text)
		if c.TextEscaped {
			if res.Text, err = unquoteJSON(c.Text); err != nil {
				return fmt.Errorf("malformed text in the response: %w", err)
			}
		}
	}
	if ep == Embeddings || c.HasText {
		res.Tokens = append(res.Tokens, TokenEvent{At: at, Tokens: max(res.OutputTokens, 1), Kind: kindOf(&c)})
	}
	if ep != Embeddings {
		res.splitTokens(true, c.HasReasoning)
	}
	if ep == Embeddings {
		return t.checkVectors(b, req, res)
	}
	return nil
}

// readAtMost reads r to its end or to n bytes, whichever comes first,
// into one buffer of the size the answer announced (size, when it is
// known and under n), so a short answer costs one allocation.
func readAtMost(r io.Reader, n, size int64) ([]byte, error) {
	c := int64(512)
	if size >= 0 {
		c = min(size+1, n) // +1: the read that finds the end needs room
	}
	b := make([]byte, 0, c)
	for int64(len(b)) < n {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // grow as append does
		}
		m, err := r.Read(b[len(b):min(int64(cap(b)), n)])
		b = b[:len(b)+m]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
	return b, nil
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// watchdog ends a request that goes quiet (no byte for stall) by
// cancelling its context with a StallError.
//
// Bytes arriving only record the time (kick); the timer is not reset per
// read, which cost a lock on the runtime's timer heap for every event of
// every stream. When it fires it looks at the last arrival and sleeps the
// rest of the stall if bytes came meanwhile, so it wakes about once per
// stall timeout instead of being touched thousands of times a second.
type watchdog struct {
	stall   time.Duration
	timer   *time.Timer
	cancel  context.CancelCauseFunc
	res     *Result
	headers atomic.Bool
	base    time.Time    // monotonic origin of last
	last    atomic.Int64 // when bytes last arrived, since base
	mu      sync.Mutex   // orders fire's re-arming against stop
	stopped bool
	body    watchedReader // the response body as the request reads it
}

// start arms the stall clock from now.
func (w *watchdog) start() {
	w.base = time.Now()
	w.timer = time.AfterFunc(w.stall, w.fire)
}

// stop disarms it for good: a fire running at the same moment does not
// re-arm it (a timer left armed would hold the request for a stall
// timeout after it ended).
func (w *watchdog) stop() {
	w.mu.Lock()
	w.stopped = true
	w.timer.Stop()
	w.mu.Unlock()
}

func (w *watchdog) fire() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	if quiet := time.Since(w.base) - time.Duration(w.last.Load()); quiet < w.stall {
		w.timer.Reset(w.stall - quiet)
		return
	}
	w.cancel(&StallError{Timeout: w.stall, Headers: w.headers.Load()})
}

// kick restarts the stall clock (bytes arrived).
func (w *watchdog) kick() {
	if w.timer != nil {
		w.last.Store(int64(time.Since(w.base)))
	}
}

// explain replaces an error caused by a watchdog with the watchdog's
// cause, so the row says "stalled" or "timed out" instead of "context
// canceled". Other errors (and nil) pass through. It runs on the reading
// goroutine, so it may count the token events the timers could not.
func (w *watchdog) explain(ctx context.Context, err error) error {
	if w == nil || err == nil {
		return err
	}
	var se *StallError
	var te *TimeoutError
	var fe *FirstTokenError
	cause := context.Cause(ctx)
	switch {
	case errors.As(cause, &fe):
		return fe
	case errors.As(cause, &se):
		c := *se
		c.Events = len(w.res.Tokens)
		return &c
	case errors.As(cause, &te):
		c := *te
		c.Events = len(w.res.Tokens)
		return &c
	}
	return err
}

// watchedReader kicks the stall watchdog on every read that returns bytes.
type watchedReader struct {
	r  io.Reader
	wd *watchdog
}

func (r *watchedReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		r.wd.kick()
	}
	return n, err
}
