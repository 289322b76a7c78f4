//go:build linux

package telemetry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/benchrun/benchrun/internal/results"
)

// The proc probe reads /proc directly rather than through
// github.com/prometheus/procfs: that module is not in go.mod, and what the
// probe needs is two short files per process (stat, statm), a few lines to
// parse.

const (
	// procDefaultInterval is the sampling period when the caller gives none:
	// fine enough to catch an RSS peak of a model load or a batch, cheap
	// enough (one pass over /proc) not to load the host.
	procDefaultInterval = 100 * time.Millisecond
	// procMinInterval bounds the cost of a pass over every /proc/PID/stat on
	// a busy host; a shorter interval is raised to it.
	procMinInterval = 10 * time.Millisecond

	// procAtClkTck is AT_CLKTCK of include/uapi/linux/auxvec.h: the auxv
	// entry where the kernel hands every process its USER_HZ, the unit of
	// /proc/PID/stat's times. golang.org/x/sys/unix has no constant for it.
	procAtClkTck = 17
	// procUserHZ is USER_HZ where auxv does not say: it is 100 on every
	// architecture Go runs Linux on (only alpha and ia64 differed), and the
	// kernel keeps it fixed whatever CONFIG_HZ is, since it is ABI.
	procUserHZ = 100
)

// procClockTicks is the kernel's USER_HZ. Go has no sysconf(_SC_CLK_TCK)
// without cgo, but sysconf itself only reads AT_CLKTCK from the auxiliary
// vector, which unix.Auxv exposes.
func procClockTicks() float64 {
	if vec, err := unix.Auxv(); err == nil {
		for _, kv := range vec {
			if kv[0] == procAtClkTck && kv[1] > 0 {
				return float64(kv[1])
			}
		}
	}
	return procUserHZ
}

// NewProcProbe measures the process tree rooted at pid — the server
// benchrun launched and every descendant, found again at each sample by
// walking the ppid links of /proc/*/stat, since servers fork workers
// (vLLM's engine core, Ollama's runner). It fills server_cpu_s,
// server_cpu_util and server_rss_peak_bytes, sampling every interval
// (0: 100 ms; less than 10 ms is raised to 10 ms).
//
// CPU: at each reading every process of the tree gives utime+stime (its
// own, all threads) plus cutime+cstime (the children it has reaped), in
// USER_HZ ticks. server_cpu_s is the growth of that sum over the window,
// with these rules for processes that leave the tree:
//   - a process reaped by a parent in the tree is counted in full: its CPU
//     moves into the parent's cutime/cstime, and the process's own
//     pre-window share is taken off so it is not counted twice. This is how
//     a short-lived child, born and reaped between two samples, is counted.
//   - a process that is gone with no such growth in a tracked ancestor
//     (orphaned and reaped by init or benchrun's guard, or whose parent
//     ignores SIGCHLD, which discards the times) counts up to its last
//     reading only: at most one interval of its CPU is lost.
//   - a process, once seen in the tree, stays tracked while it lives even
//     when re-parented out of it (a daemonizing worker).
//
// RSS: the summed resident set (/proc/PID/statm, pages × page size) of the
// tree's live processes at each reading; server_rss_peak_bytes is the
// largest sum. Pages shared between processes (fork's copy-on-write, shared
// libraries, shared memory) are counted once per process, so the sum can
// exceed the memory really used: PSS (smaps_rollup) would be exact but
// costs a walk of every mapping at each sample.
//
// The probe never fails a cell: when pid is not running at Begin, or exits
// (or is replaced by a reused pid) before End, the three columns stay NULL
// and End's note says so. NewProcProbe fails only for a pid that cannot be
// one or a host without a readable /proc.
func NewProcProbe(pid int, interval time.Duration) (Probe, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("proc probe: %d is not a process id", pid)
	}
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		return nil, fmt.Errorf("proc probe: /proc is not readable: %w", err)
	}
	if interval == 0 {
		interval = procDefaultInterval
	}
	if interval < procMinInterval {
		interval = procMinInterval
	}
	return &procProbe{
		pid:      pid,
		interval: interval,
		hz:       procClockTicks(),
		pageSize: int64(os.Getpagesize()),
	}, nil
}

