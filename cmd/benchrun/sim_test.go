package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/testkit"
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

// lockedBuffer is the tests' synchronized buffer (testkit).
type lockedBuffer = testkit.SyncBuffer

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

func TestRunSimAsLlamaServer(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- runSim(ctx, []string{"--addr", "127.0.0.1:0", "--as", "llama-server", "--max-model-len", "2048", "--slots", "2", "--ttft", "1ms", "--itl", "1ms"}, io.Discard, &stderr)
	}()
	re := regexp.MustCompile(`sim: listening on (127\.0\.0\.1:\d+) \(model sim-llama, mode fixed, as llama-server\)`)
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
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	get := func(path string) string {
		resp, err := c.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if body := get("/props"); !strings.Contains(body, `"build_info":"b6500-sim"`) || !strings.Contains(body, `"total_slots":2`) || !strings.Contains(body, `"n_ctx":2048`) {
		t.Fatalf("props: %s", body)
	}
	if body := get("/v1/models"); !strings.Contains(body, `"owned_by":"llamacpp"`) || strings.Contains(body, "max_model_len") {
		t.Fatalf("models: %s", body)
	}
	if body := get("/metrics"); !strings.Contains(body, "llamacpp:prompt_tokens_total") {
		t.Fatalf("metrics: %.200s", body)
	}
	resp, err := c.Post("http://"+addr+"/tokenize", "application/json", strings.NewReader(`{"model":"sim-llama","prompt":"hello"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "{\"tokens\":[]}\n" {
		t.Fatalf("tokenize in vLLM's dialect: %s", b)
	}
	// A stream ends with the connection closed under keep-alive headers.
	resp, err = c.Post("http://"+addr+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"a b","max_tokens":2,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.Header.Get("Keep-Alive") != "timeout=5, max=100" || !strings.Contains(string(b), "[DONE]") {
		t.Fatalf("stream: %v %v %s", err, resp.Header, b)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("runSim returned %d", code)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("runSim did not return after cancel")
	}
}

func TestParseSimFlagsPersonality(t *testing.T) {
	cfg, _, code := parseSimFlags([]string{"--as", "llama-server"}, io.Discard)
	if code != -1 || cfg.Personality != "llama-server" || cfg.Metrics != "llamacpp" || !cfg.CloseAfterStream || !cfg.PromptCache {
		t.Fatalf("llama-server: code %d %+v", code, cfg)
	}
	// Explicit flags win over the personality's defaults, in any order.
	cfg, _, _ = parseSimFlags([]string{"--close-after-stream=false", "--as", "llama-server", "--metrics", "both", "--prompt-cache=false",
		"--engine-version", "b7000", "--close-after-stream-delay", "5ms", "--cut-rate", "0.5", "--cut-after", "3", "--train-context-len", "65536",
		"--hang-up-rate", "0.25", "--hang-up", "2s"}, io.Discard)
	if cfg.CloseAfterStream || cfg.Metrics != "both" || cfg.PromptCache || cfg.Version != "b7000" || cfg.CloseAfterStreamDelay != 5*time.Millisecond ||
		cfg.Faults.CutRate != 0.5 || cfg.Faults.CutAfter != 3 || cfg.TrainContextLen != 65536 || cfg.Faults.HangUpRate != 0.25 || cfg.Faults.HangUp != 2*time.Second {
		t.Fatalf("explicit flags: %+v", cfg)
	}
	// llama-server embeds only when started so, as llama-server does;
	// media and audio costs are the simulator's knobs.
	cfg, _, _ = parseSimFlags([]string{"--embeddings", "--pooling", "mean", "--as", "llama-server", "--media-token-time", "50us", "--audio-second-time", "20ms"}, io.Discard)
	if !cfg.Embeddings || cfg.Pooling != "mean" || cfg.MediaTokenTime != 50*time.Microsecond || cfg.AudioSecondTime != 20*time.Millisecond {
		t.Fatalf("embeddings and media flags: %+v", cfg)
	}
	if cfg, _, _ = parseSimFlags([]string{"--as", "llama-server"}, io.Discard); cfg.Embeddings {
		t.Fatalf("llama-server embeds without --embeddings")
	}
	// With a preset: both apply.
	cfg, _, _ = parseSimFlags([]string{"--as", "sglang", "--preset", "h100-llama3-8b"}, io.Discard)
	if cfg.Personality != "sglang" || cfg.Metrics != "sglang" || cfg.Mode != "engine" || cfg.Engine.MaxNumSeqs != 256 {
		t.Fatalf("preset + personality: %+v", cfg)
	}
	// Generic stays the default: no cache, no close, vLLM metrics.
	cfg, _, _ = parseSimFlags(nil, io.Discard)
	if cfg.Personality != "" || cfg.PromptCache || cfg.CloseAfterStream || cfg.Metrics != "vllm" {
		t.Fatalf("default: %+v", cfg)
	}
	var stderr bytes.Buffer
	if code := runSim(context.Background(), []string{"--as", "tgi"}, io.Discard, &stderr); code != 2 ||
		!strings.Contains(stderr.String(), "generic, vllm, llama-server, sglang, ollama") {
		t.Fatalf("--as tgi: %d %s", code, stderr.String())
	}
	stderr.Reset()
	if _, _, code := parseSimFlags([]string{"--help"}, &stderr); code != 0 || !strings.Contains(stderr.String(), "Personalities (--as): generic, vllm") {
		t.Fatalf("--help: %s", stderr.String())
	}
}
