package regress

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/benchrun/benchrun/internal/results"
)

// CompareRuns compares the cells of news against the cells of olds with
// the same Key. Several runs a side are repeats: their request samples
// pool, and their per-run values become samples of their own. So are the
// repeats of a point within a run (a sweep's `repeats: N`: rows
// .../rep1 … .../repN, one Key): each repeat's requests pool as one more
// block-bootstrapped span, and each repeat's per-cell value (throughput)
// is one more sample, so two single runs with repeats can decide
// throughput.
//
// Each metric of each matching cell gets one of three conclusions, as
// Chromium's Pinpoint decides A/B jobs, or unknown:
//
//   - With two or more runs a side, every metric is judged from the
//     runs' own values, as a throughput is (below): the run is the unit
//     of replication, and what varies from run to run counts.
//   - With one a side, a metric with a request-level sample (the p50, p99 or mean of TTFT,
//     ITL, TPOT, E2EL, from the request rows) is judged on the ratio
//     new/old of its statistic. A moving-block bootstrap over each run's
//     completion order (BlockLength) gives the ratio's (1 − Alpha)
//     interval and a p-value. `regressed` or `improved`: the interval
//     excludes 1, the p-value survives the family's correction, and the
//     change passes the metric's threshold and floor. `same`: the interval
//     lies within ± the margin (an equivalence test). Else `unknown`,
//     with about how many more requests a side would decide it.
//   - A metric that is one number per cell (output_tok_s, req_s) can only
//     be judged from repeats: with two or more values a side (runs, or
//     repeats within a run), Welch's t on the log of the values gives the
//     ratio's interval, judged as above. Two single runs without repeats
//     are `unknown`: one number a side shows no spread, so nothing can
//     tell a change from noise.
//
// The Mann–Whitney U p-value of the raw samples is shown (Verdict.MWU),
// not gated on. Cells present on one side only are listed in OnlyOld and
// OnlyNew with the nearest cell of the other side; cells not ok or
// client-bound are excluded and counted (Exclusion).
func CompareRuns(olds, news []*Run, o Options) *Report {
	o = o.withDefaults()
	rep := &Report{Correction: o.Correction, Alpha: o.Alpha}
	for _, r := range olds {
		rep.RunsOld = append(rep.RunsOld, r.ID)
	}
	for _, r := range news {
		rep.RunsNew = append(rep.RunsNew, r.ID)
	}
	oldSide, oldKeys, oldBad := gather(olds, o, &rep.Excluded)
	newSide, newKeys, newBad := gather(news, o, &rep.Excluded)

	// Cells present on one side only, and cells one side had but could
	// not use.
	for _, k := range newKeys {
		if _, ok := oldSide[k]; ok {
			continue
		}
		if why, bad := oldBad[k]; bad {
			rep.Skipped = append(rep.Skipped, Skip{Key: k, Reason: "old side: " + why})
			continue
		}
		rep.OnlyNew = append(rep.OnlyNew, unmatched(k, oldKeys))
	}
	for _, k := range oldKeys {
		if _, ok := newSide[k]; ok {
			continue
		}
		if why, bad := newBad[k]; bad {
			rep.Skipped = append(rep.Skipped, Skip{Key: k, Reason: "new side: " + why})
			continue
		}
		rep.OnlyOld = append(rep.OnlyOld, unmatched(k, newKeys))
	}
	rep.NoMatch = Explain(oldKeys, newKeys)

	var ps []float64
	var machines []machinePair
	for _, k := range newKeys {
		oc, nc := oldSide[k], newSide[k]
		if len(oc) == 0 || len(nc) == 0 {
			continue
		}
		vs := compareCell(k, oc, nc, o, rep)
		m := machinePair{old: oc, new: nc}
		for _, v := range vs {
			rep.Verdicts = append(rep.Verdicts, v)
			ps = append(ps, v.P)
			machines = append(machines, m)
		}
	}
	adj := Adjust(o.Correction, ps)
	rep.Comparisons = countFinite(ps)
	for i := range rep.Verdicts {
		rep.Verdicts[i].PAdjusted = adj[i]
		decideRatio(&rep.Verdicts[i], o, rep.Comparisons)
		explainPairByMachine(&rep.Verdicts[i], machines[i])
	}
	rep.Summaries = summaries(o.Metrics, rep.Verdicts)
	return rep
}

