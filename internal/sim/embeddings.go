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
	"time"
)

type embeddingsRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     *int            `json:"dimensions"`
}

// parseInputs accepts a string, a list of strings, token ids, or a list of
// token-id lists, and returns each input's token ids.
func (s *Server) parseInputs(raw json.RawMessage) ([][]int, error) {
	var str string
	if err := json.Unmarshal(raw, &str); err == nil {
		return [][]int{s.inputTokens(str)}, nil
	}
	var strs []string
	if err := json.Unmarshal(raw, &strs); err == nil {
		out := make([][]int, len(strs))
		for i, str := range strs {
			out[i] = s.inputTokens(str)
		}
		return out, nil
	}
	var ids []int
	if err := json.Unmarshal(raw, &ids); err == nil {
		return [][]int{ids}, nil
	}
	var idss [][]int
	if err := json.Unmarshal(raw, &idss); err == nil {
		return idss, nil
	}
	return nil, errors.New("input must be a string, a list of strings, token ids, or lists of token ids")
}

// inputTokens tokenizes one embeddings input (no tokens for a blank one,
// BOS or not).
func (s *Server) inputTokens(text string) []int {
	if s.persona == PersonaGeneric {
		return Tokenize(text)
	}
	if CountTokens(text) == 0 {
		return nil
	}
	return s.promptTokens(text)
}

func (s *Server) handleEmbeddings(w http.ResponseWriter, r *http.Request) {
	received := time.Now()
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
	inputs, err := s.parseInputs(req.Input)
	if err != nil {
		fail(http.StatusBadRequest, "BadRequestError", err.Error())
		return
	}
	if len(inputs) == 0 {
		fail(http.StatusBadRequest, "BadRequestError", "input must not be empty")
		return
	}
	dim := s.cfg.EmbeddingDim
	if req.Dimensions != nil {
		if *req.Dimensions < 1 || *req.Dimensions > s.cfg.EmbeddingDim {
			fail(http.StatusBadRequest, "BadRequestError", "dimensions must be in [1, "+strconv.Itoa(s.cfg.EmbeddingDim)+"]")
			return
		}
		dim = *req.Dimensions
	}
	if req.EncodingFormat != "" && req.EncodingFormat != "float" && req.EncodingFormat != "base64" {
		fail(http.StatusBadRequest, "BadRequestError", "encoding_format must be float or base64")
		return
	}
	total := 0
	for i, in := range inputs {
		if len(in) == 0 {
			fail(http.StatusBadRequest, "BadRequestError", "input["+strconv.Itoa(i)+"] is empty")
			return
		}
		if len(in) > s.cfg.MaxModelLen {
			fail(http.StatusBadRequest, "BadRequestError", "input["+strconv.Itoa(i)+"] has "+strconv.Itoa(len(in))+
				" tokens, over the maximum context length of "+strconv.Itoa(s.cfg.MaxModelLen))
			return
		}
		total += len(in)
	}
	f, err := s.pickFaults(r, n)
	if err != nil {
		fail(http.StatusBadRequest, "BadRequestError", err.Error())
		return
	}
	rec.update(func(r *RequestRecord) { r.Model, r.PromptTokens, r.Fault = model, total, f.String() })
	ctx := r.Context()
	if f.slowHeaders > 0 && !s.sleep(ctx, f.slowHeaders) {
		s.finishAbort(rec, "client gone or shutdown during slow headers")
		s.abortIfClosing()
		return
	}
	if f.errCode != 0 {
		typ, msg := errorTypeFor(f.errCode)
		setRetryAfter(w, f.errCode)
		fail(f.errCode, typ, msg)
		return
	}

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
			q := newSeq(len(in), s.hashesFor(in), 0)
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

	data := make([]map[string]any, len(inputs))
	for i, in := range inputs {
		vec := embed(s.seedHash, in, dim)
		var v any = vec
		if req.EncodingFormat == "base64" {
			buf := make([]byte, 4*len(vec))
			for j, x := range vec {
				binary.LittleEndian.PutUint32(buf[4*j:], math.Float32bits(x))
			}
			v = base64.StdEncoding.EncodeToString(buf)
		}
		data[i] = map[string]any{"object": "embedding", "index": i, "embedding": v}
	}
	body, err := json.Marshal(map[string]any{
		"id": rec.r.ID, "object": "list", "created": s.created, "model": model, "data": data,
		"usage": map[string]int{"prompt_tokens": total, "total_tokens": total},
	})
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

// embed derives a unit vector from the tokens and the seed: the same input
// always gets the same vector, and different inputs get unrelated ones.
func embed(seedHash uint64, ids []int, dim int) []float32 {
	h := seedHash
	for _, id := range ids {
		h = mix(h ^ uint64(id))
	}
	vec := make([]float32, dim)
	var norm float64
	for i := range vec {
		x := unitFloat(mix(h+uint64(i)))*2 - 1
		vec[i] = float32(x)
		norm += x * x
	}
	norm = math.Sqrt(norm)
	for i := range vec {
		vec[i] = float32(float64(vec[i]) / norm)
	}
	return vec
}
