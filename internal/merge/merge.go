// Package merge joins the run directories of the shards of one sharded
// run (benchrun PLAN --shard i/n) into one run directory whose cell rows
// are recomputed from the shards' pooled request rows: a percentile of
// the merged cell is the percentile of every request's samples, never an
// average of the shards' percentiles (docs/METRICS.md, Shards).
package merge

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/benchrun/benchrun/internal/measure"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/rundir"
	"github.com/benchrun/benchrun/internal/turns"
)

// InfoFile is the merged run directory's record of its shards.
const InfoFile = "merge.json"

// Options are the thresholds a shard is flagged beyond.
type Options struct {
	// SendLagThresholdMs flags a cell where a shard's send lag p99 was
	// above it: that shard could not keep its schedule (default 5, the
	// sweep's send_lag_threshold_ms default).
	SendLagThresholdMs float64
	// StartThresholdMs flags a cell where a shard's first send came this
	// much later than its planned instant relative to the earliest shard
	// (default 100).
	StartThresholdMs float64
	// Now stamps the merged run (zero: time.Now).
	Now time.Time
}

// Shard is one shard's part of one cell, as the merged run records it.
type Shard struct {
	RunID         string   `json:"run_id"`
	Dir           string   `json:"dir"`
	Shard         int64    `json:"shard"`
	Shards        int64    `json:"shards"`
	Requests      int      `json:"requests"`
	SendLagP99Ms  *float64 `json:"send_lag_p99_ms"`
	StartOffsetMs float64  `json:"start_offset_ms"`
	Flag          string   `json:"flag,omitempty"`
}

// ShardInfo is one shard process's record (its manifest's `shard`): how
// its start was agreed and its clock's offset from the coordinator's,
// which the merge adds to its sent_at times.
type ShardInfo struct {
	RunID string `json:"run_id"`
	Dir   string `json:"dir"`
	rundir.ShardRecord
}

// Cell is one merged cell's record in merge.json.
type Cell struct {
	Stage   string  `json:"stage"`
	CellID  string  `json:"cell_id"`
	Shards  []Shard `json:"shards"`
	Flagged bool    `json:"flagged"`
}

// Info is merge.json.
type Info struct {
	RunID  string   `json:"run_id"`
	From   []string `json:"from"`
	Shards []string `json:"shard_run_ids"`
	// Processes are the shards' own records, in the order given (nil
	// entries for shards that wrote none: older runs).
	Processes []ShardInfo `json:"shards,omitempty"`
	Cells     []Cell      `json:"cells"`
}

// Result is what Merge wrote.
type Result struct {
	Dir   string
	Cells []results.Cell
	// Requests is how many request rows each merged cell row wrote, by
	// stage + "\x00" + cell id (the rows are in its part files).
	Requests map[string]int
	Info     Info
}

type shardRun struct {
	dir  string
	run  *rundir.Run
	rows *rundir.Rows
}