// gather indexes a side's usable cells by key, in the order keys first
// appear; bad holds the keys seen only in cells that were excluded, with
// the first reason.
func gather(runs []*Run, o Options, excluded *map[string]int) (cells map[Key][]sideCell, keys []Key, bad map[Key]string) {
	cells, bad = map[Key][]sideCell{}, map[Key]string{}
	seen := map[Key]bool{}
	for _, r := range runs {
		for i := range r.Cells {
			c := &r.Cells[i]
			k := o.keyOf(c)
			if why := Exclusion(c, r, o); why != "" {
				count(excluded, why)
				if _, ok := bad[k]; !ok {
					bad[k] = why
				}
				if !seen[k] {
					seen[k] = true
					keys = append(keys, k)
				}
				continue
			}
			var reqs results.Requests
			if r.Requests != nil {
				reqs = r.Requests[c.CellID]
			}
			cells[k] = append(cells[k], sideCell{run: r, cell: c, reqs: reqs})
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	for k := range cells {
		delete(bad, k)
	}
	return cells, keys, bad
}

func unmatched(k Key, others []Key) Unmatched {
	u := Unmatched{Key: k}
	if n, d, ok := Nearest(k, others); ok {
		u.Nearest, u.Diffs = &n, d
	}
	return u
}

// hasRequests says whether every cell of a side has request rows.
func hasRequests(cells []sideCell) bool {
	for _, c := range cells {
		if c.reqs == nil || c.reqs.Len() == 0 {
			return false
		}
	}
	return len(cells) > 0
}

// compareCell computes the statistics of every metric of one matching
// cell; decideRatio concludes once the family's p-values are adjusted.
func compareCell(k Key, oc, nc []sideCell, o Options, rep *Report) []Verdict {
	var out []Verdict
	runsOf := func(cs []sideCell) []string {
		var ids []string
		for _, c := range cs {
			if !slices.Contains(ids, c.run.ID) {
				ids = append(ids, c.run.ID) // a run's repeats once
			}
		}
		return ids
	}
	// Request-level families, bootstrapped once per family.
	type family struct {
		qs       []float64
		res      []bootResult
		mwu      float64
		old, new side
	}
	fams := map[string]*family{}
	reqOK := hasRequests(oc) && hasRequests(nc)
	var unread error // why a side's request rows could not be read
	if reqOK {
		for _, m := range o.Metrics {
			if m.Sample != "" {
				if fams[m.Sample] == nil {
					fams[m.Sample] = &family{}
				}
				fams[m.Sample].qs = append(fams[m.Sample].qs, m.Quantile)
			}
		}
		// One reading of each cell's requests orders them and counts
		// every family's values; then one a family (a few more for a
		// side thinned for the bootstrap).
		names := sortedKeys(fams)
		for i := 0; i < len(oc) && len(names) > 0; i++ {
			oc[i].prepare(names)
		}
		for i := 0; i < len(nc) && len(names) > 0; i++ {
			nc[i].prepare(names)
		}
		for _, name := range names {
			f := fams[name]
			slices.Sort(f.qs)
			f.qs = slices.Compact(f.qs)
			f.old, f.new = buildSide(oc, name, f.qs), buildSide(nc, name, f.qs)
			if err := cmp.Or(f.old.err, f.new.err); err != nil {
				unread = err
				delete(fams, name)
				continue
			}
			if min(f.old.nVals, f.new.nVals, f.old.nReq, f.new.nReq) < o.MinRequests {
				f.old.release()
				f.new.release()
				continue
			}
			h := fnv.New64a()
			fmt.Fprintf(h, "%v|%s", k, name)
			rng := rand.New(rand.NewPCG(o.Seed, h.Sum64()))
			f.res = bootstrapRatios(&f.old, &f.new, f.qs, o.Resamples, o.Alpha, rng)
			// On a thinned side, of the kept requests' values.
			_, f.mwu = MannWhitney(f.old.vals, f.new.vals)
			f.old.release()
			f.new.release()
		}
	}
	for _, m := range o.Metrics {
		v := Verdict{
			Key: k, CellID: PointID(*oc[0].cell), Metric: m.Name, Unit: m.Unit, Better: m.Better,
			Old: math.NaN(), New: math.NaN(), Change: math.NaN(), Low: math.NaN(), High: math.NaN(),
			P: math.NaN(), PAdjusted: math.NaN(), MWU: math.NaN(), Level: 1 - o.Alpha, Ratio: true,
			Runs: runsOf(oc),
		}
		// Values not measured on a side are skipped, never read as 0.
		var ov, nv []float64
		for _, c := range oc {
			if x := m.Value(c.cell); x != nil {
				ov = append(ov, *x)
			} else {
				count(&v.Excluded, ReasonNull)
			}
		}
		for _, c := range nc {
			if x := m.Value(c.cell); x != nil {
				nv = append(nv, *x)
			} else {
				count(&v.Excluded, ReasonNull)
			}
		}
		if len(ov) == 0 || len(nv) == 0 {
			rep.Skipped = append(rep.Skipped, Skip{Key: k, Metric: m.Name, Reason: ReasonNull})
			continue
		}
		// Several runs a side: the run is the unit. Requests pooled over
		// runs would hide what varies from run to run (the server's
		// launch, the machine that night), and their bootstrap, blind to
		// it, called 2 of 36 metrics of 6 + 6 identical runs changed;
		// Welch on the runs' own values sees that spread. (One run a side
		// with repeats keeps the requests' bootstrap: its repeats share
		// that run's night, and three of them are too few for Welch to
		// find a 10% slowdown.)
		if len(runsOf(oc)) >= 2 && len(runsOf(nc)) >= 2 {
			perRun(&v, m, ov, nv, o)
			if f := fams[m.Sample]; f != nil {
				v.MWU = f.mwu
			}
			out = append(out, v)
			continue
		}
		if f := fams[m.Sample]; f != nil && f.res != nil {
			r := f.res[slices.Index(f.qs, m.Quantile)]
			v.Method = MethodBootstrap
			v.Old, v.New = r.old, r.new
			v.Change = v.New/v.Old - 1
			v.Low, v.High, v.P = r.low, r.high, r.p
			v.N, v.NNew = f.old.nReq, f.new.nReq
			v.MWU = f.mwu
			v.Margin = margin(m, v.Old)
			boundTail(&v, m, &f.old, &f.new)
			if note := thinned(&f.old, &f.new); note != "" {
				v.Reason = strings.TrimPrefix(v.Reason+"; "+note, "; ")
			}
			out = append(out, v)
			continue
		}
		perRun(&v, m, ov, nv, o)
		if m.Sample != "" {
			switch {
			case !reqOK:
				v.Reason = strings.TrimPrefix(v.Reason+"; no request rows on a side to compare request by request", "; ")
			case unread != nil && fams[m.Sample] == nil:
				v.Reason = strings.TrimPrefix(v.Reason+"; request rows unreadable ("+unread.Error()+")", "; ")
			default:
				v.Reason = strings.TrimPrefix(v.Reason+fmt.Sprintf("; fewer than %d measured requests a side", o.MinRequests), "; ")
			}
		}
		out = append(out, v)
	}
	return out
}

// perRun judges a metric from one value per run: Welch's t on ln(x)
// (x when a value is ≤ 0) with two or more runs a side, else nothing.
func perRun(v *Verdict, m Metric, ov, nv []float64, o Options) {
	v.N, v.NNew = len(ov), len(nv)
	logs := true
	for _, x := range append(slices.Clone(ov), nv...) {
		logs = logs && x > 0
	}
	center := func(xs []float64) float64 {
		if logs {
			return GeoMean(xs)
		}
		mean, _ := meanSD(xs)
		return mean
	}
	v.Old, v.New = center(ov), center(nv)
	if v.Old != 0 {
		v.Change = v.New/v.Old - 1
	}
	v.Margin = margin(m, v.Old)
	if len(ov) < 2 || len(nv) < 2 {
		v.Method = MethodNone
		v.Outcome = Unknown
		if len(ov) == 1 && len(nv) == 1 {
			v.Reason = fmt.Sprintf("%s is one number per run: two single runs cannot decide it (a change cannot be told from run-to-run noise); give repeats, several runs a side", m.Name)
		} else {
			v.Reason = fmt.Sprintf("%s is one number per run: it needs at least two runs a side (%d old, %d new)", m.Name, len(ov), len(nv))
		}
		return
	}
	v.Method = MethodWelch
	f := func(x float64) float64 { return x }
	if logs {
		f = math.Log
	}
	a, b := make([]float64, len(ov)), make([]float64, len(nv))
	for i, x := range ov {
		a[i] = f(x)
	}
	for i, x := range nv {
		b[i] = f(x)
	}
	diff, se, df := welch(a, b)
	t := TQuantile(1-o.Alpha/2, df)
	switch {
	case se > 0 && logs:
		v.Low, v.High = math.Exp(diff-t*se), math.Exp(diff+t*se)
		v.P = 2 * tSurvival(math.Abs(diff)/se, df)
	case se > 0 && v.Old != 0:
		v.Low, v.High = 1+(diff-t*se)/v.Old, 1+(diff+t*se)/v.Old
		v.P = 2 * tSurvival(math.Abs(diff)/se, df)
	case diff == 0:
		v.Low, v.High, v.P = 1, 1, 1
	default:
		r := v.New / v.Old
		v.Low, v.High, v.P = r, r, 0
	}
}

// decideRatio concludes a verdict between runs from its interval and its
// adjusted p-value (see CompareRuns).
func decideRatio(v *Verdict, o Options, family int) {
	if v.Outcome != "" || math.IsNaN(v.Low) || math.IsNaN(v.High) {
		if v.Outcome == "" {
			v.Outcome = Unknown
			if v.Reason == "" {
				v.Reason = "no interval could be computed"
			}
		}
		return
	}
	excludes1 := v.Low > 1 || v.High < 1
	sig := excludes1 && v.PAdjusted <= o.Alpha
	large := !math.IsNaN(v.Change) && math.Abs(v.Change) >= v.Margin
	within := v.Low >= 1-v.Margin && v.High <= 1+v.Margin
	if overlap := v.tailOverlap(); sig && large && overlap != "" {
		v.Outcome, v.Reason = Unknown, strings.TrimPrefix(v.Reason+"; "+overlap, "; ")
		return
	}
	switch {
	case sig && large && v.Better.Worse(v.Change):
		v.Outcome = Regressed
	case sig && large:
		v.Outcome = Improved
	case within:
		v.Outcome = Same
	default:
		v.Outcome = Unknown
		var why string
		switch {
		case excludes1 && large:
			why = fmt.Sprintf("clear alone (p=%.3g) but not after %s over %d comparisons", v.P, o.Correction, family)
		case excludes1:
			why = fmt.Sprintf("a clear change of %+.1f%%, but the interval reaches past the ±%.1f%% that counts", 100*v.Change, 100*v.Margin)
		default:
			why = fmt.Sprintf("the interval [%.3f, %.3f] holds both 1 and changes past ±%.1f%%", v.Low, v.High, 100*v.Margin)
		}
		if hint := moreHint(v, o.Alpha, family); hint != "" {
			why += "; " + hint
		}
		v.Reason = strings.TrimPrefix(v.Reason+"; "+why, "; ")
	}
}

// SplitBy splits runs into variants by the value of a metadata key (the
// `--by quant` of `benchrun compare`) or of a column of SplitColumns (`--by
// engine`): for each value, in the order values first appear, the runs'
// cells that carry it, with the key taken out of their metadata (the
// column blanked) so that the variants' cells match each other. A cell
// without the key is the variant "". Requests follow their cells.
func SplitBy(runs []*Run, key string) (values []string, variants map[string][]*Run) {
	value, strip := splitter(key)
	variants = map[string][]*Run{}
	for _, r := range runs {
		parts := map[string]*Run{}
		var order []string
		for _, c := range r.Cells {
			v := value(&c)
			p := parts[v]
			if p == nil {
				p = &Run{ID: r.ID, Dir: r.Dir, StartedAt: r.StartedAt, Status: r.Status, SendLagThresholdMs: r.SendLagThresholdMs}
				if r.Requests != nil {
					p.Requests = map[string]results.Requests{}
				}
				parts[v] = p
				order = append(order, v)
			}
			strip(&c)
			p.Cells = append(p.Cells, c)
			if r.Requests != nil {
				p.Requests[c.CellID] = r.Requests[c.CellID]
			}
		}
		for _, v := range order {
			if _, ok := variants[v]; !ok {
				values = append(values, v)
			}
			variants[v] = append(variants[v], parts[v])
		}
	}
	return values, variants
}

// SplitColumns are the cell columns SplitBy splits by as well as metadata
// keys: what a server was (its engine, version, model and hardware) and
// the plan. A column's name means the column, never a metadata key of the
// same name.
var SplitColumns = []string{"engine", "engine_version", "model", "model_digest", "hardware", "plan"}

// splitter is how SplitBy reads a cell's variant and takes it out of the
// cell's key. Splitting by engine blanks the engine's version too: two
// engines' versions differ with them.
func splitter(key string) (value func(*results.Cell) string, strip func(*results.Cell)) {
	col := func(f func(*results.Cell) *string) (func(*results.Cell) string, func(*results.Cell)) {
		return func(c *results.Cell) string { return *f(c) }, func(c *results.Cell) { *f(c) = "" }
	}
	if meta, ok := strings.CutPrefix(key, "metadata."); ok {
		key = meta // a metadata key named like a column: metadata.engine
	} else {
		switch key {
		case "engine":
			return func(c *results.Cell) string { return c.Engine }, func(c *results.Cell) { c.Engine, c.EngineVersion = "", "" }
		case "engine_version":
			return col(func(c *results.Cell) *string { return &c.EngineVersion })
		case "model":
			return col(func(c *results.Cell) *string { return &c.Model })
		case "model_digest":
			return col(func(c *results.Cell) *string { return &c.ModelDigest })
		case "hardware":
			return col(func(c *results.Cell) *string { return &c.Hardware })
		case "plan":
			return col(func(c *results.Cell) *string { return &c.Plan })
		}
	}
	return func(c *results.Cell) string { return c.Metadata[key] }, func(c *results.Cell) {
		meta := maps.Clone(c.Metadata)
		delete(meta, key)
		c.Metadata = meta
	}
}