type procProbe struct {
	pid      int
	interval time.Duration
	hz       float64
	pageSize int64

	mu     sync.Mutex
	win    *procWindow // the open window; nil between End and Begin
	closed bool
}

// procWindow is one cell's window. Its fields after the channels belong to
// the sampling goroutine until done is closed, then to End.
type procWindow struct {
	cellID string
	stop   chan struct{}
	done   chan struct{}

	begin time.Time
	last  time.Time
	// coresAt and coresTicks are the reading the next cpu_cores sample
	// is measured from.
	coresAt    time.Time
	coresTicks int64
	rootStart  uint64 // the root's starttime, to tell a reused pid
	procs      map[int]*procEntry
	// credit is what processes gone from the tree leave to the window's
	// CPU, in ticks: + their last reading's growth when lost, − their
	// pre-window share when reaped in the tree (see NewProcProbe).
	credit  int64
	ticks   int64 // the window's CPU ticks at the last reading
	rssPeak int64
	// gone says why the window cannot be measured; "" while it can.
	gone    string
	samples thinnedSamples // bounded: a soak's cell keeps a grid of its readings
	buf     []byte
}

// procEntry is one tracked process.
type procEntry struct {
	start uint64 // starttime: a pid reused by another process differs
	ppid  int
	base  int64 // ticks at the window's first reading; 0 for one born in it
	last  int64 // own + reaped children's ticks at the last reading
	cut   int64 // reaped children's ticks at the last reading
}

// procStat is what the probe takes from /proc/PID/stat.
type procStat struct {
	ppid  int
	own   int64 // utime + stime
	cut   int64 // cutime + cstime
	start uint64
}

func (p *procProbe) Name() string { return "proc" }

func (p *procProbe) Begin(_ context.Context, cellID string) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	old := p.win
	p.win = nil
	p.mu.Unlock()
	if old != nil {
		// A Begin without End: the open window is dropped.
		old.halt()
	}

	w := &procWindow{
		cellID: cellID,
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
		procs:  map[int]*procEntry{},
		buf:    make([]byte, 4096),
	}
	p.read(w, true)
	if w.gone == "" {
		// The window lives from Begin to End, not as long as ctx: a cell's
		// context may be done before the stage calls End, and End still
		// needs the readings in between.
		go p.loop(w)
	} else {
		close(w.done)
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		w.halt()
		return
	}
	p.win = w
}

// halt stops w's sampler and waits for it.
func (w *procWindow) halt() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

func (p *procProbe) loop(w *procWindow) {
	defer close(w.done)
	t := time.NewTicker(p.interval)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
		}
		if !p.read(w, false) {
			return
		}
	}
}

func (p *procProbe) End(_ context.Context, row *results.Cell) ([]results.Sample, string) {
	p.mu.Lock()
	w := p.win
	p.win = nil
	p.mu.Unlock()
	if w == nil {
		return nil, "proc: no window open (End without Begin)"
	}
	w.halt()
	if w.gone == "" {
		p.read(w, false)
	}
	if w.gone != "" {
		return w.samples.rows(), "proc: " + w.gone + "; server_cpu_s, server_cpu_util, server_rss_peak_bytes not measured"
	}
	cpu := float64(w.ticks) / p.hz
	row.ServerCPUS = &cpu
	if secs := w.last.Sub(w.begin).Seconds(); secs > 0 {
		util := cpu / secs
		row.ServerCPUUtil = &util
	}
	rss := w.rssPeak
	row.ServerRSSPeakBytes = &rss
	return w.samples.rows(), w.samples.note(p.interval.String())
}

func (p *procProbe) Close() error {
	p.mu.Lock()
	w := p.win
	p.win = nil
	p.closed = true
	p.mu.Unlock()
	if w != nil {
		w.halt()
	}
	return nil
}

