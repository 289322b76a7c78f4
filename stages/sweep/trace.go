package sweep

import (
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/benchrun/benchrun/internal/loadgen"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/pipeline"
)

// Trace replay (`dataset: {format: "mooncake" | "trace", path, time_scale}`):
// one point that sends each request of the trace at its recorded time
// divided by time_scale, with its own input and output lengths, as an
// open loop does (latency also from the scheduled send). The trace
// replaces the cells and the ladder; a search over rate scales it to each
// probe's mean rate instead (search.go). docs/METRICS.md, "Trace replay".

// ArrivalTrace is the arrival column of a trace replay's rows.
const ArrivalTrace = "trace"

// traceWarmup is how many of the trace's first requests a warm-up pass
// replays (on their own timing): enough to warm connections and the
// server, without replaying a trace of hours before timing it.
const traceWarmup = 32

// isTrace reports whether the dataset is a timed trace.
func (s *Stage) isTrace() bool {
	return s.cfg.Dataset != nil && loadgen.IsTraceFormat(s.cfg.Dataset.Format)
}

// timeScale is the plan's time_scale (1 when not given).
func (s *Stage) timeScale() float64 {
	if d := s.cfg.Dataset; d != nil && d.TimeScale > 0 {
		return d.TimeScale
	}
	return 1
}

// tracePoints is a trace replay's ladder: the trace once per repeat.
func (s *Stage) tracePoints() []point {
	p := point{trace: true, timeScale: s.timeScale(), concurrency: s.cfg.MaxInflight}
	if s.cfg.Repeats <= 1 {
		return []point{p}
	}
	var pts []point
	for r := 1; r <= s.cfg.Repeats; r++ {
		p.repeat = r
		pts = append(pts, p)
	}
	return pts
}

// traceCellID is a trace point's cell id: <stage>/trace/x<time_scale>,
// or /r<rate> for a search probe (which sets the scale from the rate).
func traceCellID(stage string, p point) string {
	id := fmt.Sprintf("%s/trace/x%s", stage, strconv.FormatFloat(p.timeScale, 'g', -1, 64))
	if p.rate > 0 {
		id = fmt.Sprintf("%s/trace/r%g", stage, p.rate)
	}
	if p.repeat > 0 {
		id += fmt.Sprintf("/rep%d", p.repeat)
	}
	return id
}

func (p point) traceLabel() string {
	l := fmt.Sprintf("trace x%g", p.timeScale)
	if p.rate > 0 {
		l = fmt.Sprintf("trace rate=%g/s", p.rate)
	}
	if p.repeat > 0 {
		l += fmt.Sprintf(" rep %d", p.repeat)
	}
	return l
}

// validateTrace refuses what a trace replay cannot mean, and trace
// fields without a trace.
func (s *Stage) validateTrace(bad func([]string, string, ...any)) {
	c := &s.cfg
	d := c.Dataset
	if d == nil {
		return
	}
	if d.Split != "" && d.Format != loadgen.FormatHF {
		bad([]string{"dataset", "split"}, "applies to a Hugging Face dataset (format hf), not format %q", d.Format)
	}
	if !s.isTrace() {
		format := fmt.Sprintf("format %q", d.Format)
		if d.Format == "" {
			format = fmt.Sprintf("a dataset whose format (none given) is inferred from its path as %s", loadgen.InferFormat(d.Path))
		}
		if d.TimeScale > 0 {
			bad([]string{"dataset", "time_scale"}, "applies to a trace replay (format mooncake or trace), not %s", format)
		}
		if d.BlockTokens > 0 {
			bad([]string{"dataset", "block_tokens"}, "applies to a trace replay (format mooncake or trace), not %s", format)
		}
		return
	}
	if c.Endpoint != "completions" && c.Endpoint != "chat" {
		bad([]string{"endpoint"}, "a trace replays generation requests: completions or chat, not %q", c.Endpoint)
	}
	if len(c.Rates) > 0 {
		bad([]string{"rates"}, "a trace replay sends on the trace's own timestamps (time_scale speeds them up); drop rates, or search over rate to scale the trace to each probe's rate")
	}
	if c.Ramp != nil {
		bad([]string{"ramp"}, "a trace replay sends on the trace's own timestamps; a ramp has nothing to raise")
	}
	if c.MinRequests > 0 {
		bad([]string{"min_requests"}, "a trace replay sends the trace's requests, no more: a minimum cannot be met past its end (use requests or duration to replay part of it)")
	}
	if c.MinDuration != "" {
		bad([]string{"min_duration"}, "a trace replay ends with the trace: a minimum cannot be met past its end (use duration to replay part of it)")
	}
	if c.SharedPrefix > 0 {
		bad([]string{"shared_prefix"}, "a trace's shared prefixes are its hash_ids: drop shared_prefix")
	}
	if c.Turns > 0 {
		bad([]string{"turns"}, "a trace replays its requests one by one, each on its own timestamp: a conversation's turns have no trace line to follow (replay a trace of the turns themselves)")
	}
	for i, cell := range c.Cells {
		if len(cell.Server) > 0 {
			bad([]string{"cells", strconv.Itoa(i), "server"}, "a trace replay takes its lengths from the trace and has no cells to restart the server with")
		}
	}
	if len(c.Batch) > 0 || len(c.Images) > 0 {
		bad([]string{"dataset", "format"}, "a trace replay sends text prompts: no batch or images")
	}
}

