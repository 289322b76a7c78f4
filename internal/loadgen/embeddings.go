package loadgen

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"sync/atomic"
)

// Dimension is the vector length every embeddings answer of a target must
// have: the plan's (NewDimension(n)) or, from 0, the first answer's, so
// a server that changes its mind mid-run is caught either way.
type Dimension struct{ n atomic.Int64 }

// NewDimension expects vectors of n elements (0: learn it from the first
// answer).
func NewDimension(n int) *Dimension {
	d := &Dimension{}
	d.n.Store(int64(n))
	return d
}

// Get is the expected length (0: no answer yet).
func (d *Dimension) Get() int { return int(d.n.Load()) }

// check holds n against the expected length, learning it when unset.
func (d *Dimension) check(n int) (want int, ok bool) {
	if d.n.CompareAndSwap(0, int64(n)) {
		return n, true
	}
	want = int(d.n.Load())
	return want, want == n
}

// VectorError: an embedding the server sent cannot be a real one (wrong
// length, all zeros, not finite), or the answer carried the wrong number
// of them. A quantized model that overflowed, a broken pooling or a
// truncated batch answers 200 with such vectors; counted as served they
// made a broken server look fast.
type VectorError struct {
	Index, Of int
	Detail    string
}

func (e *VectorError) Error() string {
	if e.Index < 0 {
		return "bad embeddings answer: " + e.Detail
	}
	return fmt.Sprintf("bad embedding %d of %d: %s", e.Index+1, e.Of, e.Detail)
}

// checkVectors decodes the answer's vectors (float or base64 encoding),
// checks each one, and fills Vectors, Dimensions and, with references,
// Cosines.
func (t *Target) checkVectors(b []byte, req Request, res *Result) error {
	var body struct {
		Data []struct {
			Index     *int            `json:"index"`
			Embedding json.RawMessage `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &body); err != nil {
		return fmt.Errorf("malformed embeddings response: %w", err)
	}
	want := 1
	if req.Inputs != nil {
		want = len(req.Inputs)
	}
	n := len(body.Data)
	if n != want {
		return &VectorError{Index: -1, Detail: fmt.Sprintf("%d vectors for %d inputs", n, want)}
	}
	vecs := make([][]float32, n)
	for k, d := range body.Data {
		i := k
		if d.Index != nil {
			i = *d.Index
		}
		if i < 0 || i >= n || vecs[i] != nil {
			return &VectorError{Index: -1, Detail: fmt.Sprintf("data[%d] has index %d (want each of 0..%d once)", k, i, n-1)}
		}
		v, err := parseVector(d.Embedding)
		if err != nil {
			return &VectorError{Index: i, Of: n, Detail: err.Error()}
		}
		vecs[i] = v
	}
	for i, v := range vecs {
		if err := vectorProblem(v); err != "" {
			return &VectorError{Index: i, Of: n, Detail: err}
		}
		if t.Dimension != nil {
			if d, ok := t.Dimension.check(len(v)); !ok {
				return &VectorError{Index: i, Of: n, Detail: fmt.Sprintf("%d dimensions, want %d", len(v), d)}
			}
		}
	}
	res.Vectors, res.Dimensions = n, len(vecs[0])
	for i, ref := range req.References {
		if ref == nil || i >= n {
			continue
		}
		if len(ref) != len(vecs[i]) {
			return &VectorError{Index: i, Of: n, Detail: fmt.Sprintf("%d dimensions, its reference vector %d", len(vecs[i]), len(ref))}
		}
		res.Cosines = append(res.Cosines, Cosine(vecs[i], ref))
	}
	return nil
}

// vectorProblem says what is wrong with a vector ("" when nothing).
func vectorProblem(v []float32) string {
	if len(v) == 0 {
		return "empty vector"
	}
	zero := true
	for j, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Sprintf("element %d is not finite (%v)", j, x)
		}
		zero = zero && x == 0
	}
	if zero {
		return fmt.Sprintf("all %d elements are zero", len(v))
	}
	return ""
}

// parseVector reads one embedding: a JSON array of numbers, where null
// (what llama.cpp's and TEI's JSON writers make of a NaN or an infinity)
// reads as NaN so the check names it, or base64 of little-endian float32s.
func parseVector(raw []byte) ([]float32, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, fmt.Errorf("no embedding")
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("embedding: %w", err)
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil || len(b)%4 != 0 {
			return nil, fmt.Errorf("base64 embedding of %d bytes is not float32s (%v)", len(b), err)
		}
		v := make([]float32, len(b)/4)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		return v, nil
	}
	if raw[0] != '[' || raw[len(raw)-1] != ']' {
		return nil, fmt.Errorf("embedding is neither an array nor base64: %s", truncate(raw, 40))
	}
	body := bytes.TrimSpace(raw[1 : len(raw)-1])
	if len(body) == 0 {
		return nil, nil
	}
	v := make([]float32, 0, bytes.Count(body, []byte{','})+1)
	for len(body) > 0 {
		tok := body
		if i := bytes.IndexByte(body, ','); i >= 0 {
			tok, body = body[:i], body[i+1:]
		} else {
			body = nil
		}
		tok = bytes.TrimSpace(tok)
		switch string(tok) {
		case "null", "NaN", "Infinity", "-Infinity":
			v = append(v, float32(math.NaN()))
			continue
		}
		x, err := strconv.ParseFloat(string(tok), 32)
		if err != nil {
			return nil, fmt.Errorf("element %d: %q is not a number", len(v), truncate(tok, 20))
		}
		v = append(v, float32(x))
	}
	return v, nil
}

// Cosine is the cosine similarity of two vectors of one length (0 when
// either is all zeros).
func Cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		dot += x * y
		na += x * x
		nb += y * y
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}
