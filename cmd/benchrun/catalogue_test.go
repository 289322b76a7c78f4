package main

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/benchrun/benchrun/internal/machine"
	"github.com/benchrun/benchrun/internal/regress"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/results/resultstest"
)

// TestScratchColumn adds a column to the catalogue, and only there, and
// finds it wherever a column is known: `schema columns` lists it with
// its unit and direction, the regression table checks it, the machine's
// lateness allowance bounds it, and the docs check asks for its row in
// docs/RESULTS.md (and is content once it has one). Adding a metric is
// the field, one catalogue entry, the code that computes it, its test.
func TestScratchColumn(t *testing.T) {
	const name = "scratch_p99_ms"
	scratch := results.MustLookup(results.ColTTFTP99Ms) // its field stands in for the scratch one's
	scratch.Name, scratch.Expr, scratch.Label, scratch.Doc = name, name, "scratch p99 ms", "p99 of a scratch latency; **NULL** when no request completed"
	scratch.Default = false
	restore := results.SwapCatalogue(append(results.Columns(), scratch))
	defer restore()

	var out bytes.Buffer
	writeColumns(&out)
	if !regexp.MustCompile(`(?m)^  scratch_p99_ms +float64 or null +ms +↓ lower$`).Match(out.Bytes()) {
		t.Errorf("schema columns does not list the scratch column with its unit and direction:\n%s", out.String())
	}

	m, ok := regress.LookupMetric(name)
	if !ok || m.Better != regress.Lower || m.Unit != "ms" || m.Threshold != scratch.Threshold || m.Floor != scratch.Floor || m.Sample != "ttft" || m.Quantile != 0.99 {
		t.Errorf("regression table: LookupMetric(%s) = %+v, %v", name, m, ok)
	}
	row := results.Cell{TTFTP99Ms: results.Some(120.0), Completed: 4, Concurrency: 4, OSL: 16}
	if v := m.Value(&row); v == nil || *v != 120 {
		t.Errorf("regression table: the scratch metric's value = %v, want 120", v)
	}

	if b := machine.Allowance(name, &row, 5); b != (machine.Bound{Down: 5}) {
		t.Errorf("lateness allowance of the scratch column = %+v, want {Down:5} (a latency from the send)", b)
	}

	doc, err := os.ReadFile("../../docs/RESULTS.md")
	if err != nil {
		t.Fatal(err)
	}
	problems := strings.Join(resultstest.DocProblems(string(doc), results.Columns()), "\n")
	if !strings.Contains(problems, name+": not documented in docs/RESULTS.md's cells table") {
		t.Errorf("the docs check does not ask for the scratch column's row:\n%s", problems)
	}
	withRow := strings.Replace(string(doc), "| `ttft_p99_ms` |", "| `"+name+"` | DOUBLE | ms | ↓ | "+scratch.Doc+" |\n| `ttft_p99_ms` |", 1)
	if p := resultstest.DocProblems(withRow, results.Columns()); len(p) > 0 {
		t.Errorf("the docs check with the scratch column's row: %v", p)
	}
}