// loadTrace reads the trace (Run), relative to the plan file.
func (s *Stage) loadTrace(env *pipeline.Env) error {
	if !s.isTrace() {
		return nil
	}
	d := s.cfg.Dataset
	path := d.Path
	if !filepath.IsAbs(path) && env.Plan != nil && env.Plan.Path != "" {
		path = filepath.Join(filepath.Dir(env.Plan.Path), path)
	}
	tr, err := loadgen.LoadTrace(loadgen.TraceSpec{Path: path, Format: d.Format, Field: d.Field, BlockTokens: d.BlockTokens, Limit: d.Limit})
	if err != nil {
		return fmt.Errorf("stages.%s.dataset: %w", env.Stage.Name, err)
	}
	if s.cfg.Search != nil && tr.MeanRate() <= 0 {
		return fmt.Errorf("stages.%s.search: the trace %s has no rate to scale (its requests share one instant); a search over rate needs a trace that spans time", env.Stage.Name, path)
	}
	if s.duration == 0 && s.cfg.Search == nil {
		if replay := float64(tr.Span()) / s.timeScale(); replay > float64(MaxPassDuration) {
			return fmt.Errorf("stages.%s.dataset: the trace %s spans %v, %v at time_scale %g: past the %v a pass may take; raise time_scale or set duration to replay its start", env.Stage.Name, path, tr.Span(), seconds(replay/1e9), s.timeScale(), MaxPassDuration)
		}
	}
	s.trace = tr
	return nil
}

// traceView is this shard's part of the trace (nil when p replays none).
func (s *Stage) traceView(p point) *loadgen.Trace {
	if !p.trace || s.trace == nil {
		return nil
	}
	return s.trace.Shard(s.shard, s.shards)
}

// scaleOf is the point's time scale: the plan's, or for a search probe
// the one that makes the trace's mean rate the probe's.
func (s *Stage) scaleOf(p point) float64 {
	if p.rate > 0 && s.trace != nil && s.trace.MeanRate() > 0 {
		return p.rate / s.trace.MeanRate()
	}
	if p.timeScale > 0 {
		return p.timeScale
	}
	return s.timeScale()
}

// traceLoad is a trace point's load for one pass: the shard's requests
// at their scaled times (a warm-up pass: the first traceWarmup), cut by
// requests or duration when given.
func (s *Stage) traceLoad(p point, counters *loadgen.Counters, pass int) (loadgen.Load, int) {
	l := loadgen.Load{Duration: s.duration, MaxInFlight: s.cfg.MaxInflight, Counters: counters}
	view := s.traceView(p)
	if view == nil {
		return l, 0 // not loaded yet (Validate)
	}
	offs := view.Offsets(s.scaleOf(p))
	n := len(offs)
	if pass < s.cfg.Warmup {
		n = min(n, traceWarmup)
	}
	if s.cfg.Requests > 0 {
		n = min(n, loadgen.SplitCount(s.cfg.Requests, s.shard, s.shards))
	}
	offs = offs[:n]
	l.Schedule = &loadgen.Schedule{Trace: offs}
	l.Requests = n
	expected := n
	if s.duration > 0 {
		expected = 0
		for _, o := range offs {
			if o < s.duration {
				expected++
			}
		}
	}
	return l, expected
}

// stampPoint fills what a trace point and a search probe say about
// themselves on every row of the point (Run, before the point runs).
func (s *Stage) stampPoint(row *results.Cell, p point) {
	if s.cfg.Search != nil {
		row.Search = searchProbe
	}
	if !p.trace {
		return
	}
	scale := s.scaleOf(p)
	row.TimeScale = results.Some(scale)
	row.Arrival, row.Burstiness = ArrivalTrace, 0
	if s.trace != nil {
		row.Rate = s.trace.MeanRate() * scale
	}
}

