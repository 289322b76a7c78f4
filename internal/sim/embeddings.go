package sim

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

type embeddingsRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     *int            `json:"dimensions"`
}

// embInput is one embeddings input: its token ids (what it costs) and
// its text ("" for token ids), which its vector is derived from.
type embInput struct {
	ids  []int
	text string
}

// parseInputs accepts a string, a list of strings, token ids, or a list of
// token-id lists.
func (s *Server) parseInputs(raw json.RawMessage) ([]embInput, error) {
	var str string
	if err := json.Unmarshal(raw, &str); err == nil {
		return []embInput{{s.inputTokens(str), str}}, nil
	}
	var strs []string
	if err := json.Unmarshal(raw, &strs); err == nil {
		out := make([]embInput, len(strs))
		for i, str := range strs {
			out[i] = embInput{s.inputTokens(str), str}
		}
		return out, nil
	}
	var ids []int
	if err := json.Unmarshal(raw, &ids); err == nil {
		return []embInput{{ids: ids}}, nil
	}
	var idss [][]int
	if err := json.Unmarshal(raw, &idss); err == nil {
		out := make([]embInput, len(idss))
		for i, ids := range idss {
			out[i] = embInput{ids: ids}
		}
		return out, nil
	}
	return nil, errors.New("input must be a string, a list of strings, token ids, or lists of token ids")
}

// llamaEmbeddingsRefusal is what llama-server answers on /v1/embeddings
// when it cannot embed: started without --embeddings (501, its
// ERROR_TYPE_NOT_SUPPORTED) or with --pooling none (400: an unpooled
// model has one vector per token, which OpenAI's shape cannot carry).
// The messages are llama.cpp's own.
func (s *Server) llamaEmbeddingsRefusal() (int, string) {
	if !s.persona.embedsOnRequest {
		return 0, ""
	}
	if !s.cfg.Embeddings {
		return http.StatusNotImplemented, "This server does not support embeddings. Start it with `--embeddings`"
	}
	if s.cfg.Pooling == "none" {
		return http.StatusBadRequest, "Pooling type 'none' is not OAI compatible. Please use a different pooling type"
	}
	return 0, ""
}

// inputTokens tokenizes one embeddings input (no tokens for a blank one,
// BOS or not).
func (s *Server) inputTokens(text string) []int {
	if !s.persona.subword {
		return Tokenize(text)
	}
	if CountTokens(text) == 0 {
		return nil
	}
	return s.promptTokens(text)
}

