// Package livemetrics serves a run's own health as Prometheus metrics
// while it runs (`benchrun PLAN --metrics-addr ADDR`): what the client has
// sent, has in flight, completed and failed in each cell, how late its
// open loop sends, how late the machine runs a thread beside the load
// (internal/machine's probe), which stage and cell are running, and the
// process's own CPU and memory. It is the pipeline.Live a run is handed
// (implemented with plain func types: nothing under internal/ imports
// pipeline); the metric names are documented in docs/METRICS.md ("Live
// metrics").
//
// Nothing here costs anything per request except a send lag's histogram
// observation: the request counts are read from the loads' own counters
// (loadgen.Counters) when a scrape asks, and what is kept grows with the
// run's cells, never with its requests.
package livemetrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Path is where the metrics are served.
const Path = "/metrics"

// The metric names, each declared once (docs/METRICS.md lists them).
const (
	NameSent        = "benchrun_requests_sent_total"
	NameCompleted   = "benchrun_requests_completed_total"
	NameFailed      = "benchrun_requests_failed_total"
	NameInFlight    = "benchrun_requests_in_flight"
	NameSendLag     = "benchrun_send_lag_seconds"
	NameMachineLate = "benchrun_machine_late_seconds"
	NameStage       = "benchrun_stage_running"
	NameCell        = "benchrun_cell_running"
	NameRun         = "benchrun_run_info"
)

// Server is a run's live metrics, served on its address until Close.
type Server struct {
	reg      *prometheus.Registry
	srv      *http.Server
	addr     net.Addr
	served   chan struct{}
	serveErr error

	run         *prometheus.GaugeVec
	stages      *prometheus.GaugeVec
	cells       *prometheus.GaugeVec
	sendLag     *prometheus.HistogramVec
	machineLate *prometheus.HistogramVec

	mu sync.Mutex
	// ended are each cell's counts from its passes that ended; running
	// the passes being sent now, whose counts are read when scraped.
	ended   map[cellKey]tally
	running map[*pass]struct{}
}

type cellKey struct{ stage, cell string }

// tally is a cell's counts.
type tally struct{ sent, done, failed int64 }

func (c *tally) add(sent, done, failed int64) {
	c.sent, c.done, c.failed = c.sent+sent, c.done+done, c.failed+failed
}

// Listen starts serving the metrics on addr (HOST:PORT; port 0 picks a
// free one, Addr says which). The error says what is wrong with the
// address: a malformed one, or one that cannot be listened on.
func Listen(addr string) (*Server, error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, fmt.Errorf("%q: want HOST:PORT, e.g. 127.0.0.1:9464: %w", addr, err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%q: cannot listen there: %w", addr, err)
	}
	s := newServer()
	mux := http.NewServeMux()
	mux.Handle(Path, promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	s.addr, s.served = ln.Addr(), make(chan struct{})
	go func() {
		defer close(s.served)
		if err := s.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			s.serveErr = err
		}
	}()
	return s, nil
}

func newServer() *Server {
	s := &Server{
		reg:     prometheus.NewRegistry(),
		ended:   map[cellKey]tally{},
		running: map[*pass]struct{}{},
		run: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: NameRun,
			Help: "The run being measured (always 1): its plan and run id."}, []string{"plan", "run"}),
		stages: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: NameStage,
			Help: "1 for each stage running now, by stage name and kind."}, []string{"stage", "kind"}),
		cells: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: NameCell,
			Help: "1 for each cell whose load is being sent now, by stage, cell id and phase (warmup or timed)."}, []string{"stage", "cell", "phase"}),
		// From 50 µs (a quiet machine's send) to 10 s (a client far
		// behind its schedule).
		sendLag: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: NameSendLag,
			Help:    "How late the open loop sent each request it scheduled (sent minus scheduled), by stage and cell, observed as the request finishes.",
			Buckets: prometheus.ExponentialBucketsRange(50e-6, 10, 18)}, []string{"stage", "cell"}),
		// From 10 µs (a wake on time) to 1 s (a stopped machine).
		machineLate: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: NameMachineLate,
			Help:    "How late the machine probe's waits ended beside the load: path loop (an event loop's timer handed to another thread, what verdicts judge with) or wake (a lone thread's sleep).",
			Buckets: prometheus.ExponentialBucketsRange(10e-6, 1, 16)}, []string{"path"}),
	}
	s.reg.MustRegister(s.run, s.stages, s.cells, s.sendLag, s.machineLate, requestCollector{s},
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), collectors.NewGoCollector())
	return s
}

