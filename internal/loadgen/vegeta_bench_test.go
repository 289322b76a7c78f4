package loadgen

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/stats"
)

// vegetaModule is the vegeta the comparison is made with.
const vegetaModule = "github.com/tsenart/vegeta/v12@v12.13.0"

// findVegeta returns the vegeta binary: on PATH, else in $GOPATH/bin or
// ~/go/bin. Without one the comparison skips (fails under CI).
func findVegeta(b *testing.B) string {
	if p, err := exec.LookPath("vegeta"); err == nil {
		return p
	}
	var dirs []string
	if gp := os.Getenv("GOPATH"); gp != "" {
		dirs = append(dirs, gp+"/bin")
	}
	if home, _ := os.UserHomeDir(); home != "" {
		dirs = append(dirs, home+"/go/bin")
	}
	for _, d := range dirs {
		if _, err := os.Stat(d + "/vegeta"); err == nil {
			return d + "/vegeta"
		}
	}
	msg := "vegeta is not installed (go install " + vegetaModule + ")"
	if os.Getenv("CI") != "" {
		b.Fatal(msg)
	}
	b.Skip(msg)
	return ""
}

// rateRun is one client's pass at one offered rate.
type rateRun struct {
	Client    string
	Offered   float64
	Requests  int
	SendRate  float64 // requests sent per second, first send to last
	Delivered float64 // successes per second, first send to last response
	Success   float64
	P50, P99  float64 // latency, ms
	// SendLagP99 is benchrun's send lag p99 in ms (NaN for vegeta, which
	// does not measure it).
	SendLagP99 float64
	// Cores is the client process's CPU over the pass's wall time.
	Cores    float64
	Failed   int
	FirstErr string
}

// sustained: every request succeeded and the successes kept up with the
// offered rate (within 5 %).
func (r rateRun) sustained() bool {
	return r.Failed == 0 && r.Requests > 0 && r.Delivered >= 0.95*r.Offered
}

// limit says what held a pass back: "" when it was sustained, "client"
// when benchrun's send lag passed 5 ms (its sends left late: the client,
// not the server, is the limit), else "server/cores".
func (r rateRun) limit() string {
	switch {
	case r.sustained():
		return ""
	case r.SendLagP99 > 5:
		return "client-bound"
	default:
		return "server or shared cores"
	}
}

// vegetaRig runs vegeta and benchrun's client at fixed rates against one
// simulator process.
type vegetaRig struct {
	vegeta, dir string
	sim         simProcess
}