func (s *Server) handleEmbeddings(w http.ResponseWriter, r *http.Request) {
	received := arrivalOf(r, time.Now())
	n := s.seq.Add(1)
	rec := &record{base: s.started, r: RequestRecord{
		Seq: n, ID: "embd-" + strconv.FormatUint(n, 10), Endpoint: epEmbeddings,
		Received: received, ReceivedUnixNano: s.unixNano(received), RemoteAddr: r.RemoteAddr,
	}}
	s.records.add(rec)
	fail := func(status int, typ, msg string) {
		s.metrics.errors.Add(1)
		rec.update(func(r *RequestRecord) { r.Status, r.Error, r.Finished = status, msg, time.Now() })
		s.writeErr(w, status, typ, msg)
	}
	if code, msg := s.llamaEmbeddingsRefusal(); code != 0 {
		fail(code, "", msg)
		return
	}
	var req embeddingsRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody)).Decode(&req); err != nil {
		fail(http.StatusBadRequest, "BadRequestError", "invalid JSON body: "+err.Error())
		return
	}
	model, ok := s.resolveModel(w, req.Model)
	if !ok {
		rec.update(func(r *RequestRecord) { r.Status, r.Finished = http.StatusNotFound, time.Now() })
		return
	}
	plan, err := s.planEmbeddings(&req)
	if err != nil {
		fail(http.StatusBadRequest, "BadRequestError", err.Error())
		return
	}
	inputs, total := plan.inputs, plan.total
	f, err := s.pickFaults(r, n)
	if err != nil {
		fail(http.StatusBadRequest, "BadRequestError", err.Error())
		return
	}
	rec.update(func(r *RequestRecord) { r.Model, r.PromptTokens, r.Fault = model, total, f.String() })
	if s.faultBeforeAnswer(w, r, rec, false, f, fail) {
		return
	}
	ctx := r.Context()

	s.inflight.Add(1)
	s.inflightT.Add(int64(total))
	defer func() {
		s.inflight.Add(-1)
		s.inflightT.Add(-int64(total))
	}()
	// Engine mode: each input is a prefill-only sequence sharing the batch
	// with generation; fixed mode: the response comes after TTFT.
	start := received
	if at := s.modelReady(); at.After(received) {
		if !s.sleep(ctx, time.Until(at)) {
			s.finishAbort(rec, "client gone or shutdown while loading the model")
			s.abortIfClosing()
			return
		}
		start = at
	}
	if s.engine != nil {
		srcs := make([]*engineSource, len(inputs))
		for i, in := range inputs {
			q := newSeq(len(in.ids), s.hashesFor(in.ids), 0)
			srcs[i] = &engineSource{s: s, q: q, stopAfter: context.AfterFunc(ctx, q.signal)}
			srcs[i].closed = !s.engine.submit(q)
		}
		defer func() {
			for _, src := range srcs {
				src.close()
			}
		}()
		for _, src := range srcs {
			if _, _, err := src.next(ctx); err != nil {
				s.finishAbort(rec, err.Error())
				s.abortIfClosing()
				return
			}
		}
	} else if d := time.Until(start.Add(s.cfg.TTFT)); d > 0 && !s.sleep(ctx, d) {
		s.finishAbort(rec, "client gone or shutdown")
		s.abortIfClosing()
		return
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

	body, err := s.embeddingsBody(rec.r.ID, model, plan, f)
	if err != nil {
		fail(http.StatusInternalServerError, "InternalServerError", err.Error())
		return
	}
	if f.malformed {
		body = body[:len(body)/2]
	}
	w.Header().Set("Content-Type", "application/json")
	now := time.Now() // stamped before the write, as for streams
	w.WriteHeader(http.StatusOK)
	_, werr := w.Write(append(body, '\n'))
	s.metrics.promptTokens.Add(uint64(total))
	s.metrics.e2e.observe(now.Sub(received))
	rec.addEvent(now, 0)
	rec.update(func(r *RequestRecord) {
		r.Status, r.FinishReason, r.Finished = http.StatusOK, "stop", now
		if werr != nil {
			r.Error = werr.Error()
		}
	})
}

// embeddingsPlan is a validated embeddings request.
type embeddingsPlan struct {
	inputs []embInput
	dim    int    // the length of each vector: the request's dimensions, or the model's
	format string // encoding_format: "", "float" or "base64"
	total  int    // prompt tokens over all inputs
}

// planEmbeddings checks a decoded request's input and options; the error
// is the 400's message.
func (s *Server) planEmbeddings(req *embeddingsRequest) (embeddingsPlan, error) {
	inputs, err := s.parseInputs(req.Input)
	if err != nil {
		return embeddingsPlan{}, err
	}
	if len(inputs) == 0 {
		return embeddingsPlan{}, errors.New("input must not be empty")
	}
	dim := s.cfg.EmbeddingDim
	if req.Dimensions != nil {
		if *req.Dimensions < 1 || *req.Dimensions > s.cfg.EmbeddingDim {
			return embeddingsPlan{}, errors.New("dimensions must be in [1, " + strconv.Itoa(s.cfg.EmbeddingDim) + "]")
		}
		dim = *req.Dimensions
	}
	if req.EncodingFormat != "" && req.EncodingFormat != "float" && req.EncodingFormat != "base64" {
		return embeddingsPlan{}, errors.New("encoding_format must be float or base64")
	}
	total := 0
	for i, inp := range inputs {
		in := inp.ids
		if len(in) == 0 {
			return embeddingsPlan{}, errors.New("input[" + strconv.Itoa(i) + "] is empty")
		}
		if len(in) > s.cfg.MaxModelLen {
			return embeddingsPlan{}, errors.New("input[" + strconv.Itoa(i) + "] has " + strconv.Itoa(len(in)) +
				" tokens, over the maximum context length of " + strconv.Itoa(s.cfg.MaxModelLen))
		}
		total += len(in)
	}
	return embeddingsPlan{inputs: inputs, dim: dim, format: req.EncodingFormat, total: total}, nil
}

