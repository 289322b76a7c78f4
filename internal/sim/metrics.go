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
		pt, gt := float64(m.promptTokens.Load()), float64(m.generationTokens.Load())
		ps, ds := float64(m.promptNs.Load())/1e9, float64(m.decodeNs.Load())/1e9
		counter(bw, "llamacpp:prompt_tokens_total", "Number of prompt tokens processed.", nolbl, pt)
		counter(bw, "llamacpp:prompt_seconds_total", "Prompt process time", nolbl, ps)
		counter(bw, "llamacpp:tokens_predicted_total", "Number of generation tokens processed.", nolbl, gt)
		counter(bw, "llamacpp:tokens_predicted_seconds_total", "Predict process time", nolbl, ds)
		steps := m.steps.Load()
		counter(bw, "llamacpp:n_decode_total", "Total number of llama_decode() calls", nolbl, float64(steps))
		busy := 0.0
		if steps > 0 {
			busy = float64(m.stepBusySlots.Load()) / float64(steps)
		}
		gauge(bw, "llamacpp:n_busy_slots_per_decode", "Average number of busy slots per llama_decode() call", nolbl, busy)
		gauge(bw, "llamacpp:prompt_tokens_seconds", "Average prompt throughput in tokens/s.", nolbl, rate(pt, ps))
		gauge(bw, "llamacpp:predicted_tokens_seconds", "Average generation throughput in tokens/s.", nolbl, rate(gt, ds))
		if legacy {
			// Removed upstream as "too internal" (llama.cpp PRs #13660,
			// #22879): current builds leave KV usage to /slots.
			gauge(bw, "llamacpp:kv_cache_usage_ratio", "KV-cache usage. 1 means 100 percent usage.", nolbl, g.kvUsage)
			gauge(bw, "llamacpp:kv_cache_tokens", "KV-cache tokens.", nolbl, float64(g.kvTokens))
		}
		gauge(bw, "llamacpp:requests_processing", "Number of requests processing.", nolbl, float64(g.running))
		gauge(bw, "llamacpp:requests_deferred", "Number of requests deferred.", nolbl, float64(g.waiting))
	}
	if flavour == MetricsSGLang {
		writeSGLangMetrics(bw, g, m, lbls)
	}
	return bw.Flush()
}

// writeVLLMMetrics writes vLLM V1's names, or with legacy the spellings
// they replaced (gpu_cache_usage_perc, gpu_prefix_cache_*,
// time_per_output_token_seconds: removed in vLLM 0.11/0.12), never both,
// so that a scraper is tested against each spelling on its own.
func writeVLLMMetrics(bw io.Writer, g gauges, m *metrics, lbls []string, legacy bool) {
	gauge(bw, "vllm:num_requests_running", "Number of requests in model execution batches.", lbls, float64(g.running))
	gauge(bw, "vllm:num_requests_waiting", "Number of requests waiting to be processed.", lbls, float64(g.waiting))
	if legacy {
		gauge(bw, "vllm:gpu_cache_usage_perc", "GPU KV-cache usage. 1 means 100 percent usage.", lbls, g.kvUsage)
	} else {
		gauge(bw, "vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", lbls, g.kvUsage)
	}
	counter(bw, "vllm:prompt_tokens_total", "Number of prefill tokens processed.", lbls, float64(m.promptTokens.Load()))
	counter(bw, "vllm:generation_tokens_total", "Number of generation tokens processed.", lbls, float64(m.generationTokens.Load()))
	counter(bw, "vllm:num_preemptions_total", "Cumulative number of preemptions from the engine.", lbls, float64(m.preemptions.Load()))
	prefix := "vllm:prefix_cache_"
	if legacy {
		prefix = "vllm:gpu_prefix_cache_"
	}
	counter(bw, prefix+"queries_total", "Prefix cache queries, in tokens.", lbls, float64(m.prefixQueries.Load()))
	counter(bw, prefix+"hits_total", "Prefix cache hits, in tokens.", lbls, float64(m.prefixHits.Load()))
	fmt.Fprintf(bw, "# HELP vllm:request_success_total Count of successfully processed requests.\n# TYPE vllm:request_success_total counter\n")
	for _, lbl := range lbls {
		fmt.Fprintf(bw, "vllm:request_success_total{%s,finished_reason=\"stop\"} %d\n", lbl, m.successStop.Load())
		fmt.Fprintf(bw, "vllm:request_success_total{%s,finished_reason=\"length\"} %d\n", lbl, m.successLength.Load())
		fmt.Fprintf(bw, "vllm:request_success_total{%s,finished_reason=\"abort\"} %d\n", lbl, m.aborted.Load())
	}
	hist(bw, "vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", lbls, m.ttft)
	if legacy {
		hist(bw, "vllm:time_per_output_token_seconds", "Histogram of time per output token in seconds.", lbls, m.itl)
	} else {
		hist(bw, "vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", lbls, m.itl)
	}
	hist(bw, "vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", lbls, m.queue)
	hist(bw, "vllm:e2e_request_latency_seconds", "Histogram of end to end request latency in seconds.", lbls, m.e2e)
}

// writeSGLangMetrics writes SGLang's names (python/sglang/srt/metrics).
func writeSGLangMetrics(w io.Writer, g gauges, m *metrics, lbls []string) {
	gt, ds := float64(m.generationTokens.Load()), float64(m.decodeNs.Load())/1e9
	hitRate := 0.0
	if q := m.prefixQueries.Load(); q > 0 {
		hitRate = float64(m.prefixHits.Load()) / float64(q)
	}
	gauge(w, "sglang:num_running_reqs", "The number of running requests.", lbls, float64(g.running))
	gauge(w, "sglang:num_queue_reqs", "The number of requests in the waiting queue.", lbls, float64(g.waiting))
	gauge(w, "sglang:num_used_tokens", "The number of used tokens.", lbls, float64(g.kvTokens))
	gauge(w, "sglang:token_usage", "The token usage.", lbls, g.kvUsage)
	gauge(w, "sglang:cache_hit_rate", "The prefix cache hit rate.", lbls, hitRate)
	gauge(w, "sglang:gen_throughput", "The generation throughput (token/s).", lbls, rate(gt, ds))
	gauge(w, "sglang:num_retracted_reqs", "The number of retracted requests.", lbls, float64(m.preemptions.Load()))
	counter(w, "sglang:prompt_tokens_total", "Number of prefill tokens processed.", lbls, float64(m.promptTokens.Load()))
	counter(w, "sglang:generation_tokens_total", "Number of generation tokens processed.", lbls, gt)
	counter(w, "sglang:cached_tokens_total", "Number of cached prompt tokens.", lbls, float64(m.prefixHits.Load()))
	counter(w, "sglang:num_requests_total", "Number of requests processed.", lbls,
		float64(m.successStop.Load()+m.successLength.Load()+m.aborted.Load()))
	hist(w, "sglang:time_to_first_token_seconds", "Histogram of time to first token in seconds.", lbls, m.ttft)
	hist(w, "sglang:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", lbls, m.itl)
	hist(w, "sglang:e2e_request_latency_seconds", "Histogram of End-to-end request latency in seconds", lbls, m.e2e)
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
