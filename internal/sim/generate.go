package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

const (
	epCompletions = "completions"
	epChat        = "chat"
	epEmbeddings  = "embeddings"
)

// completionsDefaultMaxTokens is OpenAI's legacy completions default.
const completionsDefaultMaxTokens = 16

type genRequest struct {
	Model               string            `json:"model"`
	Prompt              json.RawMessage   `json:"prompt"`
	Messages            []json.RawMessage `json:"messages"`
	MaxTokens           *int              `json:"max_tokens"`
	MaxCompletionTokens *int              `json:"max_completion_tokens"`
	MinTokens           int               `json:"min_tokens"`
	IgnoreEOS           bool              `json:"ignore_eos"`
	N                   *int              `json:"n"`
	Stream              bool              `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
		// vLLM's extension: usage on every chunk (with include_usage).
		ContinuousUsageStats bool `json:"continuous_usage_stats"`
	} `json:"stream_options"`
	reasoningControls
	apiFields
	constraintFields
}

// parsePrompt accepts the forms vLLM accepts for one prompt: a string, a
// list with one string, a list of token ids, or a list with one list of ids.
func parsePrompt(raw json.RawMessage) (ids []int, text string, isText bool, err error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, "", false, errors.New("prompt is required")
	}
	var str string
	if err := json.Unmarshal(raw, &str); err == nil {
		return nil, str, true, nil
	}
	var strs []string
	if err := json.Unmarshal(raw, &strs); err == nil {
		if len(strs) != 1 {
			return nil, "", false, errors.New("the simulator accepts one prompt per request")
		}
		return nil, strs[0], true, nil
	}
	if err := json.Unmarshal(raw, &ids); err == nil {
		return ids, "", false, nil
	}
	var idss [][]int
	if err := json.Unmarshal(raw, &idss); err == nil {
		if len(idss) != 1 {
			return nil, "", false, errors.New("the simulator accepts one prompt per request")
		}
		return idss[0], "", false, nil
	}
	return nil, "", false, errors.New("prompt must be a string, a list of one string, or token ids")
}

func parseMessages(raws []json.RawMessage) ([]chatMessage, error) {
	msgs := make([]chatMessage, 0, len(raws))
	for i, raw := range raws {
		var m struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
			// An assistant message's calls are prompt text too (a chat
			// template renders them), so an agent's next step carries them.
			ToolCalls []struct {
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("messages[%d]: %w", i, err)
		}
		if m.Role == "" || strings.ContainsFunc(m.Role, func(r rune) bool { return r <= ' ' }) {
			return nil, fmt.Errorf("messages[%d]: role must be one word", i)
		}
		var content string
		if len(m.Content) > 0 && string(m.Content) != "null" {
			if err := json.Unmarshal(m.Content, &content); err != nil {
				// The content-parts form: [{"type":"text","text":"..."}].
				var parts []struct {
					Type string `json:"type"`
					Text string `json:"text"`
				}
				if err := json.Unmarshal(m.Content, &parts); err != nil {
					return nil, fmt.Errorf("messages[%d].content: want a string or text parts", i)
				}
				texts := make([]string, 0, len(parts))
				for _, p := range parts {
					if p.Type == "text" {
						texts = append(texts, p.Text)
					}
				}
				content = strings.Join(texts, " ")
			}
		}
		for _, c := range m.ToolCalls {
			content += " " + c.Function.Name + " " + c.Function.Arguments
		}
		msgs = append(msgs, chatMessage{Role: m.Role, Content: content})
	}
	if len(msgs) == 0 {
		return nil, errors.New("messages must not be empty")
	}
	return msgs, nil
}

// genPlan is a validated generation request.
type genPlan struct {
	model        string
	served       string // the served model asked for (model may be AnswerAs)
	endpoint     string
	stream       bool
	includeUsage bool
	// continuousUsage: usage (cumulative so far) on every chunk, as vLLM's
	// stream_options.continuous_usage_stats does.
	continuousUsage bool
	promptIDs       []int
	promptHash      uint64
	maxTokens       int
	target          int
	finish          string // finish_reason when target is reached
	ttft, itl       time.Duration
	gaps            []time.Duration // fixed mode's drawn answer gaps (Config.ITLSpread), else nil
	tpc             int             // tokens per chunk
	cached          int             // prompt tokens found in fixed mode's prompt cache
	cacheEntry      []int           // the prompt cache's entry for this prompt (promptCache.keep)
	media           int             // prompt tokens that stand for images (media.go)
	// reasoning is how many of the target's first tokens are reasoning
	// (reasoning.go), written at reasoningITL under reasoningField.
	reasoning      int
	reasoningITL   time.Duration
	reasoningField string
	// constrained is the answer a tool call or a structured output
	// planned (tools.go); nil: words.
	constrained *planned
}

func (s *Server) handleGenerate(w http.ResponseWriter, r *http.Request, endpoint string) {
	received := arrivalOf(r, time.Now())
	n := s.seq.Add(1)
	prefix := "cmpl-"
	switch endpoint {
	case epChat:
		prefix = "chatcmpl-"
	case epResponses:
		prefix = "resp_"
	case epMessages:
		prefix = "msg_"
	}
	rec := &record{base: s.started, r: RequestRecord{
		Seq: n, ID: prefix + strconv.FormatUint(n, 10), Endpoint: endpoint,
		Received: received, ReceivedUnixNano: s.unixNano(received), RemoteAddr: r.RemoteAddr,
	}}
	s.records.add(rec)
	failE := func(e *apiErr) {
		s.metrics.errors.Add(1)
		rec.update(func(r *RequestRecord) {
			r.Status, r.Error, r.Finished = e.status, e.msg, time.Now()
		})
		if endpoint == epMessages {
			writeAnthropicErr(w, e) // Anthropic's shape whatever the engine's
			return
		}
		s.writeAPIErr(w, e)
	}
	fail := func(status int, typ, msg string) { failE(&apiErr{status: status, typ: typ, msg: msg}) }

	var req genRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	if err := dec.Decode(&req); err != nil {
		fail(http.StatusBadRequest, "BadRequestError", "invalid JSON body: "+err.Error())
		return
	}
	plan, status, err := s.plan(&req, endpoint)
	if ae := (*apiErr)(nil); errors.As(err, &ae) {
		failE(ae)
		return
	}
	if err != nil {
		typ := "BadRequestError"
		if status == http.StatusNotFound {
			typ = "NotFoundError"
		}
		fail(status, typ, err.Error())
		return
	}
	c, err := s.planConstrained(&req.constraintFields, endpoint, n)
	if err != nil {
		fail(http.StatusBadRequest, "BadRequestError", err.Error())
		return
	}
	if c != nil && c.tool != "" && s.cfg.Tools.AgentSteps > 0 {
		c = s.agentPlan(req.Messages, c, rec)
	}
	if c != nil {
		c.apply(&plan, req.MinTokens, req.IgnoreEOS)
	}
	f, err := s.pickFaults(r, n)
	if err == nil {
		err = s.applyTiming(r, &plan)
	}
	if err != nil {
		fail(http.StatusBadRequest, "BadRequestError", err.Error())
		return
	}
	if s.persona.cleanRunnerDeath && f.dropAfter >= 0 {
		// Ollama ends a stream whose runner died cleanly, with a 200.
		f.cutAfter, f.dropAfter = f.dropAfter, -1
	}
	rec.update(func(r *RequestRecord) {
		r.Model, r.Stream, r.PromptTokens, r.Fault = plan.model, plan.stream, len(plan.promptIDs), f.String()
	})
	// Room for the events up front (bounded, as a client may stop early):
	// growing the slice per token costs allocations on the hot path.
	rec.reserve(min((plan.target+plan.tpc-1)/plan.tpc, 512))

	if s.faultBeforeAnswer(w, r, rec, plan.stream, f, fail) {
		return
	}
	ctx := r.Context()

	start := received
	if at := s.modelReady(); at.After(received) {
		// Ollama loads the model on first use: the wait is in the TTFT.
		if !s.sleep(ctx, time.Until(at)) {
			s.finishAbort(rec, "client gone or shutdown while loading the model")
			s.abortIfClosing()
			return
		}
		start = at
	}
	if pc := s.promptCacheFor(plan.served); pc != nil {
		plan.cached, plan.cacheEntry = pc.use(plan.promptIDs)
		plan.ttft = cachedTTFT(plan.ttft, len(plan.promptIDs), plan.cached)
		s.metrics.prefixQueries.Add(uint64(len(plan.promptIDs)))
		s.metrics.prefixHits.Add(uint64(plan.cached))
		rec.update(func(r *RequestRecord) { r.CachedTokens = plan.cached })
	}
	rec.update(func(r *RequestRecord) { r.PlannedTTFT, r.PlannedGaps = plan.ttft, plan.gaps })
	src := s.startSource(ctx, plan, start)
	s.inflight.Add(1)
	s.live.add(rec)
	held := int64(len(plan.promptIDs) + plan.maxTokens)
	s.inflightT.Add(held)
	defer func() {
		s.live.remove(rec)
		s.inflight.Add(-1)
		s.inflightT.Add(-held)
		src.close()
	}()

	if plan.stream {
		s.stream(ctx, w, rec, plan, src, f)
	} else {
		s.respond(ctx, w, rec, plan, src, f)
	}
}

// plan validates a request the way vLLM does and fixes its output length.
func (s *Server) plan(req *genRequest, endpoint string) (genPlan, int, error) {
	var p genPlan
	p.endpoint = endpoint
	model, ae := s.lookupModel(req.Model) // "" is the first served name
	if ae != nil {
		return p, ae.status, ae
	}
	p.model, p.served = model, model
	if s.cfg.AnswerAs != "" {
		p.model = s.cfg.AnswerAs
	}
	if req.N != nil && *req.N != 1 {
		return p, http.StatusBadRequest, errors.New("the simulator supports only n=1")
	}
	var text string
	switch endpoint {
	case epChat:
		if req.Messages == nil {
			return p, http.StatusBadRequest, errors.New("messages is required")
		}
		msgs, err := parseMessages(req.Messages)
		if err != nil {
			return p, http.StatusBadRequest, err
		}
		text = renderChat(msgs)
		p.promptIDs = s.promptTokens(text)
		media, err := chatMedia(req.Messages)
		if err != nil {
			return p, http.StatusBadRequest, err
		}
		p.promptIDs = append(p.promptIDs, media...)
		p.media = len(media)
	case epResponses, epMessages:
		t, err := apiPrompt(req, endpoint)
		if err != nil {
			return p, http.StatusBadRequest, err
		}
		text = t
		p.promptIDs = s.promptTokens(text)
		apiControls(req, endpoint)
	default:
		ids, t, isText, err := parsePrompt(req.Prompt)
		if err != nil {
			return p, http.StatusBadRequest, err
		}
		if isText {
			text = t
			p.promptIDs = s.promptTokens(text)
			if len(p.promptIDs) == 1 && p.promptIDs[0] == BOSToken && s.persona.subword {
				p.promptIDs = nil // a BOS alone is still an empty prompt
			}
		} else {
			p.promptIDs = ids
		}
	}
	if len(p.promptIDs) == 0 {
		return p, http.StatusBadRequest, errors.New("the prompt is empty")
	}
	if e := s.checkPrompt(&p, req, endpoint); e != nil {
		return p, e.status, e
	}
	h := uint64(0xcbf29ce484222325)
	for _, id := range p.promptIDs {
		h = (h ^ uint64(id)) * 1099511628211
	}
	p.promptHash = h

	maxTokens := completionsDefaultMaxTokens
	if endpoint == epChat {
		maxTokens = s.chatDefaultMaxTokens(len(p.promptIDs))
	}
	if isAPI(endpoint) {
		n, err := apiMaxTokens(req, endpoint, s.chatDefaultMaxTokens(len(p.promptIDs)))
		if err != nil {
			return p, http.StatusBadRequest, err
		}
		maxTokens = n
	}
	if req.MaxCompletionTokens != nil {
		maxTokens = *req.MaxCompletionTokens
	}
	if req.MaxTokens != nil {
		maxTokens = *req.MaxTokens
	}
	if maxTokens < 1 {
		return p, http.StatusBadRequest, fmt.Errorf("max_tokens must be at least 1, got %d", maxTokens)
	}
	if req.MinTokens < 0 || req.MinTokens > maxTokens {
		return p, http.StatusBadRequest, fmt.Errorf("min_tokens must be in [0, max_tokens=%d], got %d", maxTokens, req.MinTokens)
	}
	if e := s.checkContext(len(p.promptIDs), &maxTokens); e != nil {
		return p, e.status, e
	}
	p.maxTokens = maxTokens
	p.ttft, p.itl, p.tpc = s.cfg.TTFT, s.cfg.ITL, s.cfg.TokensPerChunk
	if sp, ok := s.cfg.ModelSpeeds[p.served]; ok {
		p.ttft, p.itl = sp.TTFT, sp.ITL
	}
	p.ttft += time.Duration(p.media) * s.cfg.MediaTokenTime
	n := s.generated.Add(1)
	if s.cfg.SlowFirst > 0 && n <= int64(s.cfg.SlowFirst) {
		p.ttft = time.Duration(float64(p.ttft) * s.cfg.SlowFactor)
		p.itl = time.Duration(float64(p.itl) * s.cfg.SlowFactor)
	}
	if s.cfg.TTFTSpread > 0 {
		p.ttft = time.Duration(float64(p.ttft) * math.Exp(s.cfg.TTFTSpread*s.normalDraw(uint64(n))))
	}
	if s.cfg.ITLSpread > 0 {
		p.gaps = make([]time.Duration, maxTokens)
		for k := range p.gaps {
			p.gaps[k] = time.Duration(float64(p.itl) * math.Exp(s.cfg.ITLSpread*s.normalDraw(mix(uint64(n)*0x2545f4914f6cdd1d+uint64(k)+1))))
		}
	}
	p.stream = req.Stream
	p.includeUsage = req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	p.continuousUsage = p.includeUsage && req.StreamOptions.ContinuousUsageStats
	s.planReasoning(&p, req.reasoningControls, maxTokens, req.MinTokens, req.IgnoreEOS)
	return p, 0, nil
}

// TimingHeader overrides fixed mode's schedule for one request:
// "ttft=50ms,itl=10ms,chunk=4" (any subset), so an accuracy test can vary
// the timing it checks without restarting the simulator.
const TimingHeader = "X-Sim-Timing"

func (s *Server) applyTiming(r *http.Request, p *genPlan) error {
	v := r.Header.Get(TimingHeader)
	if v == "" {
		return nil
	}
	if s.engine != nil {
		return fmt.Errorf("%s applies to fixed mode only; this simulator runs the engine", TimingHeader)
	}
	for _, item := range strings.Split(v, ",") {
		key, val, _ := strings.Cut(strings.TrimSpace(item), "=")
		var err error
		switch key {
		case "ttft":
			p.ttft, err = time.ParseDuration(val)
		case "itl":
			p.itl, err = time.ParseDuration(val)
		case "chunk":
			p.tpc, err = strconv.Atoi(val)
			if err == nil && p.tpc < 1 {
				err = errors.New("must be at least 1")
			}
		default:
			err = errors.New("unknown key (want ttft, itl or chunk)")
		}
		if err == nil && (p.ttft < 0 || p.itl < 0) {
			err = errors.New("must not be negative")
		}
		if err != nil {
			return fmt.Errorf("%s %q: %w", TimingHeader, item, err)
		}
	}
	return nil
}

// outputLength is the early-EOS rule: without ignore_eos, the length past
// min_tokens is geometric with per-token probability EOSProb, drawn from the
// seed and the prompt, so the same prompt always stops at the same token
// whatever the load or arrival order.
func (s *Server) outputLength(promptHash uint64, maxTokens, minTokens int, ignoreEOS bool) (int, string) {
	p := s.cfg.EOSProb
	if ignoreEOS || p <= 0 {
		return maxTokens, "length"
	}
	u := unitFloat(mix(s.seedHash ^ promptHash ^ 0xe05))
	extra := int(math.Ceil(math.Log1p(-u) / math.Log1p(-p)))
	extra = max(extra, 1)
	n := minTokens + extra
	if n >= maxTokens || n < 0 {
		return maxTokens, "length"
	}
	return n, "stop"
}

// word returns the k-th generated word of a request.
func (s *Server) word(promptHash uint64, k int) string {
	return vocab[s.wordID(promptHash, k)]
}

// wordID is the token id of the k-th generated word: its vocabulary index,
// which is also what every personality's tokenizer makes of the word when
// a conversation sends it back.
func (s *Server) wordID(promptHash uint64, k int) int {
	return int(mix(s.seedHash^promptHash^uint64(k)*0x9e3779b97f4a7c15) % VocabSize)
}

// outputIDs are the token ids of a request's first n generated words.
func (s *Server) outputIDs(promptHash uint64, n int) []int {
	ids := make([]int, n)
	for k := range ids {
		ids[k] = s.wordID(promptHash, k)
	}
	return ids
}

// source yields a request's tokens as they become writable.
type source interface {
	// next blocks until tokens can be written and returns how many; last is
	// true with the final batch (or with n == 0 if nothing more will come).
	next(ctx context.Context) (n int, last bool, err error)
	cachedTokens() int
	close()
}

var errShutdown = errors.New("simulator shutting down")

func (s *Server) startSource(ctx context.Context, p genPlan, received time.Time) source {
	if s.engine == nil {
		return &fixedSource{
			s: s, start: received, target: p.target, tpc: p.tpc, ttft: p.ttft, itl: p.itl, gaps: p.gaps,
			reasoning: p.reasoning, ritl: p.reasoningITL,
			cached: p.cached, wait: newPacerWait(),
		}
	}
	q := newSeq(len(p.promptIDs), s.hashesFor(p.promptIDs), p.target)
	if s.cfg.Engine.PrefixCache && p.target > 1 {
		// The KV a finished sequence leaves: its prompt and its output
		// but the last token (engine.apply caches it).
		full := append(append(make([]int, 0, len(p.promptIDs)+p.target-1), p.promptIDs...), s.outputIDs(p.promptHash, p.target-1)...)
		q.doneHashes = s.hashesFor(full)
	}
	es := &engineSource{s: s, q: q}
	// Cancellation reaches the handler through the sequence's own notify
	// channel, so waiting for a token is a plain channel receive, not a
	// three-way select: at 100k tokens/s that difference is measurable.
	es.stopAfter = context.AfterFunc(ctx, q.signal)
	if !s.engine.submit(q) {
		es.closed = true
	}
	return es
}

func (s *Server) hashesFor(ids []int) []uint64 {
	if !s.cfg.Engine.PrefixCache {
		return nil
	}
	return blockHashes(ids, s.cfg.Engine.BlockSize)
}

// fixedSource writes event k at start + TTFT + k*ITL: absolute deadlines, so
// timer lateness never accumulates into the gaps, kept by the process's
// pacer (pacer.go) rather than a Go timer, whose wake is millisecond
// grained.
type fixedSource struct {
	s      *Server
	start  time.Time
	ttft   time.Duration
	itl    time.Duration
	gaps   []time.Duration // drawn answer gaps (Config.ITLSpread): event k+1 comes gaps[k] after event k
	target int
	tpc    int
	k      int
	sent   int
	cached int
	// reasoning: the first tokens that are reasoning, one event per tpc
	// of them at ritl apart (kr of those events written); the answer's
	// events follow at itl. No event mixes the two.
	reasoning int
	ritl      time.Duration
	kr        int
	wait      *pacerWait
	// woken is set when the request's context ends or the server closes;
	// either also pokes the wait, so a wait is one receive on its
	// channel, not a select that also enqueues on the request's and the
	// server-wide Done channels at every event.
	woken   atomic.Bool
	unwatch [2]func() bool // nil until the first wait registers wake
}

func (f *fixedSource) wake() {
	f.woken.Store(true)
	f.wait.poke()
}

// interrupted is why the stream must stop (nil: it need not).
func (f *fixedSource) interrupted(ctx context.Context) error {
	if !f.woken.Load() {
		return nil
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return errShutdown
}

func (f *fixedSource) next(ctx context.Context) (int, bool, error) {
	if f.sent >= f.target {
		return 0, true, nil
	}
	if err := f.until(ctx, f.start.Add(f.eventAt(f.k, f.kr))); err != nil {
		return 0, false, err
	}
	n := min(f.tpc, f.target-f.sent)
	if f.sent < f.reasoning {
		n = min(n, f.reasoning-f.sent)
		f.kr++
	}
	f.sent += n
	f.k++
	return n, f.sent >= f.target, nil
}

// eventAt is when event k is due after the start, kr of the events
// before it having been reasoning: TTFT, then the reasoning events'
// gaps, then the answer's.
func (f *fixedSource) eventAt(k, kr int) time.Duration {
	if f.gaps != nil && k > kr {
		at := f.ttft + time.Duration(kr)*f.ritl
		for _, g := range f.gaps[:min(k-kr, len(f.gaps))] {
			at += g
		}
		return at
	}
	return f.ttft + time.Duration(kr)*f.ritl + time.Duration(k-kr)*f.itl
}

// until waits for deadline, or returns why it cannot (the request ended,
// the server closed).
func (f *fixedSource) until(ctx context.Context, deadline time.Time) error {
	if time.Until(deadline) <= 0 {
		return nil
	}
	if f.unwatch[0] == nil {
		f.unwatch = [2]func() bool{context.AfterFunc(ctx, f.wake), context.AfterFunc(f.s.closed, f.wake)}
	}
	if err := f.interrupted(ctx); err != nil {
		return err
	}
	p := sharedPacer()
	p.add(f.wait, deadline)
	<-f.wait.ch
	if err := f.interrupted(ctx); err != nil {
		p.remove(f.wait)
		return err
	}
	return nil
}

// finalDeadline is when a non-streamed fixed-mode response is complete.
func (f *fixedSource) finalDeadline() time.Time {
	r := min(f.reasoning, f.target)
	rEvents := (r + f.tpc - 1) / f.tpc
	events := rEvents + (f.target-r+f.tpc-1)/f.tpc
	if events == 0 {
		return f.start.Add(f.ttft)
	}
	// The last event's time: every event before it adds its own gap.
	kr := rEvents
	if f.target-r == 0 {
		kr = rEvents - 1
	}
	return f.start.Add(f.eventAt(events-1, kr))
}

func (f *fixedSource) cachedTokens() int { return f.cached }
func (f *fixedSource) close() {
	if f.unwatch[0] != nil {
		f.unwatch[0]()
		f.unwatch[1]()
	}
}

type engineSource struct {
	s         *Server
	q         *seq
	sent      int
	closed    bool
	stopAfter func() bool // unregisters the context's wake-up; nil if none
}

func (e *engineSource) next(ctx context.Context) (int, bool, error) {
	if e.closed {
		return 0, false, errShutdown
	}
	for {
		// done is read before avail: done is stored after the final avail,
		// so seeing done guarantees avail is final.
		done := e.q.done.Load()
		avail := int(e.q.avail.Load())
		if avail > e.sent {
			n := avail - e.sent
			e.sent = avail
			return n, done, nil
		}
		if done {
			return 0, true, nil
		}
		if err := ctx.Err(); err != nil {
			return 0, false, context.Cause(ctx)
		}
		select {
		case <-e.s.closed.Done():
			return 0, false, errShutdown
		default:
		}
		// Woken by the engine, by ctx (AfterFunc) or by Close (engine.close
		// signals every queued sequence).
		<-e.q.notify
	}
}

func (e *engineSource) cachedTokens() int { return int(e.q.cached.Load()) }

func (e *engineSource) close() {
	if e.stopAfter != nil {
		e.stopAfter()
	}
	if !e.q.done.Load() {
		e.s.engine.abort(e.q)
	}
}

// sleep waits d unless the request or the server ends first.
func (s *Server) sleep(ctx context.Context, d time.Duration) bool {
	if d > 0 {
		// The pacer's wake, not a Go timer's (pacer.go): a fixed TTFT or
		// stall lasts what it says to the tens of microseconds.
		w := newPacerWait()
		defer context.AfterFunc(ctx, w.poke)()
		defer context.AfterFunc(s.closed, w.poke)()
		p := sharedPacer()
		p.add(w, time.Now().Add(d))
		<-w.ch
		p.remove(w)
	}
	return ctx.Err() == nil && s.closed.Err() == nil
}

func (s *Server) finishAbort(rec *record, why string) {
	s.metrics.aborted.Add(1)
	rec.update(func(r *RequestRecord) {
		r.FinishReason, r.Error, r.Finished = "abort", why, time.Now()
		if r.Status == 0 {
			r.Status = 499 // nginx's "client closed request": no status was sent
		}
	})
}

// abortConn ends the response without a clean end of stream: net/http
// closes the connection (for HTTP/1.1, with no terminating chunk), which is
// what a client sees when a server dies.
func abortConn() { panic(http.ErrAbortHandler) }

// chunkWriter builds SSE events with appends instead of encoding/json: at
// 100k events per second the JSON encoder would be what limits the sim.
type chunkWriter struct {
	out  *eventStream
	buf  []byte
	head []byte // `data: {"id":...,"model":...,"choices":[`, common to every chunk of a response
	chat bool
	api  *apiStream // the Responses or Messages API's events (nil: chat's or completions' chunks)
}

func (s *Server) newChunkWriter(out *eventStream, id string, p genPlan) *chunkWriter {
	model, _ := json.Marshal(p.model)
	cw := &chunkWriter{out: out, chat: p.endpoint == epChat, buf: make([]byte, 0, 512)}
	object := "text_completion"
	if cw.chat {
		object = "chat.completion.chunk"
	}
	cw.head = fmt.Appendf(nil, `data: {"id":"%s","object":"%s","created":%d,"model":%s,"choices":[`, id, object, s.created, model)
	if isAPI(p.endpoint) {
		cw.chat, cw.api = false, s.newAPIStream(id, p)
	}
	return cw
}

func (cw *chunkWriter) flush() error {
	err := cw.out.write(cw.buf)
	cw.buf = cw.buf[:0]
	if err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

func (cw *chunkWriter) roleChunk() {
	cw.buf = append(cw.buf, cw.head...)
	cw.buf = append(cw.buf, `{"index":0,"delta":{"role":"assistant"},"logprobs":null,"finish_reason":null}]}`+"\n\n"...)
}

// contentChunk appends the event carrying tokens from..from+n; extra (a
// JSON member with its leading comma, e.g. llama-server's timings) goes at
// the end of the object.
func (cw *chunkWriter) contentChunk(s *Server, p genPlan, from, n int, finish string, extra []byte) {
	if cw.api != nil {
		cw.buf = cw.api.content(cw.buf, s, p, from, n)
		return
	}
	if cw.chat && from < p.reasoning && from+n > p.reasoning {
		// The engine's batch crossed from thinking to answering: two
		// events, as the engines' parsers send them.
		k := p.reasoning - from
		cw.contentChunk(s, p, from, k, "", nil)
		cw.contentChunk(s, p, from+k, n-k, finish, extra)
		return
	}
	c := p.constrained
	if c != nil && from >= p.reasoning && c.tool != "" && s.persona.wholeToolCall && finish == "" {
		return // held back: the whole call goes in the last event
	}
	cw.buf = append(cw.buf, cw.head...)
	switch {
	case cw.chat && from < p.reasoning:
		cw.buf = s.appendReasoningDelta(cw.buf, p)
	case c != nil && c.tool != "":
		cw.buf = s.appendToolDelta(cw.buf, p, from, from+n)
	case cw.chat:
		cw.buf = append(cw.buf, `{"index":0,"delta":{"content":"`...)
	default:
		cw.buf = append(cw.buf, `{"index":0,"text":"`...)
	}
	switch {
	case c != nil && c.tool != "" && from >= p.reasoning:
	case c != nil && from >= p.reasoning:
		cw.buf = c.appendPiece(cw.buf, from-p.reasoning, from+n-p.reasoning)
		cw.buf = append(cw.buf, '"')
	default:
		for k := from; k < from+n; k++ {
			cw.buf = append(cw.buf, ' ')
			cw.buf = append(cw.buf, s.word(p.promptHash, k)...)
		}
		cw.buf = append(cw.buf, '"')
	}
	if cw.chat {
		cw.buf = append(cw.buf, '}')
	}
	cw.buf = append(cw.buf, `,"logprobs":null,"finish_reason":`...)
	if finish == "" {
		cw.buf = append(cw.buf, "null"...)
	} else {
		cw.buf = strconv.AppendQuote(cw.buf, finish)
	}
	if !cw.chat {
		cw.buf = append(cw.buf, `,"stop_reason":null`...)
	}
	cw.buf = append(cw.buf, "}]"...)
	if p.continuousUsage {
		prompt, completion := len(p.promptIDs), from+n
		cw.buf = fmt.Appendf(cw.buf, `,"usage":{"prompt_tokens":%d,"total_tokens":%d,"completion_tokens":%d%s}`, prompt, prompt+completion, completion, s.reasoningUsage(p, completion))
	}
	cw.buf = append(cw.buf, extra...)
	cw.buf = append(cw.buf, "}\n\n"...)
}

// usageChunk appends the final usage chunk; cached >= 0 adds
// prompt_tokens_details.cached_tokens (vLLM's and SGLang's field).
func (cw *chunkWriter) usageChunk(prompt, completion, cached int, details string) {
	cw.buf = append(cw.buf, cw.head...)
	cw.buf = fmt.Appendf(cw.buf, `],"usage":{"prompt_tokens":%d,"total_tokens":%d,"completion_tokens":%d%s`, prompt, prompt+completion, completion, details)
	if cached >= 0 {
		cw.buf = fmt.Appendf(cw.buf, `,"prompt_tokens_details":{"cached_tokens":%d}`, cached)
	}
	cw.buf = append(cw.buf, "}}\n\n"...)
	// head ends with `"choices":[`, so "]" closes an empty choices list.
}

// usageCached is what usage reports as cached tokens: -1 (no field) except
// where the engine reports it (vLLM, SGLang; generic with a prompt cache).
func (s *Server) usageCached(src source) int {
	switch s.persona.usageCached {
	case cachedAlways:
		return src.cachedTokens()
	case cachedWithPromptCache:
		if s.cfg.PromptCache {
			return src.cachedTokens()
		}
	}
	return -1
}

// appendTimings appends llama-server's "timings" member (result_timings):
// the prompt and generation phases, with cache_n the reused prompt tokens.
func appendTimings(b []byte, promptN, cacheN int, promptDur time.Duration, predictedN int, predictedDur time.Duration) []byte {
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	per := func(d time.Duration, n int) (perToken, perSecond float64) {
		if n > 0 {
			perToken = ms(d) / float64(n)
		}
		if d > 0 {
			perSecond = float64(n) / d.Seconds()
		}
		return
	}
	f := func(b []byte, v float64) []byte { return strconv.AppendFloat(b, v, 'f', 3, 64) }
	ppt, pps := per(promptDur, promptN)
	gpt, gps := per(predictedDur, predictedN)
	b = fmt.Appendf(b, `,"timings":{"cache_n":%d,"prompt_n":%d,"prompt_ms":`, cacheN, promptN)
	b = f(b, ms(promptDur))
	b = append(b, `,"prompt_per_token_ms":`...)
	b = f(b, ppt)
	b = append(b, `,"prompt_per_second":`...)
	b = f(b, pps)
	b = fmt.Appendf(b, `,"predicted_n":%d,"predicted_ms":`, predictedN)
	b = f(b, ms(predictedDur))
	b = append(b, `,"predicted_per_token_ms":`...)
	b = f(b, gpt)
	b = append(b, `,"predicted_per_second":`...)
	b = f(b, gps)
	return append(b, '}')
}

// timings builds llama-server's timings for a response whose first token
// was written at first (zero: now) and whose last at last.
func (s *Server) timings(rec *record, p genPlan, src source, first, last time.Time, predicted int) []byte {
	if !s.persona.timings {
		return nil
	}
	if first.IsZero() {
		first = last
	}
	cached := src.cachedTokens()
	return appendTimings(nil, len(p.promptIDs)-cached, cached, first.Sub(rec.r.Received), predicted, last.Sub(first))
}

func (s *Server) stream(ctx context.Context, w http.ResponseWriter, rec *record, p genPlan, src source, f faults) {
	out := s.openStream(w)
	defer out.release()
	rec.update(func(r *RequestRecord) { r.Status = http.StatusOK })
	cw := s.newChunkWriter(out, rec.r.ID, p)
	if cw.chat {
		cw.roleChunk()
	}
	if cw.api != nil {
		cw.buf = cw.api.start(cw.buf, s, p)
	}
	if err := cw.flush(); err != nil {
		s.finishAbort(rec, err.Error())
		return
	}
	if f.dropAfter == 0 {
		s.finishAbort(rec, "fault: drop-after=0")
		out.abort()
		return
	}
	if f.cutAfter == 0 {
		s.finishAbort(rec, "fault: cut-after=0")
		_ = out.end()
		return
	}
	if f.stall > 0 && f.stallAt == 0 && !s.sleep(ctx, f.stall) {
		s.finishAbort(rec, "client gone or shutdown during stall")
		s.cutIfClosing(out)
		return
	}

	sent, events, held := 0, 0, 0
	var first, prev time.Time
	for {
		n, last, err := src.next(ctx)
		if err != nil {
			s.finishAbort(rec, err.Error())
			s.cutIfClosing(out)
			return
		}
		if n == 0 {
			break
		}
		finish := ""
		var extra []byte
		if last {
			finish = p.finish
			extra = s.timings(rec, p, src, first, time.Now(), sent+n)
		}
		cw.contentChunk(s, p, sent, n, finish, extra)
		if len(cw.buf) == 0 {
			// Held back (a whole tool call goes out in one event): its
			// tokens are the next event's.
			held += n
			sent += n
			continue
		}
		// Stamped just before the write: no client can see the event
		// earlier, so client time minus this is the client's whole error.
		now := time.Now()
		rec.addEvent(now, n+held)
		if err := cw.flush(); err != nil {
			s.finishAbort(rec, err.Error())
			return
		}
		s.observeEvent(rec, events, now, &first, &prev, n+held)
		held = 0
		sent += n
		events++
		if f.malformed && events == 1 {
			// A truncated JSON object: the client must report it, not crash.
			cw.buf = append(cw.buf, cw.head...)
			cw.buf = append(cw.buf, `{"index":0,"text":"`+"\n\n"...)
			if err := cw.flush(); err != nil {
				s.finishAbort(rec, err.Error())
				return
			}
		}
		if f.dropAfter > 0 && events == f.dropAfter && !last {
			s.finishAbort(rec, fmt.Sprintf("fault: drop-after=%d", f.dropAfter))
			out.abort()
			return
		}
		if f.cutAfter > 0 && events == f.cutAfter && !last {
			// A clean end, cut short: no finish_reason, usage or [DONE].
			s.finishAbort(rec, fmt.Sprintf("fault: cut-after=%d", f.cutAfter))
			_ = out.end()
			return
		}
		if cw.api != nil && f.streamError > 0 && events == f.streamError && !last {
			cw.buf = cw.api.fail(cw.buf, s)
			_ = cw.flush()
			s.finishAbort(rec, fmt.Sprintf("fault: stream-error=%d", f.streamError))
			_ = out.end()
			return
		}
		if f.stall > 0 && events == f.stallAt && !last && !s.sleep(ctx, f.stall) {
			s.finishAbort(rec, "client gone or shutdown during stall")
			s.cutIfClosing(out)
			return
		}
		if last {
			break
		}
	}
	switch {
	case cw.api != nil:
		// The Responses and Messages APIs end with their last event, no [DONE].
		cw.buf = cw.api.end(cw.buf, s, p, sent, s.usageCached(src))
	case p.includeUsage:
		cw.usageChunk(len(p.promptIDs), sent, s.usageCached(src), s.reasoningUsage(p, sent))
		fallthrough
	default:
		cw.buf = append(cw.buf, "data: [DONE]\n\n"...)
	}
	err := cw.flush()
	s.finishOK(rec, p, src, sent, first, prev, err)
	_ = out.end()
}

// abortIfClosing cuts the connection when the server is shutting down, so a
// client sees a dead server rather than a clean end of stream.
func (s *Server) abortIfClosing() {
	select {
	case <-s.closed.Done():
		abortConn()
	default:
	}
}

// cutIfClosing is abortIfClosing for a stream (which may be hijacked).
func (s *Server) cutIfClosing(out *eventStream) {
	select {
	case <-s.closed.Done():
		out.abort()
	default:
	}
}

func (s *Server) observeEvent(rec *record, events int, now time.Time, first, prev *time.Time, n int) {
	m := s.metrics
	if events == 0 {
		*first = now
		m.ttft.observe(now.Sub(rec.r.Received))
	} else {
		// Per-token latency: a chunk of n tokens spreads its gap over them.
		gap := now.Sub(*prev) / time.Duration(n)
		for range n {
			m.itl.observe(gap)
		}
	}
	*prev = now
	m.generationTokens.Add(uint64(n))
}

func (s *Server) finishOK(rec *record, p genPlan, src source, sent int, first, last time.Time, werr error) {
	m := s.metrics
	now := time.Now()
	m.promptTokens.Add(uint64(len(p.promptIDs)))
	if !first.IsZero() {
		m.promptNs.Add(int64(first.Sub(rec.r.Received)))
		m.decodeNs.Add(int64(last.Sub(first)))
	}
	m.e2e.observe(now.Sub(rec.r.Received))
	if pc := s.promptCacheFor(p.served); pc != nil {
		pc.keep(p.cacheEntry, p.promptIDs, s.outputIDs(p.promptHash, sent))
	}
	if p.finish == "stop" {
		m.successStop.Add(1)
	} else {
		m.successLength.Add(1)
	}
	rec.update(func(r *RequestRecord) {
		r.FinishReason, r.Finished, r.CachedTokens = p.finish, now, src.cachedTokens()
		if thinks(p.endpoint) {
			r.ReasoningTokens = min(p.reasoning, sent)
		}
		if c := p.constrained; c != nil {
			r.Planned, r.ToolName, r.ConstrainedText = c.outcome, c.tool, c.sent(max(sent-p.reasoning, 0))
		}
		if werr != nil {
			r.Error = werr.Error()
		}
	})
}

func (s *Server) respond(ctx context.Context, w http.ResponseWriter, rec *record, p genPlan, src source, f faults) {
	// Wait for the whole output (or, with a cut, for what comes before it).
	limit := p.target
	if f.cutAfter >= 0 {
		limit = min(limit, f.cutAfter*p.tpc)
	}
	sent := 0
	var firstAt time.Time // when the first token was ready (llama-server's timings)
	if fs, ok := src.(*fixedSource); ok {
		fs.target = limit
		firstAt = fs.start.Add(fs.ttft)
		if fs.until(ctx, fs.finalDeadline()) != nil {
			s.finishAbort(rec, "client gone or shutdown")
			s.abortIfClosing()
			return
		}
		sent = limit
	} else {
		for sent < limit {
			n, last, err := src.next(ctx)
			if err != nil {
				s.finishAbort(rec, err.Error())
				s.abortIfClosing()
				return
			}
			if n > 0 && firstAt.IsZero() {
				firstAt = time.Now()
			}
			sent += n
			if last {
				break
			}
		}
		sent = min(sent, limit)
	}
	if f.dropAfter >= 0 {
		s.finishAbort(rec, "fault: drop")
		abortConn()
	}
	if f.stall > 0 && !s.sleep(ctx, f.stall) {
		s.finishAbort(rec, "client gone or shutdown during stall")
		s.abortIfClosing()
		return
	}
	cut := f.cutAfter >= 0 && sent < p.target
	var text, thought strings.Builder
	for k := range sent {
		if p.constrained != nil && k >= p.reasoning {
			break
		}
		b := &text
		if k < p.reasoning && thinks(p.endpoint) {
			b = &thought
		}
		b.WriteByte(' ')
		b.WriteString(s.word(p.promptHash, k))
	}
	usage := map[string]any{"prompt_tokens": len(p.promptIDs), "total_tokens": len(p.promptIDs) + sent, "completion_tokens": sent}
	if s.reasoningUsage(p, sent) != "" {
		usage["completion_tokens_details"] = map[string]int{"reasoning_tokens": min(p.reasoning, sent)}
	}
	message := map[string]any{"role": "assistant", "content": text.String()}
	if thought.Len() > 0 {
		message[p.reasoningField] = thought.String()
	}
	if c := p.constrained; c != nil {
		s.constrainedMessage(message, c, max(sent-p.reasoning, 0))
		text.Reset()
		text.WriteString(c.sent(max(sent-p.reasoning, 0))) // a completion's text
	}
	if c := s.usageCached(src); c >= 0 {
		usage["prompt_tokens_details"] = map[string]int{"cached_tokens": c}
	}
	var finish any = p.finish
	if cut {
		finish = nil
	}
	var body map[string]any
	if isAPI(p.endpoint) {
		body = s.apiWhole(rec.r.ID, p, sent, text.String(), thought.String(), s.usageCached(src))
	} else if p.endpoint == epChat {
		body = map[string]any{
			"id": rec.r.ID, "object": "chat.completion", "created": s.created, "model": p.model,
			"choices": []any{map[string]any{
				"index": 0, "message": message,
				"logprobs": nil, "finish_reason": finish,
			}},
			"usage": usage,
		}
	} else {
		body = map[string]any{
			"id": rec.r.ID, "object": "text_completion", "created": s.created, "model": p.model,
			"choices": []any{map[string]any{
				"index": 0, "text": text.String(), "logprobs": nil, "finish_reason": finish, "stop_reason": nil,
			}},
			"usage": usage,
		}
	}
	if cut {
		delete(body, "usage") // the clean cut: a body with no end to it
	}
	now := time.Now()
	if t := s.timings(rec, p, src, firstAt, now, sent); t != nil {
		body["timings"] = json.RawMessage(t[len(`,"timings":`):])
	}
	b, err := json.Marshal(body)
	if err != nil {
		s.finishAbort(rec, err.Error())
		s.writeErr(w, http.StatusInternalServerError, "InternalServerError", err.Error())
		return
	}
	if f.malformed {
		b = b[:len(b)/2] // a truncated body with a 200: the client must say so
	}
	w.Header().Set("Content-Type", "application/json")
	rec.update(func(r *RequestRecord) { r.Status = http.StatusOK })
	rec.addEvent(now, sent)
	w.WriteHeader(http.StatusOK)
	_, werr := w.Write(append(b, '\n'))
	var first time.Time
	prev := now
	s.observeEvent(rec, 0, now, &first, &prev, sent)
	if cut {
		s.finishAbort(rec, fmt.Sprintf("fault: cut-after=%d", f.cutAfter))
		return
	}
	s.finishOK(rec, p, src, sent, now, now, werr)
}

// normalDraw is request n's standard normal draw (Box–Muller over two of
// the seed's uniforms), for fixed mode's TTFT spread.
func (s *Server) normalDraw(n uint64) float64 {
	u1 := 1 - unitFloat(mix(s.seedHash^mix(n*0x9e3779b97f4a7c15+0x77f1)))
	u2 := unitFloat(mix(s.seedHash ^ mix(n*0x9e3779b97f4a7c15+0x77f2)))
	return math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
}