// traceRequest gives request i of a trace point its lengths: max_tokens
// (and, with force_osl, min_tokens) from the line's output_length.
func (s *Stage) traceRequest(p point, view *loadgen.Trace, i int, req loadgen.Request) loadgen.Request {
	if view == nil || view.Len() == 0 {
		return req
	}
	q := view.Requests[i%view.Len()]
	req.MaxTokens = q.OutputLength
	if s.cfg.ForceOSL {
		req.Body = map[string]any{"ignore_eos": true, "min_tokens": q.OutputLength}
		req.ExpectTokens = q.OutputLength
	}
	return req
}

// traceFits says why a trace point cannot be sent ("" when it can): a
// request of the trace is longer than the server's context (row's
// max_model_len), so it would come back HTTP 400.
func (s *Stage) traceFits(row results.Cell, view *loadgen.Trace) string {
	if view == nil || row.MaxModelLen == nil {
		return ""
	}
	limit := int(*row.MaxModelLen)
	over, first := 0, -1
	for k, q := range view.Requests {
		if q.Prompt == "" && q.InputLength+q.OutputLength > limit {
			if first < 0 {
				first = k
			}
			over++
		}
	}
	if over == 0 {
		return ""
	}
	q := view.Requests[first]
	return fmt.Sprintf("trace %s:%d: input_length+output_length = %d does not fit the server's context of %d tokens per request (%d of the trace's %d requests do not); not sent: limit the trace or raise the context",
		view.Path, q.Line, q.InputLength+q.OutputLength, limit, over, view.Len())
}

// judgeTrace checks a trace point's timed requests against the trace
// (after fillRow): a synthesized prompt that the server counted more
// than a token off its input_length makes the row an error when the
// prompts were calibrated (a note when not), as for synthetic cells;
// and the notes say what was replayed.
func (s *Stage) judgeTrace(row *results.Cell, p point, view *loadgen.Trace, tally *traceTally) {
	if view == nil || view.Len() == 0 {
		return
	}
	scale := s.scaleOf(p)
	note := fmt.Sprintf("trace replay of %s (%s): %d requests over %.1f s recorded, at time_scale %g (mean %.3g req/s)",
		filepath.Base(view.Path), s.cfg.Dataset.Format, view.Len(), view.Span().Seconds(), scale, view.MeanRate()*scale)
	if blocks, rep := view.BlockStats(); blocks > 0 {
		note += fmt.Sprintf("; %d of %d hash-id blocks (%d tokens each) repeat an earlier request's", rep, blocks, view.BlockTokens)
	}
	if s.cfg.Prompts == "warm" {
		note += "; prompts=warm: every pass replays the same prompts, so the prefix cache starts warm"
	}
	row.Notes = joinNotes(row.Notes, note)
	if tally.off == 0 {
		return
	}
	msg := fmt.Sprintf("%d of %d prompts came out more than a token off the trace's input_length (first: %s)", tally.off, tally.all, tally.first)
	if s.cfg.Calibrate == loadgen.CalibrateOff || row.Status != results.StatusOK {
		row.Notes = joinNotes(row.Notes, msg+": prompt length not calibrated")
		return
	}
	row.Status, row.Reason = results.StatusError, msg+": the calibration did not hold for this server"
}

// traceTally is the tally that checks a point's replayed prompts against
// the trace's input lengths (zero: the point replays no trace): each
// timed pass sends the same requests, in order (those due before
// duration, when it cuts the trace).
func (s *Stage) traceTally(p point, view *loadgen.Trace) traceTally {
	if view == nil || view.Len() == 0 {
		return traceTally{}
	}
	_, n := s.traceLoad(p, nil, s.cfg.Warmup)
	return traceTally{view: view, perPass: n}
}

// traceMaxOutput is the longest output a trace point asks for (its
// requests' time bound), 0 when p is not a trace point.
func (s *Stage) traceMaxOutput(p point) int {
	if !p.trace || s.trace == nil {
		return 0
	}
	return s.trace.MaxOutput()
}

// repeatKey separates a repeat's prompts from the other repeats' of the
// same point (cold prompts never repeat in a run: a repeated probe or
// trace replay would otherwise find the last repeat's prompts cached);
// "" without repeats, so those prompts stay what they were.
func repeatKey(p point) string {
	if p.repeat == 0 {
		return ""
	}
	return "#rep" + strconv.Itoa(p.repeat)
}

// measurementKey separates a confirmation's prompts (measurement 2 and
// on) from the first measurement's: a re-measurement that re-sent them
// would be answered from the prefix cache (llama-server: 1,016 of 1,024
// prompt tokens cached, TTFT 22.9 -> 2.26 ms) and judge a warm server as
// the cell. "" for the first, so its prompts stay what they were.
func measurementKey(measurement int64) string {
	if measurement <= 1 {
		return ""
	}
	return "#m" + strconv.FormatInt(measurement, 10)
}
