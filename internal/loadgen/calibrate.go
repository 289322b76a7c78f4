package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
)

// Calibration methods.
const (
	CalibrateAuto     = "auto"     // /tokenize when the server has it, else probing
	CalibrateTokenize = "tokenize" // only /tokenize
	CalibrateProbe    = "probe"    // only max_tokens=1 requests, reading usage.prompt_tokens
	CalibrateOff      = "off"      // assume one token per word
)

// Vocab builds prompts of an exact token length for one server: Words are
// the vocabulary words the server's tokenizer reads as exactly one token
// each after a space, and Overhead the tokens the server adds to any
// prompt (BOS, a chat template).
type Vocab struct {
	Words    []string
	Overhead int
	// Method says how the vocabulary was calibrated: "tokenize", "probe"
	// or "assumed" (no calibration; one token per word).
	Method string
}

// AssumedVocab is the uncalibrated vocabulary: one token per word, no overhead.
func AssumedVocab() *Vocab { return &Vocab{Words: words, Method: "assumed"} }

// Words returns n words drawn from rng, joined by spaces.
func (v *Vocab) Text(rng *rand.Rand, n int) string {
	var b strings.Builder
	b.Grow(n * 6)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(v.Words[rng.IntN(len(v.Words))])
	}
	return b.String()
}

// WordsFor is how many words make a prompt of isl tokens (at least 1).
func (v *Vocab) WordsFor(isl int) int { return max(isl-v.Overhead, 1) }

// tokenCounter counts a prompt's tokens as the server sees them.
type tokenCounter func(ctx context.Context, text string) (int, error)

// Calibrate finds the single-token vocabulary and the prompt overhead of
// the target's model, by /tokenize or by probing (see the method
// constants). It costs a few dozen small requests.
func Calibrate(ctx context.Context, t *Target, method string) (*Vocab, error) {
	switch method {
	case CalibrateOff:
		return AssumedVocab(), nil
	case CalibrateTokenize, CalibrateProbe, CalibrateAuto, "":
	default:
		return nil, fmt.Errorf("calibration %q: want auto, tokenize, probe or off", method)
	}
	tok := func(ctx context.Context, text string) (int, error) { return t.tokenizeCount(ctx, text) }
	probe := func(ctx context.Context, text string) (int, error) { return t.probeCount(ctx, text) }
	var count tokenCounter
	name := method
	switch method {
	case CalibrateTokenize:
		count = tok
	case CalibrateProbe:
		count = probe
	default:
		if _, err := tok(ctx, "the"); err == nil {
			count, name = tok, CalibrateTokenize
		} else {
			count, name = probe, CalibrateProbe
		}
	}
	return calibrateWith(ctx, count, name)
}

func calibrateWith(ctx context.Context, count tokenCounter, method string) (*Vocab, error) {
	const anchor = "the"
	base, err := count(ctx, anchor)
	if err != nil {
		return nil, fmt.Errorf("calibrating prompt lengths by %s: %w", method, err)
	}
	var single []string
	// A batch of k words appended to the anchor adds exactly k tokens only
	// if each adds one (no word adds less than one); otherwise bisect.
	var check func(batch []string) error
	check = func(batch []string) error {
		n, err := count(ctx, anchor+" "+strings.Join(batch, " "))
		if err != nil {
			return fmt.Errorf("calibrating prompt lengths by %s: %w", method, err)
		}
		if n-base == len(batch) {
			single = append(single, batch...)
			return nil
		}
		if len(batch) == 1 {
			return nil
		}
		h := len(batch) / 2
		if err := check(batch[:h]); err != nil {
			return err
		}
		return check(batch[h:])
	}
	for i := 0; i < len(words); i += 64 {
		if err := check(words[i:min(i+64, len(words))]); err != nil {
			return nil, err
		}
	}
	if len(single) < 16 {
		return nil, fmt.Errorf("calibrating prompt lengths by %s: only %d of %d words are single tokens for this model; prompts cannot be built to an exact length", method, len(single), len(words))
	}
	v := &Vocab{Words: single, Method: method}
	// Overhead: a sample prompt's count minus its words, checked twice.
	rng := rand.New(rand.NewPCG(7, 7))
	for _, n := range []int{16, 200} {
		c, err := count(ctx, v.Text(rng, n))
		if err != nil {
			return nil, fmt.Errorf("calibrating prompt lengths by %s: %w", method, err)
		}
		if o := c - n; n == 16 {
			v.Overhead = o
		} else if o != v.Overhead {
			return nil, fmt.Errorf("calibrating prompt lengths by %s: overhead is not constant (%d tokens for 16 words, %d for 200)", method, v.Overhead, o)
		}
	}
	return v, nil
}

// tokenizeCount asks the server's /tokenize (vLLM, SGLang, llama.cpp).
func (t *Target) tokenizeCount(ctx context.Context, text string) (int, error) {
	body := map[string]any{"model": t.Model}
	if t.Endpoint == Chat {
		body["messages"] = []map[string]string{{"role": "user", "content": text}}
	} else {
		body["prompt"] = text
	}
	var out struct {
		Count  *int              `json:"count"`
		Tokens []json.RawMessage `json:"tokens"`
	}
	if err := t.postJSON(ctx, "/tokenize", body, &out); err != nil {
		if t.Endpoint == Chat {
			return 0, err
		}
		// llama.cpp's /tokenize takes "content".
		if err2 := t.postJSON(ctx, "/tokenize", map[string]any{"content": text}, &out); err2 != nil {
			return 0, err
		}
	}
	if out.Count != nil {
		return *out.Count, nil
	}
	if out.Tokens != nil {
		return len(out.Tokens), nil
	}
	return 0, errors.New("/tokenize answered without count or tokens")
}

// probeCount sends the prompt with max_tokens 1 and reads usage.prompt_tokens.
func (t *Target) probeCount(ctx context.Context, text string) (int, error) {
	probe := *t
	probe.Stream = false
	r := probe.Do(ctx, Request{Prompt: text, MaxTokens: 1})
	if r.Err != nil {
		return 0, fmt.Errorf("probe request: %w", r.Err)
	}
	if !r.UsageReported || r.InputTokens <= 0 {
		return 0, errors.New("the server reports no usage.prompt_tokens")
	}
	return r.InputTokens, nil
}

func (t *Target) postJSON(ctx context.Context, path string, body any, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	// A small answer: the stall timeout bounds the whole exchange, so a
	// server that never answers /tokenize cannot hang calibration.
	if d := t.StallTimeout; d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, d, fmt.Errorf("no answer within %v (the stall timeout)", d))
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(t.BaseURL, "/")+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range t.Headers {
		req.Header.Set(k, v)
	}
	if t.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+t.APIKey)
	}
	client := t.HTTP
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		if c := context.Cause(ctx); c != nil && ctx.Err() != nil {
			err = c
		}
		return fmt.Errorf("POST %s: %w", path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("POST %s: reading answer: %w", path, err)
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s: %w", path, &HTTPError{Status: resp.StatusCode, Body: errorMessage(data)})
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("POST %s: %w", path, err)
	}
	return nil
}
