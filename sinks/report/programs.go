package report

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/sinks/internal/runview"
)

// A benchmark program's rows (an exec stage: llama-bench, mlx-lm, a
// generic program) measure tests, not load levels: they get a table of
// their own, with the columns the programs filled, instead of the cells
// table's latencies, which they never have.

// splitProgramRows separates the rows of benchmark programs from the rest.
func splitProgramRows(cells []results.Cell) (load, programs []results.Cell) {
	for _, c := range cells {
		if c.Program != "" {
			programs = append(programs, c)
		} else {
			load = append(load, c)
		}
	}
	return load, programs
}

// programColumns are the program table's columns: those some row filled.
func programColumns(cells []results.Cell) []cellColumn {
	text := func(head string, f func(results.Cell) string) cellColumn {
		return cellColumn{head, false, f}
	}
	float := func(head string, f func(results.Cell) *float64) cellColumn {
		return cellColumn{head, true, func(c results.Cell) string { p := f(c); return num(results.ValueOr(p, 0), p != nil) }}
	}
	integer := func(head string, f func(results.Cell) *int64) cellColumn {
		return cellColumn{head, true, func(c results.Cell) string {
			if p := f(c); p != nil {
				return strconv.FormatInt(*p, 10)
			}
			return "–"
		}}
	}
	all := []cellColumn{
		text("stage", func(c results.Cell) string { return c.Stage }),
		text("program", func(c results.Cell) string { return c.Program }),
		text("test", runview.ProgramLabel),
		text("kind", func(c results.Cell) string { return c.TestKind }),
		text("isl:osl", func(c results.Cell) string { return fmt.Sprintf("%d:%d", c.ISL, c.OSL) }),
		integer("depth", func(c results.Cell) *int64 { return c.NDepth }),
		text("status", func(c results.Cell) string { return c.Status }),
		float("avg t/s", func(c results.Cell) *float64 { return c.AvgTS }),
		float("± t/s", func(c results.Cell) *float64 { return c.StddevTS }),
		float("prefill tok/s", func(c results.Cell) *float64 { return c.PrefillTokS }),
		float("decode tok/s", func(c results.Cell) *float64 { return c.DecodeTokS }),
		float("TTFT p50 ms", func(c results.Cell) *float64 { return c.TTFTP50Ms }),
		text("peak memory", func(c results.Cell) string { return inGiB(c.PeakMemoryBytes) }),
		text("model", func(c results.Cell) string { return c.ModelType }),
		text("size", func(c results.Cell) string { return inGiB(c.ModelSizeBytes) }),
		text("params", func(c results.Cell) string { return params(c.ModelNParams) }),
		text("backends", func(c results.Cell) string { return c.Backends }),
		integer("ngl", func(c results.Cell) *int64 { return c.NGPULayers }),
		integer("threads", func(c results.Cell) *int64 { return c.NThreads }),
		integer("n_batch", func(c results.Cell) *int64 { return c.NBatch }),
		text("flash attn", func(c results.Cell) string { return c.FlashAttn }),
	}
	// A column stays when some row has a value in it; the identity and
	// the status always do.
	return slices.DeleteFunc(all, func(col cellColumn) bool {
		switch col.Head {
		case "stage", "test", "status":
			return false
		}
		return !slices.ContainsFunc(cells, func(c results.Cell) bool { v := col.value(c); return v != "" && v != "–" })
	})
}

// inGiB formats a byte count in GiB, or MiB below one ("" when unknown).
func inGiB(p *int64) string {
	switch {
	case p == nil:
		return ""
	case *p < gib:
		return fmt.Sprintf("%.2f MiB", float64(*p)/(1<<20))
	}
	return fmt.Sprintf("%.2f GiB", float64(*p)/gib)
}

// params formats a parameter count: 1.24 B, 260 K.
func params(p *int64) string {
	switch {
	case p == nil:
		return ""
	case *p >= 1e9:
		return fmt.Sprintf("%.2f B", float64(*p)/1e9)
	case *p >= 1e6:
		return fmt.Sprintf("%.1f M", float64(*p)/1e6)
	case *p >= 1e3:
		return fmt.Sprintf("%.0f K", float64(*p)/1e3)
	}
	return strconv.FormatInt(*p, 10)
}