func newVegetaRig(b *testing.B) *vegetaRig {
	vegeta := findVegeta(b)
	sp := startSimChild(b, time.Millisecond, 0)
	dir := b.TempDir()
	body := `{"model":"sim-llama","prompt":"a b c","max_tokens":1,"stream":false}`
	targets := fmt.Sprintf("POST %s/v1/completions\nContent-Type: application/json\n@%s/body.json\n", sp.URL, dir)
	if err := os.WriteFile(dir+"/body.json", []byte(body), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(dir+"/targets.txt", []byte(targets), 0o644); err != nil {
		b.Fatal(err)
	}
	return &vegetaRig{vegeta: vegeta, dir: dir, sim: sp}
}

// vegetaRun attacks at rate for dur with vegeta's defaults (its worker
// pool grows on demand, 10,000 idle connections, 30 s timeout).
func (g *vegetaRig) vegetaRun(rate int, dur time.Duration) (rateRun, error) {
	out := g.dir + "/out.bin"
	attack := exec.Command(g.vegeta, "attack", "-rate", fmt.Sprint(rate), "-duration", dur.String(), "-targets", g.dir+"/targets.txt", "-output", out)
	attack.Stderr = os.Stderr
	start := time.Now()
	if err := attack.Run(); err != nil {
		return rateRun{}, fmt.Errorf("vegeta attack: %v", err)
	}
	wall := time.Since(start)
	cpu := attack.ProcessState.UserTime() + attack.ProcessState.SystemTime()
	rep, err := exec.Command(g.vegeta, "report", "-type", "json", out).Output()
	if err != nil {
		return rateRun{}, fmt.Errorf("vegeta report: %v", err)
	}
	var vr struct {
		Latencies struct {
			P50 float64 `json:"50th"`
			P99 float64 `json:"99th"`
		} `json:"latencies"`
		Rate       float64        `json:"rate"`
		Throughput float64        `json:"throughput"`
		Success    float64        `json:"success"`
		Requests   int            `json:"requests"`
		Errors     []string       `json:"errors"`
		Codes      map[string]int `json:"status_codes"`
	}
	if err := json.Unmarshal(rep, &vr); err != nil {
		return rateRun{}, fmt.Errorf("vegeta report: %v", err)
	}
	r := rateRun{Client: "vegeta", Offered: float64(rate), Requests: vr.Requests, SendRate: vr.Rate, Delivered: vr.Throughput,
		Success: vr.Success, P50: vr.Latencies.P50 / 1e6, P99: vr.Latencies.P99 / 1e6, SendLagP99: math.NaN(),
		Cores: cpu.Seconds() / wall.Seconds(), Failed: vr.Requests - int(math.Round(vr.Success*float64(vr.Requests)))}
	if len(vr.Errors) > 0 {
		r.FirstErr = vr.Errors[0]
	}
	return r, nil
}

// benchrunRun sends the same load from benchrun's open loop, with the
// HTTP client a sweep builds for this rate (NewHTTPClient sized as
// stages/sweep sizes it).
func (g *vegetaRig) benchrunRun(rate int, dur time.Duration) (rateRun, error) {
	tg := newTarget(g.sim.URL, max(min(rate, 4096), InFlightLimit()))
	tg.Stream = false
	defer tg.HTTP.CloseIdleConnections()
	var mu sync.Mutex
	var lat, lags []float64
	var firstSent, lastSent, lastDone time.Time
	ok, failed := 0, 0
	firstErr := ""
	m := startMeter(0)
	st, err := Run(context.Background(), tg, Load{Schedule: &Schedule{Rate: float64(rate), Arrival: ArrivalConstant}, Duration: dur},
		func(int) Request { return Request{Prompt: "a b c", MaxTokens: 1} },
		func(i int, r Result) {
			mu.Lock()
			defer mu.Unlock()
			if r.Err == nil {
				ok++
				lat = append(lat, msf(r.E2EL()))
			} else {
				failed++
				if firstErr == "" {
					firstErr = r.Err.Error()
				}
			}
			lags = append(lags, msf(r.SendLag()))
			if firstSent.IsZero() || r.Sent.Before(firstSent) {
				firstSent = r.Sent
			}
			if r.Sent.After(lastSent) {
				lastSent = r.Sent
			}
			if r.Finished.After(lastDone) {
				lastDone = r.Finished
			}
		})
	c := m.since()
	if err != nil {
		return rateRun{}, err
	}
	l, ls := stats.Summarize(lat), stats.Summarize(lags)
	r := rateRun{Client: "benchrun", Offered: float64(rate), Requests: st.Sent, Success: float64(ok) / float64(max(st.Sent, 1)),
		P50: l.P50, P99: l.P99, SendLagP99: ls.P99, Cores: c.Client.Seconds() / c.Wall.Seconds(), Failed: failed, FirstErr: firstErr}
	if span := lastSent.Sub(firstSent).Seconds(); span > 0 {
		r.SendRate = float64(st.Sent-1) / span
	}
	if span := lastDone.Sub(firstSent).Seconds(); span > 0 {
		r.Delivered = float64(ok) / span
	}
	return r, nil
}

func printRateRuns(title string, runs []rateRun) {
	fmt.Printf("\n%s\n", title)
	fmt.Printf("%-9s %8s %9s %9s %10s %8s %9s %9s %9s %6s %7s  %s\n", "client", "offered", "requests", "sent/s", "delivered", "success", "p50_ms", "p99_ms", "lag_p99", "cores", "failed", "limit")
	for _, r := range runs {
		lag := "-"
		if !math.IsNaN(r.SendLagP99) {
			lag = fmt.Sprintf("%.2f", r.SendLagP99)
		}
		fmt.Printf("%-9s %8.0f %9d %9.0f %10.0f %8.4f %9.2f %9.2f %9s %6.2f %7d  %s\n", r.Client, r.Offered, r.Requests, r.SendRate, r.Delivered, r.Success, r.P50, r.P99, lag, r.Cores, r.Failed, r.limit())
		if r.FirstErr != "" {
			fmt.Printf("          first error: %s\n", truncate([]byte(r.FirstErr), 160))
		}
	}
}

// BenchmarkVersusVegeta drives the same fixed-rate, non-streaming load
// (constant arrivals) from vegeta and from benchrun's client against one
// simulator process and prints what each delivered side by side, at rates
// up to and past what the two cores carry (BENCHRUN_VEGETA_RATES
// overrides the list; BENCHRUN_VEGETA_SECONDS the 5 s per rate). The
// "max" sub-benchmark then searches each client's highest sustained rate
// (every request ok, delivered within 5 % of offered; doubling from 1,000
// req/s, then bisection, BENCHRUN_VEGETA_STEP_SECONDS each, 3 s by
// default) and prints both maxima. It skips when vegeta is not installed
// (go install github.com/tsenart/vegeta/v12@v12.13.0) unless CI is set.
func BenchmarkVersusVegeta(b *testing.B) {
	tuneLikeCLI(b)
	g := newVegetaRig(b)
	dur := benchSeconds("BENCHRUN_VEGETA_SECONDS", 5*time.Second)
	for _, rate := range benchSizes("BENCHRUN_VEGETA_RATES", []int{1000, 4000, 8000, 12000, 16000}) {
		b.Run(fmt.Sprint(rate), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				vr, err := g.vegetaRun(rate, dur)
				if err != nil {
					b.Fatal(err)
				}
				time.Sleep(time.Second)
				br, err := g.benchrunRun(rate, dur)
				if err != nil {
					b.Fatal(err)
				}
				time.Sleep(time.Second)
				printRateRuns(fmt.Sprintf("fixed rate %d req/s for %s, non-streaming, against one simulator process (load average %s)", rate, dur, loadAvg()), []rateRun{vr, br})
				b.ReportMetric(br.Delivered, "benchrun-delivered-req/s")
				b.ReportMetric(vr.Delivered, "vegeta-delivered-req/s")
				b.ReportMetric(br.P99, "benchrun-p99-ms")
				b.ReportMetric(vr.P99, "vegeta-p99-ms")
				b.ReportMetric(br.SendLagP99, "benchrun-send-lag-p99-ms")
				b.ReportMetric(float64(br.Failed), "benchrun-failed")
				b.ReportMetric(float64(vr.Failed), "vegeta-failed")
			}
		})
	}
	b.Run("max", func(b *testing.B) {
		step := benchSeconds("BENCHRUN_VEGETA_STEP_SECONDS", 3*time.Second)
		for i := 0; i < b.N; i++ {
			var all []rateRun
			search := func(run func(int, time.Duration) (rateRun, error)) int {
				best, err := SearchMax(context.Background(), 1000, 64000, 0.05, func(rate int) (bool, error) {
					r, err := run(rate, step)
					time.Sleep(time.Second)
					all = append(all, r)
					return r.sustained(), err
				})
				if err != nil {
					b.Fatal(err)
				}
				return best
			}
			vmax := search(g.vegetaRun)
			bmax := search(g.benchrunRun)
			printRateRuns(fmt.Sprintf("highest sustained rate, %s steps (load average %s)", step, loadAvg()), all)
			fmt.Printf("\nhighest sustained rate (all ok, delivered >= 95%% of offered): vegeta %d req/s, benchrun %d req/s\n", vmax, bmax)
			b.ReportMetric(float64(vmax), "vegeta-max-req/s")
			b.ReportMetric(float64(bmax), "benchrun-max-req/s")
		}
	})
}

// benchSeconds is the duration in seconds in env, or def.
func benchSeconds(env string, def time.Duration) time.Duration {
	var s float64
	if _, err := fmt.Sscan(strings.TrimSpace(os.Getenv(env)), &s); err == nil && s > 0 {
		return time.Duration(s * float64(time.Second))
	}
	return def
}
