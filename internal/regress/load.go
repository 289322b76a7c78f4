package regress

import (
	"fmt"
	"slices"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/rundir"
)

// Load reads one run directory for the checks: its current cell rows
// (the latest rule), with their requests when requests is set, and each
// stage's send-lag threshold from plan.json.
func Load(dir string, requests bool) (*Run, error) {
	rd, err := rundir.Open(dir)
	if err != nil {
		return nil, err
	}
	return load(rd, requests)
}

// regressedOf reads which metrics of which cells a run's own baseline
// check called regressed (its latest judging).
func regressedOf(rd *rundir.Run) (regressed, inconclusive map[string]bool, err error) {
	vs, err := rd.LatestVerdicts()
	if err != nil {
		return nil, nil, err
	}
	regressed, inconclusive = map[string]bool{}, map[string]bool{}
	for _, v := range vs {
		if v.Level != LevelRegression {
			continue
		}
		switch v.Outcome {
		case string(Regressed):
			regressed[marked(v.CellID, v.Name)] = true
		case string(Inconclusive):
			inconclusive[marked(v.CellID, v.Name)] = true
		}
	}
	return regressed, inconclusive, nil
}

// LevelRegression is the level of the assertions table's rows that the
// baseline check wrote (pipeline.LevelRegression).
const LevelRegression = "regression"

func load(rd *rundir.Run, requests bool) (*Run, error) {
	rec := rd.Record()
	r := &Run{ID: rd.ID(), Dir: rd.Dir, StartedAt: rec.StartedAt, Status: rd.Status, SendLagThresholdMs: SendLagThresholds(rd.PlanJSON)}
	var err error
	if r.Cells, err = rd.LatestCells(); err != nil {
		return nil, err
	}
	if r.StartedAt.IsZero() {
		for _, c := range r.Cells {
			if r.StartedAt.IsZero() || c.StartedAt.Before(r.StartedAt) {
				r.StartedAt = c.StartedAt
			}
		}
	}
	if requests {
		rows := rd.StoredRequests()
		if rows.Len(); rows.Err() != nil {
			return nil, rows.Err()
		}
		r.Requests = map[string]results.Requests{}
		for _, c := range r.Cells {
			if reqs := rows.Of(rundir.KeyOf(c)); reqs != nil {
				r.Requests[c.CellID] = reqs
			}
		}
	}
	return r, nil
}

// FailedChecksOnly says whether a run's manifest says it measured
// everything and failed only its own checks: status failed with exit
// code 1 (a check failed) or 5 (checks inconclusive, under inconclusive:
// "fail").
func FailedChecksOnly(status string, exitCode *int) bool {
	return status == rundir.RunFailed && exitCode != nil && (*exitCode == 1 || *exitCode == 5)
}

// LoadHistory lists the runs under root that f chooses (rundir.Find),
// oldest first, and reads the cell rows of the newest limit runs whose
// rows are measurements (limit ≤ 0: all of them), each cell by its
// current row (a cell measured once more by its second measurement: the
// first was a disturbance the confirmation ruled out, or is marked
// regressed): those that ended ok,
// and those that failed their own checks only (FailedChecksOnly), with
// the metrics their baseline check called regressed (Run.Regressed).
// Other runs come back too, without rows, so CheckHistory counts them as
// excluded (a shard of a sharded run as RunShard); older ones beyond
// limit are left out. A baseline reads a cell's own runs instead
// (HistoryReader).
func LoadHistory(root string, f rundir.Filter, limit int) ([]*Run, error) {
	entries, err := rundir.Find(root, f)
	if err != nil {
		return nil, err
	}
	okSeen := 0
	var out []*Run
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		if e.Status == rundir.RunOK || FailedChecksOnly(e.Status, e.ExitCode) {
			if limit > 0 && okSeen >= limit {
				break
			}
			okSeen++
		}
		r, err := readHistoryRun(e)
		if err != nil {
			return nil, fmt.Errorf("reading history: %w", err)
		}
		out = append(out, r)
	}
	slices.Reverse(out)
	return out, nil
}
