package sweep

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"strconv"

	"github.com/benchrun/benchrun/internal/loadgen"
	"github.com/benchrun/benchrun/internal/results"
)

// A cell's isl and osl are a fixed length or a distribution each request
// draws from (docs/PLANS.md, Length distributions): the plan writes
// `isl: 128` or `isl: {dist: "lognormal", mean: 128, stddev: 32}`. A
// distribution's cell keeps its mean, rounded, in ISL or OSL (the row's
// isl and osl, the dry run's estimate), and its draws bound by Upper where
// a context or a timeout must hold the longest.

// UnmarshalJSON reads a cell whose isl or osl may be a number or a
// distribution (CUE decodes through it).
func (c *Cell) UnmarshalJSON(b []byte) error {
	type plain Cell // without this method
	var raw struct {
		plain
		ISL json.RawMessage `json:"isl"`
		OSL json.RawMessage `json:"osl"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*c = Cell(raw.plain)
	var err error
	if c.ISL, c.ISLDist, err = decodeLength(raw.ISL); err != nil {
		return fmt.Errorf("isl: %w", err)
	}
	if c.OSL, c.OSLDist, err = decodeLength(raw.OSL); err != nil {
		return fmt.Errorf("osl: %w", err)
	}
	return nil
}

// decodeLength reads a length: a number, or a distribution (with its
// mean, rounded, as the nominal length once it is valid; Validate says
// what is wrong with an invalid one, at its position).
func decodeLength(b json.RawMessage) (int, *loadgen.Lengths, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		var n int
		if len(b) > 0 {
			if err := json.Unmarshal(b, &n); err != nil {
				return 0, nil, err
			}
		}
		return n, nil, nil
	}
	d := &loadgen.Lengths{}
	if err := json.Unmarshal(b, d); err != nil {
		return 0, nil, err
	}
	if d.Check() != nil {
		return 0, d, nil
	}
	return max(int(math.Round(d.Expected())), 1), d, nil
}

// MarshalJSON writes the cell back as the plan wrote it (a distribution
// as one), so that a cell survives a round trip.
func (c Cell) MarshalJSON() ([]byte, error) {
	type plain Cell
	out := struct {
		plain
		ISL any `json:"isl"`
		OSL any `json:"osl"`
	}{plain: plain(c), ISL: c.ISL, OSL: c.OSL}
	if c.ISLDist != nil {
		out.ISL = c.ISLDist
	}
	if c.OSLDist != nil {
		out.OSL = c.OSLDist
	}
	return json.Marshal(out)
}

// drawn reports whether the cell draws a length per request.
func (c Cell) drawn() bool { return c.ISLDist != nil || c.OSLDist != nil }

// islLabel and oslLabel name the cell's lengths: the number, or the
// distribution (lognormal(128,32)).
func (c Cell) islLabel() string { return lengthLabel(c.ISL, c.ISLDist) }
func (c Cell) oslLabel() string { return lengthLabel(c.OSL, c.OSLDist) }

func lengthLabel(n int, d *loadgen.Lengths) string {
	if d != nil {
		return d.Label()
	}
	return strconv.Itoa(n)
}

// shape is the cell's isl:osl as its id and label write it.
func (c Cell) shape() string { return c.islLabel() + ":" + c.oslLabel() }

// maxISL and maxOSL are the longest lengths the cell asks for: what a
// context, a token limit or a request's time bound must allow.
// (A distribution that fails its check is validateLengths' to report:
// here it is its nominal length.)
func (c Cell) maxISL() int {
	if c.ISLDist != nil && c.ISLDist.Check() == nil {
		return c.ISLDist.Upper()
	}
	return c.ISL
}

func (c Cell) maxOSL() int {
	if c.OSLDist != nil && c.OSLDist.Check() == nil {
		return c.OSLDist.Upper()
	}
	return c.OSL
}

// minISL is the shortest prompt the cell asks for.
func (c Cell) minISL() int {
	if c.ISLDist != nil && c.ISLDist.Check() == nil {
		return c.ISLDist.Lower()
	}
	return c.ISL
}

// promptKey is the cell's key for its prompts and draws (PromptSource's
// CellKey): isl<<32 | osl, and a distribution's label mixed in, so a cell
// drawing lengths never shares prompts with a fixed one of its mean.
func (c Cell) promptKey() uint64 {
	k := uint64(c.ISL)<<32 | uint64(c.OSL)
	if c.drawn() {
		h := fnv.New64a()
		h.Write([]byte(c.shape()))
		k ^= h.Sum64()
	}
	return k
}

// drawLengths gives request i of pass its drawn lengths: the prompt's
// (which the prompt source built to it) recorded, and the output's as its
// max_tokens, forced as the cell's fixed osl would be.
func drawLengths(src *loadgen.PromptSource, pass, i int, req loadgen.Request) loadgen.Request {
	if src.ISLDist != nil {
		req.ISL = src.ISLOf(pass, i)
	}
	if src.OSLDist != nil {
		osl := src.OSLOf(pass, i, req.MaxTokens)
		req.OSL, req.MaxTokens = osl, osl
		if req.ExpectTokens > 0 {
			req.ExpectTokens = osl
			req.Body = maps.Clone(req.Body)
			req.Body["min_tokens"] = osl
		}
	}
	return req
}

// validateLengths checks the cells' distributions and where they may be
// used: text generation from synthetic prompts, one request at a time
// (a conversation, a trace or a dataset brings lengths of its own).
func (s *Stage) validateLengths(bad func([]string, string, ...any)) {
	c := &s.cfg
	for i, cell := range c.Cells {
		for _, f := range []struct {
			name string
			d    *loadgen.Lengths
		}{{"isl", cell.ISLDist}, {"osl", cell.OSLDist}} {
			if f.d == nil {
				continue
			}
			at := []string{"cells", fmt.Sprint(i), f.name}
			if err := f.d.Check(); err != nil {
				bad(at, "%v", err)
				continue
			}
			switch {
			case c.Endpoint != "completions" && c.Endpoint != "chat" && c.Endpoint != "responses" && c.Endpoint != "messages":
				bad(at, "a length distribution needs a text generation endpoint (completions, chat, responses, messages), not %q", c.Endpoint)
			case c.conversation():
				bad(at, "a length distribution is drawn per request; a conversation's turns carry their history: give a fixed %s with turns", f.name)
			case c.Dataset != nil && (f.name == "isl" || s.isTrace()):
				bad(at, "the dataset gives the lengths: drop the distribution or the dataset")
			case len(c.Batch) > 0 || len(c.Images) > 0:
				bad(at, "a length distribution is drawn per request of one prompt: drop batch and images")
			}
		}
	}
}

// upperNote says, of a cell drawing its lengths, that a limit was checked
// against the longest draw ("" for fixed lengths).
func upperNote(c Cell) string {
	if !c.drawn() {
		return ""
	}
	return " (the longest lengths " + c.shape() + " draws)"
}

// checkDrawnPrompts is checkPromptLength for a cell drawing its prompt
// lengths: the completed requests' prompts, as the server counted them,
// must be their draws on average (within a token), else the cell is not
// the distribution asked for.
func checkDrawnPrompts(row *results.Cell, reqs results.Requests) {
	var got, asked float64
	n := 0
	for q := range reqs.All() {
		if q.Status != results.StatusOK || q.ISL == nil {
			continue
		}
		got += float64(q.InputTokens)
		asked += float64(*q.ISL)
		n++
	}
	if n == 0 {
		return
	}
	if d := math.Abs(got-asked) / float64(n); d > 1 {
		row.Status = results.StatusError
		row.Reason = fmt.Sprintf("prompts came out at %.1f tokens on average for draws of %.1f from %s (off by %.1f): the calibration did not hold for this server", got/float64(n), asked/float64(n), row.ISLDist, d)
	}
}
