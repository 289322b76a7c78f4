package report_test

import (
	"strings"
	"testing"

	"github.com/benchrun/benchrun/sinks/report"
)

// A run whose launch stage served another GGUF than the plan's model.file
// (-m in its cmd) and whose rows name it: both reports say the rows' file
// was served, and name the plan's as the plan's, not as served.
func TestReportNamesTheFileTheRowsServed(t *testing.T) {
	d := fixture()
	d.Run.Model, d.Run.ModelFile, d.Run.ModelQuant = "llama-3.2-1b", "Llama-3.2-1B-Instruct-Q4_K_M.gguf", "Q4_K_M"
	for i := range d.Cells {
		d.Cells[i].Model = "models/Llama-3.2-1B-Instruct-Q8_0.gguf"
	}
	md := string(report.Markdown(d, nil, "charts/"))
	if !strings.Contains(md, "| served | Llama-3.2-1B-Instruct-Q8\\_0.gguf |") || strings.Contains(md, "| served | Llama-3.2-1B-Instruct-Q4\\_K\\_M.gguf") {
		t.Errorf("report.md does not name the rows' file as served:\n%s", md[:min(len(md), 900)])
	}
	if !strings.Contains(md, "| plan's model.file | Llama-3.2-1B-Instruct-Q4\\_K\\_M.gguf, Q4\\_K\\_M (not what the rows say was served) |") {
		t.Errorf("report.md does not set the plan's file apart:\n%s", md[:min(len(md), 900)])
	}
	page, err := report.HTML(d, nil)
	if err != nil || !strings.Contains(string(page), "<dt>served</dt><dd>Llama-3.2-1B-Instruct-Q8_0.gguf</dd>") {
		t.Errorf("report.html does not name the rows' file as served (%v)", err)
	}
}