// read takes one reading of the tree into w; false once the window cannot
// be measured (w.gone says why).
func (p *procProbe) read(w *procWindow, first bool) bool {
	stats, err := procScan(w.buf)
	procAfterScan()
	if err != nil {
		w.gone = "reading /proc: " + err.Error()
		return false
	}
	root, ok := stats[p.pid]
	switch {
	case first && !ok:
		w.gone = fmt.Sprintf("server pid %d is not running (or its /proc entry is unreadable)", p.pid)
		return false
	case first:
		w.rootStart = root.start
	case !ok || root.start != w.rootStart:
		w.gone = fmt.Sprintf("server pid %d exited during the window", p.pid)
		return false
	}

	// The tree now: the root, the processes tracked before that still live,
	// and every descendant of those.
	alive := func(pid int, e *procEntry) bool {
		s, ok := stats[pid]
		return ok && s.start == e.start
	}
	children := map[int][]int{}
	for pid, s := range stats {
		children[s.ppid] = append(children[s.ppid], pid)
	}
	members := map[int]bool{}
	queue := []int{p.pid}
	for pid, e := range w.procs {
		if alive(pid, e) {
			queue = append(queue, pid)
		}
	}
	for len(queue) > 0 {
		pid := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		if members[pid] {
			continue
		}
		members[pid] = true
		queue = append(queue, children[pid]...)
	}
	now := p.rereadMembers(stats, members, w.buf)

	// Processes gone since the last reading, grouped by their nearest
	// tracked ancestor still alive (through ancestors gone as well: a
	// worker and its child reaped in one interval).
	gone := map[int]bool{}
	for pid, e := range w.procs {
		if !alive(pid, e) {
			gone[pid] = true
		}
	}
	groups := map[int][]*procEntry{}
	for pid := range gone {
		e := w.procs[pid]
		a := e.ppid
		for hops := 0; gone[a] && hops < len(gone); hops++ {
			a = w.procs[a].ppid
		}
		groups[a] = append(groups[a], e)
	}
	for pid := range gone {
		delete(w.procs, pid)
	}
	for a, group := range groups {
		var need int64
		for _, e := range group {
			need += e.last
		}
		ae, tracked := w.procs[a]
		// A reaped process hands its whole CPU (own and its own reaped
		// children's) to the reaper's cutime/cstime, so the reaper's growth
		// covers the group exactly when the group was reaped there.
		reaped := tracked && alive(a, ae) && stats[a].cut-ae.cut >= need
		for _, e := range group {
			if reaped {
				w.credit -= e.base
			} else {
				w.credit += e.last - e.base
			}
		}
	}

	var ticks, rss int64
	ticks = w.credit
	for pid := range members {
		s := stats[pid]
		e := w.procs[pid]
		v := s.own + s.cut
		if e == nil {
			e = &procEntry{start: s.start}
			if first {
				e.base = v
			}
			w.procs[pid] = e
		}
		e.ppid = s.ppid
		e.cut = s.cut
		// The times only grow; a zombie's may read lower than when it ran.
		e.last = max(e.last, v)
		ticks += e.last - e.base
		if r, err := procRSS(pid, w.buf); err == nil {
			rss += r * p.pageSize
		}
	}
	if first {
		w.begin = now
	}
	w.last = now
	w.ticks = ticks
	w.rssPeak = max(w.rssPeak, rss)
	dev := "pid:" + strconv.Itoa(p.pid)
	var rows []results.Sample
	if first {
		w.coresAt, w.coresTicks = now, ticks
	} else if span := now.Sub(w.coresAt); span >= max(p.interval, procCoresSpan) {
		// The tree's CPU use since the last such sample, in cores: what
		// the report's usage chart plots when there is no GPU. The times
		// are whole clock ticks (10 ms), so a span of a few ms (a reading
		// right after a slow one) would read as many cores.
		cores := float64(ticks-w.coresTicks) / p.hz / span.Seconds()
		rows = append(rows, results.Sample{CellID: w.cellID, At: now, Source: "proc", Device: dev, Metric: "cpu_cores", Unit: "cores", Value: cores})
		w.coresAt, w.coresTicks = now, ticks
	}
	w.samples.addRows(append(rows,
		results.Sample{CellID: w.cellID, At: now, Source: "proc", Device: dev, Metric: "cpu_s", Unit: "s", Value: float64(ticks) / p.hz},
		results.Sample{CellID: w.cellID, At: now, Source: "proc", Device: dev, Metric: "rss_bytes", Unit: "bytes", Value: float64(rss)},
		results.Sample{CellID: w.cellID, At: now, Source: "proc", Device: dev, Metric: "processes", Unit: "processes", Value: float64(len(members))},
	))
	return true
}

