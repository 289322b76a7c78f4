package runview

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/benchrun/benchrun/internal/chart"
	"github.com/benchrun/benchrun/internal/measure"
	"github.com/benchrun/benchrun/internal/results"
)

// TimelineRows is how many requests a cell's timeline keeps: evenly spread
// over its requests in send order, so a long cell's timeline stays a
// picture rather than a smear and a run's memory stays bounded.
const TimelineRows = 400

// Views are what the charts draw from the cells' request rows, by cell
// id. The rows themselves are not kept (a run can send millions): each
// cell's are reduced as it finishes, live and on replay alike.
type Views struct {
	Dists     map[string]Dist
	Slices    map[string][]results.Slice
	Timelines map[string][]chart.TimelineRow
}

// Keep reduces a finished cell's requests to its views. nil requests
// leave what an earlier call kept (a row fed again without them).
func (v *Views) Keep(c results.Cell, reqs results.Requests) {
	if reqs == nil || c.CellID == "" {
		return
	}
	if v.Dists == nil {
		v.Dists, v.Slices, v.Timelines = map[string]Dist{}, map[string][]results.Slice{}, map[string][]chart.TimelineRow{}
	}
	v.Dists[c.CellID] = DistOf(reqs)
	v.Slices[c.CellID] = measure.Slices(c, reqs)
	v.Timelines[c.CellID] = TimelineOf(reqs)
}

// TimelineOf is a cell's requests as timeline rows (at most TimelineRows,
// evenly spread in send order), in seconds from the first scheduled send.
// It reads the rows twice: their send times, then the rows it shows (a
// long cell's rows are not held: 12 bytes a request here).
func TimelineOf(reqs results.Requests) []chart.TimelineRow {
	if reqs == nil || reqs.Len() == 0 {
		return nil
	}
	type sent struct {
		at  int64 // unix nanoseconds
		pos int32 // place in stored order
	}
	order := make([]sent, 0, reqs.Len())
	sched := func(r *results.Request) time.Time {
		return r.SentAt.Add(-time.Duration(r.SendLagMs * float64(time.Millisecond)))
	}
	var start time.Time
	for r := range reqs.All() {
		order = append(order, sent{r.SentAt.UnixNano(), int32(len(order))})
		if s := sched(r); start.IsZero() || s.Before(start) {
			start = s
		}
	}
	slices.SortStableFunc(order, func(a, b sent) int { return cmp.Compare(a.at, b.at) })
	n := min(len(order), TimelineRows)
	// shown[k] is the stored place of the k-th row shown; at its reading
	// the row is put at its place in send order.
	shown := make(map[int32]int, n)
	for i := range n {
		shown[order[i*len(order)/n].pos] = i
	}
	order = nil
	secs := func(t time.Time) float64 { return t.Sub(start).Seconds() }
	out := make([]chart.TimelineRow, n)
	pos := int32(-1)
	for r := range reqs.All() {
		pos++
		i, ok := shown[pos]
		if !ok {
			continue
		}
		row := chart.TimelineRow{Scheduled: secs(sched(r)), Sent: secs(r.SentAt), FirstToken: math.NaN(), Done: math.NaN()}
		if s, ok := measure.SampleOf(r); ok {
			row.FirstToken = row.Sent + s.TTFTMs/1000
			row.Done = row.Sent + s.E2ELMs/1000
			row.Tip = fmt.Sprintf("request %d: sent %.3f s (%.2f ms late), first token +%.1f ms, done +%.1f ms", r.Seq, row.Sent, r.SendLagMs, s.TTFTMs, s.E2ELMs)
		} else {
			row.Failed = true
			row.Tip = fmt.Sprintf("request %d: sent %.3f s, failed: %s", r.Seq, row.Sent, r.Error)
		}
		out[i] = row
	}
	return out
}

// RunCharts draws a run: its load levels and programs (Charts), where a
// thinking model's request time went (ReasoningCharts), the
// offered against the achieved rate of its rate ladders, the baseline band
// of its regression verdicts, then per shape its latency distributions,
// its time slices and the timeline of its most loaded cell.
func RunCharts(cells []results.Cell, verdicts []results.Verdict, v Views) []chart.Rendered {
	out := Charts(cells)
	out = append(out, ReasoningCharts(cells)...)
	out = append(out, RateCharts(cells)...)
	out = append(out, BandCharts(cells, verdicts)...)
	out = append(out, DistCharts(cells, v.Dists)...)
	out = append(out, SliceCharts(cells, v.Slices)...)
	return append(out, TimelineCharts(cells, v.Timelines)...)
}

// shapeKey is a stage's input:output shape.
type shapeKey struct {
	stage    string
	isl, osl int64
}

func (k shapeKey) String() string { return fmt.Sprintf("%s %d:%d", k.stage, k.isl, k.osl) }

func (k shapeKey) slug() string { return fmt.Sprintf("%s-%d-%d", ChartSlug(k.stage), k.isl, k.osl) }

