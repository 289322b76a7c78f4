package loadgen

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/sim"
	"github.com/benchrun/benchrun/internal/testkit"
)

// The headroom benchmarks run the simulator in a child process (this test
// binary re-executed), so the client's memory and CPU are measured alone.
const simChildEnv = "BENCHRUN_LOADGEN_SIM_CHILD"

// simProfileEnv names a file the child simulator writes its CPU profile
// to when it exits (to see what the server side costs on shared cores).
const simProfileEnv = "BENCHRUN_LOADGEN_SIM_CPUPROFILE"

// simChild serves the simulator with "ttft,itl" from spec on a free port,
// prints the address, and exits when stdin closes (the parent is gone).
// The simulator keeps no request records (nothing reads them here) and
// serves no /metrics scrape: on two shared cores every microsecond it
// spends is taken from the client being measured.
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
	stopProfile := func() {}
	if p := os.Getenv(simProfileEnv); p != "" {
		if f, err := os.Create(p); err == nil && pprof.StartCPUProfile(f) == nil {
			stopProfile = func() { pprof.StopCPUProfile(); f.Close() }
		}
	}
	fmt.Println(ln.Addr().String())
	go func() {
		io.Copy(io.Discard, os.Stdin)
		stopProfile()
		os.Exit(0)
	}()
	srv := &http.Server{Handler: sim.New(cfg)}
	_ = srv.Serve(ln)
	return 0
}

// simProcess is a child simulator.
type simProcess struct {
	URL string
	Pid int
}

// startSimChild starts the child simulator.
func startSimChild(tb testing.TB, ttft, itl time.Duration) simProcess {
	tb.Helper()
	addr, pid := startChild(tb, "^$", simChildEnv+"="+ttft.String()+","+itl.String(), "child simulator")
	return simProcess{URL: "http://" + addr, Pid: pid}
}

// startChild runs this test binary as a child server (the test run
// pattern and the environment entry choose which): it prints its address
// on its first line and serves until its stdin closes, which the cleanup
// does, killing it after 3 s.
func startChild(tb testing.TB, run, env, what string) (addr string, pid int) {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run="+run)
	cmd.Env = append(os.Environ(), env)
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
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		tb.Fatalf("%s: %v", what, err)
	}
	return strings.TrimSpace(line), cmd.Process.Pid
}

// meter measures what a stretch of load cost: this process's CPU (the
// client's), the child simulator's, the Go runtime's GC CPU and the
// allocations. Read it with since.
type meter struct {
	wall         time.Time
	self, child  time.Duration
	gc, user     float64
	mallocs      float64
	cycles       float64
	childPid     int
	loadAvgStart string
	cpu          cpuTicks
}

func startMeter(childPid int) *meter {
	m := &meter{childPid: childPid, loadAvgStart: loadAvg(), cpu: machineTicks()}
	m.self, m.child = selfCPUTime(), pidCPU(childPid)
	m.gc, m.user, m.mallocs, m.cycles = runtimeCounters()
	m.wall = time.Now()
	return m
}

// cost is what happened since startMeter.
type cost struct {
	Wall, Client, Sim time.Duration
	GCShare           float64 // the GC's share of the Go code's CPU, by the runtime's estimate
	GCCycles          float64
	Mallocs           float64
	LoadAvg           string // uptime's load averages at the start and the end
	// Steal is the share of the machine's CPU time its hypervisor gave to
	// others (/proc/stat): time neither the client nor the server had,
	// to read next to a send-lag p99 on a VM.
	Steal float64
}

func (m *meter) since() cost {
	wall := time.Since(m.wall)
	self, child := selfCPUTime()-m.self, pidCPU(m.childPid)-m.child
	gc, user, mallocs, cycles := runtimeCounters()
	c := cost{Wall: wall, Client: self, Sim: child, Mallocs: mallocs - m.mallocs, GCCycles: cycles - m.cycles,
		LoadAvg: m.loadAvgStart + " → " + loadAvg()}
	if now := machineTicks(); now.total > m.cpu.total {
		c.Steal = float64(now.steal-m.cpu.steal) / float64(now.total-m.cpu.total)
	}
	if g, u := gc-m.gc, user-m.user; g+u > 0 {
		c.GCShare = g / (g + u)
	}
	return c
}

// report adds the cost per unit (events or requests) to b's metrics.
func (c cost) report(b *testing.B, units float64, unit string) {
	if units <= 0 {
		return
	}
	b.ReportMetric(units/c.Client.Seconds(), unit+"/client-cpu-s")
	b.ReportMetric(c.Mallocs/units, "allocs/"+unit)
	b.ReportMetric(100*c.GCShare, "gc-%")
	b.ReportMetric(c.GCCycles, "gc-cycles")
	b.ReportMetric(c.Client.Seconds()/c.Wall.Seconds(), "client-cores")
	b.ReportMetric(c.Sim.Seconds()/c.Wall.Seconds(), "sim-cores")
	b.ReportMetric(100*c.Steal, "steal-%")
	b.Logf("load average %s", c.LoadAvg)
}

// pidCPU is a process's user+system CPU from /proc (0 where there is none).
func pidCPU(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+1:]
	}
	f := strings.Fields(s)
	if len(f) < 13 {
		return 0
	}
	// Fields 14 and 15 of stat (utime, stime), in clock ticks of 1/100 s.
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * 10 * time.Millisecond
}

var runtimeSamples = []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}, {Name: "/cpu/classes/user:cpu-seconds"},
	{Name: "/gc/heap/allocs:objects"}, {Name: "/gc/cycles/total:gc-cycles"}}

// runtimeCounters reads the runtime's CPU estimates (GC and user code)
// and its allocation and GC cycle counts. The CPU classes are the
// runtime's own estimates from the time its Ps spend in each (not the
// kernel's CPU time), so only their ratio is used.
func runtimeCounters() (gcSeconds, userSeconds, mallocs, cycles float64) {
	metrics.Read(runtimeSamples)
	f := func(i int) float64 {
		switch v := runtimeSamples[i].Value; v.Kind() {
		case metrics.KindFloat64:
			return v.Float64()
		case metrics.KindUint64:
			return float64(v.Uint64())
		}
		return 0
	}
	return f(0), f(1), f(2), f(3)
}

// cpuTicks is the machine's CPU time in clock ticks from /proc/stat's
// cpu line: all of it, and the part stolen by the hypervisor.
type cpuTicks struct{ total, steal int64 }

func machineTicks() cpuTicks {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTicks{}
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return cpuTicks{}
	}
	var t cpuTicks
	// user nice system idle iowait irq softirq steal (guest time is
	// already counted in user).
	for i, v := range f[1:9] {
		n, _ := strconv.ParseInt(v, 10, 64)
		t.total += n
		if i == 7 {
			t.steal = n
		}
	}
	return t
}

// loadAvg is /proc/loadavg's three averages (the machine is shared: a
// number means little without them).
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// memNow is the process's heap and stack in use.
func memNow() uint64 {
	runtime.GC()
	return InUseMemory()
}

// selfCPUTime is this process's CPU time (testkit.CPUTime), 0 when it
// cannot be read.
func selfCPUTime() time.Duration { d, _ := testkit.CPUTime(false); return d }