// Addr is the address the metrics are served on.
func (s *Server) Addr() net.Addr { return s.addr }

// Close stops serving: the endpoint is gone when it returns.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if err != nil {
		err = errors.Join(err, s.srv.Close())
	}
	<-s.served
	return errors.Join(err, s.serveErr)
}

// Run names the run being measured.
func (s *Server) Run(plan, runID string) {
	s.run.WithLabelValues(plan, runID).Set(1)
}

// Stage marks a stage running until end is called.
func (s *Server) Stage(name, kind string) (end func()) {
	s.stages.WithLabelValues(name, kind).Set(1)
	return func() { s.stages.DeleteLabelValues(name, kind) }
}

// MachineLate observes one machine probe sample.
func (s *Server) MachineLate(path string, late time.Duration) {
	s.machineLate.WithLabelValues(path).Observe(late.Seconds())
}

// pass is one pass of a cell's load being sent.
type pass struct {
	key    cellKey
	phase  string
	counts func() (sent, done, failed int64)
}

// Pass marks one pass of a cell's load running until end is called
// (again: no effect); counts is read at each scrape, and its last answer
// joins the cell's at the end.
func (s *Server) Pass(stage, cell string, timed bool, counts func() (sent, done, failed int64)) (sendLag func(time.Duration), end func()) {
	p := &pass{key: cellKey{stage, cell}, phase: "warmup", counts: counts}
	if timed {
		p.phase = "timed"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running[p] = struct{}{}
	if _, ok := s.ended[p.key]; !ok {
		s.ended[p.key] = tally{} // the cell's series start at 0
	}
	s.cells.WithLabelValues(stage, cell, p.phase).Set(1)
	lag := s.sendLag.WithLabelValues(stage, cell)
	var once sync.Once
	return func(d time.Duration) { lag.Observe(d.Seconds()) }, func() { once.Do(func() { s.endPass(p) }) }
}

// endPass adds the pass's counts to its cell's.
func (s *Server) endPass(p *pass) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.running, p)
	total := s.ended[p.key]
	total.add(p.counts())
	s.ended[p.key] = total
	s.cells.DeleteLabelValues(p.key.stage, p.key.cell, p.phase)
}

// requestCollector reports the request counts by cell: the ended passes'
// plus the running ones' counters as they are at the scrape.
type requestCollector struct{ s *Server }

var (
	descSent = prometheus.NewDesc(NameSent,
		"Requests the client sent, by stage and cell (warm-up passes included).", []string{"stage", "cell"}, nil)
	descCompleted = prometheus.NewDesc(NameCompleted,
		"Requests that finished without an error, by stage and cell.", []string{"stage", "cell"}, nil)
	descFailed = prometheus.NewDesc(NameFailed,
		"Requests that finished with an error (the server's, a stall, a timeout, a cut stream), by stage and cell.", []string{"stage", "cell"}, nil)
	descInFlight = prometheus.NewDesc(NameInFlight,
		"Requests sent and not finished yet, by stage and cell.", []string{"stage", "cell"}, nil)
)

func (requestCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descSent
	ch <- descCompleted
	ch <- descFailed
	ch <- descInFlight
}

func (rc requestCollector) Collect(ch chan<- prometheus.Metric) {
	s := rc.s
	s.mu.Lock()
	all := make(map[cellKey]tally, len(s.ended))
	for k, c := range s.ended {
		all[k] = c
	}
	inFlight := map[cellKey]int64{}
	for p := range s.running {
		sent, done, failed := p.counts()
		c := all[p.key]
		c.add(sent, done, failed)
		all[p.key] = c
		inFlight[p.key] += sent - done - failed
	}
	s.mu.Unlock()
	for k, c := range all {
		ch <- prometheus.MustNewConstMetric(descSent, prometheus.CounterValue, float64(c.sent), k.stage, k.cell)
		ch <- prometheus.MustNewConstMetric(descCompleted, prometheus.CounterValue, float64(c.done), k.stage, k.cell)
		ch <- prometheus.MustNewConstMetric(descFailed, prometheus.CounterValue, float64(c.failed), k.stage, k.cell)
		ch <- prometheus.MustNewConstMetric(descInFlight, prometheus.GaugeValue, float64(max(inFlight[k], 0)), k.stage, k.cell)
	}
}
