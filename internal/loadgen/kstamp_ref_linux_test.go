package loadgen

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The reference server: a minimal streaming completions server in a child
// process (this test binary re-executed), so that it shares the cores but
// not the Go runtime with the client, as a real server does. It writes
// pre-built SSE events on a fixed schedule and records, for every event,
// the wall clock just before and just after its write: on loopback the
// data reaches the client's socket inside that write, so its true
// arrival lies between the two.

const refChildEnv = "BENCHRUN_KSTAMP_REF_CHILD"

// refWrite is one event's write: wall clock (Unix ns) before and after.
type refWrite struct{ Before, After int64 }

// refRecord is one request as the reference server saw it.
type refRecord struct {
	Addr   string // the client's address: one per connection
	Writes []refWrite
}

// TestKstampRefChild is the child's entry point; it does nothing in a
// normal test run.
func TestKstampRefChild(t *testing.T) {
	spec := os.Getenv(refChildEnv)
	if spec == "" {
		t.Skip("the reference server's child process entry point")
	}
	os.Exit(refChild(spec))
}

// refChild serves with "ttft,itl" from spec on a free port, prints the
// address, and exits when stdin closes.
func refChild(spec string) int {
	parts := strings.Split(spec, ",")
	ttft, _ := time.ParseDuration(parts[0])
	itl, _ := time.ParseDuration(parts[1])
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(ln.Addr().String())
	go func() {
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	var (
		mu   sync.Mutex
		recs = map[string]refRecord{}
		seq  atomic.Int64
	)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			MaxTokens int `json:"max_tokens"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.MaxTokens <= 0 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		id := "ref-" + strconv.FormatInt(seq.Add(1), 10)
		events := make([][]byte, body.MaxTokens)
		for k := range events {
			fin := "null"
			if k == body.MaxTokens-1 {
				fin = `"length"`
			}
			events[k] = fmt.Appendf(nil, `data: {"id":%q,"object":"text_completion","model":"sim-llama","choices":[{"index":0,"text":" tok","finish_reason":%s}]}`+"\n\n", id, fin)
		}
		tail := fmt.Appendf(nil, `data: {"id":%q,"choices":[],"usage":{"prompt_tokens":4,"completion_tokens":%d}}`+"\n\ndata: [DONE]\n\n", id, body.MaxTokens)
		ws := make([]refWrite, 0, len(events))
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fl := w.(http.Flusher)
		fl.Flush()
		start := time.Now()
		for k, ev := range events {
			// Each event at its own planned instant, so that a late write
			// does not move the ones after it.
			time.Sleep(time.Until(start.Add(ttft + time.Duration(k)*itl)))
			b := time.Now().UnixNano()
			if _, err := w.Write(ev); err != nil {
				return
			}
			fl.Flush()
			ws = append(ws, refWrite{b, time.Now().UnixNano()})
		}
		w.Write(tail)
		fl.Flush()
		mu.Lock()
		recs[id] = refRecord{Addr: r.RemoteAddr, Writes: ws}
		mu.Unlock()
	})
	mux.HandleFunc("GET /records", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		json.NewEncoder(w).Encode(recs)
		clear(recs)
	})
	_ = (&http.Server{Handler: mux}).Serve(ln)
	return 0
}

// startRefServer starts the reference server and returns its base URL.
func startRefServer(tb testing.TB, ttft, itl time.Duration) string {
	tb.Helper()
	addr, _ := startChild(tb, "^TestKstampRefChild$", refChildEnv+"="+ttft.String()+","+itl.String(), "reference server")
	return "http://" + addr
}

// refRecords fetches (and clears) the reference server's write records.
func refRecords(tb testing.TB, url string) map[string]refRecord {
	tb.Helper()
	resp, err := http.Get(url + "/records")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	var recs map[string]refRecord
	if err := json.NewDecoder(resp.Body).Decode(&recs); err != nil {
		tb.Fatal(err)
	}
	return recs
}
