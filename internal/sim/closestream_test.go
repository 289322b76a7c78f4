package sim

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// sequential sends n requests one after another on a plain Go client, as a
// benchmark client's worker does, and returns the errors it got.
func sequential(t *testing.T, url string, n int, stream bool) []error {
	t.Helper()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	var errs []error
	for range n {
		status, _, err := readToEnd(c, url+"/v1/completions", map[string]any{"prompt": "a b", "max_tokens": 3, "ignore_eos": true, "stream": stream})
		if err == nil && status != 200 {
			err = fmt.Errorf("status %d", status)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

func remoteAddrs(s *Server) map[string]bool {
	out := map[string]bool{}
	for _, r := range s.Records() {
		out[r.RemoteAddr] = true
	}
	return out
}

func TestCloseAfterStream(t *testing.T) {
	// llama-server closes the connection after every stream while saying
	// keep-alive: a Go client reuses it and the next request fails.
	s, url := personaSim(t, PersonaLlamaServer)
	errs := sequential(t, url, 50, true)
	if len(errs) == 0 {
		t.Fatal("no request failed: the connection was not closed after the stream")
	}
	for _, err := range errs {
		msg := err.Error()
		if !strings.Contains(msg, "EOF") && !strings.Contains(msg, "server closed idle connection") && !strings.Contains(msg, "connection reset") {
			t.Fatalf("unexpected error: %v", err)
		}
	}
	recs := s.Records()
	if len(recs) != 50-len(errs) {
		t.Fatalf("%d records for %d successes: a request on a closed connection was read", len(recs), 50-len(errs))
	}
	if n := len(remoteAddrs(s)); n != len(recs) {
		t.Fatalf("%d connections for %d streams: each stream must have had its own", n, len(recs))
	}
	t.Logf("%d of 50 sequential streamed requests failed: %v", len(errs), errs[0])

	// Non-streamed responses keep the connection, as net/http does.
	s, url = personaSim(t, PersonaLlamaServer)
	if errs := sequential(t, url, 20, false); len(errs) != 0 {
		t.Fatalf("non-streamed: %v", errs)
	}
	if n := len(remoteAddrs(s)); n != 1 {
		t.Fatalf("non-streamed used %d connections", n)
	}

	// Off, nothing fails and one connection serves every stream.
	s, url = personaSim(t, PersonaLlamaServer, func(cfg *Config) { cfg.CloseAfterStream = false })
	if errs := sequential(t, url, 50, true); len(errs) != 0 {
		t.Fatalf("close-after-stream off: %d failures: %v", len(errs), errs[0])
	}
	if n := len(remoteAddrs(s)); n != 1 {
		t.Fatalf("close-after-stream off used %d connections", n)
	}

	// Any personality can have it.
	_, url = personaSim(t, PersonaVLLM, func(cfg *Config) { cfg.CloseAfterStream = true })
	if errs := sequential(t, url, 20, true); len(errs) == 0 {
		t.Fatal("vllm with CloseAfterStream: no failure")
	}
}

// TestCloseAfterStreamWire checks the bytes on the hijacked connection:
// keep-alive headers, a chunked body with its terminator, then a FIN, and
// no answer to a request sent after the stream.
func TestCloseAfterStreamWire(t *testing.T) {
	_, url := personaSim(t, PersonaLlamaServer)
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"prompt":"a b","max_tokens":3,"ignore_eos":true,"stream":true}`
	req := fmt.Sprintf("POST /v1/completions HTTP/1.1\r\nHost: sim\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := resp.Header
	if resp.StatusCode != 200 || resp.Close || h.Get("Connection") != "keep-alive" || h.Get("Keep-Alive") != "timeout=5, max=100" ||
		h.Get("Content-Type") != "text/event-stream" || h.Get("Server") != "llama.cpp" || len(resp.TransferEncoding) != 1 || resp.TransferEncoding[0] != "chunked" {
		t.Fatalf("response %d close=%v te=%v headers %v", resp.StatusCode, resp.Close, resp.TransferEncoding, h)
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil || strings.Count(string(data), "data: {") != 3 || !strings.HasSuffix(string(data), "data: [DONE]\n\n") {
		t.Fatalf("body %q: %v", data, err)
	}
	// The client thinks the connection is reusable and sends the next request.
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(br)
	if err != nil || len(rest) != 0 {
		t.Fatalf("after the stream: %q %v; want a clean EOF and no response", rest, err)
	}
}

func TestCloseAfterStreamFaults(t *testing.T) {
	newClient := func() *http.Client { return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{}} }
	s, url := personaSim(t, PersonaLlamaServer)
	body := streamBody(10)

	status, data, err := readToEnd(newClient(), url+"/v1/completions", body, FaultHeader, "drop-after=2")
	if status != 200 || !errors.Is(err, io.ErrUnexpectedEOF) || strings.Count(data, "data: {") != 2 {
		t.Fatalf("drop: %d %v %q", status, err, data)
	}
	status, data, err = readToEnd(newClient(), url+"/v1/completions", body, FaultHeader, "drop-after=0")
	if status != 200 || err == nil || strings.Contains(data, "data:") {
		t.Fatalf("drop-after=0: %d %v %q", status, err, data)
	}
	status, data, err = readToEnd(newClient(), url+"/v1/completions", body, FaultHeader, "malformed")
	if status != 200 || err != nil || !strings.Contains(data, `{"index":0,"text":"`+"\n\n") || !strings.Contains(data, "[DONE]") {
		t.Fatalf("malformed: %d %v %q", status, err, data)
	}
	s.ResetRecords()
	status, _, err = readToEnd(newClient(), url+"/v1/completions", body, FaultHeader, "stall=150ms,stall-at=1")
	if status != 200 || err != nil {
		t.Fatalf("stall: %d %v", status, err)
	}
	if ev := s.Records()[0].Events; ev[1].Time.Sub(ev[0].Time) < 150*time.Millisecond {
		t.Fatalf("stall gap %v", ev[1].Time.Sub(ev[0].Time))
	}
	// A request error is a normal response: the connection stays.
	c := newClient()
	for range 3 {
		if status, _, err := readToEnd(c, url+"/v1/completions", body, FaultHeader, "error=503"); status != 503 || err != nil {
			t.Fatalf("error fault: %d %v", status, err)
		}
	}

	// Shutdown cuts a hijacked stream too.
	s2, url2 := personaSim(t, PersonaLlamaServer)
	req, _ := newReq(url2+"/v1/completions", strings.NewReader(mustJSON(streamBody(5000))))
	resp, err := newClient().Do(req.WithContext(context.Background()))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	s2.Close()
	done := make(chan error, 1)
	go func() { _, err := io.ReadAll(br); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the stream ended cleanly at shutdown; it should be cut")
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the stream was not cut at shutdown")
	}
}

func TestDebugRemoteAddr(t *testing.T) {
	s, url := personaSim(t, PersonaVLLM)
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := &http.Client{Transport: &http.Transport{DialContext: func(context.Context, string, string) (net.Conn, error) { return conn, nil }}}
	if status, _, err := readToEnd(c, url+"/v1/completions", map[string]any{"prompt": "a", "max_tokens": 1}); status != 200 || err != nil {
		t.Fatal(status, err)
	}
	if rec := s.Records()[0]; rec.RemoteAddr != conn.LocalAddr().String() {
		t.Fatalf("remote addr %q, want %q", rec.RemoteAddr, conn.LocalAddr())
	}
	_, body := getBody(t, testClient(), url+"/debug/requests")
	if !strings.Contains(body, `"remote_addr":"`+conn.LocalAddr().String()+`"`) {
		t.Fatalf("debug: %s", body)
	}
}
