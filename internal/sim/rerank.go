package sim

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// rerankRequest is the rerank API's body (vLLM, llama-server, TEI, Cohere):
// a query, documents as strings or {text} objects, and top_n.
type rerankRequest struct {
	Model     string            `json:"model"`
	Query     string            `json:"query"`
	Documents []json.RawMessage `json:"documents"`
	TopN      int               `json:"top_n"`
}

// handleRerank scores each document against the query. The answer comes
// after TTFT whatever the load (fixed mode's one latency: what a
// reranker's test checks is that every document was scored and the time
// read, not a batching model), and each score is the same for the same
// query and document whatever the order or the load.
func (s *Server) handleRerank(w http.ResponseWriter, r *http.Request) {
	received := arrivalOf(r, time.Now())
	n := s.seq.Add(1)
	rec := &record{base: s.started, r: RequestRecord{
		Seq: n, ID: "rerank-" + strconv.FormatUint(n, 10), Endpoint: epRerank,
		Received: received, ReceivedUnixNano: s.unixNano(received), RemoteAddr: r.RemoteAddr,
	}}
	s.records.add(rec)
	fail := func(status int, typ, msg string) {
		s.metrics.errors.Add(1)
		rec.update(func(r *RequestRecord) { r.Status, r.Error, r.Finished = status, msg, time.Now() })
		s.writeErr(w, status, typ, msg)
	}
	var req rerankRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody)).Decode(&req); err != nil {
		fail(http.StatusBadRequest, "BadRequestError", "invalid JSON body: "+err.Error())
		return
	}
	model, ok := s.resolveModel(w, req.Model)
	if !ok {
		rec.update(func(r *RequestRecord) { r.Status, r.Finished = http.StatusNotFound, time.Now() })
		return
	}
	docs, err := rerankDocuments(req)
	if err != nil {
		fail(http.StatusBadRequest, "BadRequestError", err.Error())
		return
	}
	f, err := s.pickFaults(r, n)
	if err != nil {
		fail(http.StatusBadRequest, "BadRequestError", err.Error())
		return
	}
	total := len(s.inputTokens(req.Query))
	for _, d := range docs {
		total += len(s.inputTokens(d))
	}
	rec.update(func(r *RequestRecord) { r.Model, r.PromptTokens, r.Fault = model, total, f.String() })
	if s.faultBeforeAnswer(w, r, rec, false, f, fail) {
		return
	}
	if d := time.Until(received.Add(s.cfg.TTFT)); d > 0 && !s.sleep(r.Context(), d) {
		s.finishAbort(rec, "client gone or shutdown")
		s.abortIfClosing()
		return
	}
	b, err := json.Marshal(s.rerankBody(rec.r.ID, model, req, docs, total))
	if err != nil {
		fail(http.StatusInternalServerError, "InternalServerError", err.Error())
		return
	}
	if f.malformed {
		b = b[:len(b)/2]
	}
	w.Header().Set("Content-Type", "application/json")
	now := time.Now()
	w.WriteHeader(http.StatusOK)
	_, werr := w.Write(append(b, '\n'))
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

// rerankDocuments are the request's documents' texts.
func rerankDocuments(req rerankRequest) ([]string, error) {
	if req.Query == "" {
		return nil, errors.New("query is required")
	}
	if len(req.Documents) == 0 {
		return nil, errors.New("documents must not be empty")
	}
	if req.TopN < 0 {
		return nil, errors.New("top_n must not be negative")
	}
	docs := make([]string, len(req.Documents))
	for i, raw := range req.Documents {
		if json.Unmarshal(raw, &docs[i]) == nil {
			continue
		}
		var d struct {
			Text *string `json:"text"`
		}
		if json.Unmarshal(raw, &d) != nil || d.Text == nil {
			return nil, errors.New("documents[" + strconv.Itoa(i) + "]: want a string or {text}")
		}
		docs[i] = *d.Text
	}
	return docs, nil
}

// rerankBody is vLLM's answer: results best first, top_n of them, each
// with its index and relevance_score, and usage {total_tokens}.
func (s *Server) rerankBody(id, model string, req rerankRequest, docs []string, total int) map[string]any {
	type result struct {
		Index    int               `json:"index"`
		Document map[string]string `json:"document"`
		Score    float64           `json:"relevance_score"`
	}
	q := s.promptTokens(req.Query)
	qh := uint64(0xcbf29ce484222325)
	for _, id := range q {
		qh = (qh ^ uint64(id)) * 1099511628211
	}
	out := make([]result, len(docs))
	for i, d := range docs {
		h := qh
		for _, b := range []byte(d) {
			h = (h ^ uint64(b)) * 1099511628211
		}
		out[i] = result{Index: i, Document: map[string]string{"text": d}, Score: unitFloat(mix(s.seedHash ^ h))}
	}
	slices.SortStableFunc(out, func(a, b result) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return 0
	})
	if req.TopN > 0 && req.TopN < len(out) {
		out = out[:req.TopN]
	}
	return map[string]any{"id": id, "model": model, "usage": map[string]int{"total_tokens": total}, "results": out}
}
