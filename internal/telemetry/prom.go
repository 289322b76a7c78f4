package telemetry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/benchrun/benchrun/internal/engines"
	"github.com/benchrun/benchrun/internal/httpsafe"
	"github.com/benchrun/benchrun/internal/results"
)

// The Prometheus probe scrapes a server's metrics endpoint (Prometheus
// text exposition) over each cell's window and maps the engine's names
// onto the cell's server_* columns:
//
//   - Begin scrapes once, synchronously: the counters' baselines.
//   - A goroutine then scrapes every interval (default 100 ms); a scrape
//     slower than the interval makes the next tick wait (ticks are
//     dropped, never queued).
//   - End stops the goroutine (cancelling a scrape in flight), scrapes
//     once more, and computes: gauge peaks over every successful scrape of
//     the window, counter deltas End − Begin, histogram means from the
//     sum/count deltas.
//
// Every scrape (the body read and, for llama.cpp, /slots) runs under one
// timeout, promScrapeTimeout(interval): the interval, but at least 250 ms
// (a busy Python server can take a hundred milliseconds to render
// /metrics) and at most 1 s (so that a slow endpoint delays Begin and End
// by at most one second). End waits for at most one such timeout.
//
// Names are looked up among every engine's spellings whatever the preset,
// because a plan's "custom" or "sim" server may serve any of them; the
// preset matters only for an engine with no endpoint (Ollama: nothing
// scraped) and for llama-server's /slots.

// promSource is the samples' Source.
const promSource = "prometheus"

// promBodyLimit bounds a metrics body: vLLM with many LoRA adapters
// writes a few hundred kilobytes; more than this is not a metrics page.
const promBodyLimit = 32 << 20

// promScrapeTimeout is the bound on one scrape (see above).
func promScrapeTimeout(interval time.Duration) time.Duration {
	return min(max(interval, 250*time.Millisecond), time.Second)
}

// The columns' candidate names, preferred first, gathered from the
// engines' descriptors (internal/engines) in registry order: each
// engine's current spelling, then its older one (vLLM renamed its KV and
// inter-token metrics in 0.10/0.11), then the next engine's.
var (
	promRunning  = promNames(func(m engines.Metrics) []string { return m.Running })
	promWaiting  = promNames(func(m engines.Metrics) []string { return m.Waiting })
	promKV       = promNames(func(m engines.Metrics) []string { return m.KV })
	promPreempt  = promNames(func(m engines.Metrics) []string { return m.Preempt })
	promPreemptG = promNames(func(m engines.Metrics) []string { return m.PreemptGauge })
	promPrompt   = promNames(func(m engines.Metrics) []string { return m.PromptTokens })
	promGen      = promNames(func(m engines.Metrics) []string { return m.GenTokens })
	promTTFT     = promNames(func(m engines.Metrics) []string { return m.TTFT })
	promITL      = promNames(func(m engines.Metrics) []string { return m.ITL })
	promQueue    = promNames(func(m engines.Metrics) []string { return m.Queue })
	// Histograms of per-request token counts (TGI): their sums count tokens.
	promPromptHist = promNames(func(m engines.Metrics) []string { return m.PromptHist })
	promGenHist    = promNames(func(m engines.Metrics) []string { return m.GenHist })
	// Prefix cache: hits and queries counters, in tokens.
	promPrefix  = promPairs()
	promHitRate = promNames(func(m engines.Metrics) []string { return m.HitRate })
	// promCachedApart maps a prompt-token counter that leaves cached
	// tokens out (llama.cpp's) to the counter of those.
	promCachedApart = promApart(func(m engines.Metrics) []string { return m.PromptTokens },
		func(m engines.Metrics) string { return m.CachedApart })
	// promDecodeSecs maps a generated-token counter to the counter of
	// seconds spent decoding them (llama.cpp's), and promPromptSecs names
	// the prefill seconds counters, read for the samples.
	promDecodeSecs = promApart(func(m engines.Metrics) []string { return m.GenTokens },
		func(m engines.Metrics) string { return m.DecodeSeconds })
	promPromptSecs = promNames(func(m engines.Metrics) []string { return oneName(m.PromptSeconds) })
	// promLegacy are the older spellings, said in the note when seen.
	promLegacy = promLegacyNames()
	// promSlots is the engine whose per-slot state stands in for the KV
	// gauge its /metrics lacks (llama-server's /slots).
	promSlots = slotsEngine()
)