// procScan reads the stat of every process on the host: the ppid links
// are the only way to find a process's descendants.
// procCoresSpan is the shortest span a cpu_cores sample is measured
// over: a clock tick either end is at most 0.2 cores over 100 ms.
const procCoresSpan = 100 * time.Millisecond

// procAfterScan runs after each scan of /proc: a test makes scans slow
// with it, as a loaded machine does.
var procAfterScan = func() {}

// rereadMembers reads the tree's processes again, quickly, and returns
// the instant of that reading: the scan of every process (to find the
// tree) can take hundreds of milliseconds on a loaded machine, and a
// reading stamped after it, beside the next one stamped after a quick
// scan, divided a slow scan's CPU by a quick scan's interval (378 cores
// on 2). The stamp is the middle of the members' reads, which take
// microseconds each.
//
// The re-read is all or nothing: a member that ended meanwhile may have
// been reaped by another member, whose reaped-children time then holds
// its CPU while the scan's reading of it holds it too (counted twice: a
// one-core burn read 1.48 cores). Then the scan's readings stand, stamped
// as the re-read began, the nearest to the scan.
func (p *procProbe) rereadMembers(stats map[int]procStat, members map[int]bool, buf []byte) time.Time {
	before := time.Now()
	fresh := make(map[int]procStat, len(members))
	// In pid order, as the scan reads /proc: a parent (most often the
	// lower pid) before the children it may reap, whose time would
	// otherwise be read in both.
	for _, pid := range slices.Sorted(maps.Keys(members)) {
		s, err := procReadStat(pid, buf)
		if err != nil || s.start != stats[pid].start {
			return before
		}
		fresh[pid] = s
	}
	after := time.Now()
	maps.Copy(stats, fresh)
	return before.Add(after.Sub(before) / 2)
}

func procScan(buf []byte) (map[int]procStat, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, err
	}
	stats := make(map[int]procStat, len(names))
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid <= 0 {
			continue
		}
		// A process that exits between the listing and its read is not
		// in this reading.
		if s, err := procReadStat(pid, buf); err == nil {
			stats[pid] = s
		}
	}
	return stats, nil
}

// procReadFile reads a small /proc file into buf: these files are
// generated on read, a few hundred bytes, and read hundreds of times a
// second, so no allocation per read.
func procReadFile(path string, buf []byte) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return buf[:n], nil
}

var errProcStat = errors.New("malformed /proc stat")

func procReadStat(pid int, buf []byte) (procStat, error) {
	b, err := procReadFile("/proc/"+strconv.Itoa(pid)+"/stat", buf)
	if err != nil {
		return procStat{}, err
	}
	// comm, field 2, is in parentheses and may hold spaces and ')': the
	// fields that follow start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, errProcStat
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3 (state); fields 4 ppid, 14 utime, 15 stime, 16 cutime,
	// 17 cstime, 22 starttime (proc(5)).
	if len(f) < 20 {
		return procStat{}, errProcStat
	}
	num := func(field int) int64 {
		v, _ := strconv.ParseInt(string(f[field-3]), 10, 64)
		return max(v, 0)
	}
	return procStat{
		ppid:  int(num(4)),
		own:   num(14) + num(15),
		cut:   num(16) + num(17),
		start: uint64(num(22)),
	}, nil
}

// procRSS is the resident pages of pid (statm's second field).
func procRSS(pid int, buf []byte) (int64, error) {
	b, err := procReadFile("/proc/"+strconv.Itoa(pid)+"/statm", buf)
	if err != nil {
		return 0, err
	}
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0, errProcStat
	}
	return strconv.ParseInt(string(f[1]), 10, 64)
}
