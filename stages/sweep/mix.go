package sweep

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/benchrun/benchrun/internal/loadgen"
	"github.com/benchrun/benchrun/internal/measure"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/turns"
	"gonum.org/v1/gonum/stat/distuv"
)

// Model mixes (the sweep's or a cell's `models`; docs/PLANS.md, Model
// mixes): each request names one served model, a base model or one of
// its LoRA adapters, drawn by weight from the seed (a conversation's
// session draws once: every turn names its model). The cell's row pools
// every request, as before; a row per model follows it, its cell id the
// pooled one's with /model=NAME before any /repN (so its repeats group as
// the pooled row's do, and compare and baselines key it as a cell of its
// own), computed from the model's requests over the pooled row's window.

// mixOf is the cell's mix: its own models, else the stage's (nil: one
// model).
func (s *Stage) mixOf(c Cell) []ModelWeight {
	if len(c.Models) > 0 {
		return c.Models
	}
	return s.cfg.Models
}

// mixLabel writes a mix as name=weight,...: the pooled row's model and a
// cell's own mix in its key and id.
func mixLabel(ms []ModelWeight) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = m.Name + "=" + strconv.FormatFloat(m.Weight, 'g', -1, 64)
	}
	return strings.Join(parts, ",")
}

// mixSuffix is what a point's cell id adds for its mix: a cell's own mix
// (/models=a=0.5,b=0.5), and a per-model row's model (/model=NAME).
func (p point) mixSuffix() string {
	id := ""
	if len(p.cell.Models) > 0 {
		id += "/models=" + mixLabel(p.cell.Models)
	}
	if p.model != "" {
		id += "/model=" + p.model
	}
	return id
}

// requestMix draws each request's model.
type requestMix struct {
	names   []string
	weights []float64
	seed    uint64
}

// newMix is the cell's request mix (nil: one model).
func (s *Stage) newMix(c Cell) *requestMix {
	ms := s.mixOf(c)
	if len(ms) == 0 {
		return nil
	}
	m := &requestMix{}
	for _, w := range ms {
		m.names = append(m.names, w.Name)
		m.weights = append(m.weights, w.Weight)
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s/%s", s.cfg.Seed, c.key(), mixLabel(ms))
	m.seed = h.Sum64()
	return m
}

// draw is the model request i of pass names: a categorical draw keyed by
// the prompt it sends (a warm prompt always goes to the same model, whose
// cache then serves it), the same at every ladder point of the cell, each
// shard its own.
func (m *requestMix) draw(src *loadgen.PromptSource, pass, i int) string {
	pass, i = src.DrawIndex(pass, i)
	pcg := rand.NewPCG(m.seed^uint64(src.Shard)<<48, uint64(pass)<<40^uint64(i)*0x9e3779b97f4a7c15)
	return m.names[int(distuv.NewCategorical(m.weights, pcg).Rand())]
}

// sessionModel is a conversation's draw: session id of pass names one
// model in every turn (nil without a mix).
func (m *requestMix) sessionModel(src *loadgen.PromptSource, pass int) func(id int) string {
	if m == nil {
		return nil
	}
	return func(id int) string { return m.draw(src, pass, id) }
}

// emitModelRows emits the per-model rows of a mix's point after its
// pooled row: each model's requests' metrics over the pooled window.
func (r *sweepRun) emitModelRows(c *sweepCell, pooled results.Cell, reqs results.Requests) error {
	ms := r.s.mixOf(c.p.cell)
	if len(ms) == 0 || reqs == nil || reqs.Len() == 0 {
		return nil
	}
	slo := measure.SLO(r.env.Plan.SLO)
	slice, _ := time.ParseDuration(r.s.cfg.Slice) // vet refused a bad one
	total := 0.0
	for _, m := range ms {
		total += m.Weight
	}
	for _, m := range ms {
		mine := results.FilterRequests(reqs, func(q *results.Request) bool { return q.Model == m.Name })
		p := c.p
		p.model = m.Name
		row := c.base
		row.CellID, row.Model = cellID(r.env.Stage.Name, p), m.Name
		row.StartedAt, row.Measurement, row.Repeat = pooled.StartedAt, pooled.Measurement, pooled.Repeat
		intervals, span := measure.SendsOf(mine)
		measure.FillCell(&row, mine, measure.CellWindow{Span: time.Duration(pooled.DurationS * float64(time.Second)),
			SendIntervals: intervals, SendSpan: span, Slice: slice}, slo)
		turns.Fill(&row, mine, turns.ExpectOf(row))
		row.Notes = fmt.Sprintf("model %s of the mix %s: %d of the cell's %d requests (weight %.3g of %.3g); the pooled row is %s; throughputs over the pooled row's window",
			m.Name, mixLabel(ms), mine.Len(), reqs.Len(), m.Weight, total, pooled.CellID)
		if pooled.Status != results.StatusOK && row.Status == results.StatusOK {
			row.Status, row.Reason = pooled.Status, "the pooled row: "+pooled.Reason
		}
		if mine.Len() == 0 {
			row.Status, row.Reason = results.StatusError, fmt.Sprintf("no request of the cell's %d drew model %s", reqs.Len(), m.Name)
		}
		if err := c.emit(row, nil); err != nil {
			return err
		}
	}
	return nil
}

// validateMix checks the mixes: names given once, and where a request
// can name its own model (one prompt per request; a conversation's or
// an agent's session would need one model throughout).
func (s *Stage) validateMix(bad func([]string, string, ...any)) {
	check := func(at []string, ms []ModelWeight) {
		seen := map[string]bool{}
		for i, m := range ms {
			if seen[m.Name] {
				bad(append(at, strconv.Itoa(i)), "model %q is in the mix twice: give each model once, with its whole weight", m.Name)
			}
			seen[m.Name] = true
		}
		if len(ms) > 0 && (s.cfg.Agent != nil || s.isTrace()) {
			bad(at, "a model mix is drawn per request (per session in a conversation); agent sessions and trace replays are not (yet): drop models")
		}
	}
	check([]string{"models"}, s.cfg.Models)
	for i, c := range s.cfg.Cells {
		check([]string{"cells", strconv.Itoa(i), "models"}, c.Models)
	}
}