func slotsEngine() engines.Engine {
	for _, e := range engines.All() {
		if e.SlotsPath != "" {
			return e
		}
	}
	return engines.Engine{}
}

// promNames are the names field gives, over the engines in registry
// order, each once.
func promNames(field func(engines.Metrics) []string) []string {
	var out []string
	for _, e := range engines.All() {
		for _, n := range field(e.Metrics) {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out
}

// promPairs are the engines' prefix-cache counter pairs, in registry order.
func promPairs() [][2]string {
	var out [][2]string
	for _, e := range engines.All() {
		out = append(out, e.Metrics.Prefix...)
	}
	return out
}

// promApart maps an engine's first counter of key's to its companion
// counter of field's (an engine without one is left out).
func promApart(key func(engines.Metrics) []string, field func(engines.Metrics) string) map[string]string {
	out := map[string]string{}
	for _, e := range engines.All() {
		if k, c := key(e.Metrics), field(e.Metrics); c != "" && len(k) > 0 {
			out[k[0]] = c
		}
	}
	return out
}

// apartNames are the companion counters of m, in its keys' order.
func apartNames(m map[string]string, keys []string) []string {
	var out []string
	for _, k := range keys {
		if c, ok := m[k]; ok {
			out = append(out, c)
		}
	}
	return out
}

func oneName(n string) []string {
	if n == "" {
		return nil
	}
	return []string{n}
}

func promLegacyNames() map[string]bool {
	out := map[string]bool{}
	for _, e := range engines.All() {
		for _, n := range e.Metrics.Legacy {
			out[n] = true
		}
	}
	return out
}

// promHists are the names read as histograms (their _sum and _count).
var promHists = concat(promTTFT, promITL, promQueue, promPromptHist, promGenHist)

// promScalars are the names read as one value (a counter or gauge).
var promScalars = promScalarNames()

func promScalarNames() []string {
	out := concat(promRunning, promWaiting, promKV, promPreempt, promPreemptG, promPrompt, promGen)
	for _, pair := range promPrefix {
		out = append(out, pair[0], pair[1])
	}
	out = concat(out, promHitRate, apartNames(promCachedApart, promPrompt),
		apartNames(promDecodeSecs, promGen), promPromptSecs)
	var once []string
	for _, n := range out {
		if !slices.Contains(once, n) {
			once = append(once, n)
		}
	}
	return once
}

func concat(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// promUnit is the samples' Unit for a name.
func promUnit(name string) string {
	switch {
	case strings.HasSuffix(name, "_seconds_sum"), strings.HasSuffix(name, "_duration_sum"),
		strings.HasSuffix(name, "_seconds_total"):
		return "s"
	case strings.HasSuffix(name, "_count"):
		return "observations"
	case strings.Contains(name, "usage") || strings.Contains(name, "hit_rate"):
		return "fraction"
	case strings.Contains(name, "tokens") || strings.Contains(name, "input_length"):
		return "tokens"
	default:
		return "requests"
	}
}

// promReading is one scrape, reduced to the values of interest: each
// name's value summed across its series (vLLM labels them by model_name
// and engine, one series per data-parallel rank), a histogram as
// name_sum and name_count.
type promReading struct {
	at   time.Time
	err  error
	vals map[string]float64
	// kv is the KV usage computed from llama.cpp's /slots (nil: not
	// read); kvBusy says it counted busy slots' whole context for lack of
	// per-slot token counts.
	kv     *float64
	kvBusy bool
	// bad names the metrics whose values could not be measurements
	// (plausible), left out of the reading and the samples.
	bad []string
}

// maxPromValue bounds a server metric benchrun reads: counts of tokens or
// requests, gauges of use, sums of seconds. Past it (1e308), below zero
// or not finite (NaN, Inf), a value is no measurement.
const maxPromValue = 1e15

// plausible says whether v can be one of the metrics benchrun reads.
func plausible(v float64) bool {
	return !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 && v <= maxPromValue
}

// promProbe implements Probe over a Prometheus text endpoint.
type promProbe struct {
	url, engine string
	interval    time.Duration
	timeout     time.Duration
	client      *http.Client
	parser      expfmt.TextParser
	slotsURL    string

	mu      sync.Mutex
	cellID  string
	open    bool
	labels  labelSets      // each series' labels, one map shared by its samples
	fold    promFold       // the open window's scrapes, folded
	samples thinnedSamples // and their samples, thinned past maxKeptReadings
	// slotsOff says why /slots is not read (it answered non-200 once):
	// it stays off for the probe's life, because llama-server's
	// --no-slots does not change while it runs.
	slotsOff string

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// NewPromProbe returns a probe scraping url (the server's metrics URL,
// e.g. http://127.0.0.1:8000/metrics) every interval (100 ms when 0 or
// negative) with client (httpsafe.Client when nil; each scrape has its
// own deadline, so the client's Timeout only matters when shorter).
// engine is the preset name ("vllm", "llama-server", "sglang", "tgi",
// "sim", "ollama", "custom" or ""): Ollama has no metrics endpoint, so its
// probe scrapes nothing and leaves every column NULL. The probe never
// fails: what it cannot read it leaves NULL and says why in End's note.
func NewPromProbe(url, engine string, interval time.Duration, client *http.Client) Probe {
	if interval <= 0 {
		interval = 100 * time.Millisecond
	}
	if client == nil {
		client = httpsafe.Client
	}
	p := &promProbe{
		url: url, engine: engine, interval: interval,
		timeout: promScrapeTimeout(interval), client: client,
		// UTF-8 validation accepts every name the legacy scheme does
		// (colons included: vllm:num_requests_running) and the quoted
		// names of newer exporters; the zero TextParser would reject all.
		parser: expfmt.NewTextParser(model.UTF8Validation),
	}
	// llama-server serves /slots beside /metrics on the same port.
	if i := strings.LastIndex(url, promSlots.MetricsPath); i >= 0 && promSlots.SlotsPath != "" {
		p.slotsURL = url[:i] + promSlots.SlotsPath + url[i+len(promSlots.MetricsPath):]
	}
	return p
}

func (p *promProbe) Name() string { return promSource }

// noEndpoint says why nothing is scraped at all ("" when something is).
func (p *promProbe) noEndpoint() string {
	switch {
	case engines.For(p.engine).NoMetrics != "":
		return "server metrics not measured: " + engines.For(p.engine).NoMetrics
	case p.url == "":
		return "server metrics not measured: no metrics URL"
	}
	return ""
}

func (p *promProbe) Begin(ctx context.Context, cellID string) {
	p.stop() // a Begin without End: the earlier window is dropped
	p.mu.Lock()
	p.cellID, p.open, p.fold, p.samples = cellID, true, promFold{}, thinnedSamples{}
	p.mu.Unlock()
	if p.noEndpoint() != "" {
		return
	}
	p.scrapeInto(ctx, cellID)
	loopCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p.mu.Lock()
	p.cancel = cancel
	p.mu.Unlock()
	p.wg.Add(1)
	go p.loop(loopCtx, cellID)
}

func (p *promProbe) loop(ctx context.Context, cellID string) {
	defer p.wg.Done()
	t := time.NewTicker(p.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			p.scrapeInto(ctx, cellID)
		}
	}
}

// stop ends the sampling goroutine, cancelling a scrape in flight, and
// waits for it: the wait is bounded because the scrape's context is
// cancelled.
func (p *promProbe) stop() {
	p.mu.Lock()
	cancel := p.cancel
	p.cancel = nil
	p.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	p.wg.Wait()
}

func (p *promProbe) End(ctx context.Context, row *results.Cell) ([]results.Sample, string) {
	p.stop()
	p.mu.Lock()
	open, cellID := p.open, p.cellID
	p.mu.Unlock()
	if !open {
		return nil, "server metrics not measured: End without Begin"
	}
	if why := p.noEndpoint(); why != "" {
		p.mu.Lock()
		p.open = false
		p.mu.Unlock()
		return nil, why
	}
	p.scrapeInto(ctx, cellID)
	p.mu.Lock()
	fold, kept, slotsOff := p.fold, p.samples, p.slotsOff
	p.open, p.fold, p.samples = false, promFold{}, thinnedSamples{}
	p.mu.Unlock()
	note := fillPromFold(row, &fold, slotsOff)
	if bad := fold.bad; len(bad) > 0 {
		note = strings.TrimPrefix(note+"; "+fmt.Sprintf("left out values that cannot be measurements (NaN, infinite, negative or over %g) of %s", float64(maxPromValue), strings.Join(bad, ", ")), "; ")
	}
	if thin := kept.note(p.interval.String()); thin != "" {
		note = strings.TrimPrefix(note+"; "+thin, "; ")
	}
	if note != "" {
		note = "server metrics (" + p.url + "): " + note
	}
	return kept.rows(), note
}

func (p *promProbe) Close() error {
	p.stop()
	return nil
}

// scrapeInto takes one reading and keeps it (and its samples) for the
// window of cellID; a reading that ends after its window closed is
// dropped.
func (p *promProbe) scrapeInto(ctx context.Context, cellID string) {
	r, samples := p.scrape(ctx, cellID)
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.open || p.cellID != cellID {
		return
	}
	if r.err != nil && ctx.Err() != nil {
		return // cut short by End (or the caller): not the server's failure
	}
	p.fold.add(r)
	p.samples.addRows(samples)
}

// scrape reads the endpoint once, under the scrape timeout.
func (p *promProbe) scrape(ctx context.Context, cellID string) (promReading, []results.Sample) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	at := time.Now()
	r := promReading{at: at}
	fams, err := p.fetch(ctx)
	if err != nil {
		r.err = err
		return r, nil
	}
	r.vals = map[string]float64{}
	var samples []results.Sample
	// take keeps a value that can be a measurement, and notes one that
	// cannot (NaN is not NULL, and a 1e308 peak is no peak).
	take := func(name string, v float64) bool {
		if plausible(v) {
			return true
		}
		if !slices.Contains(r.bad, name) {
			r.bad = append(r.bad, name)
		}
		return false
	}
	sample := func(name string, m *dto.Metric, v float64) {
		samples = append(samples, results.Sample{
			CellID: cellID, At: at, Source: promSource, Device: p.url,
			Metric: name, Unit: promUnit(name), Value: v, Labels: p.labels.of(m),
		})
	}
	for _, name := range promScalars {
		f := fams[name]
		if f == nil {
			continue
		}
		total, n := 0.0, 0
		for _, m := range f.GetMetric() {
			v, ok := scalarValue(m)
			if !ok || !take(name, v) {
				continue
			}
			total += v
			n++
			sample(name, m, v)
		}
		if n > 0 {
			r.vals[name] = total
		}
	}
	for _, name := range promHists {
		sum, count, n := 0.0, 0.0, 0
		if f := fams[name]; f != nil {
			for _, m := range f.GetMetric() {
				s, c, ok := histValue(m)
				if !ok || !take(name+"_sum", s) || !take(name+"_count", c) {
					continue
				}
				sum += s
				count += c
				n++
				sample(name+"_sum", m, s)
				sample(name+"_count", m, c)
			}
		} else if fs, fc := fams[name+"_sum"], fams[name+"_count"]; fs != nil && fc != nil {
			// Without a TYPE line the parser sees two untyped families.
			for _, m := range fs.GetMetric() {
				if v, ok := scalarValue(m); ok && take(name+"_sum", v) {
					sum += v
					n++
					sample(name+"_sum", m, v)
				}
			}
			for _, m := range fc.GetMetric() {
				if v, ok := scalarValue(m); ok && take(name+"_count", v) {
					count += v
					sample(name+"_count", m, v)
				}
			}
		}
		if n > 0 {
			r.vals[name+"_sum"], r.vals[name+"_count"] = sum, count
		}
	}
	// llama.cpp reports no KV usage in /metrics any more: read /slots
	// when the server speaks llama.cpp and says nothing of KV itself.
	if p.wantSlots(r.vals) {
		kv, busy, err := p.fetchSlots(ctx)
		if err == nil {
			r.kv, r.kvBusy = &kv, busy
			samples = append(samples, results.Sample{
				CellID: cellID, At: at, Source: promSource, Device: p.slotsURL,
				Metric: "llamacpp:slots_kv_usage", Unit: "fraction", Value: kv,
				Labels: map[string]string{"from": "/slots"},
			})
		}
	}
	return r, samples
}

// wantSlots reports whether /slots should be read with this reading.
func (p *promProbe) wantSlots(vals map[string]float64) bool {
	if p.slotsURL == "" {
		return false
	}
	p.mu.Lock()
	off := p.slotsOff != ""
	p.mu.Unlock()
	if off {
		return false
	}
	// The server speaks the engine (by its preset or its generated-token
	// counter) and says nothing of KV itself.
	m := promSlots.Metrics
	speaks := p.engine == promSlots.Name
	if len(m.GenTokens) > 0 {
		_, seen := vals[m.GenTokens[0]]
		speaks = speaks || seen
	}
	for _, kv := range m.KV {
		if _, ok := vals[kv]; ok {
			return false
		}
	}
	return speaks
}

func (p *promProbe) fetch(ctx context.Context) (map[string]*dto.MetricFamily, error) {
	body, err := p.get(ctx, p.url)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	fams, err := p.parser.TextToMetricFamilies(io.LimitReader(body, promBodyLimit))
	if err != nil {
		return nil, fmt.Errorf("not Prometheus text: %w", err)
	}
	return fams, nil
}

// errNotFound marks an endpoint that answered 404.
var errNotFound = errors.New("404 Not Found: the server exposes no metrics there")

func (p *promProbe) get(ctx context.Context, url string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("metrics request: %w", err)
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := p.client.Do(req)
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			return nil, fmt.Errorf("no answer within %v: %w", p.timeout, err)
		}
		return nil, fmt.Errorf("GET: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		_ = resp.Body.Close() // the status says all there is
		if resp.StatusCode == http.StatusNotFound {
			return nil, errNotFound
		}
		return nil, fmt.Errorf("status %s", resp.Status)
	}
	return resp.Body, nil
}

func scalarValue(m *dto.Metric) (float64, bool) {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue(), true
	case m.Gauge != nil:
		return m.Gauge.GetValue(), true
	case m.Untyped != nil:
		return m.Untyped.GetValue(), true
	}
	return 0, false
}

