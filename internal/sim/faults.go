package sim

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// FaultHeader selects faults for one request, whatever the configured
// rates: a comma-separated list of
//
//	error=CODE        answer CODE (e.g. 500, 429, 503) in OpenAI's error shape
//	drop-after=N      close the connection after N token-bearing events
//	stall=DURATION    write nothing for DURATION ...
//	stall-at=N        ... after N token-bearing events (default 1)
//	malformed         write one malformed SSE event after the first token
//	slow-headers=DUR  delay the response headers by DUR
//	cut-after=N       end the stream cleanly after N token-bearing events:
//	                  no finish_reason, no usage, no [DONE] (Ollama's way
//	                  when its runner dies; under the ollama personality
//	                  drop-after does this too)
//	embed-zero        /v1/embeddings: the batch's last vector is all zeros
//	embed-nan         ... has a NaN (null in the float encoding)
//	embed-dim=N       ... has N elements instead of the dimension
//	trickle=DURATION  answer 200, then one byte every DURATION, never
//	                  ending the body (bytes arrive, so no stall timer fires)
//	endless           answer 200, then a body that never ends, as fast as
//	                  the client reads (streamed: one SSE line with no end)
//	proxy-page        answer 502 with a proxy's HTML error page in latin-1
//	                  (not UTF-8) holding terminal control sequences
//	sse-json-error    answer 200 text/event-stream with a bare JSON error
//	                  object (no data: line)
//	gzip              answer 200 with a gzip-compressed body nobody asked for
//	hang-up=DURATION  read the request, hold it DURATION without a byte of
//	                  answer, then close the connection (a server that
//	                  crashes on the request: the client sees EOF)
//	stream-error=N    /v1/responses and /v1/messages: after N (>= 1)
//	                  token-bearing events, the API's error event
//	                  (response.failed; Messages' error) ends the stream
//	none              no fault, even if rates would pick one
const FaultHeader = "X-Sim-Fault"

// faults is what will go wrong with one request.
type faults struct {
	errCode     int
	dropAfter   int // -1: never
	stall       time.Duration
	stallAt     int
	malformed   bool
	slowHeaders time.Duration
	cutAfter    int // -1: never
	// Embeddings: what is wrong with the batch's last vector.
	embedZero, embedNaN bool
	embedDim            int
	// Bodies that never end.
	trickle time.Duration
	endless bool
	// A proxy's error page instead of the server's answer.
	proxyPage bool
	// A bare JSON error where a stream was due; a body compressed anyway.
	sseJSONError, gzipBody bool
	// The request held this long, then its connection closed with no
	// answer: what a client of a crashing server sees.
	hangUp time.Duration
	// streamError: the API's error event after this many token events
	// (0: none).
	streamError int
	// hugeHeader is the size of a header answered before anything else
	// (a server or proxy that writes headers without end): a client must
	// bound what it reads of them.
	hugeHeader int
}

// maxHugeHeader bounds the huge-header fault: the simulator holds the
// header whole to write it.
const maxHugeHeader = 256 << 20

func noFaults() faults { return faults{dropAfter: -1, cutAfter: -1} }

func (f faults) String() string {
	var parts []string
	if f.errCode != 0 {
		parts = append(parts, "error="+strconv.Itoa(f.errCode))
	}
	if f.dropAfter >= 0 {
		parts = append(parts, "drop-after="+strconv.Itoa(f.dropAfter))
	}
	if f.stall > 0 {
		parts = append(parts, "stall="+f.stall.String(), "stall-at="+strconv.Itoa(f.stallAt))
	}
	if f.malformed {
		parts = append(parts, "malformed")
	}
	if f.slowHeaders > 0 {
		parts = append(parts, "slow-headers="+f.slowHeaders.String())
	}
	if f.cutAfter >= 0 {
		parts = append(parts, "cut-after="+strconv.Itoa(f.cutAfter))
	}
	if f.embedZero {
		parts = append(parts, "embed-zero")
	}
	if f.embedNaN {
		parts = append(parts, "embed-nan")
	}
	if f.embedDim > 0 {
		parts = append(parts, "embed-dim="+strconv.Itoa(f.embedDim))
	}
	if f.trickle > 0 {
		parts = append(parts, "trickle="+f.trickle.String())
	}
	if f.endless {
		parts = append(parts, "endless")
	}
	if f.proxyPage {
		parts = append(parts, "proxy-page")
	}
	if f.sseJSONError {
		parts = append(parts, "sse-json-error")
	}
	if f.gzipBody {
		parts = append(parts, "gzip")
	}
	if f.hangUp > 0 {
		parts = append(parts, "hang-up="+f.hangUp.String())
	}
	if f.hugeHeader > 0 {
		parts = append(parts, "huge-header="+strconv.Itoa(f.hugeHeader))
	}
	if f.streamError > 0 {
		parts = append(parts, "stream-error="+strconv.Itoa(f.streamError))
	}
	return strings.Join(parts, ",")
}

