package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/sim"
	"github.com/benchrun/benchrun/internal/stats"
)

// The headroom benchmarks run the simulator in a child process (this test
// binary re-executed), so the client's memory and CPU are measured alone.
const simChildEnv = "BENCHRUN_LOADGEN_SIM_CHILD"

func TestMain(m *testing.M) {
	if spec := os.Getenv(simChildEnv); spec != "" {
		os.Exit(simChild(spec))
	}
	os.Exit(m.Run())
}

// simChild serves the simulator with "ttft,itl" from spec on a free port,
// prints the address, and exits when stdin closes (the parent is gone).
func simChild(spec string) int {
	cfg := sim.DefaultConfig()
	cfg.EOSProb = 0
	cfg.MaxRecords = 0
	var ttft, itl string
	fmt.Sscanf(strings.ReplaceAll(spec, ",", " "), "%s %s", &ttft, &itl)
	cfg.TTFT, _ = time.ParseDuration(ttft)
	cfg.ITL, _ = time.ParseDuration(itl)
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
	srv := &http.Server{Handler: sim.New(cfg)}
	_ = srv.Serve(ln)
	return 0
}

// startSimProcess starts the child simulator and returns its base URL.
func startSimProcess(tb testing.TB, ttft, itl time.Duration) string {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), simChildEnv+"="+ttft.String()+","+itl.String())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(3 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		tb.Fatalf("child simulator: %v", err)
	}
	return "http://" + strings.TrimSpace(addr)
}

// simStream is a realistic stream: the simulator's completion chunks.
func simStream(events int) []byte {
	var b bytes.Buffer
	for i := 0; i < events; i++ {
		fmt.Fprintf(&b, `data: {"id":"cmpl-42","object":"text_completion","created":1764547200,"model":"sim-llama","choices":[{"index":0,"text":" bado","logprobs":null,"finish_reason":null,"stop_reason":null}]}`+"\n\n")
	}
	b.WriteString(`data: {"id":"cmpl-42","object":"text_completion","created":1764547200,"model":"sim-llama","choices":[],"usage":{"prompt_tokens":128,"total_tokens":` + fmt.Sprint(128+events) + `,"completion_tokens":` + fmt.Sprint(events) + "}}\n\ndata: [DONE]\n\n")
	return b.Bytes()
}

// BenchmarkClientStreamPath is the client's whole per-event path in memory
// (SSE framing, the JSON scan, the stamp and the token bookkeeping):
// events parsed per second on one core, and allocations per event.
func BenchmarkClientStreamPath(b *testing.B) {
	const events = 1024
	data := simStream(events)
	rd := bytes.NewReader(data)
	var res Result
	res.Tokens = make([]TokenEvent, 0, events)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rd.Reset(data)
		res = Result{Tokens: res.Tokens[:0]}
		if err := readStream(rd, &res, nil, 0, false); err != nil || len(res.Tokens) != events {
			b.Fatalf("%v, %d events", err, len(res.Tokens))
		}
	}
	b.StopTimer()
	runtime.ReadMemStats(&after)
	perEvent := b.Elapsed().Seconds() / float64(b.N*events)
	b.ReportMetric(1/perEvent, "events/s")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(b.N*events), "allocs/event")
}

// memNow is the process's heap and stack in use.
func memNow() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}

