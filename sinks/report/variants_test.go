package report

import (
	"reflect"
	"strings"
	"testing"

	"github.com/benchrun/benchrun/internal/golden"
	"github.com/benchrun/benchrun/internal/results"
)

// vcell is a measured closed-loop cell of a stage with metadata md; its
// metrics scale with f (ttft 10f/20f, itl 2f/4f ms, 100/f tok/s, 4/f req/s).
func vcell(stage string, md map[string]string, isl, osl, conc int64, f float64) results.Cell {
	return results.Cell{
		Stage: stage, CellID: stage + "/" + string(rune('0'+conc)), Metadata: md, Status: "ok",
		ISL: isl, OSL: osl, Concurrency: conc, Requests: 4, Completed: 4,
		TTFTP50Ms: results.Some(10 * f), TTFTP99Ms: results.Some(20 * f),
		ITLP50Ms: results.Some(2 * f), ITLP99Ms: results.Some(4 * f),
		OutputTokS: results.Some(100 / f), ReqS: results.Some(4 / f),
	}
}

func quant(q string) map[string]string { return map[string]string{"quant": q, "gpu": "none"} }

// section returns the markdown section titled title (up to the next one).
func section(t *testing.T, md, title string) string {
	t.Helper()
	i := strings.Index(md, "\n## "+title+"\n")
	if i < 0 {
		t.Fatalf("report.md has no section %q:\n%s", title, md)
	}
	s := md[i+1:]
	if j := strings.Index(s[3:], "\n## "); j >= 0 {
		s = s[:j+4]
	}
	return s
}

// Two variants: one row per matching cell (same isl:osl and load across
// the two stages), the first variant's values as they are and the
// second's with its change from the first; the plan-level key that does
// not vary (gpu) gets no section and no column.
func TestVariantsTwo(t *testing.T) {
	cells := []results.Cell{
		vcell("sweep-Q4_K_M", quant("Q4_K_M"), 32, 8, 1, 1),
		vcell("sweep-Q4_K_M", quant("Q4_K_M"), 32, 8, 2, 2),
		vcell("sweep-Q8_0", quant("Q8_0"), 32, 8, 1, 2),
		vcell("sweep-Q8_0", quant("Q8_0"), 32, 8, 2, 2),
	}
	secs := variantSections(cells, nil)
	if len(secs) != 1 || secs[0].Key != "quant" || !reflect.DeepEqual(secs[0].Values, []string{"Q4_K_M", "Q8_0"}) || len(secs[0].Others) != 0 {
		t.Fatalf("sections: %+v", secs)
	}
	want := []variantRow{
		{Shape: "32:8", Load: "c=1", Others: []string{}, Groups: [][]string{
			{"10.00", "20.00", "2.00", "4.00", "100.0", "4.00"},
			{"20.00 (+100.0%)", "40.00 (+100.0%)", "4.00 (+100.0%)", "8.00 (+100.0%)", "50.00 (-50.0%)", "2.00 (-50.0%)"},
		}},
		{Shape: "32:8", Load: "c=2", Others: []string{}, Groups: [][]string{
			{"20.00", "40.00", "4.00", "8.00", "50.00", "2.00"},
			{"20.00 (±0.0%)", "40.00 (±0.0%)", "4.00 (±0.0%)", "8.00 (±0.0%)", "50.00 (±0.0%)", "2.00 (±0.0%)"},
		}},
	}
	if got := secs[0].Rows; !reflect.DeepEqual(got, want) {
		t.Errorf("rows:\n got %q\nwant %q", got, want)
	}
	md := string(Markdown(Data{Cells: cells}, nil, ""))
	s := section(t, md, "Variants by quant")
	for _, w := range []string{
		"| isl:osl | load | Q4\\_K\\_M TTFT p50 ms |",
		"| Q8\\_0 req/s |\n| --- | --- | ---: |",
		"| 32:8 | c=1 | 10.00 | 20.00 | 2.00 | 4.00 | 100.0 | 4.00 | 20.00 (+100.0%) | 40.00 (+100.0%) | 4.00 (+100.0%) | 8.00 (+100.0%) | 50.00 (-50.0%) | 2.00 (-50.0%) |\n",
	} {
		if !strings.Contains(s, w) {
			t.Errorf("the section lacks %q:\n%s", w, s)
		}
	}
	if strings.Contains(md, "Variants by gpu") {
		t.Error("a key with one value has a section")
	}
}

