package loadgen

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// findWrk returns wrk (Debian's package), or skips (fails under CI).
func findWrk(b *testing.B) string {
	if p, err := exec.LookPath("wrk"); err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		b.Fatal("wrk is not installed (CI is set): apt-get install -y wrk")
	}
	b.Skip("wrk is not installed: apt-get install -y wrk (Debian) to compare with the box's closed-loop ceiling")
	return ""
}

// wrkScript makes wrk send the request the open-loop comparison sends.
const wrkScript = `wrk.method = "POST"
wrk.body = '{"model":"sim-llama","prompt":"a b c","max_tokens":1,"stream":false}'
wrk.headers["Content-Type"] = "application/json"
`

// wrkRun is wrk's closed loop against the simulator: the most this box
// delivers (the client and the server share its cores), and what wrk's
// process spent on the CPU for it.
func wrkRun(b *testing.B, bin, url string, conns int, dur time.Duration) (reqS, cpuPerReqUs float64) {
	b.Helper()
	script := b.TempDir() + "/post.lua"
	if err := os.WriteFile(script, []byte(wrkScript), 0o644); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(bin, "-t2", fmt.Sprintf("-c%d", conns), "-d"+dur.String(), "-s", script, url+"/v1/completions")
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("wrk: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`(\d+) requests in`).FindSubmatch(out)
	r := regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`).FindSubmatch(out)
	if m == nil || r == nil {
		b.Fatalf("wrk's output has no request count:\n%s", out)
	}
	if regexp.MustCompile(`Non-2xx|Socket errors`).Match(out) {
		b.Fatalf("wrk met errors:\n%s", out)
	}
	n, _ := strconv.Atoi(string(m[1]))
	reqS, _ = strconv.ParseFloat(string(r[1]), 64)
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	return reqS, float64(cpu.Microseconds()) / float64(max(n, 1))
}

// BenchmarkVersusWrk measures, in one sitting, the box's closed-loop
// ceiling for short non-streamed requests (wrk, 64 connections, against
// one simulator process), then benchrun's open loop at that rate and a
// quarter above it, and prints the delivered rates as ratios of the
// ceiling and the client CPU per request of each (BENCHRUN_WRK_SECONDS
// sets the 5 s per pass). Skips without wrk (apt-get install wrk) unless
// CI is set.
func BenchmarkVersusWrk(b *testing.B) {
	tuneLikeCLI(b)
	bin := findWrk(b)
	sp := startSimChild(b, time.Millisecond, 0)
	g := &vegetaRig{sim: sp}
	dur := benchSeconds("BENCHRUN_WRK_SECONDS", 5*time.Second)
	for i := 0; i < b.N; i++ {
		ceiling, wrkCPU := wrkRun(b, bin, sp.URL, 64, dur)
		time.Sleep(time.Second)
		fmt.Printf("\nwrk closed loop, 64 connections, %s (load average %s): %.0f req/s, %.1f µs of wrk CPU per request\n", dur, loadAvg(), ceiling, wrkCPU)
		fmt.Printf("%-22s %10s %10s %8s %12s %9s %9s\n", "benchrun open loop", "offered", "delivered", "ratio", "cpu_us/req", "p99_ms", "lag_p99")
		for _, f := range []float64{1, 1.25} {
			rate := int(f * ceiling)
			r, err := g.benchrunRun(rate, dur)
			if err != nil {
				b.Fatal(err)
			}
			time.Sleep(time.Second)
			cpuPerReq := r.Cores * dur.Seconds() * 1e6 / float64(max(r.Requests, 1))
			fmt.Printf("%-22s %10.0f %10.0f %8.2f %12.1f %9.2f %9.2f\n", fmt.Sprintf("at %.2f× the ceiling", f), r.Offered, r.Delivered, r.Delivered/ceiling, cpuPerReq, r.P99, r.SendLagP99)
			if f == 1 {
				b.ReportMetric(r.Delivered/ceiling, "delivered/ceiling")
				b.ReportMetric(cpuPerReq, "benchrun-cpu-us/req")
			}
		}
		b.ReportMetric(ceiling, "wrk-req/s")
		b.ReportMetric(wrkCPU, "wrk-cpu-us/req")
	}
}
