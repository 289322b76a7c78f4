package report_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/benchrun/benchrun/internal/golden"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/sinks/report"
)

// programRows are an exec stage's rows as llama-bench (pp64, tg32 on
// stories260K, CPU) and mlx-lm's generate filled them: the rows of
// stages/exec/testdata's llama-bench-cpu.json and mlx-generate.txt goldens.
func programRows(t *testing.T) []results.Cell {
	t.Helper()
	b, err := os.ReadFile("testdata/program-rows.json")
	if err != nil {
		t.Fatal(err)
	}
	var cells []results.Cell
	if err := json.Unmarshal(b, &cells); err != nil {
		t.Fatal(err)
	}
	return cells
}

// A run of benchmark programs reads as tests, not load levels: a table of
// the columns the programs filled and a chart of their throughput, and
// none of the sweep's latency tables and charts, which such rows never
// fill.
func TestProgramRowsHaveTheirOwnTableAndCharts(t *testing.T) {
	d := report.Data{Run: fixture().Run, Cells: programRows(t)}
	charts := report.Charts(d)
	var names []string
	for _, c := range charts {
		names = append(names, c.Name)
		if strings.Contains(c.SVG, "no ok cells to plot") || strings.Contains(c.SVG, "nothing to plot") {
			t.Errorf("%s: an empty chart for rows that are all ok", c.Name)
		}
	}
	if got := strings.Join(names, " "); got != "program-llamabench program-mlx" {
		t.Errorf("charts %q, want one per program stage", got)
	}
	// The bars carry the programs' numbers (llama-bench's avg_ts ± stddev).
	if !strings.Contains(charts[0].SVG, "pp64: avg_ts 27195.47 tok/s ± 1086.91") {
		t.Errorf("llama-bench chart lacks pp64's avg_ts and spread:\n%s", charts[0].SVG)
	}
	md := string(report.Markdown(d, charts, "charts/"))
	if strings.Contains(md, "## Cells") || !strings.Contains(md, "## Benchmark programs") {
		t.Errorf("want the programs' table instead of the cells table:\n%s", md)
	}
	golden.Check(t, "programs.md", []byte(md))
	page, err := report.HTML(d, charts)
	if err != nil {
		t.Fatal(err)
	}
	if html := string(page); !strings.Contains(html, `<table id="programs">`) || strings.Contains(html, `<table id="cells">`) || !strings.Contains(html, "<td>pp64</td>") {
		t.Error("report.html lacks the programs' table, or shows an empty cells table")
	}

	// Beside a sweep, both tables, and the sweep's charts from its rows only.
	mixed := fixture()
	mixed.Cells = append(mixed.Cells, programRows(t)...)
	md = string(report.Markdown(mixed, report.Charts(mixed), "charts/"))
	if !strings.Contains(md, "## Cells") || !strings.Contains(md, "## Benchmark programs") || strings.Contains(md, "| llamabench | 64:0 |") {
		t.Errorf("mixed run: want both tables, program rows only in theirs:\n%s", md)
	}
}

// The model as served stands beside the plan's label.
func TestReportNamesTheServedModel(t *testing.T) {
	d := fixture()
	d.Run.Model, d.Run.ModelFile, d.Run.ModelQuant = "llama-3.2-1b (Q4_K_M)", "stories260K.gguf", "F32"
	md := string(report.Markdown(d, nil, "charts/"))
	if !strings.Contains(md, "| model | llama-3.2-1b (Q4\\_K\\_M) |") || !strings.Contains(md, "| served | stories260K.gguf, F32 |") {
		t.Errorf("report.md lacks the label or the served file:\n%s", md[:min(len(md), 800)])
	}
	page, err := report.HTML(d, nil)
	if err != nil || !strings.Contains(string(page), "<dt>served</dt><dd>stories260K.gguf, F32</dd>") {
		t.Errorf("report.html lacks the served file (%v)", err)
	}
}
