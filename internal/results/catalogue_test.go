package results

import (
	"reflect"
	"strings"
	"testing"
)

// TestCatalogueComplete: every column of Cell has exactly one catalogue
// entry and every entry a column.
func TestCatalogueComplete(t *testing.T) {
	fields := map[string]bool{}
	ct := reflect.TypeOf(Cell{})
	for i := 0; i < ct.NumField(); i++ {
		name, _, _ := strings.Cut(ct.Field(i).Tag.Get("parquet"), ",")
		fields[name] = true
	}
	seen := map[string]bool{}
	for _, e := range allEntries() {
		if seen[e.Name] {
			t.Errorf("column %s has two catalogue entries", e.Name)
		}
		seen[e.Name] = true
		if !fields[e.Name] {
			t.Errorf("catalogue entry %s has no field in results.Cell", e.Name)
		}
	}
	for f := range fields {
		if !seen[f] {
			t.Errorf("column %s has no catalogue entry: add one to catalogue_table.go", f)
		}
	}
}

// TestCatalogueSays: every column says its unit, direction and
// documentation line, every metric its machine-lateness rule.
func TestCatalogueSays(t *testing.T) {
	for _, p := range CheckCatalogue(Columns()) {
		t.Error(p)
	}
}

// TestCatalogueCheckFails: a metric without a direction or a lateness
// rule is named.
func TestCatalogueCheckFails(t *testing.T) {
	c := MustLookup(ColTTFTP99Ms)
	c.Name, c.Better, c.Late = "scratch_p99_ms", DirectionUnset, LateUnset
	got := strings.Join(CheckCatalogue([]Column{c}), "\n")
	for _, want := range []string{"scratch_p99_ms: no direction", "scratch_p99_ms: a metric without a machine-lateness rule"} {
		if !strings.Contains(got, want) {
			t.Errorf("CheckCatalogue of a metric without direction and lateness rule = %q, want it to say %q", got, want)
		}
	}
}

// TestLookupAndRead: Lookup finds a column by name and by expr, Float
// and Value read it, nil stays nil.
func TestLookupAndRead(t *testing.T) {
	row := Cell{ITLP99Ms: Some(7.5), Concurrency: 4}
	c, ok := Lookup(ColITLP99Ms)
	if !ok || c.Unit != "ms" || c.Better != LowerBetter || c.Late != LateGap || c.Quantile != 0.99 || !c.SLO {
		t.Fatalf("Lookup(itl_p99_ms) = %+v, %v", c, ok)
	}
	if v := c.Float(&row); v == nil || *v != 7.5 {
		t.Errorf("Float = %v, want 7.5", v)
	}
	if v := MustLookup(ColTTFTP99Ms).Float(&row); v != nil {
		t.Errorf("Float of a NULL column = %v, want nil", *v)
	}
	if v := MustLookup(ColTTFTP99Ms).Value(&row); v != nil {
		t.Errorf("Value of a NULL column = %v, want nil", v)
	}
	if v := MustLookup(ColConcurrency).Value(&row); v != int64(4) {
		t.Errorf("Value(concurrency) = %v, want 4", v)
	}
	if _, ok := LookupExpr("ttft_p99_ms"); !ok {
		t.Error("LookupExpr(ttft_p99_ms) found nothing")
	}
	if _, ok := Lookup("nope"); ok {
		t.Error("Lookup(nope) found a column")
	}
}

// TestSwapCatalogue: a test's catalogue is in force until restored.
func TestSwapCatalogue(t *testing.T) {
	scratch := MustLookup(ColTTFTP99Ms)
	scratch.Name, scratch.Expr = "scratch_p99_ms", "scratch_p99_ms"
	restore := SwapCatalogue(append(Columns(), scratch))
	if _, ok := Lookup("scratch_p99_ms"); !ok {
		t.Error("the scratch column is not in force")
	}
	if o := Ordered(); o[len(o)-1].Name != "scratch_p99_ms" {
		t.Errorf("Ordered ends with %s, want the scratch column", o[len(o)-1].Name)
	}
	restore()
	if _, ok := Lookup("scratch_p99_ms"); ok {
		t.Error("the scratch column outlived its restore")
	}
}
