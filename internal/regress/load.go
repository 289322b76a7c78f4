package regress

import (
	"fmt"

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
		reqs, err := rd.Requests()
		if err != nil {
			return nil, err
		}
		r.Requests = results.RequestsOf(r.Cells, reqs)
	}
	return r, nil
}

// LoadHistory lists the runs under root that f chooses (rundir.Find),
// oldest first, and reads the cell rows of the newest limit runs that
// ended ok (limit ≤ 0: all of them). Runs that did not end ok come back
// too, without rows, so CheckHistory counts them as excluded; older ones
// beyond limit are left out.
func LoadHistory(root string, f rundir.Filter, limit int) ([]*Run, error) {
	entries, err := rundir.Find(root, f)
	if err != nil {
		return nil, err
	}
	okSeen := 0
	var out []*Run
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		if e.Status != rundir.RunOK {
			out = append(out, &Run{ID: e.RunID, Dir: e.Dir, StartedAt: e.StartedAt, Status: e.Status})
			continue
		}
		if limit > 0 && okSeen >= limit {
			break
		}
		okSeen++
		rd, err := rundir.Open(e.Dir)
		if err != nil {
			return nil, fmt.Errorf("reading history: %w", err)
		}
		r, err := load(rd, false)
		if err != nil {
			return nil, fmt.Errorf("reading history: %w", err)
		}
		out = append(out, r)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}
