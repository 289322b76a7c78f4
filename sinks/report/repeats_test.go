package report

import (
	"strings"
	"testing"

	"github.com/benchrun/benchrun/internal/results"
)

// Repeated points are summarised with their mean, 95% interval and CV,
// over the ok repeats only, in the report; a run without repeats has no
// such section.
func TestRepeatsSection(t *testing.T) {
	var cells []results.Cell
	for i, v := range []float64{10, 12, 14} {
		rep := int64(i + 1)
		cells = append(cells, results.Cell{Stage: "sweep", CellID: "sweep/16:4/c1/rep" + string(rune('1'+i)), Repeat: rep, ISL: 16, OSL: 4, Concurrency: 1, Status: "ok", OutputTokS: results.Some(v)})
	}
	cells = append(cells, results.Cell{Stage: "sweep", CellID: "sweep/16:4/c1/rep4", Repeat: 4, ISL: 16, OSL: 4, Concurrency: 1, Status: "error", OutputTokS: results.Some(1000.0)})
	md := string(Markdown(Data{Cells: cells}, nil, ""))
	if !strings.Contains(md, "| sweep 16:4 c=1 | output tok/s | 3 | 12.00 | 7.03 … 16.97 (±41.4%) | 16.7% |") {
		t.Fatalf("repeats section:\n%s", md)
	}
	if !strings.Contains(md, "c=1 rep 2") {
		t.Errorf("the cells table does not say which repeat a row is")
	}
	h, err := HTML(Data{Cells: cells}, nil)
	if err != nil || !strings.Contains(string(h), `<td class="n">7.03 … 16.97 (±41.4%)</td>`) {
		t.Errorf("report.html has no repeats table (%v)", err)
	}
	if md := string(Markdown(Data{Cells: cells[:0]}, nil, "")); strings.Contains(md, "## Repeats") {
		t.Errorf("a run without repeats has a repeats section")
	}
}
