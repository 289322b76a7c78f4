package regress

import (
	"fmt"
	"slices"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/rundir"
)

// RunShard is the status a history run that is one shard of a sharded run
// (--shard i/n, not merged) is left out with, whatever its own status: its
// rows carry a part of each cell's load, so they are not the cell's
// measurements; the merged run (benchrun merge) is. The check counts it as
// "run shard".
const RunShard = "shard"

// HistoryReader reads a plan's history runs newest first, as far back as
// the cells asked about need: each cell's own last runs, however many
// runs of other variants (other -t tags, --metadata, engines) came
// between. Reading a fixed number of the plan's newest runs let variants
// crowd a cell's own runs out ("insufficient data" for a run 16x slower).
// It reads manifests once (rundir.Find is cheap) and a run's rows only
// when they are needed, each run once.
type HistoryReader struct {
	entries []rundir.Entry // oldest first; entries[:next] are not read yet
	next    int
	runs    []*Run      // read, newest first
	usable  map[Key]int // read runs with an ok row of each key
	current string      // the run being judged: never its own history
}

// OpenHistory lists the runs under root that f chooses (rundir.Find); no
// rows are read until Need. current is the id of the run being judged,
// left out.
func OpenHistory(root string, f rundir.Filter, current string) (*HistoryReader, error) {
	entries, err := rundir.Find(root, f)
	if err != nil {
		return nil, err
	}
	return &HistoryReader{entries: entries, next: len(entries), usable: map[Key]int{}, current: current}, nil
}

// Need reads older runs until each key has n usable runs among those
// read (a run that ended ok, or failed only its own checks, with an ok row
// of the key), or every run is read. n is twice the baseline's `last`
// where the caller wants `last` after the check's own exclusions.
func (h *HistoryReader) Need(keys []Key, n int) error {
	for h.next > 0 && !h.enough(keys, n) {
		h.next--
		r, err := readHistoryRun(h.entries[h.next])
		if err != nil {
			return fmt.Errorf("reading history: %w", err)
		}
		if r == nil || r.ID == h.current && r.ID != "" {
			continue
		}
		h.runs = append(h.runs, r)
		seen := map[Key]bool{}
		for _, c := range r.Cells {
			if k := KeyOf(c); c.Status == results.StatusOK && !seen[k] {
				seen[k] = true
				h.usable[k]++
			}
		}
	}
	return nil
}

func (h *HistoryReader) enough(keys []Key, n int) bool {
	for _, k := range keys {
		if h.usable[k] < n {
			return false
		}
	}
	return true
}

// Runs is what was read so far, oldest first.
func (h *HistoryReader) Runs() []*Run {
	out := slices.Clone(h.runs)
	slices.Reverse(out)
	return out
}

// readHistoryRun reads one history run: its current rows when it ended ok
// or failed only its own checks (with the metrics its own baseline check
// called regressed), without rows otherwise (the check counts it as
// excluded), and without rows, as RunShard, when it is one shard of a
// sharded run.
func readHistoryRun(e rundir.Entry) (*Run, error) {
	failedChecks := FailedChecksOnly(e.Status, e.ExitCode)
	if e.Status != rundir.RunOK && !failedChecks {
		return &Run{ID: e.RunID, Dir: e.Dir, StartedAt: e.StartedAt, Status: e.Status}, nil
	}
	rd, err := rundir.Open(e.Dir)
	if err != nil {
		return nil, err
	}
	r, err := load(rd, false)
	if err != nil {
		return nil, err
	}
	r.FailedChecks = failedChecks
	if isShard(r) {
		// Whatever its status: a shard whose assertions failed is still
		// a part of each cell's load (a merged run was judged against
		// its own half-load shards, and a halved throughput read same).
		r.Status, r.Cells, r.FailedChecks = RunShard, nil, false
		return r, nil
	}
	if r.Regressed, r.Inconclusive, err = regressedOf(rd); err != nil {
		return nil, err
	}
	return r, nil
}

// isShard says whether a run is one shard of a sharded run: a row split
// over shards (shards > 1) in a run whose manifest does not say it was
// merged (metadata merged_from, no shard record of its own).
func isShard(r *Run) bool {
	if !slices.ContainsFunc(r.Cells, func(c results.Cell) bool { return c.Shards > 1 }) {
		return false
	}
	m, err := rundir.ReadManifest(r.Dir)
	return err != nil || m.Shard != nil || m.Metadata["merged_from"] == ""
}
