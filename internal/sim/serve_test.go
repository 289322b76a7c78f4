package sim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/testkit"
)

// TestMain lets the test binary act as a standalone simulator process, for
// tests that need a real process (exit-after) or separate CPU accounting
// (the benchmark).
func TestMain(m *testing.M) {
	if os.Getenv("BENCHRUN_SIM_CHILD") == "1" {
		childServe()
		os.Exit(0)
	}
	code := m.Run()
	if code == 0 {
		code = checkNoLeaks()
	}
	os.Exit(code)
}

// checkNoLeaks fails the run if any simulator goroutine (an engine loop, a
// handler) outlives the tests that started it.
func checkNoLeaks() int {
	deadline := time.Now().Add(3 * time.Second)
	for {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		var leaked []string
		for _, g := range strings.Split(stacks, "\n\n") {
			if strings.Contains(g, "internal/sim.(*engine).loop") || strings.Contains(g, "internal/sim.(*Server).handle") {
				leaked = append(leaked, g)
			}
		}
		if len(leaked) == 0 {
			return 0
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(os.Stderr, "leaked simulator goroutines:\n%s\n", strings.Join(leaked, "\n\n"))
			return 1
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// childServe runs Serve from environment settings and prints the address.
func childServe() {
	cfg := DefaultConfig()
	if v := os.Getenv("SIM_MODE"); v != "" {
		cfg.Mode = v
	}
	if v := os.Getenv("SIM_ITL"); v != "" {
		cfg.ITL, _ = time.ParseDuration(v)
	}
	if v := os.Getenv("SIM_TTFT"); v != "" {
		cfg.TTFT, _ = time.ParseDuration(v)
	}
	if v := os.Getenv("SIM_EXIT_AFTER"); v != "" {
		cfg.ExitAfter, _ = time.ParseDuration(v)
		cfg.ExitCode = 7
	}
	if cfg.Mode == ModeEngine {
		// The benchmark's engine: every stream decodes in every step.
		cfg.Engine.MaxNumSeqs = 8192
		cfg.Engine.MaxBatchedTokens = 8192
		cfg.Engine.KVCacheTokens = 8192 * 512
		cfg.Engine.StepBase = 20 * time.Millisecond
		if v := os.Getenv("SIM_STEP"); v != "" {
			cfg.Engine.StepBase, _ = time.ParseDuration(v)
		}
		cfg.Engine.PerSeq = 0
		cfg.Engine.PerPrefillToken = 0
	}
	ctx := context.Background()
	if path := os.Getenv("SIM_CPUPROFILE"); path != "" {
		// Profile the benchmark's server; SIGTERM ends serving cleanly.
		f, err := os.Create(path)
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer f.Close()
			defer pprof.StopCPUProfile()
		}
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, syscall.SIGTERM)
		defer stop()
	}
	err := Serve(ctx, cfg, "127.0.0.1:0", ServeOptions{
		Log:       os.Stderr,
		Listening: func(a net.Addr) { fmt.Println("ADDR", a.String()) },
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
}

// startChild starts the test binary as a simulator process.
func startChild(t testing.TB, env ...string) (*exec.Cmd, string, *bytes.Buffer) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{"BENCHRUN_SIM_CHILD=1"}, env...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if os.Getenv("SIM_TRACE") != "" {
		cmd.Stderr = os.Stderr
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	addrc := make(chan string, 1)
	go func() {
		buf := make([]byte, 256)
		n, _ := out.Read(buf)
		line := strings.TrimSpace(string(buf[:n]))
		addrc <- strings.TrimPrefix(line, "ADDR ")
	}()
	select {
	case a := <-addrc:
		if a == "" {
			t.Fatalf("child printed no address; stderr: %s", stderr.String())
		}
		return cmd, "http://" + a, &stderr
	case <-time.After(10 * time.Second):
		t.Fatal("child did not start")
	}
	return nil, "", nil
}

func TestExitAfter(t *testing.T) {
	cmd, url, stderr := startChild(t, "SIM_EXIT_AFTER=600ms", "SIM_ITL=20ms")
	c := testClient()
	// A long stream is in flight when the process dies: the client must see
	// a cut connection, not a clean end.
	res := readStream(context.Background(), c, url+"/v1/completions", streamBody(1000))
	if res.done || res.err == nil || len(res.events) == 0 {
		t.Fatalf("stream across server death: done=%v err=%v events=%d", res.done, res.err, len(res.events))
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err := <-waited:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 7 {
			t.Fatalf("exit: %v, want code 7", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("process did not exit")
	}
	if !strings.Contains(stderr.String(), "exiting with code 7") {
		t.Fatalf("stderr: %s", stderr.String())
	}
}

func TestServeGracefulShutdown(t *testing.T) {
	for _, mode := range []string{ModeFixed, ModeEngine} {
		t.Run(mode, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Mode = mode
			cfg.ITL = 50 * time.Millisecond
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			url := "http://" + ln.Addr().String()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var logb syncBuffer
			served := make(chan error, 1)
			go func() { served <- ServeListener(ctx, cfg, ln, ServeOptions{Log: &logb}) }()

			c := testClient()
			const n = 20
			var wg sync.WaitGroup
			results := make([]streamResult, n)
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					results[i] = readStream(context.Background(), c, url+"/v1/completions", streamBody(5000))
				}()
			}
			eventually(t, 5*time.Second, "streams started", func() bool {
				return strings.Contains(logb.String(), "listening") // listening is printed first
			})
			time.Sleep(300 * time.Millisecond)
			start := time.Now()
			cancel()
			select {
			case err := <-served:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(3 * time.Second):
				t.Fatal("Serve did not return after cancel")
			}
			wg.Wait()
			if d := time.Since(start); d > 1500*time.Millisecond {
				t.Fatalf("shutdown took %v", d)
			}
			for i, r := range results {
				if r.done || r.err == nil {
					t.Fatalf("stream %d ended cleanly (status %d done=%v err=%v %s); a shutdown must cut it", i, r.status, r.done, r.err, r.body)
				}
			}
			if !strings.Contains(logb.String(), "sim: listening on 127.0.0.1:") || !strings.Contains(logb.String(), "mode "+mode) {
				t.Fatalf("log: %s", logb.String())
			}
		})
	}
}

// syncBuffer is the tests' synchronized buffer (testkit).
type syncBuffer = testkit.SyncBuffer