// threeVariants is a run of three quants and two GPUs, listed in the plan
// as F16, Q4_K_M, Q8_0 while the rows arrive Q8_0 first: Q8_0 has a NULL
// TTFT p99 at c=2 and an error cell without measurements at c=4, Q4_K_M
// alone has 32:8 at c=4, and Q8_0 alone has 64:8.
func threeVariants() Data {
	md := func(q, gpu string) map[string]string { return map[string]string{"quant": q, "gpu": gpu} }
	null := vcell("q8-h200", md("Q8_0", "H200"), 32, 8, 2, 2)
	null.TTFTP99Ms = nil
	failed := results.Cell{Stage: "q8-h200", Metadata: md("Q8_0", "H200"), Status: "error", ISL: 32, OSL: 8, Concurrency: 4, Requests: 4, Failed: 4, ReqS: results.Some(0.0), OutputTokS: results.Some(0.0)}
	cells := []results.Cell{
		vcell("q8-h200", md("Q8_0", "H200"), 32, 8, 1, 2),
		null,
		failed,
		vcell("q8-h200", md("Q8_0", "H200"), 64, 8, 1, 2),
		vcell("q4-h200", md("Q4_K_M", "H200"), 32, 8, 1, 1),
		vcell("q4-h200", md("Q4_K_M", "H200"), 32, 8, 2, 1.25),
		vcell("q4-h200", md("Q4_K_M", "H200"), 32, 8, 4, 1.5),
		vcell("f16-h200", md("F16", "H200"), 32, 8, 1, 4),
		vcell("f16-h200", md("F16", "H200"), 32, 8, 2, 4),
		vcell("q4-a100", md("Q4_K_M", "A100"), 32, 8, 1, 3),
	}
	stages := []results.StageOutcome{{Name: "f16-h200"}, {Name: "q4-h200"}, {Name: "q8-h200"}, {Name: "q4-a100"}}
	return Data{Run: results.Run{Plan: "matrix", Status: "ok", Stages: stages}, Cells: cells}
}

// Three variants and a second varying key: one section per key, variants
// in the plan's order (F16 first, whatever order the rows came in), the
// other key a column of the rows; a NULL metric and every metric of a
// failed cell are –, never 0, and have no change; a cell present in only
// some variants is a row with – for the others; a zero baseline gives no
// percentage. The whole report.md is a golden file.
func TestVariantsThree(t *testing.T) {
	d := threeVariants()
	secs := variantSections(d.Cells, d.Run.Stages)
	if len(secs) != 2 || secs[0].Key != "gpu" || secs[1].Key != "quant" {
		t.Fatalf("sections: %+v", secs)
	}
	if q := secs[1]; !reflect.DeepEqual(q.Values, []string{"F16", "Q4_K_M", "Q8_0"}) || !reflect.DeepEqual(q.Others, []string{"gpu"}) {
		t.Fatalf("quant section: values %q, others %q", q.Values, q.Others)
	}
	if g := secs[0]; !reflect.DeepEqual(g.Values, []string{"H200", "A100"}) || !reflect.DeepEqual(g.Others, []string{"quant"}) {
		t.Fatalf("gpu section: values %q, others %q", g.Values, g.Others)
	}
	rows := map[string]variantRow{}
	for _, r := range secs[1].Rows {
		rows[r.Shape+" "+r.Load+" "+strings.Join(r.Others, ",")] = r
	}
	if len(rows) != 5 {
		t.Errorf("quant rows: %q", secs[1].Rows)
	}
	dash := []string{"–", "–", "–", "–", "–", "–"}
	check := func(key string, variant int, want []string) {
		t.Helper()
		r, ok := rows[key]
		if !ok {
			t.Errorf("no row %q among %q", key, secs[1].Rows)
			return
		}
		if got := r.Groups[variant]; !reflect.DeepEqual(got, want) {
			t.Errorf("row %q, variant %d:\n got %q\nwant %q", key, variant, got, want)
		}
	}
	check("32:8 c=1 H200", 0, []string{"40.00", "80.00", "8.00", "16.00", "25.00", "1.00"})
	check("32:8 c=1 H200", 1, []string{"10.00 (-75.0%)", "20.00 (-75.0%)", "2.00 (-75.0%)", "4.00 (-75.0%)", "100.0 (+300.0%)", "4.00 (+300.0%)"})
	check("32:8 c=2 H200", 2, []string{"20.00 (-50.0%)", "–", "4.00 (-50.0%)", "8.00 (-50.0%)", "50.00 (+100.0%)", "2.00 (+100.0%)"})
	// No F16 at c=4: Q4_K_M has no baseline to compare with; Q8_0's
	// failed cell measured no latency, and its 0 req/s is a value.
	check("32:8 c=4 H200", 0, dash)
	check("32:8 c=4 H200", 1, []string{"15.00", "30.00", "3.00", "6.00", "66.67", "2.67"})
	check("32:8 c=4 H200", 2, []string{"–", "–", "–", "–", "0.00", "0.00"})
	check("64:8 c=1 H200", 0, dash)
	check("64:8 c=1 H200", 1, dash)
	check("32:8 c=1 A100", 0, dash)
	check("32:8 c=1 A100", 1, []string{"30.00", "60.00", "6.00", "12.00", "33.33", "1.33"})

	md := Markdown(d, nil, "")
	golden.Check(t, "variants.md", md)
	s := section(t, string(md), "Variants by quant")
	if !strings.Contains(s, "| isl:osl | load | gpu | F16 TTFT p50 ms |") {
		t.Errorf("the quant section's head:\n%s", s)
	}
}