// parseFaults parses an X-Sim-Fault value.
func parseFaults(v string) (faults, error) {
	f := noFaults()
	f.stallAt = 1
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" || item == "none" {
			continue
		}
		key, val, hasVal := strings.Cut(item, "=")
		var err error
		if f.setFlag(key) {
			if hasVal {
				err = errors.New("takes no value")
			}
		} else {
			err = f.setValued(key, val)
			if err == nil && !hasVal {
				err = errors.New("needs a value")
			}
		}
		if err != nil {
			return faults{}, fmt.Errorf("%s %q: %w", FaultHeader, item, err)
		}
	}
	return f, nil
}

// setFlag sets the fault named key if it is one that takes no value, and
// reports whether it was.
func (f *faults) setFlag(key string) bool {
	switch key {
	case "malformed":
		f.malformed = true
	case "embed-zero":
		f.embedZero = true
	case "embed-nan":
		f.embedNaN = true
	case "endless":
		f.endless = true
	case "proxy-page":
		f.proxyPage = true
	case "sse-json-error":
		f.sseJSONError = true
	case "gzip":
		f.gzipBody = true
	default:
		return false
	}
	return true
}

// setValued sets the fault named key to val, the part after '='.
func (f *faults) setValued(key, val string) error {
	var err error
	switch key {
	case "error":
		f.errCode, err = strconv.Atoi(val)
		if err == nil && (f.errCode < 400 || f.errCode > 599) {
			err = errors.New("want a 4xx or 5xx status")
		}
	case "drop-after":
		f.dropAfter, err = parseEventCount(val)
	case "stall":
		f.stall, err = time.ParseDuration(val)
	case "stall-at":
		f.stallAt, err = parseEventCount(val)
	case "stream-error":
		f.streamError, err = strconv.Atoi(val)
		if err == nil && f.streamError < 1 {
			err = errors.New("want at least 1 token event before the error")
		}
	case "embed-dim":
		f.embedDim, err = strconv.Atoi(val)
		if err == nil && f.embedDim < 1 {
			err = errors.New("must be at least 1")
		}
	case "trickle":
		f.trickle, err = time.ParseDuration(val)
		if err == nil && f.trickle <= 0 {
			err = errors.New("must be positive")
		}
	case "slow-headers":
		f.slowHeaders, err = time.ParseDuration(val)
	case "cut-after":
		f.cutAfter, err = parseEventCount(val)
	case "hang-up":
		f.hangUp, err = time.ParseDuration(val)
		if err == nil && f.hangUp <= 0 {
			err = errors.New("must be positive")
		}
	case "huge-header":
		f.hugeHeader, err = strconv.Atoi(val)
		if err == nil && (f.hugeHeader < 1 || f.hugeHeader > maxHugeHeader) {
			err = fmt.Errorf("want 1 to %d bytes", maxHugeHeader)
		}
	default:
		err = errors.New("unknown fault")
	}
	return err
}

// parseEventCount parses a number of token-bearing events.
func parseEventCount(val string) (int, error) {
	n, err := strconv.Atoi(val)
	if err == nil && n < 0 {
		err = errors.New("must not be negative")
	}
	return n, err
}

// pickFaults decides the faults of request number n: from the header when
// present, otherwise from the configured rates, drawn from the seed and n so
// that a rerun with the same seed and arrival order fails the same requests.
func (s *Server) pickFaults(r *http.Request, n uint64) (faults, error) {
	if v := r.Header.Get(FaultHeader); v != "" {
		return parseFaults(v)
	}
	c := s.cfg.Faults
	f := noFaults()
	draw := func(salt uint64) float64 { return unitFloat(mix(s.seedHash ^ mix(n*0x9e37+salt))) }
	if c.ErrorRate > 0 && draw(1) < c.ErrorRate {
		f.errCode = c.ErrorCodes[int(mix(s.seedHash^n^0xc0de)%uint64(len(c.ErrorCodes)))]
	}
	if c.DropRate > 0 && draw(2) < c.DropRate {
		f.dropAfter = c.DropAfter
	}
	if c.StallRate > 0 && draw(3) < c.StallRate {
		f.stall, f.stallAt = c.Stall, c.StallAt
	}
	if c.MalformedRate > 0 && draw(4) < c.MalformedRate {
		f.malformed = true
	}
	if c.SlowHeadersRate > 0 && draw(5) < c.SlowHeadersRate {
		f.slowHeaders = c.SlowHeaders
	}
	if c.CutRate > 0 && draw(6) < c.CutRate {
		f.cutAfter = c.CutAfter
	}
	if c.HangUpRate > 0 && draw(7) < c.HangUpRate {
		f.hangUp = c.HangUp
	}
	return f, nil
}

