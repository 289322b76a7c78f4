package sim

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"sync/atomic"
	"time"
)

// histogram is a Prometheus-style cumulative histogram updated lock-free,
// because thousands of stream handlers observe into it concurrently.
type histogram struct {
	bounds []float64 // upper bounds in seconds, ascending
	counts []atomic.Uint64
	sumNs  atomic.Int64
	n      atomic.Uint64
}

func newHistogram(bounds []float64) *histogram {
	return &histogram{bounds: bounds, counts: make([]atomic.Uint64, len(bounds))}
}

func (h *histogram) observe(d time.Duration) {
	v := d.Seconds()
	i := sort.SearchFloat64s(h.bounds, v) // first bound >= v: Prometheus buckets are "le"
	if i < len(h.counts) {
		h.counts[i].Add(1)
	}
	h.sumNs.Add(int64(d))
	h.n.Add(1)
}

// Bucket bounds copied from vLLM's metrics so dashboards built for vLLM work.
var (
	ttftBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5,
		0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	itlBuckets = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75,
		1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
	e2eBuckets = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0,
		40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
	// vLLM gives request_queue_time_seconds its request-latency buckets;
	// the simulator adds finer ones below 0.3 s because a test engine's
	// queue waits are milliseconds and a mean is computed from sum/count
	// anyway.
	queueBuckets = []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5,
		5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
)

// metrics holds the counters behind /metrics. Gauges that describe the engine
// (running, waiting, cache usage) are read from the engine or fixed scheduler
// at scrape time.
type metrics struct {
	promptTokens     atomic.Uint64
	generationTokens atomic.Uint64
	successStop      atomic.Uint64
	successLength    atomic.Uint64
	aborted          atomic.Uint64
	errors           atomic.Uint64
	prefixQueries    atomic.Uint64
	prefixHits       atomic.Uint64
	preemptions      atomic.Uint64
	steps            atomic.Uint64
	stepBusySlots    atomic.Uint64 // sum of sequences over steps, for llama.cpp's n_busy_slots_per_decode
	promptNs         atomic.Int64  // time spent to first token, for llama.cpp's prompt_seconds_total
	decodeNs         atomic.Int64  // time spent after the first token
	ttft             *histogram
	itl              *histogram
	e2e              *histogram
	// queue is the time from arrival to first admission by the engine
	// (vLLM's request_queue_time_seconds); engine mode only, since fixed
	// mode never queues.
	queue *histogram
}

func newMetrics() *metrics {
	return &metrics{
		ttft:  newHistogram(ttftBuckets),
		itl:   newHistogram(itlBuckets),
		e2e:   newHistogram(e2eBuckets),
		queue: newHistogram(queueBuckets),
	}
}

type gauges struct {
	running, waiting int
	kvUsage          float64 // 0..1
	kvTokens         int
}

func (s *Server) writeMetrics(w io.Writer) error {
	bw := bufio.NewWriter(w)
	g := s.gauges()
	m := s.metrics
	flavour := s.cfg.Metrics
	// One series per served name, all with the server-wide values: the
	// simulator has one engine shared by its names, as vLLM does with aliases.
	lbls := make([]string, len(s.cfg.Models))
	for i, model := range s.cfg.Models {
		lbls[i] = `model_name="` + model + `"`
	}
	legacy := s.cfg.MetricsLegacyNames
	if flavour == MetricsVLLM || flavour == MetricsBoth {
		writeVLLMMetrics(bw, g, m, lbls, legacy)
	}
	if flavour == MetricsLlamaCpp || flavour == MetricsBoth {
		writeLlamaMetrics(bw, g, m, legacy)
	}
	if flavour == MetricsSGLang {
		writeSGLangMetrics(bw, g, m, lbls)
	}
	return bw.Flush()
}

func rate(n, secs float64) float64 {
	if secs <= 0 {
		return 0
	}
	return n / secs
}

// nolbl is the single unlabelled series of llama.cpp's metrics.
var nolbl = []string{""}

func series(name, lbl string) string {
	if lbl == "" {
		return name
	}
	return name + "{" + lbl + "}"
}

func fmtFloat(v float64) string {
	if math.IsInf(v, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

func gauge(w io.Writer, name, help string, lbls []string, v float64) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name)
	for _, lbl := range lbls {
		fmt.Fprintf(w, "%s %s\n", series(name, lbl), fmtFloat(v))
	}
}

func counter(w io.Writer, name, help string, lbls []string, v float64) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s counter\n", name, help, name)
	for _, lbl := range lbls {
		fmt.Fprintf(w, "%s %s\n", series(name, lbl), fmtFloat(v))
	}
}

func hist(w io.Writer, name, help string, lbls []string, h *histogram) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name)
	for _, lbl := range lbls {
		sep := ""
		if lbl != "" {
			sep = ","
		}
		var cum uint64
		for i, b := range h.bounds {
			cum += h.counts[i].Load()
			fmt.Fprintf(w, "%s_bucket{%s%sle=\"%s\"} %d\n", name, lbl, sep, fmtFloat(b), cum)
		}
		n := h.n.Load()
		fmt.Fprintf(w, "%s_bucket{%s%sle=\"+Inf\"} %d\n", name, lbl, sep, n)
		fmt.Fprintf(w, "%s %s\n", series(name+"_sum", lbl), fmtFloat(float64(h.sumNs.Load())/1e9))
		fmt.Fprintf(w, "%s %d\n", series(name+"_count", lbl), n)
	}
}