// embeddingsBody is the JSON answer to an embeddings request, with f's
// vector fault applied to the batch's last vector.
func (s *Server) embeddingsBody(id, model string, plan embeddingsPlan, f faults) ([]byte, error) {
	data := make([]map[string]any, len(plan.inputs))
	for i, in := range plan.inputs {
		vec := embed(in, plan.dim)
		if i == len(plan.inputs)-1 {
			// The last vector of the batch: a check that reads only the
			// first would miss it.
			vec = f.badVector(vec)
		}
		var v any = floatArray(vec)
		if plan.format == "base64" {
			buf := make([]byte, 4*len(vec))
			for j, x := range vec {
				binary.LittleEndian.PutUint32(buf[4*j:], math.Float32bits(x))
			}
			v = base64.StdEncoding.EncodeToString(buf)
		}
		data[i] = map[string]any{"object": "embedding", "index": i, "embedding": v}
	}
	return json.Marshal(map[string]any{
		"id": id, "object": "list", "created": s.created, "model": model, "data": data,
		"usage": map[string]int{"prompt_tokens": plan.total, "total_tokens": plan.total},
	})
}

// embed derives a unit vector from the input's words: the sum of one
// pseudo-random vector per word (lower-cased), normalised. It depends on
// the text alone, not on the seed, the personality or its tokenizer, so
// reference vectors recorded from one simulator hold for every other; the
// same text always gets the same vector, texts sharing words get similar
// ones, and unrelated texts nearly orthogonal ones. Token-id inputs use
// their ids as the words. A shorter `dimensions` is the full vector
// truncated and renormalised (Matryoshka style), as the elements are
// independent.
func embed(in embInput, dim int) []float32 {
	var keys []uint64
	if in.text != "" {
		for _, w := range strings.Fields(strings.ToLower(in.text)) {
			h := uint64(0xcbf29ce484222325)
			for k := 0; k < len(w); k++ {
				h = (h ^ uint64(w[k])) * 1099511628211
			}
			keys = append(keys, h)
		}
	}
	if len(keys) == 0 {
		for _, id := range in.ids {
			keys = append(keys, mix(uint64(id)^0x1d1d))
		}
	}
	acc := make([]float64, dim)
	for _, k := range keys {
		for i := range acc {
			acc[i] += unitFloat(mix(k+uint64(i)))*2 - 1
		}
	}
	var norm float64
	for _, x := range acc {
		norm += x * x
	}
	norm = math.Sqrt(norm)
	vec := make([]float32, dim)
	for i, x := range acc {
		vec[i] = float32(x / norm)
	}
	return vec
}

// floatArray is a vector in the float encoding, written the way
// llama.cpp (nlohmann::json) and TEI (serde_json) write one: a NaN or an
// infinity becomes null, since JSON has no number for it.
type floatArray []float32

// MarshalJSON implements json.Marshaler.
func (v floatArray) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 12*len(v)+2)
	b = append(b, '[')
	for i, x := range v {
		if i > 0 {
			b = append(b, ',')
		}
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			b = append(b, "null"...)
			continue
		}
		b = strconv.AppendFloat(b, float64(x), 'g', -1, 32)
	}
	return append(b, ']'), nil
}

// badVector applies the request's vector fault, if any: all zeros (a
// broken pooling), a NaN (an overflow in a quantized model) or a vector
// of the wrong length.
func (f faults) badVector(vec []float32) []float32 {
	switch {
	case f.embedZero:
		return make([]float32, len(vec))
	case f.embedNaN:
		vec[len(vec)/2] = float32(math.NaN())
	case f.embedDim > 0:
		out := make([]float32, f.embedDim)
		copy(out, vec)
		return out
	}
	return vec
}