func errorTypeFor(code int) (typ, msg string) {
	switch code {
	case http.StatusTooManyRequests:
		return "rate_limit_error", "Rate limit exceeded (injected by benchrun sim)"
	case http.StatusServiceUnavailable:
		return "unavailable_error", "Server overloaded (injected by benchrun sim)"
	case http.StatusInternalServerError:
		return "InternalServerError", "Internal server error (injected by benchrun sim)"
	}
	return "InjectedError", fmt.Sprintf("Injected error %d (benchrun sim)", code)
}

// setRetryAfter marks the statuses a client should retry after a pause, as
// rate limiters and overloaded servers do.
func setRetryAfter(w http.ResponseWriter, code int) {
	if code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
}

// ProxyPage is the body of the proxy-page fault: a French proxy's 502
// page in latin-1 ("défaillante" with a 0xE9 byte), with an escape
// sequence that would clear a terminal.
const ProxyPage = "<html><body><h1>502 Passerelle d\xe9faillante</h1>\x1b[2J\x1b[32m\u2713 all good\x1b[0m</body></html>"

// faultBeforeAnswer plays f's faults that come before the answer: the
// request held and dropped (hang-up), the headers held back
// (slow-headers), then an error status in place of the answer (fail
// writes it), then the answers that replace the server's
// (hostileAnswer). It reports whether the request is over.
func (s *Server) faultBeforeAnswer(w http.ResponseWriter, r *http.Request, rec *record, stream bool, f faults, fail func(status int, typ, msg string)) bool {
	if f.hangUp > 0 {
		// The request was read (its body decoded); the server then dies
		// on it: no status, no header, the connection closed. A client
		// must count it failed, not resend it as a stale keep-alive
		// connection and record the resend's success.
		s.sleep(r.Context(), f.hangUp)
		s.finishAbort(rec, "fault: hang-up="+f.hangUp.String())
		abortConn()
	}
	if f.slowHeaders > 0 && !s.sleep(r.Context(), f.slowHeaders) {
		s.finishAbort(rec, "client gone or shutdown during slow headers")
		s.abortIfClosing()
		return true
	}
	if f.errCode != 0 {
		typ, msg := errorTypeFor(f.errCode)
		setRetryAfter(w, f.errCode)
		fail(f.errCode, typ, msg)
		return true
	}
	return s.hostileAnswer(w, r, rec, stream, f)
}

// hostileAnswer answers f's faults that replace the server's answer: a
// proxy's error page, or a 200 whose body never ends (until the client
// goes away or the server shuts down). It reports whether it answered.
func (s *Server) hostileAnswer(w http.ResponseWriter, r *http.Request, rec *record, stream bool, f faults) bool {
	if f.hugeHeader > 0 {
		w.Header().Set("X-Sim-Filler", strings.Repeat("a", f.hugeHeader))
		w.WriteHeader(http.StatusOK)
		s.finishAbort(rec, "fault: huge-header="+strconv.Itoa(f.hugeHeader))
		return true
	}
	if f.proxyPage {
		s.metrics.errors.Add(1)
		w.Header().Set("Content-Type", "text/html; charset=iso-8859-1")
		w.WriteHeader(http.StatusBadGateway)
		io.WriteString(w, ProxyPage)
		rec.update(func(r *RequestRecord) {
			r.Status, r.Error, r.Finished = http.StatusBadGateway, "fault: proxy page", time.Now()
		})
		return true
	}
	if f.sseJSONError {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, `{"error":{"message":"the model is overloaded, try again later","type":"server_error"}}`+"\n")
		s.finishAbort(rec, "fault: a bare JSON error where a stream was due")
		return true
	}
	if f.gzipBody {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Content-Encoding", "gzip")
		w.WriteHeader(http.StatusOK)
		zw := gzip.NewWriter(w)
		io.WriteString(zw, "data: {\"choices\":[{\"text\":\" hi\"}]}\n\ndata: [DONE]\n\n")
		zw.Close()
		s.finishAbort(rec, "fault: a compressed body")
		return true
	}
	if f.trickle <= 0 && !f.endless {
		return false
	}
	w.Header().Set("Content-Type", "application/json")
	opening := "{\"choices\":[{\"text\":\""
	if stream {
		w.Header().Set("Content-Type", "text/event-stream")
		opening = "data: " + opening
	}
	w.WriteHeader(http.StatusOK)
	io.WriteString(w, opening)
	flusher, _ := w.(http.Flusher)
	if flusher != nil {
		flusher.Flush()
	}
	ctx := r.Context()
	chunk := []byte(strings.Repeat("a", 32<<10))
	for {
		var err error
		if f.endless {
			_, err = w.Write(chunk)
		} else {
			if !s.sleep(ctx, f.trickle) {
				break
			}
			_, err = w.Write(chunk[:1])
			if flusher != nil {
				flusher.Flush()
			}
		}
		if err != nil || ctx.Err() != nil || s.closed.Err() != nil {
			break
		}
	}
	s.finishAbort(rec, "client gone or shutdown during a body that never ends")
	s.abortIfClosing()
	return true
}
