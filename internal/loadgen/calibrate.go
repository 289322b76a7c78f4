package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// Calibration methods.
const (
	CalibrateAuto     = "auto"     // /tokenize when the server has it, else probing
	CalibrateTokenize = "tokenize" // only /tokenize
	CalibrateProbe    = "probe"    // only max_tokens=1 requests, reading usage.prompt_tokens
	CalibrateOff      = "off"      // assume one token per word
)

// Vocab builds prompts of an exact token length for one server: Words are
// vocabulary words the server's tokenizer reads as exactly one token each
// after a space, Lead is the word every prompt starts with, and Overhead
// the tokens of a prompt made of Lead alone as the endpoint counts them
// (BOS, a chat template, and whatever the first word of a prompt costs:
// Ollama's own engine charges 2-3 tokens for it).
type Vocab struct {
	// Words are single-token words; Multi are words of a known cost of
	// more than one token (Cost[i] tokens for Multi[i]). On a small
	// vocabulary (512 tokens) few English words are one token, so prompts
	// mix both and top up with single-token words to the exact length.
	Words []string
	Multi []string
	Cost  []int
	Lead  string
	// Overhead is the tokens of a prompt that is the lead alone.
	Overhead int
	// Method says how the vocabulary was calibrated: "tokenize(DIALECT)",
	// "probe", "tokenize(DIALECT)+probe" or "assumed" (no calibration;
	// one token per word).
	Method string
	// Requests is how many requests calibration cost.
	Requests int
	// Fallback, when set, says why the overhead did not come from a probe
	// on the measured endpoint.
	Fallback string
}

// AssumedVocab is the uncalibrated vocabulary: one token per word, no
// lead, no overhead.
func AssumedVocab() *Vocab { return &Vocab{Words: words, Method: "assumed"} }

// Text returns words drawn from rng that make exactly n tokens (no lead):
// known multi-token words while they fit, single-token words to finish.
func (v *Vocab) Text(rng *rand.Rand, n int) string {
	var b strings.Builder
	b.Grow(n * 6)
	maxCost := 0
	for _, c := range v.Cost {
		maxCost = max(maxCost, c)
	}
	for left := n; left > 0; {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		// Draw from every known word in proportion, as long as any word
		// still fits; the last tokens are single-token words.
		if k := rng.IntN(len(v.Words) + len(v.Multi)); k >= len(v.Words) && left >= maxCost {
			b.WriteString(v.Multi[k-len(v.Words)])
			left -= v.Cost[k-len(v.Words)]
			continue
		}
		b.WriteString(v.Words[rng.IntN(len(v.Words))])
		left--
	}
	return b.String()
}

// WordsFor is how many tokens of words follow the lead in a prompt of isl
// tokens (at least 1).
func (v *Vocab) WordsFor(isl int) int { return max(isl-v.Overhead, 1) }

// withLead puts the lead word in front of a prompt body.
func (v *Vocab) withLead(body string) string {
	if v.Lead == "" {
		return body
	}
	return v.Lead + " " + body
}

// tokenCounter counts a prompt's tokens as the server sees them.
type tokenCounter func(ctx context.Context, text string) (int, error)

// calibrationLead is the first word of every calibrated prompt.
const calibrationLead = "the"

// Calibration budget: single-token words are looked for among the
// shortest words first, in groups, until enough are found or the budget
// of counting requests is spent ("tens", not hundreds, even on a
// 512-token vocabulary where most words are several tokens).
const (
	calibrationWantWords = 64
	calibrationMinWords  = 8
	calibrationBudget    = 40
)