// BenchmarkHeadroomStreams holds N concurrent streams open against a
// simulator process, sent on an open-loop schedule, and reports the send
// lag (the client keeping its schedule) and the client's memory per
// in-flight stream. Run: go test -run '^$' -bench Headroom -benchtime 1x
func BenchmarkHeadroomStreams(b *testing.B) {
	for _, n := range []int{1024, 2048, 4096} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			// Each stream lasts ~4 s (40 events, 100 ms apart); sending n
			// over 2 s keeps all n in flight at the peak.
			url := startSimProcess(b, 0, 100*time.Millisecond)
			tg := newTarget(url, n)
			defer tg.HTTP.CloseIdleConnections()
			// Memory is counted from before the warm-up, so a stream's
			// connection (buffers, transport goroutines) is part of its cost.
			base := memNow()
			// A warm-up pass opens the connections, as the sweep's warm-up
			// does; the timed pass then measures streams, not TCP dials.
			warm := func(int) Request {
				return Request{Prompt: "w", MaxTokens: 40, Body: map[string]any{"ignore_eos": true}}
			}
			if _, err := Run(context.Background(), tg, Load{Schedule: &Schedule{Rate: float64(n) / 2, Arrival: ArrivalConstant}, Requests: n}, warm, func(int, Result) {}); err != nil {
				b.Fatal(err)
			}
			for i := 0; i < b.N; i++ {
				var inflight, peak atomic.Int64
				var peakMem atomic.Uint64
				stop := make(chan struct{})
				var sampler sync.WaitGroup
				sampler.Add(1)
				go func() {
					defer sampler.Done()
					t := time.NewTicker(200 * time.Millisecond)
					defer t.Stop()
					for {
						select {
						case <-stop:
							return
						case <-t.C:
							if f := inflight.Load(); f >= peak.Load() {
								peak.Store(f)
								var m runtime.MemStats
								runtime.ReadMemStats(&m)
								peakMem.Store(m.HeapInuse + m.StackInuse)
							}
						}
					}
				}()
				var mu sync.Mutex
				var lags []float64
				var failed atomic.Int64
				rate := float64(n) / 2
				_, err := Run(context.Background(), tg, Load{Schedule: &Schedule{Rate: rate, Arrival: ArrivalPoisson, Seed: 1}, Requests: n},
					func(i int) Request {
						inflight.Add(1)
						return Request{Prompt: "one two three four", MaxTokens: 40, Body: map[string]any{"ignore_eos": true}}
					}, func(i int, r Result) {
						inflight.Add(-1)
						if r.Err != nil {
							failed.Add(1)
						}
						mu.Lock()
						lags = append(lags, msf(r.SendLag()))
						mu.Unlock()
					})
				close(stop)
				sampler.Wait()
				if err != nil {
					b.Fatal(err)
				}
				l := stats.Summarize(lags)
				perStream := float64(peakMem.Load()-min(base, peakMem.Load())) / float64(max(peak.Load(), 1))
				b.ReportMetric(float64(peak.Load()), "peak-streams")
				b.ReportMetric(perStream/1024, "KiB/stream")
				b.ReportMetric(l.P99, "send-lag-p99-ms")
				b.ReportMetric(float64(failed.Load()), "failed")
			}
		})
	}
}

// BenchmarkHeadroomRate sends short non-streamed requests at rising
// rates for 2 s each and reports the achieved rate and send-lag p99; the
// highest rate with p99 under 5 ms is the client's request-rate headroom
// on this machine (the simulator process shares the cores).
func BenchmarkHeadroomRate(b *testing.B) {
	url := startSimProcess(b, 0, 0)
	for _, rate := range []float64{1000, 2000, 4000, 8000} {
		b.Run(fmt.Sprint(rate), func(b *testing.B) {
			tg := newTarget(url, 512)
			tg.Stream = false
			defer tg.HTTP.CloseIdleConnections()
			for i := 0; i < b.N; i++ {
				var mu sync.Mutex
				var lags []float64
				var failed atomic.Int64
				st, err := Run(context.Background(), tg, Load{Schedule: &Schedule{Rate: rate, Arrival: ArrivalConstant}, Duration: 2 * time.Second},
					func(int) Request { return Request{Prompt: "a b c", MaxTokens: 1} },
					func(i int, r Result) {
						if r.Err != nil {
							failed.Add(1)
						}
						mu.Lock()
						lags = append(lags, msf(r.SendLag()))
						mu.Unlock()
					})
				if err != nil {
					b.Fatal(err)
				}
				el := time.Since(st.Start).Seconds()
				l := stats.Summarize(lags)
				b.ReportMetric(float64(st.Sent)/el, "achieved-req/s")
				b.ReportMetric(l.P99, "send-lag-p99-ms")
				b.ReportMetric(float64(failed.Load()), "failed")
			}
		})
	}
}