// byShape groups the cells keep accepts by stage and shape, in the order
// shapes first appear.
func byShape(cells []results.Cell, keep func(results.Cell) bool) ([]shapeKey, map[shapeKey][]results.Cell) {
	var order []shapeKey
	out := map[shapeKey][]results.Cell{}
	for _, c := range cells {
		if c.Program != "" || c.Search == "knee" || !keep(c) {
			continue
		}
		k := shapeKey{c.Stage, c.ISL, c.OSL}
		if _, ok := out[k]; !ok {
			order = append(order, k)
		}
		out[k] = append(out[k], c)
	}
	return order, out
}

// RateCharts draws, per shape of a request-rate ladder, the rate offered
// against the rate achieved: requests sent per second over the send span
// (below the diagonal: the client or its in-flight cap fell behind) and
// completed per second over the window (below it: the server did).
func RateCharts(cells []results.Cell) []chart.Rendered {
	order, shapes := byShape(cells, func(c results.Cell) bool { return c.Rate > 0 && c.TimeScale == nil })
	var out []chart.Rendered
	for _, k := range order {
		l := &chart.Line{
			Title: "Offered vs achieved rate · " + k.String(), XLabel: "offered request rate (req/s)", YLabel: "achieved, req/s",
			Note: "dashed: offered (the diagonal) · on it is on schedule; below it fell behind",
		}
		offered := chart.Series{Name: "offered", Color: "#7b8794", Dash: true}
		sent := chart.Series{Name: "sent (sent_req_s)", Color: chart.Palette[0]}
		done := chart.Series{Name: "completed (req_s)", Color: chart.Palette[1]}
		for _, c := range shapes[k] {
			offered.Points = append(offered.Points, chart.Point{X: c.Rate, Y: c.Rate, Tip: fmt.Sprintf("offered %g req/s", c.Rate)})
			if c.SentReqS != nil {
				sent.Points = append(sent.Points, chart.Point{X: c.Rate, Y: *c.SentReqS, Tip: fmt.Sprintf("%s: sent %.4g req/s (%.1f%% of offered)", LoadLabel(c), *c.SentReqS, 100**c.SentReqS/c.Rate)})
			}
			if c.ReqS != nil {
				done.Points = append(done.Points, chart.Point{X: c.Rate, Y: *c.ReqS, Tip: fmt.Sprintf("%s: completed %.4g req/s (%.1f%% of offered)", LoadLabel(c), *c.ReqS, 100**c.ReqS/c.Rate)})
			}
		}
		l.Series = []chart.Series{offered, sent, done}
		if len(sent.Points)+len(done.Points) == 0 {
			continue
		}
		out = append(out, chart.Rendered{Name: "rate-" + k.slug(), Title: l.Title, SVG: l.SVG()})
	}
	return out
}

// SliceCharts draws, per shape, each load level's output tokens/s and
// ITL p99 (E2EL p99 for cells without token gaps) over its timed pass,
// one curve a load level: a warm-up tail, a stall or a throttling GPU is
// a shape here where the cell's row shows an average.
func SliceCharts(cells []results.Cell, slices map[string][]results.Slice) []chart.Rendered {
	order, shapes := byShape(cells, func(c results.Cell) bool { return len(slices[c.CellID]) > 0 })
	var out []chart.Rendered
	for _, k := range order {
		tput := &chart.Line{Title: "Output tokens/s over the pass · " + k.String(), XLabel: "seconds into the timed pass", YLabel: "output tokens/s in the window",
			Note: "one curve a load level, a point a time slice (table slices)"}
		lat := &chart.Line{Title: "ITL p99 over the pass · " + k.String(), XLabel: "seconds into the timed pass", YLabel: "ITL p99 in the window, ms",
			Note: "one curve a load level; a spike is a stall"}
		anyITL := false
		for _, c := range shapes[k] {
			for _, s := range slices[c.CellID] {
				anyITL = anyITL || s.ITLP99Ms != nil
			}
		}
		if !anyITL {
			lat.Title, lat.YLabel = "E2EL p99 over the pass · "+k.String(), "E2EL p99 of requests ending in the window, ms"
		}
		for i, c := range shapes[k] {
			color := chart.Palette[i%len(chart.Palette)]
			ts := chart.Series{Name: LoadLabel(c), Color: color}
			ls := chart.Series{Name: LoadLabel(c), Color: color}
			for _, s := range slices[c.CellID] {
				mid := s.StartS + s.WidthS/2
				ts.Points = append(ts.Points, chart.Point{X: mid, Y: s.OutputTokS, Tip: fmt.Sprintf("%s, %.3g–%.3g s: %.4g tok/s, %.2g in flight", LoadLabel(c), s.StartS, s.StartS+s.WidthS, s.OutputTokS, s.InFlight)})
				y := s.ITLP99Ms
				if !anyITL {
					y = s.E2ELP99Ms
				}
				if y != nil {
					ls.Points = append(ls.Points, chart.Point{X: mid, Y: *y, Tip: fmt.Sprintf("%s, %.3g–%.3g s: %.4g ms", LoadLabel(c), s.StartS, s.StartS+s.WidthS, *y)})
				}
			}
			tput.Series, lat.Series = append(tput.Series, ts), append(lat.Series, ls)
		}
		out = append(out, chart.Rendered{Name: "slices-tput-" + k.slug(), Title: tput.Title, SVG: tput.SVG()})
		if hasPoints(lat) {
			out = append(out, chart.Rendered{Name: "slices-latency-" + k.slug(), Title: lat.Title, SVG: lat.SVG()})
		}
	}
	return out
}

