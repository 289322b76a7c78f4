package sim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/machine"
)

// startSim serves cfg on a loopback listener for the test's lifetime.
func startSim(t testing.TB, cfg Config) (*Server, string) {
	t.Helper()
	s := New(cfg)
	ts := httptest.NewServer(s)
	t.Cleanup(func() {
		s.Close()
		ts.CloseClientConnections()
		ts.Close()
	})
	return s, ts.URL
}

func testClient() *http.Client {
	return &http.Client{
		Timeout: 20 * time.Second, // bounds every test request
		Transport: &http.Transport{
			MaxIdleConnsPerHost: 256,
			DisableCompression:  true,
		},
	}
}

func postJSON(t testing.TB, c *http.Client, url string, body any, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp, data // the caller may expect a cut connection
	}
	return resp, data
}

func getBody(t testing.TB, c *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: read: %v", url, err)
	}
	return resp.StatusCode, string(b)
}

// sseEvent is one parsed "data:" line, with its arrival time.
type sseEvent struct {
	at   time.Time
	data string
}

// streamResult is a whole streamed response as a client saw it.
type streamResult struct {
	status int
	events []sseEvent
	done   bool  // saw [DONE]
	err    error // read error (cut connection)
	body   string
}

// readStream posts body and reads SSE events until EOF. It is a deliberately
// small client, independent of internal/loadgen.
func readStream(ctx context.Context, c *http.Client, url string, body any, hdr ...string) streamResult {
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return streamResult{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		return streamResult{err: err}
	}
	defer resp.Body.Close()
	res := streamResult{status: resp.StatusCode}
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(resp.Body)
		res.body = string(data)
		return res
	}
	r := bufio.NewReaderSize(resp.Body, 64<<10)
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			if !errors.Is(err, io.EOF) || !res.done {
				res.err = err
			}
			if errors.Is(err, io.EOF) && !res.done {
				res.err = io.ErrUnexpectedEOF
			}
			return res
		}
		if !bytes.HasPrefix(line, []byte("data: ")) {
			continue
		}
		payload := string(bytes.TrimSpace(line[6:]))
		if payload == "[DONE]" {
			res.done = true
			continue
		}
		res.events = append(res.events, sseEvent{at: time.Now(), data: payload})
	}
}

// chunk is the subset of a streamed chunk the tests look at.
type chunk struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Choices []struct {
		Text  string `json:"text"`
		Delta struct {
			Role    *string `json:"role"`
			Content *string `json:"content"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	} `json:"usage"`
}

func parseChunks(t testing.TB, evs []sseEvent) []chunk {
	t.Helper()
	out := make([]chunk, len(evs))
	for i, e := range evs {
		if err := json.Unmarshal([]byte(e.data), &out[i]); err != nil {
			t.Fatalf("event %d %q: %v", i, e.data, err)
		}
	}
	return out
}

// words builds an n-token prompt.
func words(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "w%d", i)
	}
	return b.String()
}

// within fails the test if f does not become true before d.
func eventually(t testing.TB, d time.Duration, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func newReq(url string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequest(http.MethodPost, url, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	return req, nil
}

// lateness watches how late the machine runs an event loop (a probe
// process beside the test, machine.Probe) while a timing check runs: a
// write the simulator schedules on time can come that much late beside
// busy neighbours, and never early.
type lateness struct {
	probe *machine.Probe
	win   machine.Window
}

// watchLateness starts watching; the probe stops with the test.
func watchLateness(t testing.TB) *lateness {
	t.Helper()
	p, err := machine.StartProbe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop() })
	return &lateness{probe: p, win: p.Begin()}
}

// Max is the latest the machine ran the probe's loop since the watch
// began.
func (l *lateness) Max() time.Duration {
	if m := l.win.End(); m.LateMaxMs != nil {
		return time.Duration(*m.LateMaxMs * float64(time.Millisecond))
	}
	return 0
}