// Merge reads the shards' run directories and writes the merged run
// directory out (which must not exist yet, or be empty).
func Merge(dirs []string, out string, o Options) (*Result, error) {
	if len(dirs) == 0 {
		return nil, errors.New("no run directory to merge")
	}
	if o.SendLagThresholdMs <= 0 {
		o.SendLagThresholdMs = 5
	}
	if o.StartThresholdMs <= 0 {
		o.StartThresholdMs = 100
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	var shards []shardRun
	for _, d := range dirs {
		run, err := rundir.Open(d)
		if err != nil {
			return nil, fmt.Errorf("shard %s: %w", d, err)
		}
		rows, err := run.Rows()
		if err != nil {
			return nil, fmt.Errorf("shard %s: %w", d, err)
		}
		shards = append(shards, shardRun{dir: d, run: run, rows: rows})
	}
	if err := checkShardSet(shards); err != nil {
		return nil, err
	}
	if err := prepareOut(out); err != nil {
		return nil, err
	}
	runID := "merge-" + o.Now.UTC().Format("20060102T150405Z")
	res := &Result{Dir: out, Requests: map[string]int{}, Info: Info{RunID: runID, From: dirs}}
	offsets := map[string]time.Duration{} // by shard dir: coordinator clock − shard clock
	for _, s := range shards {
		res.Info.Shards = append(res.Info.Shards, s.run.ID())
		if rec := s.run.Manifest.Shard; rec != nil {
			res.Info.Processes = append(res.Info.Processes, ShardInfo{RunID: s.run.ID(), Dir: s.dir, ShardRecord: *rec})
			if rec.ClockOffsetMs != nil {
				offsets[s.dir] = time.Duration(*rec.ClockOffsetMs * float64(time.Millisecond))
			}
		}
	}

	// The cells in shard 0's order, then any only later shards have.
	type key struct{ stage, id string }
	var order []key
	parts := map[key][]part{}
	for _, s := range shards {
		for _, c := range results.LatestCells(s.rows.Cells) {
			k := key{c.Stage, c.CellID}
			if _, ok := parts[k]; !ok {
				order = append(order, k)
			}
			// A model mix's per-model row has no requests of its own:
			// its model's requests of the pooled row are its (read, not
			// written again).
			reqID, model, perModel := mixRowOf(c.CellID)
			key := rundir.KeyOf(c)
			key.CellID = reqID
			// On the coordinator's clock, so that the shards' times are
			// comparable (zero offset without one).
			reqs := &shardRows{stored: s.rows.Requests.Of(key), stage: c.Stage, model: model, perModel: perModel, offset: offsets[s.dir]}
			if err := reqs.scan(); err != nil {
				return nil, fmt.Errorf("shard %s: %w", s.dir, err)
			}
			parts[k] = append(parts[k], part{dir: s.dir, runID: s.run.ID(), row: c, reqs: reqs})
		}
	}
	// Goodput counts the requests meeting the plan's SLO, so it is
	// recomputed from the pooled requests too, with the plan the shards
	// ran (shard 0's plan.json).
	var plan struct {
		SLO measure.SLO `json:"slo"`
	}
	if len(shards[0].run.PlanJSON) > 0 {
		if err := json.Unmarshal(shards[0].run.PlanJSON, &plan); err != nil {
			return nil, fmt.Errorf("shard %s: reading its plan.json: %w", dirs[0], err)
		}
	}
	for n, k := range order {
		row, pool, info := mergeCell(parts[k], plan.SLO, o)
		pool.runID = runID
		var reqs results.Requests = pool
		written := pool.Len()
		if _, _, perModel := mixRowOf(k.id); perModel {
			reqs, written = nil, 0 // the pooled row's, written with it
		}
		row.RunID = runID
		row.Attempt = 1
		if err := rundir.WriteCell(out, rundir.PartName(1, n+1), row, reqs, measure.Slices(row, reqs)); err != nil {
			return nil, err
		}
		// The rows are read again at each reading: one that failed
		// (a part changed under the merge) fails it.
		if err := pool.Err(); err != nil {
			return nil, fmt.Errorf("cell %s: %w", k.id, err)
		}
		res.Cells = append(res.Cells, row)
		res.Requests[k.stage+"\x00"+k.id] = written
		res.Info.Cells = append(res.Info.Cells, info)
	}
	if err := writeRunFiles(shards, out, runID, res, o.Now); err != nil {
		return nil, err
	}
	return res, nil
}

// checkShardSet refuses run directories that are not one sharded run,
// whole and once each: a directory (or run) given twice would count its
// requests twice, a missing shard would label a part of the load with the
// whole concurrency, and a shard of another split, plan or start is
// another run's. (Tags are not compared: shards are often told apart by
// one, -t shard=N.)
func checkShardSet(shards []shardRun) error {
	type who struct {
		dir       string
		shard, of int64
	}
	var set []who
	seenDir, seenRun := map[string]string{}, map[string]string{}
	for _, s := range shards {
		m := s.run.Manifest
		if m == nil {
			return fmt.Errorf("shard %s has no manifest.json (it did not finish)", s.dir)
		}
		real := s.dir
		if abs, err := filepath.Abs(s.dir); err == nil {
			real = abs
		}
		if r, err := filepath.EvalSymlinks(real); err == nil {
			real = r
		}
		if prev, ok := seenDir[real]; ok {
			return fmt.Errorf("%s is given twice (as %s and %s): each shard's run directory once", real, prev, s.dir)
		}
		seenDir[real] = s.dir
		if prev, ok := seenRun[s.run.ID()]; ok {
			return fmt.Errorf("%s and %s are the same run (%s): each shard's run directory once", prev, s.dir, s.run.ID())
		}
		seenRun[s.run.ID()] = s.dir
		if _, err := os.Stat(filepath.Join(s.dir, InfoFile)); err == nil {
			return fmt.Errorf("%s is a merged run, not a shard: merge joins the run directories of one sharded run", s.dir)
		}
		w := who{dir: s.dir}
		if rec := m.Shard; rec != nil {
			w.shard, w.of = int64(rec.Shard), int64(rec.Shards)
		} else {
			for _, c := range results.LatestCells(s.rows.Cells) {
				if c.Shards > 1 {
					w.shard, w.of = c.Shard, c.Shards
					break
				}
			}
		}
		if w.of < 2 {
			return fmt.Errorf("%s is not a shard (it ran without --shard i/n): merge joins the run directories of one sharded run", s.dir)
		}
		set = append(set, w)
	}
	m0 := shards[0].run.Manifest
	for i, s := range shards[1:] {
		m, w := s.run.Manifest, set[i+1]
		switch {
		case m.Plan != m0.Plan:
			return fmt.Errorf("%s is a run of plan %s, %s of plan %s: not shards of one run", s.dir, m.Plan, shards[0].dir, m0.Plan)
		case w.of != set[0].of:
			return fmt.Errorf("%s is shard %d/%d, %s shard %d/%d: not shards of one run", s.dir, w.shard, w.of, set[0].dir, set[0].shard, set[0].of)
		case m.Shard != nil && m0.Shard != nil && !sameStart(m.Shard, m0.Shard):
			return fmt.Errorf("%s and %s were started apart (another --start-at): not shards of one run", s.dir, shards[0].dir)
		}
	}
	byShard := map[int64]string{}
	for _, w := range set {
		if w.shard < 0 || w.shard >= w.of {
			return fmt.Errorf("%s says it is shard %d of %d", w.dir, w.shard, w.of)
		}
		if prev, ok := byShard[w.shard]; ok {
			return fmt.Errorf("%s and %s are both shard %d/%d", prev, w.dir, w.shard, w.of)
		}
		byShard[w.shard] = w.dir
	}
	var missing []string
	for i := range set[0].of {
		if _, ok := byShard[i]; !ok {
			missing = append(missing, fmt.Sprint(i))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("shard %s of %d missing: give every shard's run directory (%d of %d given)", strings.Join(missing, ", "), set[0].of, len(set), set[0].of)
	}
	return nil
}

// sameStart says whether two shards were started together: the same
// --start-at, where they have one. (A coordinator's address is not
// compared: the shard that serves it and the shards that join it may name
// it differently.)
func sameStart(a, b *rundir.ShardRecord) bool {
	return (a.StartAt == nil) == (b.StartAt == nil) && (a.StartAt == nil || a.StartAt.Equal(*b.StartAt))
}

// part is one shard's row of a cell and its request rows.
type part struct {
	dir, runID string
	row        results.Cell
	reqs       *shardRows
}

func prepareOut(out string) error {
	if entries, err := os.ReadDir(out); err == nil && len(entries) > 0 {
		return fmt.Errorf("--out %s exists and is not empty: give a new directory", out)
	}
	for _, t := range results.Tables {
		if err := os.MkdirAll(filepath.Join(out, t), 0o755); err != nil {
			return fmt.Errorf("creating %s: %w", t, err)
		}
	}
	return nil
}

// mergeCell recomputes a cell's row from its shards' requests, and
// gives the merged cell's rows.
func mergeCell(ps []part, slo measure.SLO, o Options) (results.Cell, *pooled, Cell) {
	// The identity of the cell (stage, ladder point, server, model) is
	// every shard's; shard 0's row (or the first) carries it.
	slices.SortFunc(ps, func(a, b part) int { return cmp.Compare(a.row.Shard, b.row.Shard) })
	base := ps[0].row
	info := Cell{Stage: base.Stage, CellID: base.CellID}
	if base.Concurrency == 0 && base.Rate == 0 {
		return unsplitCell(ps, info)
	}
	pool := poolShards(ps)
	var notes []string
	origin := earliest(pool.firsts)
	for i, p := range ps {
		sh, note := shardOf(p, pool.firsts[i], origin, o)
		if note != "" {
			info.Flagged = true
			notes = append(notes, note)
		}
		info.Shards = append(info.Shards, sh)
	}
	reqs := &pooled{}
	for _, p := range ps {
		reqs.shards = append(reqs.shards, p.reqs)
	}

	row := base
	row.Shard, row.Shards = 0, int64(len(ps))
	if base.Shards > 0 {
		row.Shards = base.Shards
	}
	row.ClientCPUUtil = pool.cpu // the busiest shard's: each shard is its own client
	// The most starved shard's: each shard's client (and its server, when
	// it launched one) waited on its own machine.
	row.ClientCPUWaitMs, row.ServerCPUWaitMs = pool.cpuWait, pool.serverWait
	if note := oneClock(&row, reqs, ps); note != "" {
		notes = append(notes, note)
	}
	fill(&row, reqs, origin, slo)
	recharge(&row, ps)
	// Shard 0's notes on the cell's shape tell whether its cache should
	// engage; the conversation and cache notes come from the pooled rows.
	expect := turns.ExpectOf(base)
	row.Notes = ""
	turns.Fill(&row, reqs, expect)
	poolNotes := row.Notes
	row.Status, row.Reason = mergedStatus(&row, pool, reqs.Len())
	row.Notes = mergedNotes(base, info, len(ps), notes, poolNotes)
	return row, reqs, info
}

// unsplitCell is the merge of a cell without a load to split (a launch
// stage's start-up, an exec program's output): every shard measured the
// whole thing on its own, so there is nothing to pool; shard 0's row
// stands for them.
func unsplitCell(ps []part, info Cell) (results.Cell, *pooled, Cell) {
	base := ps[0].row
	for _, p := range ps {
		info.Shards = append(info.Shards, Shard{RunID: p.runID, Dir: p.dir, Shard: p.row.Shard, Shards: p.row.Shards, Requests: p.reqs.count()})
	}
	row := base
	row.Shard = 0
	row.Notes = strings.TrimPrefix(fmt.Sprintf("shard %d/%d's row: a row without a load to split is not merged; %s", base.Shard, base.Shards, base.Notes), "; ")
	row.Notes = strings.TrimSuffix(row.Notes, "; ")
	return row, &pooled{shards: []*shardRows{ps[0].reqs}, unsorted: true}, info
}

// pooledShards is what a split cell's shards give together: each
// shard's first send (zero for none), how many sent any, the busiest or
// most starved shard's CPU columns, and the first shard's error.
type pooledShards struct {
	firsts                   []time.Time
	measured                 int
	cpu, cpuWait, serverWait *float64
	status, reason           string
}

func poolShards(ps []part) pooledShards {
	pool := pooledShards{status: results.StatusOK}
	for _, p := range ps {
		pool.firsts = append(pool.firsts, p.reqs.firstSend())
		if p.reqs.count() > 0 {
			pool.measured++
		}
		pool.cpu = maxOpt(pool.cpu, p.row.ClientCPUUtil)
		pool.cpuWait = maxOpt(pool.cpuWait, p.row.ClientCPUWaitMs)
		pool.serverWait = maxOpt(pool.serverWait, p.row.ServerCPUWaitMs)
		if p.row.Status == results.StatusError && pool.status == results.StatusOK {
			pool.status, pool.reason = results.StatusError, fmt.Sprintf("shard %d/%d: %s", p.row.Shard, p.row.Shards, p.row.Reason)
		}
	}
	return pool
}

// maxOpt is the larger of two optional values, cur on a tie; nil only
// when both are.
func maxOpt(cur, v *float64) *float64 {
	if v != nil && (cur == nil || *v > *cur) {
		return v
	}
	return cur
}

// earliest is the earliest of the non-zero times ts; zero for none.
func earliest(ts []time.Time) time.Time {
	var origin time.Time
	for _, f := range ts {
		if !f.IsZero() && (origin.IsZero() || f.Before(origin)) {
			origin = f
		}
	}
	return origin
}

// shardOf is shard p's entry in the merge's record, its first send
// measured against the earliest shard's (origin), and flagged when its
// client could not keep up or it started late; note is the flag's note
// for the merged row ("" when not flagged).
func shardOf(p part, first, origin time.Time, o Options) (sh Shard, note string) {
	sh = Shard{RunID: p.runID, Dir: p.dir, Shard: p.row.Shard, Shards: p.row.Shards, Requests: p.reqs.count(), SendLagP99Ms: p.row.SendLagP99}
	if !first.IsZero() {
		// A constant or gamma shard is planned to start i/λ late
		// (loadgen.Schedule.Split): only the rest is lateness.
		planned := 0.0
		if p.row.Rate > 0 && (p.row.Arrival == "constant" || p.row.Arrival == "gamma") {
			planned = float64(p.row.Shard) / p.row.Rate * 1000
		}
		sh.StartOffsetMs = float64(first.Sub(origin))/float64(time.Millisecond) - planned
	}
	var why []string
	if p.row.SendLagP99 != nil && *p.row.SendLagP99 > o.SendLagThresholdMs {
		why = append(why, fmt.Sprintf("send_lag p99 %.2f ms over %.2g ms", *p.row.SendLagP99, o.SendLagThresholdMs))
	}
	if sh.StartOffsetMs > o.StartThresholdMs {
		why = append(why, fmt.Sprintf("started %.1f ms after the earliest shard (over %.0f ms)", sh.StartOffsetMs, o.StartThresholdMs))
	}
	if len(why) == 0 {
		return sh, ""
	}
	sh.Flag = strings.Join(why, ", ")
	return sh, fmt.Sprintf("client-bound: shard %d/%d %s (read the merged cell as a lower bound of the server)", p.row.Shard, p.row.Shards, sh.Flag)
}

// oneClock sets the merged row's stamp source so that its events have
// one clock: kernel stamps only when every shard that streamed had them,
// else every request falls back to its user-space stamps, and the note
// returned says so ("" otherwise).
func oneClock(row *results.Cell, reqs *pooled, ps []part) string {
	var kernel, user []string
	for _, p := range ps {
		switch p.row.StampSource {
		case "kernel":
			kernel = append(kernel, fmt.Sprint(p.row.Shard))
		case "user":
			user = append(user, fmt.Sprint(p.row.Shard))
		}
	}
	if len(kernel) > 0 && len(user) > 0 {
		row.StampSource = "user"
		reqs.userStamps = true
		return fmt.Sprintf("shards %s timed events with kernel receive stamps, shards %s with user-space stamps: the merged cell uses the user-space ones of all (stamp_source user)", strings.Join(kernel, ","), strings.Join(user, ","))
	}
	if len(kernel) > 0 {
		row.StampSource = "kernel"
	}
	return ""
}

// mergedStatus is the merged row's status and reason: a shard's error,
// else an error when no shard sent a request or any request failed.
func mergedStatus(row *results.Cell, pool pooledShards, nreqs int) (status, reason string) {
	switch {
	case pool.status != results.StatusOK:
		return pool.status, pool.reason
	case nreqs == 0:
		return results.StatusError, "no shard sent a request"
	case row.Failed > 0:
		return results.StatusError, fmt.Sprintf("%d of %d requests failed (across %d shards)", row.Failed, row.Requests, pool.measured)
	}
	return results.StatusOK, ""
}

// mergedNotes is the merged row's notes: which shards it pools, then
// the shards' flags and the merge's own notes, shard 0's notes that
// still hold, and the notes of the pooled conversations and cache.
func mergedNotes(base results.Cell, info Cell, nshards int, notes []string, poolNotes string) string {
	var ids []string
	for _, s := range info.Shards {
		ids = append(ids, fmt.Sprintf("%d=%s (send_lag p99 %s ms, start %+.1f ms)", s.Shard, s.RunID, fmtOpt(s.SendLagP99Ms), s.StartOffsetMs))
	}
	notes = append([]string{fmt.Sprintf("merged from %d shards: %s; metrics, goodput and cost recomputed from the pooled requests; telemetry columns are shard %d's", nshards, strings.Join(ids, ", "), base.Shard)}, notes...)
	// Shard 0's own notes about the cell's shape (prompts, token source,
	// server) still hold; its verdicts on its own send lag or start do
	// not, the flags above replace them.
	for _, n := range strings.Split(base.Notes, "; ") {
		if n != "" && !strings.HasPrefix(n, "client-bound") && !strings.HasPrefix(n, "shard ") && !turns.IsNote(n) {
			notes = append(notes, n)
		}
	}
	if poolNotes != "" {
		notes = append(notes, poolNotes)
	}
	return strings.Join(notes, "; ")
}

func fmtOpt(p *float64) string {
	if p == nil {
		return "–"
	}
	return fmt.Sprintf("%.2f", *p)
}

// recharge recomputes the merged row's cost columns from its own pooled
// throughput and union window: copied from shard 0, they were shard 0's
// tokens over shard 0's window, so tokens_per_dollar read about 1/n of
// what the row's own output_tok_s gives. The price is not in the shards'
// rows as such; results.Charge set cost_usd = price × duration_s / 3600,
// so it is read back from the first shard row (in shard order) that was
// charged. Without one, both columns stay NULL, and the column's null
// reason (results: no price) says why. The energy per token is likewise
// shard 0's energy over its window (the server's, which sees every
// shard's load) against the pooled rate's tokens in that same window,
// not shard 0's own tokens.
func recharge(row *results.Cell, ps []part) {
	row.CostUSD, row.TokensPerDollar = nil, nil
	for _, p := range ps {
		if p.row.CostUSD != nil && p.row.DurationS > 0 {
			perHour := *p.row.CostUSD * 3600 / p.row.DurationS
			results.Charge(row, &perHour, results.WindowTokens(row))
			break
		}
	}
	base := ps[0].row
	row.EnergyJPerToken, row.TokensPerJoule = nil, nil
	if j := base.EnergyJ; j != nil && *j > 0 && row.OutputTokS != nil && base.DurationS > 0 {
		if tok := *row.OutputTokS * base.DurationS; tok > 0 {
			row.EnergyJPerToken = results.Some(*j / tok)
			row.TokensPerJoule = results.Some(tok / *j)
		}
	}
}

// fill recomputes the request-derived metrics with the definition one
// process uses (measure.FillCell), over the union window: the earliest
// send (first) to the latest finish of any shard.
func fill(row *results.Cell, reqs results.Requests, first time.Time, slo measure.SLO) {
	intervals, span := measure.SendsOf(reqs)
	// The shards cut their passes with the plan's slice width; the merged
	// cell keeps it (a width chosen for about ten windows of one shard's
	// pass suits the union, which spans the same time).
	slice := time.Duration(row.SliceS * float64(time.Second))
	measure.FillCell(row, reqs, measure.CellWindow{Span: measure.UnionWindow(reqs), SendIntervals: intervals, SendSpan: span, Slice: slice}, slo)
	if !first.IsZero() {
		row.StartedAt = first.UTC()
	}
}

// writeRunFiles writes the merged run's manifest (shard 0's, as a new
// run of one attempt), the plan files and merge.json.
func writeRunFiles(shards []shardRun, out, runID string, res *Result, now time.Time) error {
	m := *shards[0].run.Manifest
	m.RunID = runID
	m.Status, m.Reason, m.ExitCode = rundir.RunOK, "", nil
	m.Verdicts, m.ResumedAt, m.Attempts, m.Sinks = nil, nil, nil, nil
	m.Shard = nil // every shard's record is in merge.json
	fin := now.UTC()
	for _, s := range shards {
		if sm := s.run.Manifest; sm != nil {
			if sm.StartedAt.Before(m.StartedAt) {
				m.StartedAt = sm.StartedAt
			}
			if sm.Status != rundir.RunOK && m.Status == rundir.RunOK {
				m.Status, m.Reason = sm.Status, fmt.Sprintf("shard %s: %s", s.dir, sm.Reason)
			}
		}
	}
	m.FinishedAt = &fin
	if m.Metadata == nil {
		m.Metadata = map[string]string{}
	}
	m.Metadata["merged_from"] = strings.Join(res.Info.Shards, ",")
	if err := rundir.WriteManifest(out, &m); err != nil {
		return err
	}
	run0 := shards[0].run
	for _, f := range []struct {
		name string
		b    []byte
	}{{rundir.PlanFile, run0.PlanCUE}, {rundir.ResolvedFile, run0.PlanJSON}} {
		if f.b == nil {
			continue // shard 0 has no such file
		}
		if err := rundir.WriteFileAtomic(filepath.Join(out, f.name), f.b); err != nil {
			return err
		}
	}
	return writeJSON(filepath.Join(out, InfoFile), res.Info)
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding %s: %w", filepath.Base(path), err)
	}
	return rundir.WriteFileAtomic(path, append(b, '\n'))
}

// mixRowOf reads a model mix's per-model row id (the sweep's
// `<pooled>/model=NAME`, before any /repN): the pooled row's id, whose
// request rows are its, and the model; false for any other id.
func mixRowOf(id string) (pooled, model string, ok bool) {
	i := strings.LastIndex(id, "/model=")
	if i < 0 {
		return id, "", false
	}
	rest := id[i+len("/model="):]
	model, tail, _ := strings.Cut(rest, "/")
	if tail != "" {
		tail = "/" + tail
	}
	return id[:i] + tail, model, model != ""
}
