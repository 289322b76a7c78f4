package sweep

import (
	"github.com/benchrun/benchrun/internal/loadgen"
	"github.com/benchrun/benchrun/pipeline"
)

// liveView shows a point's passes on the run's live view (Env.Live,
// --metrics-addr), as progress shows them on stderr: which cell is being
// sent, and its counts, read from the pass's counters when scraped.
type liveView struct {
	live        pipeline.Live // nil: nothing watches
	stage, cell string
	end         func() // the running pass's
}

// watch puts the point's passes on the run's live view.
func (v *pointView) watch(live pipeline.Live, stage, cell string) {
	if v != nil {
		v.lv = liveView{live: live, stage: stage, cell: cell}
	}
}

// start marks a pass running, its send lags observed; before the load
// starts, as the counters' SendLag must be set by then.
func (lv *liveView) start(timed bool, c *loadgen.Counters) {
	if lv.live == nil || c == nil {
		return
	}
	c.SendLag, lv.end = lv.live.Pass(lv.stage, lv.cell, timed, c.Counts)
}

// stop marks the pass ended: its counts join the cell's.
func (lv *liveView) stop() {
	if lv.end != nil {
		lv.end()
		lv.end = nil
	}
}
