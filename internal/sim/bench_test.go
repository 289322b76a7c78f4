package sim

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/testkit"
)

// BenchmarkStreams measures how many concurrent streams and streamed tokens
// per second the simulator serves, in a separate process pinned to one
// core (GOMAXPROCS=1) so that its CPU is measured apart from the client's:
//
//	go test -run '^$' -bench Streams -benchtime 1x ./internal/sim
//
// BENCH_SIM_STREAMS (default 4096), BENCH_SIM_ITL (default 40ms, i.e. a
// target of streams/itl tokens per second) and BENCH_SIM_WINDOW (3s) tune it.
func BenchmarkStreams(b *testing.B) {
	for _, mode := range []string{ModeFixed, ModeEngine} {
		b.Run(mode, func(b *testing.B) {
			streams := envInt("BENCH_SIM_STREAMS", 4096)
			itl := envDuration("BENCH_SIM_ITL", 40*time.Millisecond)
			window := envDuration("BENCH_SIM_WINDOW", 3*time.Second)
			for range b.N {
				r := runStreams(b, mode, streams, itl, window)
				b.ReportMetric(float64(r.streams), "streams")
				b.ReportMetric(r.tokS, "tok/s")
				b.ReportMetric(r.eventS, "events/s")
				b.ReportMetric(r.serverCores, "server-cores")
				b.ReportMetric(r.tokS/max(r.serverCores, 1e-9), "tok/s-per-core")
				fmt.Fprintf(os.Stderr, "sim %s: %d concurrent streams, %.0f tokens/s in %.0f events/s (target %.0f), server CPU %.2f cores (GOMAXPROCS=1), client CPU %.2f cores\n",
					mode, r.streams, r.tokS, r.eventS, float64(streams)/itl.Seconds(), r.serverCores, r.clientCores)
			}
		})
	}
}

type streamsResult struct {
	streams                  int
	tokS, eventS             float64
	serverCores, clientCores float64
}

var textField = []byte(`"text":"`)

func runStreams(b *testing.B, mode string, streams int, itl, window time.Duration) streamsResult {
	env := []string{"GOMAXPROCS=1", "SIM_MODE=" + mode, "SIM_TTFT=10ms", "SIM_ITL=" + itl.String()}
	if mode == ModeEngine {
		// One step per itl producing a token for every stream.
		env = append(env, "SIM_STEP="+itl.String())
	}
	cmd, url, _ := startChild(b, env...)
	pid := cmd.Process.Pid

	tr := &http.Transport{MaxIdleConnsPerHost: streams, DisableCompression: true}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var tokens, events, running, failed atomic.Int64
	ramp := time.Duration(streams) * 200 * time.Microsecond // stay under the accept backlog
	// Streams outlast the measurement (they are cancelled after it), however
	// long the ramp takes on a busy machine.
	maxTokens := 8000
	body := fmt.Sprintf(`{"prompt":"bench prompt words","max_tokens":%d,"ignore_eos":true,"stream":true}`, maxTokens)
	var wg sync.WaitGroup
	for i := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * ramp / time.Duration(streams))
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/completions", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := c.Do(req)
			if err != nil {
				if ctx.Err() == nil {
					failed.Add(1)
				}
				return
			}
			defer resp.Body.Close()
			running.Add(1)
			defer running.Add(-1)
			r := bufio.NewReaderSize(resp.Body, 4096)
			for {
				line, err := r.ReadSlice('\n')
				if err != nil {
					if ctx.Err() == nil && err != io.EOF {
						failed.Add(1)
					}
					return
				}
				if bytes.HasPrefix(line, []byte("data: {")) {
					// A handler that falls behind the engine sends the
					// tokens it missed in one event: count tokens, not events.
					events.Add(1)
					if i := bytes.Index(line, textField); i >= 0 {
						txt := line[i+len(textField):]
						if j := bytes.IndexByte(txt, '"'); j >= 0 {
							tokens.Add(int64(bytes.Count(txt[:j], []byte(" "))))
						}
					}
				}
			}
		}()
	}
	// Wait for the ramp, then measure a window with every stream running.
	deadline := time.Now().Add(ramp + 10*time.Second)
	for running.Load() < int64(streams) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(2 * itl)
	n := running.Load()
	t0, tok0, ev0, cpu0, self0 := time.Now(), tokens.Load(), events.Load(), procCPU(b, pid), selfCPUTime()
	time.Sleep(window)
	t1, tok1, ev1, cpu1, self1 := time.Now(), tokens.Load(), events.Load(), procCPU(b, pid), selfCPUTime()
	cancel()
	wg.Wait()
	if os.Getenv("SIM_CPUPROFILE") != "" {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}
	// A handful of connections can still be in SYN retry on a loaded
	// machine; the figure reported is the number actually streaming.
	if f := failed.Load(); f > 0 || n < int64(streams)*99/100 {
		b.Fatalf("%d streams failed, %d of %d running in the window", f, n, streams)
	}
	el := t1.Sub(t0).Seconds()
	return streamsResult{
		streams:     int(n),
		tokS:        float64(tok1-tok0) / el,
		eventS:      float64(ev1-ev0) / el,
		serverCores: (cpu1 - cpu0).Seconds() / el,
		clientCores: (self1 - self0).Seconds() / el,
	}
}

// procCPU is a process's user+system CPU time from /proc (Linux).
func procCPU(b *testing.B, pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Skipf("no /proc: %v", err)
	}
	// Fields after the parenthesised command name; utime and stime are the
	// 14th and 15th fields overall, in clock ticks (100 per second on Linux).
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func envDuration(name string, def time.Duration) time.Duration {
	if v, err := time.ParseDuration(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// selfCPUTime is this process's CPU time (testkit.CPUTime), 0 when it
// cannot be read.
func selfCPUTime() time.Duration { d, _ := testkit.CPUTime(false); return d }
