package validate

import (
	"fmt"
	"slices"

	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
	"github.com/benchrun/benchrun/stages/internal/client"
)

// This file is the kind's configuration and its decoding from the
// stage's CUE value: the one file of a kind that may import cuelang.org/go
// (internal/archtest). What the kind learns from the sweep it is
// measured against comes through pipeline.LoadShaper (vet and run time)
// and Env.StageRows (run time), never from the sweep's CUE.

// Config is the stage's configuration (see schema.cue).
type Config struct {
	Target      string `json:"target"`
	Model       string `json:"model"`
	Against     string `json:"against"`
	Cell        string `json:"cell"`
	Concurrency int    `json:"concurrency"`
	// Documents is a glob or a list of globs (decoded from either).
	Documents    any       `json:"documents"`
	Exclude      []string  `json:"exclude"`
	Field        string    `json:"field"`
	Requests     int       `json:"requests"`
	Warmup       int       `json:"warmup"`
	Band         []float64 `json:"band"`
	BandOn       *[]string `json:"band_on"`
	BandSeverity string    `json:"band_severity"`
	Stream       bool      `json:"stream"`
	ForceOSL     bool      `json:"force_osl"`
	client.RequestConfig
}

// New decodes the configuration.
func New(s *schema.Stage) (pipeline.Stage, error) {
	st := &Stage{spec: s}
	if err := s.Decode(&st.cfg); err != nil {
		return nil, err
	}
	switch d := st.cfg.Documents.(type) {
	case string:
		st.globs = []string{d}
	case []any:
		for _, g := range d {
			if g, ok := g.(string); ok {
				st.globs = append(st.globs, g)
			}
		}
	}
	st.stallTimeout = st.cfg.Stall()
	if len(st.cfg.Band) != 2 {
		st.cfg.Band = []float64{0.3, 0.9}
	}
	if st.cfg.BandSeverity == "" {
		st.cfg.BandSeverity = pipeline.SeverityFail
	}
	return st, nil
}

// bandAssertions adds "COLUMN >= low && COLUMN <= high" for each column
// the band is on to the stage's assertions, so the band is judged by the
// pipeline on the stage's row like any assertion the plan writes (a
// verdict in the assertions table, JUnit, the exit code) and a plan's own
// `assert` list adds to it instead of replacing it. The pipeline has no
// notion of a kind's default assertions; the stage's spec is where the
// runner reads its assertions from when it starts, so the band goes there,
// at the band's position in the plan. It is added by Validate, not New,
// because the default column depends on the sweep's endpoint, known only
// once every stage is decoded. A graph built again from the same plan (a
// replay) does not add the band twice.
func (s *Stage) bandAssertions(endpoint string) {
	lo, hi := s.cfg.Band[0], s.cfg.Band[1]
	if lo > hi {
		return // Validate reports it; an assertion no row can pass would only repeat it
	}
	for _, col := range s.bandColumns(endpoint) {
		a := schema.Assertion{
			Expr:     fmt.Sprintf("%s >= %g && %s <= %g", col, lo, col, hi),
			Name:     fmt.Sprintf("%s within the band [%g, %g]", col, lo, hi),
			Severity: s.cfg.BandSeverity,
			Pos:      s.spec.PosOf("band"),
		}
		if !slices.ContainsFunc(s.spec.Assert, func(b schema.Assertion) bool { return b.Expr == a.Expr && b.Name == a.Name }) {
			s.spec.Assert = append(s.spec.Assert, a)
		}
	}
}