// TimelineCharts draws, per shape, the request timeline of its most
// loaded cell (the highest rate, else concurrency), where queueing shows.
func TimelineCharts(cells []results.Cell, timelines map[string][]chart.TimelineRow) []chart.Rendered {
	order, shapes := byShape(cells, func(c results.Cell) bool { return len(timelines[c.CellID]) > 0 })
	var out []chart.Rendered
	for _, k := range order {
		c := slices.MaxFunc(shapes[k], func(a, b results.Cell) int {
			return cmp.Or(cmp.Compare(a.Rate, b.Rate), cmp.Compare(a.Concurrency, b.Concurrency))
		})
		rows := timelines[c.CellID]
		note := fmt.Sprintf("%d requests", c.Requests)
		if int64(len(rows)) < c.Requests {
			note = fmt.Sprintf("%d of %d requests, evenly spread (all are in the requests table)", len(rows), c.Requests)
		}
		tl := &chart.Timeline{Title: "Request timeline · " + CellLabel(c), Note: note, XLabel: "seconds from the first scheduled send", Rows: rows}
		out = append(out, chart.Rendered{Name: "timeline-" + k.slug(), Title: tl.Title, SVG: tl.SVG()})
	}
	return out
}

// BandCharts draws the plan's baseline check: per shape and metric, the
// history's prediction interval of a new value at each load level (the
// band), the history's center, and this run's values, a regressed one
// ringed. Drawn from the regression verdicts (level regression).
func BandCharts(cells []results.Cell, verdicts []results.Verdict) []chart.Rendered {
	byID := map[string]results.Cell{}
	for _, c := range cells {
		byID[c.CellID] = c
	}
	type key struct {
		shape  shapeKey
		metric string
	}
	var order []key
	charts := map[key]*chart.Line{}
	for _, v := range verdicts {
		c, ok := byID[v.CellID]
		old, okOld := verdictValue(v, "old")
		cur, okNew := verdictValue(v, "new")
		lo, okLo := verdictValue(v, "low")
		hi, okHi := verdictValue(v, "high")
		if v.Level != "regression" || !ok || !okOld || !okNew || !okLo || !okHi {
			continue
		}
		k := key{shapeKey{c.Stage, c.ISL, c.OSL}, v.Name}
		l := charts[k]
		if l == nil {
			xl := "concurrency"
			if c.Rate > 0 {
				xl = "request rate (req/s)"
			}
			l = &chart.Line{Title: fmt.Sprintf("%s against its history · %s", v.Name, k.shape), XLabel: xl, YLabel: v.Name, FitY: true, LogX: c.Rate == 0,
				Note:   "band: where a new value was expected · dashed: the history's center · ringed: regressed",
				Bands:  []chart.Band{{Name: "history's interval", Color: chart.Palette[0]}},
				Series: []chart.Series{{Name: "history", Color: "#7b8794", Dash: true}, {Name: "this run", Color: chart.Palette[1]}}}
			charts[k] = l
			order = append(order, k)
		}
		x := float64(c.Concurrency)
		if c.Rate > 0 {
			x = c.Rate
		}
		lbl := LoadLabel(c)
		l.Bands[0].Points = append(l.Bands[0].Points, chart.BandPoint{X: x, Low: lo, High: hi, Tip: fmt.Sprintf("%s: expected %.4g–%.4g", lbl, lo, hi)})
		l.Series[0].Points = append(l.Series[0].Points, chart.Point{X: x, Y: old, Tip: fmt.Sprintf("%s: history %.4g (runs %s)", lbl, old, v.Values["runs"])})
		l.Series[1].Points = append(l.Series[1].Points, chart.Point{X: x, Y: cur, Tip: fmt.Sprintf("%s: this run %.4g, %s", lbl, cur, v.Outcome)})
		if v.Outcome == "regressed" {
			l.Marks = append(l.Marks, chart.Mark{X: x, Y: cur, Tip: fmt.Sprintf("%s: %s regressed: %.4g, expected %.4g–%.4g", lbl, v.Name, cur, lo, hi)})
		}
	}
	out := make([]chart.Rendered, 0, len(order))
	for _, k := range order {
		l := charts[k]
		out = append(out, chart.Rendered{Name: fmt.Sprintf("baseline-%s-%s", ChartSlug(k.metric), k.shape.slug()), Title: l.Title, SVG: l.SVG()})
	}
	return out
}

// verdictValue reads a regression verdict's number (false: absent or null).
func verdictValue(v results.Verdict, key string) (float64, bool) {
	f, err := strconv.ParseFloat(v.Values[key], 64)
	return f, err == nil && !math.IsNaN(f)
}