// BenchmarkVersusVegeta drives the same fixed-rate, non-streaming load from
// vegeta and from benchrun's client against one simulator process and
// prints achieved rate and latency percentiles side by side. It skips when
// vegeta is not installed (go install github.com/tsenart/vegeta/v12@v12.13.0)
// unless CI is set.
func BenchmarkVersusVegeta(b *testing.B) {
	vegeta, err := exec.LookPath("vegeta")
	if err != nil {
		if home, _ := os.UserHomeDir(); home != "" {
			if _, err2 := os.Stat(home + "/go/bin/vegeta"); err2 == nil {
				vegeta, err = home+"/go/bin/vegeta", nil
			}
		}
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			b.Fatal("vegeta is not installed (go install github.com/tsenart/vegeta/v12@v12.13.0)")
		}
		b.Skip("vegeta is not installed (go install github.com/tsenart/vegeta/v12@v12.13.0)")
	}
	url := startSimProcess(b, time.Millisecond, 0)
	body := `{"model":"sim-llama","prompt":"a b c","max_tokens":1,"stream":false}`
	dir := b.TempDir()
	os.WriteFile(dir+"/body.json", []byte(body), 0o644)
	targets := fmt.Sprintf("POST %s/v1/completions\nContent-Type: application/json\n@%s/body.json\n", url, dir)
	os.WriteFile(dir+"/targets.txt", []byte(targets), 0o644)
	const dur = 5 * time.Second
	for _, rate := range []int{1000, 3000} {
		b.Run(fmt.Sprint(rate), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				// vegeta
				attack := exec.Command(vegeta, "attack", "-rate", fmt.Sprint(rate), "-duration", dur.String(), "-targets", dir+"/targets.txt", "-output", dir+"/out.bin")
				attack.Stderr = os.Stderr
				if err := attack.Run(); err != nil {
					b.Fatalf("vegeta attack: %v", err)
				}
				rep, err := exec.Command(vegeta, "report", "-type", "json", dir+"/out.bin").Output()
				if err != nil {
					b.Fatalf("vegeta report: %v", err)
				}
				var vr struct {
					Latencies struct {
						P50  float64 `json:"50th"`
						P90  float64 `json:"90th"`
						P99  float64 `json:"99th"`
						Max  float64 `json:"max"`
						Mean float64 `json:"mean"`
					} `json:"latencies"`
					Rate       float64 `json:"rate"`
					Throughput float64 `json:"throughput"`
					Success    float64 `json:"success"`
					Requests   int     `json:"requests"`
				}
				if err := json.Unmarshal(rep, &vr); err != nil {
					b.Fatalf("vegeta report: %v", err)
				}
				// benchrun, same load
				tg := newTarget(url, 512)
				tg.Stream = false
				var mu sync.Mutex
				var lat []float64
				var ok atomic.Int64
				st, err := Run(context.Background(), tg, Load{Schedule: &Schedule{Rate: float64(rate), Arrival: ArrivalConstant}, Duration: dur},
					func(int) Request { return Request{Prompt: "a b c", MaxTokens: 1} },
					func(i int, r Result) {
						if r.Err == nil {
							ok.Add(1)
						}
						mu.Lock()
						lat = append(lat, msf(r.E2EL()))
						mu.Unlock()
					})
				tg.HTTP.CloseIdleConnections()
				if err != nil {
					b.Fatal(err)
				}
				l := stats.Summarize(lat)
				lastSend := time.Duration(float64(st.Sent-1) / float64(rate) * float64(time.Second))
				rateGot := float64(st.Sent-1) / lastSend.Seconds()
				msv := func(ns float64) float64 { return ns / 1e6 }
				fmt.Printf("\nfixed rate %d req/s for %s, non-streaming, against one simulator process\n", rate, dur)
				fmt.Printf("%-9s %9s %8s %8s %8s %8s %8s %8s\n", "client", "requests", "rate", "success", "mean_ms", "p50_ms", "p90_ms", "p99_ms")
				fmt.Printf("%-9s %9d %8.1f %8.4f %8.3f %8.3f %8.3f %8.3f\n", "vegeta", vr.Requests, vr.Rate, vr.Success, msv(vr.Latencies.Mean), msv(vr.Latencies.P50), msv(vr.Latencies.P90), msv(vr.Latencies.P99))
				fmt.Printf("%-9s %9d %8.1f %8.4f %8.3f %8.3f %8.3f %8.3f\n", "benchrun", st.Sent, rateGot, float64(ok.Load())/float64(st.Sent), l.Mean, l.P50, l.P90, l.P99)
				b.ReportMetric(rateGot, "benchrun-req/s")
				b.ReportMetric(vr.Rate, "vegeta-req/s")
				b.ReportMetric(l.P99, "benchrun-p99-ms")
				b.ReportMetric(msv(vr.Latencies.P99), "vegeta-p99-ms")
			}
		})
	}
}
