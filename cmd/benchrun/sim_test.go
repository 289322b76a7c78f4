package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestRunSimFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--bogus"},
		{"--mode", "turbo"},
		{"--preset", "nope"},
		{"--error-codes", "5x0"},
		{"--ttft", "soon"},
		{"extra-arg"},
		{"--mode", "engine", "--kv-cache-tokens", "10"},
	} {
		var stderr bytes.Buffer
		if code := runSim(context.Background(), args, io.Discard, &stderr); code != 2 {
			t.Errorf("runSim(%v) = %d, want 2; stderr %s", args, code, stderr.String())
		}
	}
}

// lockedBuffer lets the test read stderr while runSim writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestRunSimServesUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- runSim(ctx, []string{"--addr", "127.0.0.1:0", "--model", "a,b", "--preset", "h100-llama3-8b", "--max-num-seqs", "4", "--itl", "50ms"}, io.Discard, &stderr)
	}()
	re := regexp.MustCompile(`sim: listening on (127\.0\.0\.1:\d+) \(model a,b, mode engine\)`)
	var addr string
	deadline := time.Now().Add(5 * time.Second)
	for addr == "" {
		if m := re.FindStringSubmatch(stderr.String()); m != nil {
			addr = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("no listening line: %q", stderr.String())
		} else {
			time.Sleep(10 * time.Millisecond)
		}
	}
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + addr + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"id":"b"`) {
		t.Fatalf("models: %s", body)
	}
	// A stream in flight when the context ends is cut within about a second.
	resp, err = c.Post("http://"+addr+"/v1/completions", "application/json",
		strings.NewReader(`{"model":"a","prompt":"x","max_tokens":5000,"ignore_eos":true,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("runSim returned %d", code)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("runSim did not return after cancel")
	}
	if d := time.Since(start); d > 1500*time.Millisecond {
		t.Fatalf("shutdown took %v", d)
	}
	if _, err := io.ReadAll(resp.Body); err == nil {
		t.Fatal("the in-flight stream ended cleanly; it should be cut")
	}
}

func TestParseSimFlags(t *testing.T) {
	cfg, addr, code := parseSimFlags([]string{"--preset", "h100-llama3-8b", "--max-num-seqs", "32", "--mode", "engine",
		"--model", "x, y", "--error-rate", "0.1", "--error-codes", "429,503", "--addr", "127.0.0.1:9"}, io.Discard)
	if code != -1 || addr != "127.0.0.1:9" {
		t.Fatalf("code %d addr %q", code, addr)
	}
	// The preset's engine, with the explicit flag winning.
	if cfg.Mode != "engine" || cfg.Engine.MaxNumSeqs != 32 || cfg.Engine.KVCacheTokens != 430000 || cfg.Engine.StepBase != 6*time.Millisecond {
		t.Fatalf("engine %+v mode %s", cfg.Engine, cfg.Mode)
	}
	if len(cfg.Models) != 2 || cfg.Models[1] != "y" || len(cfg.Faults.ErrorCodes) != 2 || cfg.Faults.ErrorRate != 0.1 {
		t.Fatalf("models %v faults %+v", cfg.Models, cfg.Faults)
	}
	// An explicit --mode fixed beats the preset's engine mode.
	cfg, _, _ = parseSimFlags([]string{"--preset", "a100-llama3-8b", "--mode", "fixed"}, io.Discard)
	if cfg.Mode != "fixed" {
		t.Fatalf("mode %s", cfg.Mode)
	}
	if _, _, code := parseSimFlags([]string{"--help"}, io.Discard); code != 0 {
		t.Fatalf("--help: %d", code)
	}
}