// Calibrate finds single-token words and the prompt overhead of the
// target's model. The words come from the server's tokenizer endpoint in
// its dialect (info.Tokenizer; tried in turn when unknown) or, without
// one, from probes (max_tokens=1 requests reading usage.prompt_tokens);
// the overhead always comes from a probe on the endpoint being measured
// when the method allows it, because only that counts the chat template
// and BOS exactly as the measured requests will.
func Calibrate(ctx context.Context, t *Target, method string, info ServerInfo) (*Vocab, error) {
	switch method {
	case CalibrateOff:
		return AssumedVocab(), nil
	case CalibrateTokenize, CalibrateProbe, CalibrateAuto, "":
	default:
		return nil, fmt.Errorf("calibration %q: want auto, tokenize, probe or off", method)
	}
	requests := 0
	counted := func(c tokenCounter) tokenCounter {
		return func(ctx context.Context, text string) (int, error) {
			requests++
			return c(ctx, text)
		}
	}
	probe := counted(func(ctx context.Context, text string) (int, error) { return t.probeCount(ctx, text) })
	// tok counts words with the server's tokenizer; tokSpecial counts a
	// whole prompt with the special tokens (BOS) a request gets.
	var tok, tokSpecial tokenCounter
	dialect := ""
	if method != CalibrateProbe {
		var err error
		dialect, err = t.tokenizerDialect(ctx, info.Tokenizer, &requests)
		if err != nil && method == CalibrateTokenize {
			return nil, fmt.Errorf("calibrating prompt lengths by tokenize: %w", err)
		}
		if dialect != DialectNone && dialect != "" {
			d := dialect
			tok = counted(func(ctx context.Context, text string) (int, error) { return t.tokenizeCount(ctx, d, text, false) })
			tokSpecial = counted(func(ctx context.Context, text string) (int, error) { return t.tokenizeCount(ctx, d, text, true) })
		}
	}
	wordsBy, name := tok, "tokenize("+dialect+")"
	if tok == nil {
		wordsBy, name = probe, CalibrateProbe
	}
	single, multi, cost, err := measureWords(ctx, wordsBy, &requests)
	if err != nil {
		return nil, fmt.Errorf("calibrating prompt lengths by %s: %w", name, err)
	}
	v := &Vocab{Words: single, Multi: multi, Cost: cost, Lead: calibrationLead}
	// The overhead as the measured endpoint counts it.
	overheadBy := probe
	switch {
	case method == CalibrateTokenize:
		overheadBy = tokSpecial
		v.Method = name
	case tok != nil:
		v.Method = name + "+probe"
	default:
		v.Method = CalibrateProbe
	}
	if err := v.measureOverhead(ctx, overheadBy); err != nil {
		if tok == nil || method == CalibrateTokenize {
			return nil, fmt.Errorf("calibrating prompt lengths by %s: %w", v.Method, err)
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("calibrating prompt lengths by %s: %w", v.Method, err)
		}
		// The endpoint reports no usage (or its probe failed): the
		// tokenizer with special tokens is the next best count (it misses
		// a chat template). The probe's own error stays in the note, and
		// in the error if the tokenizer fails too.
		v.Method = name
		v.Fallback = "the probe failed (" + err.Error() + "); the overhead is the tokenizer's"
		if err2 := v.measureOverhead(ctx, tokSpecial); err2 != nil {
			return nil, fmt.Errorf("calibrating prompt lengths: the probe failed (%w), and so did %s (%v)", err, v.Method, err2)
		}
	}
	v.Requests = requests
	return v, nil
}

// measureWords finds words of a known token cost after an anchor,
// shortest words first. Groups of 16 come first: a group that adds 16
// tokens is 16 single-token words in one request (a large vocabulary is
// done in four). The words of a group that adds more are then measured one
// by one within the budget, keeping each word's cost (up to 4 tokens), so
// a 512-token vocabulary where few words are one token still gives exact
// prompts in tens of requests.
func measureWords(ctx context.Context, count tokenCounter, requests *int) (single, multi []string, cost []int, err error) {
	base, err := count(ctx, calibrationLead)
	if err != nil {
		return nil, nil, nil, err
	}
	cands := append([]string(nil), words...)
	sort.SliceStable(cands, func(i, j int) bool { return len(cands[i]) < len(cands[j]) })
	known := func() int { return len(single) + len(multi) }
	var pending []string // words of failed groups, to measure one by one
	for i := 0; i < len(cands) && *requests < calibrationBudget && len(single) < calibrationWantWords; i += 16 {
		batch := cands[i:min(i+16, len(cands))]
		if len(pending) >= calibrationWantWords {
			break
		}
		n, err := count(ctx, calibrationLead+" "+strings.Join(batch, " "))
		if err != nil {
			return nil, nil, nil, err
		}
		if n-base == len(batch) {
			single = append(single, batch...)
			continue
		}
		pending = append(pending, batch...)
		if len(single) == 0 && i >= 32 {
			break // a small vocabulary: measure words one by one
		}
	}
	for _, w := range pending {
		if *requests >= calibrationBudget || known() >= calibrationWantWords {
			break
		}
		n, err := count(ctx, calibrationLead+" "+w)
		if err != nil {
			return nil, nil, nil, err
		}
		switch c := n - base; {
		case c == 1:
			single = append(single, w)
		case c > 1 && c <= 4:
			multi, cost = append(multi, w), append(cost, c)
		}
	}
	if len(single) < 1 || known() < calibrationMinWords {
		return nil, nil, nil, fmt.Errorf("only %d words of a known token cost (%d of one token) found in %d requests for this model; prompts cannot be built to an exact length", known(), len(single), *requests)
	}
	return single, multi, cost, nil
}

// measureOverhead sets the overhead from a prompt of the lead alone and
// checks it on two longer prompts: a count that does not add up means the
// words do not combine as measured, and prompts would miss their length.
func (v *Vocab) measureOverhead(ctx context.Context, count tokenCounter) error {
	o, err := count(ctx, v.Lead)
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(7, 7))
	for _, n := range []int{16, 200} {
		c, err := count(ctx, v.withLead(v.Text(rng, n)))
		if err != nil {
			return err
		}
		if c-n != o {
			return fmt.Errorf("overhead is not constant (%d tokens for the lead alone, %d with %d more words)", o, c-n, n)
		}
	}
	v.Overhead = o
	return nil
}

