package merge

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pq "github.com/parquet-go/parquet-go"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/rundir"
	"github.com/benchrun/benchrun/internal/turns"
)

// writeShard writes a run directory of one cell whose requests have the
// given ttfts, sent a second apart from start, each taking e2el 100 ms.
func writeShard(t *testing.T, dir string, shard int64, start time.Time, ttfts []float64, lagP99 float64) {
	t.Helper()
	for _, d := range []string{results.TableCells, results.TableRequests} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	id := "run" + string(rune('a'+shard))
	m := rundir.Manifest{RunID: id, Plan: "p", StartedAt: start, Status: rundir.RunOK}
	b, _ := json.Marshal(m)
	if err := os.WriteFile(filepath.Join(dir, rundir.ManifestFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	cell := results.Cell{RunID: id, Plan: "p", Stage: "s", CellID: "s/1:1/c2", Attempt: 1, Measurement: 1,
		Concurrency: 2, Shard: shard, Shards: 2, Status: results.StatusOK, SendLagP99: results.Some(lagP99)}
	var reqs []results.Request
	for i, v := range ttfts {
		reqs = append(reqs, results.Request{RunID: id, Stage: "s", CellID: cell.CellID, Attempt: 1, Measurement: 1, Seq: int64(i),
			SentAt: start.Add(time.Duration(i) * time.Second), TTFTMs: results.Some(v), E2ELMs: results.Some(100.0),
			InputTokens: 10, OutputTokens: 5, ChunkGapsMs: []float64{1, 2}, ChunkTokens: []int64{1, 1, 1}, Status: results.StatusOK})
	}
	if err := rundir.WriteFile(filepath.Join(dir, results.TableRequests, rundir.PartName(1, 1)), reqs); err != nil {
		t.Fatal(err)
	}
	if err := rundir.WriteFile(filepath.Join(dir, results.TableCells, rundir.PartName(1, 1)), []results.Cell{cell}); err != nil {
		t.Fatal(err)
	}
}

// The merged p50 is the pooled requests' median, not the mean of the
// shards' medians; tokens sum; throughput is over the union window.
func TestMergePoolsRequests(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	writeShard(t, a, 0, t0, []float64{1, 2, 3}, 1)
	writeShard(t, b, 1, t0.Add(500*time.Millisecond), []float64{100}, 9) // late by 500 ms, lagging
	res, err := Merge([]string{a, b}, filepath.Join(dir, "out"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Cells[0]
	// Pooled {1, 2, 3, 100}: median 2.5; averaging the shards' medians
	// (2 and 100) would say 51.
	if c.TTFTP50Ms == nil || *c.TTFTP50Ms != 2.5 {
		t.Errorf("ttft p50 %v, want 2.5 (the pooled median)", c.TTFTP50Ms)
	}
	if c.Requests != 4 || c.Completed != 4 || c.AdmittedTok != 40 || c.Shards != 2 {
		t.Errorf("requests %d completed %d admitted %d shards %d", c.Requests, c.Completed, c.AdmittedTok, c.Shards)
	}
	// The union window: t0 to the last finish, t0 + 2 s + 100 ms.
	if c.DurationS < 2.099 || c.DurationS > 2.101 || c.OutputTokS == nil || *c.OutputTokS < 20/2.101 || *c.OutputTokS > 20/2.099 {
		t.Errorf("window %v s, output_tok_s %v", c.DurationS, c.OutputTokS)
	}
	if !res.Info.Cells[0].Flagged || res.Info.Cells[0].Shards[1].Flag == "" || res.Info.Cells[0].Shards[0].Flag != "" {
		t.Errorf("flags %+v: want shard 1 flagged (send lag 9 ms, 500 ms late), shard 0 not", res.Info.Cells[0].Shards)
	}
	// The merged directory is a run directory the reader opens.
	r, err := rundir.Open(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	if cs, err := r.LatestCells(); err != nil || len(cs) != 1 || cs[0].RunID != res.Info.RunID {
		t.Errorf("read back %v %v", cs, err)
	}
	if _, err := Merge([]string{a, b}, filepath.Join(dir, "out"), Options{}); err == nil {
		t.Error("merging into a non-empty --out succeeded")
	}
}

// Goodput is recomputed from the pooled requests with the plan's SLO,
// and a shard's sent_at moves to the coordinator's clock by its offset.
func TestMergeGoodputAndClockOffsets(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	writeShard(t, a, 0, t0, []float64{1, 2, 3}, 1)
	// Shard 1's clock runs 400 ms ahead of the coordinator's: its sends
	// look 400 ms late, but on the coordinator's clock they are on time.
	writeShard(t, b, 1, t0.Add(400*time.Millisecond), []float64{100}, 1)
	if err := os.WriteFile(filepath.Join(a, rundir.ResolvedFile), []byte(`{"name":"p","slo":{"ttft_ms":50}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, d := range []string{a, b} {
		off, rtt := 0.0, 0.1
		if i == 1 {
			off = -400
		}
		m := rundir.Manifest{RunID: "run" + string(rune('a'+i)), Plan: "p", StartedAt: t0, Status: rundir.RunOK,
			Shard: &rundir.ShardRecord{Shard: i, Shards: 2, Coordinator: "h:7777", ClockOffsetMs: &off, ClockRTTMs: &rtt, Barriers: 1}}
		buf, _ := json.Marshal(m)
		if err := os.WriteFile(filepath.Join(d, rundir.ManifestFile), buf, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res, err := Merge([]string{a, b}, filepath.Join(dir, "out"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Cells[0]
	// ttfts 1, 2, 3 meet ttft_ms 50, 100 does not: 3 of 4.
	if c.GoodputRatio == nil || *c.GoodputRatio != 0.75 || c.Goodput == nil {
		t.Errorf("goodput_ratio %v goodput %v, want 0.75 from the pooled requests", c.GoodputRatio, c.Goodput)
	}
	sh := res.Info.Cells[0].Shards
	if sh[1].StartOffsetMs > 1 || sh[1].StartOffsetMs < -1 || res.Info.Cells[0].Flagged {
		t.Errorf("shard 1 start offset %.1f ms flagged %v: its clock offset was not applied", sh[1].StartOffsetMs, res.Info.Cells[0].Flagged)
	}
	if len(res.Info.Processes) != 2 || *res.Info.Processes[1].ClockOffsetMs != -400 {
		t.Errorf("merge.json shards %+v", res.Info.Processes)
	}
}

// TestMergeConversations: a merged conversation cell's turn and cache
// columns are what one process computes from the pooled requests (the
// sweep's turns.Fill): the turn-1 and later-turn medians over every
// shard's sessions, Σ cached tokens, the usage hit rate, and one set of
// notes about them (the shards' own are replaced).
func TestMergeConversations(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var pooled []results.Request
	var dirs []string
	for shard := int64(0); shard < 2; shard++ {
		d := filepath.Join(dir, fmt.Sprint(shard))
		dirs = append(dirs, d)
		for _, sub := range []string{results.TableCells, results.TableRequests} {
			os.MkdirAll(filepath.Join(d, sub), 0o755)
		}
		id := fmt.Sprintf("run%d", shard)
		b, _ := json.Marshal(rundir.Manifest{RunID: id, Plan: "p", StartedAt: t0, Status: rundir.RunOK})
		os.WriteFile(filepath.Join(d, rundir.ManifestFile), b, 0o644)
		var reqs []results.Request
		for s := range 2 {
			session := int64(s*2) + shard // interleaved, as the sweep numbers them
			history := int64(0)
			for turn := int64(1); turn <= 3; turn++ {
				in := history + 20
				cached := max(history-history%16, 0)
				ttft := 40.0 - 10*float64(turn) + float64(shard) + float64(s)
				reqs = append(reqs, results.Request{RunID: id, Stage: "s", CellID: "s/20:8/c4", Attempt: 1, Measurement: 1, Seq: int64(len(reqs)),
					SentAt: t0.Add(time.Duration(len(reqs)) * 100 * time.Millisecond), TTFTMs: results.Some(ttft), E2ELMs: results.Some(ttft + 7),
					InputTokens: in, OutputTokens: 8, ChunkGapsMs: []float64{1}, ChunkTokens: []int64{1, 7}, Status: results.StatusOK,
					Session: results.Some(session), Turn: results.Some(turn), HistoryTokens: results.Some(history), CachedTokens: results.Some(cached)})
				history = in + 8
			}
		}
		pooled = append(pooled, reqs...)
		cell := results.Cell{RunID: id, Plan: "p", Stage: "s", CellID: "s/20:8/c4", Attempt: 1, Measurement: 1, Concurrency: 4,
			Shard: shard, Shards: 2, Status: results.StatusOK, Turns: results.Some(int64(3)), ThinkTimeMs: results.Some(0.0),
			ServerPrefixCacheHitRate: results.Some(0.1 * float64(shard+1)), Notes: "prompts=cold (fresh conversations every pass)"}
		turns.Fill(&cell, results.AsRequests(reqs), turns.ExpectOf(cell))
		rundir.WriteFile(filepath.Join(d, results.TableRequests, rundir.PartName(1, 1)), reqs)
		rundir.WriteFile(filepath.Join(d, results.TableCells, rundir.PartName(1, 1)), []results.Cell{cell})
	}
	res, err := Merge(dirs, filepath.Join(dir, "out"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := res.Cells[0]
	// One process over the pooled requests, with shard 0's server figure.
	want := results.Cell{Turns: results.Some(int64(3)), ServerPrefixCacheHitRate: results.Some(0.1)}
	turns.Fill(&want, results.AsRequests(pooled), turns.ExpectHistory)
	for name, p := range map[string][2]*float64{
		"ttft_turn1_p50_ms":       {got.TTFTTurn1P50Ms, want.TTFTTurn1P50Ms},
		"ttft_later_turns_p50_ms": {got.TTFTLaterTurnsP50Ms, want.TTFTLaterTurnsP50Ms},
		"prefix_cache_hit_rate":   {got.PrefixCacheHitRate, want.PrefixCacheHitRate},
	} {
		if p[0] == nil || p[1] == nil || *p[0] != *p[1] {
			t.Errorf("%s: merged %v, pooled %v", name, results.ValueOr(p[0], -1), results.ValueOr(p[1], -1))
		}
	}
	if *got.TTFTTurn1P50Ms != 30.5+0.5 || got.CachedTokens == nil || *got.CachedTokens != *want.CachedTokens || *got.Turns != 3 {
		t.Errorf("turn 1 p50 %v, cached %v (want %v), turns %v", *got.TTFTTurn1P50Ms, got.CachedTokens, *want.CachedTokens, *got.Turns)
	}
	if n := strings.Count(got.Notes, "conversations: "); n != 1 || !strings.Contains(got.Notes, "conversations: 4 sessions sent 12 turns") ||
		strings.Count(got.Notes, "prefix_cache_hit_rate from usage") != 1 || !strings.Contains(got.Notes, "prompts=cold") {
		t.Errorf("notes: %s", got.Notes)
	}
}

// A row without a load to split (a launch stage's start-up, an exec
// program's output) is every shard's whole measurement: shard 0's row is
// kept as it is, never "no shard sent a request".
func TestMergeRowWithoutLoad(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var dirs []string
	for i := range 2 {
		d := filepath.Join(dir, string(rune('a'+i)))
		writeShard(t, d, int64(i), t0, []float64{1}, 1)
		row := results.Cell{RunID: "run" + string(rune('a'+i)), Plan: "p", Stage: "server", CellID: "server/startup/r1", Attempt: 1, Measurement: 1,
			Shard: int64(i), Shards: 2, Status: results.StatusOK, StartupS: results.Some(1.5 + float64(i))}
		if err := rundir.WriteFile(filepath.Join(d, results.TableCells, rundir.PartName(1, 2)), []results.Cell{row}); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	res, err := Merge(dirs, filepath.Join(dir, "out"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Cells {
		if c.CellID != "server/startup/r1" {
			continue
		}
		if c.Status != results.StatusOK || c.StartupS == nil || *c.StartupS != 1.5 {
			t.Errorf("start-up row merged to %s (%s), startup_s %v; want shard 0's row", c.Status, c.Reason, c.StartupS)
		}
		return
	}
	t.Error("the start-up row is missing from the merged run")
}

// TestMergeRefusesAnIncompleteOrRepeatedSet: merge takes one sharded run,
// whole and once each. A directory given twice (it would count its
// requests twice), one shard of two (its part of the load labelled with the
// whole concurrency), a shard of another split or a run that is not a shard
// are refused, naming them; the whole set merges.
func TestMergeRefusesAnIncompleteOrRepeatedSet(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s0, s1 := filepath.Join(dir, "s0"), filepath.Join(dir, "s1")
	writeShard(t, s0, 0, t0, []float64{1, 2}, 1)
	writeShard(t, s1, 1, t0, []float64{3, 4}, 1)
	// A shard of a three-way split, and a run that is not a shard.
	other := filepath.Join(dir, "other")
	writeShard(t, other, 2, t0, []float64{5}, 1)
	rewriteCells(t, other, func(c *results.Cell) { c.Shards = 3; c.RunID = "runother" })
	rewriteManifest(t, other, func(m *rundir.Manifest) { m.RunID = "runother" })
	whole := filepath.Join(dir, "whole")
	writeShard(t, whole, 0, t0, []float64{5}, 1)
	rewriteCells(t, whole, func(c *results.Cell) { c.Shard, c.Shards, c.RunID = 0, 0, "runwhole" })
	rewriteManifest(t, whole, func(m *rundir.Manifest) { m.RunID = "runwhole" })
	link := filepath.Join(dir, "link")
	if err := os.Symlink(s0, link); err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		dirs []string
		want string
	}{
		{[]string{s0, s0}, "given twice"},
		{[]string{s0, link, s1}, "given twice"},
		{[]string{s0}, "shard 1 of 2 missing"},
		{[]string{s1}, "shard 0 of 2 missing"},
		{[]string{s0, other}, "is shard 2/3"},
		{[]string{s0, s1, whole}, "is not a shard"},
		{[]string{s0, s1}, ""},
	} {
		_, err := Merge(tc.dirs, filepath.Join(dir, fmt.Sprintf("out%d", i)), Options{})
		if tc.want == "" {
			if err != nil {
				t.Errorf("%v: %v", tc.dirs, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want %q", tc.dirs, err, tc.want)
		}
		if _, statErr := os.Stat(filepath.Join(dir, fmt.Sprintf("out%d", i), results.TableCells)); statErr == nil {
			t.Errorf("%v: a refused set wrote a merged run", tc.dirs)
		}
	}
}

// rewriteCells rewrites a run directory's one cell part file.
func rewriteCells(t *testing.T, dir string, edit func(*results.Cell)) {
	t.Helper()
	path := filepath.Join(dir, results.TableCells, rundir.PartName(1, 1))
	rows, err := pq.ReadFile[results.Cell](path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		edit(&rows[i])
	}
	if err := rundir.WriteFile(path, rows); err != nil {
		t.Fatal(err)
	}
}

// rewriteManifest edits a run directory's manifest.json.
func rewriteManifest(t *testing.T, dir string, edit func(*rundir.Manifest)) {
	t.Helper()
	path := filepath.Join(dir, rundir.ManifestFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m rundir.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	edit(&m)
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A merged cell's cost columns are charged over its own pooled window and
// throughput (results.Charge), at the price the shards were charged at,
// and its energy per token divides shard 0's energy by the pooled tokens
// in shard 0's window: a row whose columns contradict each other (shard
// 0's tokens_per_dollar beside the pooled output_tok_s) is wrong in every
// comparison of cost.
func TestMergedCostFollowsPooledThroughput(t *testing.T) {
	const perHour = 3.6 // USD: 0.001 per second
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		priced  []bool // which shards' rows carry a cost
		energyJ *float64
		want    bool // whether the merged row has a price
	}{
		{"both shards priced", []bool{true, true}, results.Some(50.0), true},
		{"only shard 1 priced", []bool{false, true}, nil, true},
		{"no price", []bool{false, false}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
			writeShard(t, a, 0, t0, []float64{1, 2, 3}, 1)
			writeShard(t, b, 1, t0.Add(500*time.Millisecond), []float64{4, 5, 6}, 1)
			for i, d := range []string{a, b} {
				// Each shard's row as the sweep charged it: its own 15
				// output tokens over its own 2.1 s window.
				rewriteCells(t, d, func(c *results.Cell) {
					c.DurationS, c.OutputTokS = 2.1, results.Some(15/2.1)
					if tc.priced[i] {
						results.Charge(c, results.Some(perHour), results.WindowTokens(c))
					}
					if i == 0 {
						c.EnergyJ = tc.energyJ
						if c.EnergyJ != nil {
							c.EnergyJPerToken, c.TokensPerJoule = results.Some(*c.EnergyJ/15), results.Some(15 / *c.EnergyJ)
						}
					}
				})
			}
			res, err := Merge([]string{a, b}, filepath.Join(dir, "out"), Options{})
			if err != nil {
				t.Fatal(err)
			}
			c := res.Cells[0]
			// Pooled: 30 output tokens over t0 .. t0+2.5 s+100 ms.
			if c.OutputTokS == nil || c.DurationS < 2.599 || c.DurationS > 2.601 {
				t.Fatalf("merged window %v s, output_tok_s %v", c.DurationS, c.OutputTokS)
			}
			if !tc.want {
				if c.CostUSD != nil || c.TokensPerDollar != nil {
					t.Errorf("no shard was priced, merged cost %s tokens/$ %s: want NULL", val(c.CostUSD), val(c.TokensPerDollar))
				}
				return
			}
			wantCost := perHour * c.DurationS / 3600
			wantTPD := *c.OutputTokS * c.DurationS / wantCost
			if c.CostUSD == nil || !near(*c.CostUSD, wantCost) {
				t.Errorf("cost_usd %s, want %.6f (price × the merged window)", val(c.CostUSD), wantCost)
			}
			if c.TokensPerDollar == nil || !near(*c.TokensPerDollar, wantTPD) {
				t.Errorf("tokens_per_dollar %s, want %.1f (the pooled 30 tokens / cost)", val(c.TokensPerDollar), wantTPD)
			}
			if tc.energyJ != nil {
				// Shard 0's energy over its 2.1 s window, against the
				// pooled rate's tokens in that window.
				tok := *c.OutputTokS * 2.1
				if c.TokensPerJoule == nil || !near(*c.TokensPerJoule, tok / *tc.energyJ) || c.EnergyJPerToken == nil || !near(*c.EnergyJPerToken, *tc.energyJ/tok) {
					t.Errorf("tokens_per_joule %s, energy_j_per_token %s: want %.4f and %.4f", val(c.TokensPerJoule), val(c.EnergyJPerToken), tok / *tc.energyJ, *tc.energyJ/tok)
				}
			}
			if strings.Contains(c.Notes, "cost columns are shard") {
				t.Errorf("notes still say the cost is shard 0's: %q", c.Notes)
			}
		})
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// val prints an optional value for a failure message.
func val(p *float64) string {
	if p == nil {
		return "NULL"
	}
	return fmt.Sprintf("%g", *p)
}