// With no metadata key that varies there is no section: the fixture's
// plan-level metadata, and a key only one stage carries.
func TestNoVariantSection(t *testing.T) {
	cells := []results.Cell{
		vcell("a", quant("Q4_K_M"), 32, 8, 1, 1),
		vcell("b", map[string]string{"quant": "Q4_K_M", "gpu": "none", "note": "warm"}, 32, 8, 1, 2),
		vcell("c", map[string]string{"quant": "Q4_K_M", "gpu": "none", "note": ""}, 32, 8, 1, 2),
		vcell("d", nil, 32, 8, 1, 2),
	}
	if secs := variantSections(cells, nil); len(secs) != 0 {
		t.Errorf("sections for keys that do not vary: %+v", secs)
	}
	d := Data{Cells: cells}
	if md := string(Markdown(d, nil, "")); strings.Contains(md, "Variants") {
		t.Errorf("report.md has a variants section:\n%s", md)
	}
	page, err := HTML(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(page), "Variants") {
		t.Error("report.html has a variants section")
	}
}

// Two stages of one variant with the same cells (a second sweep of each
// quant) are paired with the other variant's in run order, not merged.
func TestVariantsPaired(t *testing.T) {
	cells := []results.Cell{
		vcell("a-q4", quant("Q4_K_M"), 32, 8, 1, 1),
		vcell("a-q8", quant("Q8_0"), 32, 8, 1, 2),
		vcell("b-q4", quant("Q4_K_M"), 32, 8, 1, 3),
		vcell("b-q8", quant("Q8_0"), 32, 8, 1, 6),
	}
	secs := variantSections(cells, nil)
	if len(secs) != 1 || len(secs[0].Rows) != 2 || !secs[0].Paired {
		t.Fatalf("sections: %+v", secs)
	}
	r := secs[0].Rows[1]
	if r.Load != "c=1 #2" || r.Groups[0][0] != "30.00" || r.Groups[1][0] != "60.00 (+100.0%)" {
		t.Errorf("second row: %+v", r)
	}
	if md := string(Markdown(Data{Cells: cells}, nil, "")); !strings.Contains(md, "A load marked #2") {
		t.Errorf("report.md does not explain #2:\n%s", md)
	}
}

// report.html has the same tables: a column group per variant under its
// value, the values and changes as in report.md, – for the null ones.
func TestVariantsHTML(t *testing.T) {
	page, err := HTML(threeVariants(), nil)
	if err != nil {
		t.Fatal(err)
	}
	s := string(page)
	for _, w := range []string{
		"<h2>Variants by gpu</h2>", "<h2>Variants by quant</h2>",
		`<table class="variants" id="variants-quant">`,
		`<th rowspan="2">gpu</th><th class="group" colspan="6">F16</th><th class="group" colspan="6">Q4_K_M</th><th class="group" colspan="6">Q8_0</th></tr>`,
		`<th class="n first">TTFT p50 ms</th><th class="n">TTFT p99 ms</th>`,
		`<td class="n first">20.00 (-50.0%)</td><td class="n">–</td><td class="n">4.00 (-50.0%)</td>`,
		"one group of columns per quant (F16, Q4_K_M, Q8_0)",
	} {
		if !strings.Contains(s, w) {
			t.Errorf("report.html lacks %q", w)
		}
	}
}