func histValue(m *dto.Metric) (sum, count float64, ok bool) {
	switch {
	case m.Histogram != nil:
		return m.Histogram.GetSampleSum(), float64(m.Histogram.GetSampleCount()), true
	case m.Summary != nil:
		return m.Summary.GetSampleSum(), float64(m.Summary.GetSampleCount()), true
	}
	return 0, 0, false
}

// labelSets hands out one map per distinct set of labels, so that the
// samples of a series over a window share it (a map a sample was 300 bytes
// of its 450). The maps are read, never written, once handed out.
type labelSets struct {
	mu   sync.Mutex
	sets map[string]map[string]string
	key  strings.Builder
}

// maxLabelSets bounds the sets remembered: a server whose label values
// change every scrape (none of the engines') gets fresh maps past it.
const maxLabelSets = 4096

func (l *labelSets) of(m *dto.Metric) map[string]string {
	pairs := m.GetLabel()
	if len(pairs) == 0 {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.key.Reset()
	for _, lp := range pairs {
		l.key.WriteString(lp.GetName())
		l.key.WriteByte(0)
		l.key.WriteString(lp.GetValue())
		l.key.WriteByte(0)
	}
	if set, ok := l.sets[l.key.String()]; ok {
		return set
	}
	set := make(map[string]string, len(pairs))
	for _, lp := range pairs {
		set[lp.GetName()] = lp.GetValue()
	}
	if l.sets == nil {
		l.sets = map[string]map[string]string{}
	}
	if len(l.sets) < maxLabelSets {
		l.sets[l.key.String()] = set
	}
	return set
}

// promFold is a window's scrapes folded as they come: what the columns
// read of them (each name's peak, rises and sum, the first and last
// scrapes whole for the counters' deltas), in memory that does not grow
// with the window's length. A 30-minute cell scraped every 100 ms takes
// 18,000 readings; it holds two.
type promFold struct {
	n, ok       int         // scrapes taken, and those that succeeded
	first, last promReading // the window's first and (n > 1) last scrapes
	firstErr    error       // the first failed scrape's error
	series      map[string]*promSeries
	kvPeak      *float64 // the largest KV usage from /slots
	kvBusy      bool     // some /slots reading counted a busy slot's whole context
	bad         []string // names with values that cannot be measurements
}

// promSeries is one name over a window's successful scrapes that served it.
type promSeries struct {
	n     int     // scrapes that served it
	peak  float64 // the largest value
	last  float64 // the latest value
	rises float64 // the sum of its increases between consecutive such scrapes
	sum   float64 // the sum of its values, in time order
}

// add folds one scrape, in time order.
func (f *promFold) add(r promReading) {
	if f.n == 0 {
		f.first = r
	} else {
		f.last = r
	}
	f.n++
	for _, b := range r.bad {
		if !slices.Contains(f.bad, b) {
			f.bad = append(f.bad, b)
		}
	}
	if r.err != nil {
		if f.firstErr == nil {
			f.firstErr = r.err
		}
		return
	}
	f.ok++
	if f.series == nil {
		f.series = map[string]*promSeries{}
	}
	for name, v := range r.vals {
		s := f.series[name]
		if s == nil {
			f.series[name] = &promSeries{n: 1, peak: v, last: v, sum: v}
			continue
		}
		if v > s.last {
			s.rises += v - s.last
		}
		s.n++
		s.peak = max(s.peak, v)
		s.last = v
		s.sum += v
	}
	if r.kv != nil && (f.kvPeak == nil || *r.kv > *f.kvPeak) {
		kv := *r.kv
		f.kvPeak = &kv
	}
	f.kvBusy = f.kvBusy || (r.kv != nil && r.kvBusy)
}

// promWindow is a window's folded scrapes, with the lookups the columns
// need.
type promWindow struct {
	f          *promFold
	begin, end *promReading // the window's first and last scrapes, when they succeeded
	notes      []string
}

func newPromWindow(f *promFold) *promWindow {
	w := &promWindow{f: f}
	if f.n > 0 && f.first.err == nil {
		w.begin = &f.first
	}
	if f.n > 1 && f.last.err == nil {
		w.end = &f.last
	}
	return w
}

// pick is the first of names that some successful scrape served.
func (w *promWindow) pick(names ...string) string {
	for _, n := range names {
		if w.f.series[n] != nil {
			return n
		}
	}
	return ""
}

// peak is the largest value of name over the window's scrapes.
func (w *promWindow) peak(name string) *float64 {
	s := w.f.series[name]
	if s == nil {
		return nil
	}
	v := s.peak
	return &v
}

// rises is the sum of name's increases between consecutive scrapes that
// served it (0 when it never rose; nil with fewer than two such scrapes).
func (w *promWindow) rises(name string) *float64 {
	s := w.f.series[name]
	if s == nil || s.n < 2 {
		return nil
	}
	v := s.rises
	return &v
}

// delta is End − Begin of a counter; nil (and a note) when either scrape
// failed or lacked it, or the counter went backwards (the server
// restarted, or reset it).
func (w *promWindow) delta(name string) *float64 {
	if name == "" || w.begin == nil || w.end == nil {
		return nil
	}
	b, ok1 := w.begin.vals[name]
	e, ok2 := w.end.vals[name]
	if !ok1 || !ok2 {
		return nil
	}
	if e < b {
		w.notes = append(w.notes, fmt.Sprintf("%s went back from %g to %g (a counter reset: the server restarted?): its columns are NULL", name, b, e))
		return nil
	}
	d := e - b
	return &d
}

// histMeanMs is a histogram's mean over the window, in milliseconds
// (nil when it saw no observations).
func (w *promWindow) histMeanMs(name string) *float64 {
	if name == "" {
		return nil
	}
	s, c := w.delta(name+"_sum"), w.delta(name+"_count")
	if s == nil || c == nil || *c == 0 {
		return nil
	}
	v := *s / *c * 1000
	return &v
}

// pickApart is the first of keys with a companion counter in apart that
// some scrape served, and that companion ("", "" for none).
func (w *promWindow) pickApart(apart map[string]string, keys []string) (key, companion string) {
	for _, k := range keys {
		if c, ok := apart[k]; ok && w.pick(c) != "" {
			return k, c
		}
	}
	return "", ""
}

// pickHist is the first histogram of names that some scrape served.
func (w *promWindow) pickHist(names ...string) string {
	for _, n := range names {
		if w.pick(n+"_count") != "" {
			return n
		}
	}
	return ""
}

func ratio(num, den *float64) *float64 {
	if num == nil || den == nil || *den == 0 {
		return nil
	}
	v := *num / *den
	return &v
}

func add(a, b *float64) *float64 {
	if a == nil || b == nil {
		return nil
	}
	v := *a + *b
	return &v
}

// fillPromFold sets row's server-metrics columns from the window's folded
// scrapes and returns the note.
func fillPromFold(row *results.Cell, f *promFold, slotsOff string) string {
	w := newPromWindow(f)
	if f.ok == 0 {
		why := "no scrape"
		if f.firstErr != nil {
			why = f.firstErr.Error()
		}
		return "not measured: " + why
	}
	notes := w.scrapeNotes()

	running, waiting := w.pick(promRunning...), w.pick(promWaiting...)
	row.ServerRunningPeak = w.peak(running)
	row.ServerWaitingPeak = w.peak(waiting)
	// Requests that waited for a slot: no engine among the presets counts
	// queue entries, so the rises of the waiting gauge between consecutive
	// scrapes stand for them (a lower bound: a request queued and admitted
	// between two scrapes is not seen).
	if waiting != "" {
		row.ServerParkWaits = w.rises(waiting)
	}
	if note := w.fillKVCache(row, slotsOff); note != "" {
		notes = append(notes, note)
	}
	w.fillPreemptions(row)
	prompt := w.fillTokenCounts(row)
	row.ServerPrefixCacheHitRate = prefixHitRate(w)
	w.fillLatencyMeans(row)

	if note := w.legacyNote(); note != "" {
		notes = append(notes, note)
	}
	if note := w.notServedNote(row, running, waiting, prompt); note != "" {
		notes = append(notes, note)
	}
	notes = append(notes, w.notes...)
	if note := admittedNote(row); note != "" {
		notes = append(notes, note)
	}
	return strings.Join(dedupe(notes), "; ")
}

// scrapeNotes say which of the window's scrapes failed: its first or
// last (whose counters and histograms are then NULL), else how many.
func (w *promWindow) scrapeNotes() []string {
	var notes []string
	if w.begin == nil || w.end == nil {
		which, why := "first", "no scrape"
		switch {
		case w.begin == nil && w.f.first.err != nil:
			why = w.f.first.err.Error()
		case w.begin != nil:
			which = "last"
			if w.f.n > 1 && w.f.last.err != nil {
				why = w.f.last.err.Error()
			}
		}
		notes = append(notes, fmt.Sprintf("the window's %s scrape failed (%s): counters and histograms NULL", which, why))
	}
	if failed := w.f.n - w.f.ok; failed > 0 && w.begin != nil && w.end != nil {
		notes = append(notes, fmt.Sprintf("%d of %d scrapes failed", failed, w.f.n))
	}
	return notes
}

// fillKVCache sets the KV-cache usage peak: from the server's gauge,
// else from llama.cpp's /slots, whose reading the note qualifies (and
// says why there is none, slotsOff).
func (w *promWindow) fillKVCache(row *results.Cell, slotsOff string) string {
	if kv := w.pick(promKV...); kv != "" {
		row.KVCacheUsagePeak = w.peak(kv)
		return ""
	}
	peak, busy := w.f.kvPeak, w.f.kvBusy
	row.KVCacheUsagePeak = peak
	switch {
	case peak != nil && busy:
		return "kv_cache_usage_peak from llama.cpp /slots, counting a busy slot's whole context (no per-slot token counts): an upper bound"
	case peak != nil:
		return "kv_cache_usage_peak from llama.cpp /slots"
	case slotsOff != "":
		return "no KV-cache usage: llama.cpp /slots " + slotsOff
	}
	return ""
}

// fillPreemptions sets the preemptions: a counter's delta, else the
// rises of SGLang's retraction gauge, as for the waiting queue.
func (w *promWindow) fillPreemptions(row *results.Cell) {
	if n := w.pick(promPreempt...); n != "" {
		row.ServerPreemptions = w.delta(n)
	} else if n := w.pick(promPreemptG...); n != "" {
		row.ServerPreemptions = w.rises(n)
	}
}

// fillTokenCounts sets the server's prompt and generation token counts
// from its counters, else from TGI's histograms' sums; prompt is the
// prompt counter read ("" for none).
func (w *promWindow) fillTokenCounts(row *results.Cell) (prompt string) {
	prompt = w.pick(promPrompt...)
	cached := promCachedApart[prompt]
	switch {
	case cached != "" && w.pick(cached) != "":
		// Newer llama.cpp counts cached prompt tokens apart; the client's
		// usage.prompt_tokens includes them.
		row.ServerPromptTokens = add(w.delta(prompt), w.delta(cached))
	case prompt != "":
		row.ServerPromptTokens = w.delta(prompt)
	default:
		if h := w.pickHist(promPromptHist...); h != "" {
			row.ServerPromptTokens = w.delta(h + "_sum")
		}
	}
	if gen := w.pick(promGen...); gen != "" {
		row.ServerGenerationTokens = w.delta(gen)
	} else if h := w.pickHist(promGenHist...); h != "" {
		row.ServerGenerationTokens = w.delta(h + "_sum")
	}
	return prompt
}

// fillLatencyMeans sets the server's TTFT, ITL and queue means from its
// histograms; llama.cpp's ITL from its decode counters.
func (w *promWindow) fillLatencyMeans(row *results.Cell) {
	row.ServerTTFTMeanMs = w.histMeanMs(w.pickHist(promTTFT...))
	if itl := w.pickHist(promITL...); itl != "" {
		row.ServerITLMeanMs = w.histMeanMs(itl)
	} else if gen, secs := w.pickApart(promDecodeSecs, promGen); secs != "" {
		// llama.cpp: decode seconds per predicted token, from the
		// counters (its *_seconds gauges are reset by scrapes).
		if v := ratio(w.delta(secs), w.delta(gen)); v != nil {
			ms := *v * 1000
			row.ServerITLMeanMs = &ms
		}
	}
	row.ServerQueueMeanMs = w.histMeanMs(w.pickHist(promQueue...))
}

// legacyNote names the older metric spellings read, so a reader knows
// the server's version ("" for none).
func (w *promWindow) legacyNote() string {
	var legacy []string
	for n := range w.f.series {
		base := strings.TrimSuffix(strings.TrimSuffix(n, "_sum"), "_count")
		if promLegacy[base] && !contains(legacy, base) {
			legacy = append(legacy, base)
		}
	}
	if len(legacy) == 0 {
		return ""
	}
	sort.Strings(legacy)
	return "older metric names read: " + strings.Join(legacy, ", ")
}

// notServedNote names the columns every engine should serve that this
// server did not ("" for none); running, waiting and prompt are the
// gauges and counter read.
func (w *promWindow) notServedNote(row *results.Cell, running, waiting, prompt string) string {
	var missing []string
	for _, c := range []struct {
		name string
		set  bool
	}{
		{results.ColServerRunningPeak, running != ""}, {results.ColServerWaitingPeak, waiting != ""},
		{results.ColServerPromptTokens, row.ServerPromptTokens != nil || prompt != "" || w.pickHist(promPromptHist...) != ""},
		{results.ColServerGenerationTokens, row.ServerGenerationTokens != nil || w.pick(promGen...) != "" || w.pickHist(promGenHist...) != ""},
	} {
		if !c.set {
			missing = append(missing, c.name)
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return "not served: " + strings.Join(missing, ", ")
}

// admittedNote says when the server's prompt-token count differs from
// the tokens the client admitted by more than 1% ("" otherwise).
func admittedNote(row *results.Cell) string {
	sp := row.ServerPromptTokens
	if sp == nil {
		return ""
	}
	adm := float64(row.AdmittedTok)
	if d := math.Abs(*sp - adm); (adm == 0 && *sp != 0) || (adm > 0 && d/adm > 0.01) {
		return fmt.Sprintf("the server counted %.0f prompt tokens, the client %d admitted (%s)", *sp, row.AdmittedTok, pctApart(*sp, adm))
	}
	return ""
}

// prefixHitRate is Δhits/Δqueries of the first pair of prefix-cache
// counters served (nil when no query was made), else llama.cpp's cached
// share of its prompt tokens, else SGLang's hit-rate gauge, averaged.
func prefixHitRate(w *promWindow) *float64 {
	for _, pair := range promPrefix {
		if w.pick(pair[0]) != "" && w.pick(pair[1]) != "" {
			return ratio(w.delta(pair[0]), w.delta(pair[1]))
		}
	}
	if prompt, cachedName := w.pickApart(promCachedApart, promPrompt); cachedName != "" {
		cached := w.delta(cachedName)
		return ratio(cached, add(cached, w.delta(prompt)))
	}
	gauge := w.pick(promHitRate...)
	if gauge == "" {
		return nil
	}
	// Only the gauge (a rate over SGLang's own logging interval): its
	// mean over the window's scrapes.
	s := w.f.series[gauge]
	v := s.sum / float64(s.n)
	return &v
}

func pctApart(server, client float64) string {
	if client == 0 {
		return "none admitted"
	}
	return fmt.Sprintf("%+.1f%%", (server-client)/client*100)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func dedupe(list []string) []string {
	var out []string
	for _, s := range list {
		if !contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