// tokenizerDialect decides how to ask the server's tokenizer: the dialect
// discovery found, else each in turn. An empty token list for non-empty
// text is a tokenizer that did not understand the question (llama-server
// answers {"tokens":[]} to a field it does not read), never a count.
func (t *Target) tokenizerDialect(ctx context.Context, known string, requests *int) (string, error) {
	if known == DialectNone {
		return DialectNone, errors.New("the server has no tokenizer endpoint")
	}
	dialects := []string{DialectPrompt, DialectContent}
	if known != "" {
		dialects = []string{known}
	}
	var errs []string
	for _, d := range dialects {
		*requests++
		n, err := t.tokenizeCount(ctx, d, calibrationLead+" of and", false)
		if err == nil && n > 0 {
			return d, nil
		}
		if err == nil {
			err = errors.New("no tokens")
		}
		errs = append(errs, d+": "+err.Error())
	}
	return DialectNone, fmt.Errorf("no usable tokenizer endpoint (%s)", strings.Join(errs, "; "))
}

// tokenizeCount asks the server's /tokenize in a dialect. special asks
// for the special tokens (BOS) a request's prompt gets.
func (t *Target) tokenizeCount(ctx context.Context, dialect, text string, special bool) (int, error) {
	var body map[string]any
	switch dialect {
	case DialectContent:
		body = map[string]any{"content": text, "add_special": special}
	default:
		body = map[string]any{"model": t.Model, "add_special_tokens": special}
		if t.Endpoint.chatShaped() && special {
			body["messages"] = []map[string]string{{"role": "user", "content": text}}
			body["add_generation_prompt"] = true
			delete(body, "add_special_tokens")
		} else {
			body["prompt"] = text
		}
	}
	var out struct {
		Count  *int              `json:"count"`
		Tokens []json.RawMessage `json:"tokens"`
	}
	if err := t.postJSON(ctx, "/tokenize", body, &out); err != nil {
		return 0, err
	}
	n := len(out.Tokens)
	if out.Count != nil {
		n = *out.Count
	}
	if n == 0 && strings.TrimSpace(text) != "" {
		return 0, fmt.Errorf("/tokenize answered an empty token list for non-empty text (it does not read the %s dialect)", dialect)
	}
	if out.Count == nil && out.Tokens == nil {
		return 0, errors.New("/tokenize answered without count or tokens")
	}
	return n, nil
}

// probeDeadline bounds a calibration probe's whole exchange when the
// target has no stall timeout.
const probeDeadline = 2 * time.Minute

// probeCount sends the prompt with max_tokens 1 and reads usage.prompt_tokens.
// One token's answer is bounded whole, like any small exchange: by the
// stall timeout (a server that answers and then trickles bytes resets a
// stall timer forever), the request timeout when shorter, and
// probeDeadline without either.
func (t *Target) probeCount(ctx context.Context, text string) (int, error) {
	if t.Endpoint == Rerank {
		// A rerank answer's usage counts a query and document pair with
		// the model's separators, not one text: the tokenizer counts it.
		return 0, errors.New("a rerank answer's usage counts a query and document pair, not one text (calibrate by tokenize)")
	}
	probe := *t
	probe.Stream = false
	probe.Timeout = probeDeadline
	if t.StallTimeout > 0 {
		probe.Timeout = t.StallTimeout
	}
	if t.Timeout > 0 {
		probe.Timeout = min(probe.Timeout, t.Timeout)
	}
	r := probe.Do(ctx, Request{Prompt: text, MaxTokens: 1})
	if r.Err != nil && !(errors.Is(r.Err, ErrNoTokens) && r.UsageReported && r.InputTokens > 0) {
		// The probe needs only usage.prompt_tokens: an answer whose one
		// token the server did not show (a thinking model's parser holding
		// back a leading newline, Ollama's qwen3-thinking) still counts it.
		return 0, fmt.Errorf("the max_tokens=1 probe on %s: %w", t.Endpoint.Path(), r.Err)
	}
	if !r.UsageReported || r.InputTokens <= 0 {
		return 0, errors.New("the server reports no usage.prompt_tokens")
	}
	return r.InputTokens, nil
}

// postJSON is a small POST (a tokenizer's count, Ollama's /api/show),
// bounded by the stall timeout so a server that never answers cannot
// hang calibration.
func (t *Target) postJSON(ctx context.Context, path string, body any, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	if d := t.StallTimeout; d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, d, fmt.Errorf("no answer within %v (the stall timeout)", d))
		defer cancel()
	}
	return t.exchangeJSON(ctx, http.MethodPost, path, b, 16<<20, out)
}

// calibrations caches calibrated vocabularies per server, model, endpoint
// and method for the life of the process, so a warm-up and the sweep
// after it size prompts identically and calibrate once.
var calibrations sync.Map // calibrationKey → *Vocab

type calibrationKey struct {
	url, model string
	endpoint   Endpoint
	method     string
}

// CalibrateCached is Calibrate, remembered per server, model, endpoint
// and method. Failures are not remembered.
func CalibrateCached(ctx context.Context, t *Target, method string, info ServerInfo) (*Vocab, error) {
	k := calibrationKey{t.BaseURL, t.Model, t.Endpoint, method}
	if v, ok := calibrations.Load(k); ok {
		return v.(*Vocab), nil
	}
	v, err := Calibrate(ctx, t, method, info)
	if err != nil {
		return nil, err
	}
	calibrations.Store(k, v)
	return v, nil
}
