package regress

import (
	"os"
	"strings"
	"testing"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/results/resultstest"
)

// docCells reads the cells table of docs/RESULTS.md: column → (type,
// better mark).
func docCells(t *testing.T) map[string][2]string {
	t.Helper()
	b, err := os.ReadFile("../../docs/RESULTS.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "## Table `cells`")
	if !ok {
		t.Fatal("docs/RESULTS.md has no section \"Table `cells`\"")
	}
	if i := strings.Index(sec, "\n## "); i >= 0 {
		sec = sec[:i]
	}
	out := map[string][2]string{}
	for _, line := range strings.Split(sec, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		f := strings.Split(line, "|")
		if len(f) < 6 {
			continue
		}
		name := strings.Trim(strings.TrimSpace(f[1]), "`")
		out[name] = [2]string{strings.TrimSpace(f[2]), strings.TrimSpace(f[4])}
	}
	if len(out) < 50 {
		t.Fatalf("read only %d columns from docs/RESULTS.md's cells table", len(out))
	}
	return out
}

// TestMetricsAgreeWithDoc holds the metric table to docs/RESULTS.md both
// ways: every metric is a documented DOUBLE column marked with its
// direction, and every DOUBLE column the doc marks ↑ or ↓ is a metric.
func TestMetricsAgreeWithDoc(t *testing.T) {
	doc := docCells(t)
	known := map[string]bool{}
	for _, m := range Metrics() {
		known[m.Name] = true
		d, ok := doc[m.Name]
		switch {
		case !ok:
			t.Errorf("metric %s is not a column of docs/RESULTS.md's cells table", m.Name)
		case d[0] != "DOUBLE":
			t.Errorf("metric %s is %s in the doc, not DOUBLE", m.Name, d[0])
		case d[1] != m.Better.Arrow():
			t.Errorf("metric %s: the table says %s is better (%s), the doc marks %q", m.Name, m.Better, m.Better.Arrow(), d[1])
		}
		if !resultstest.IsNullable(m.Name) {
			t.Errorf("metric %s is not a nullable column of results.Cell", m.Name)
		}
		if c, ok := results.Lookup(m.Name); !ok || !c.IsMetric() {
			t.Errorf("metric %s has no *float64 field in results.Cell", m.Name)
		}
		if m.Threshold <= 0 || m.Floor <= 0 {
			t.Errorf("metric %s: threshold %v, floor %v: both must be positive", m.Name, m.Threshold, m.Floor)
		}
	}
	for name, d := range doc {
		if d[0] == "DOUBLE" && (d[1] == "↑" || d[1] == "↓") && !known[name] {
			t.Errorf("the doc marks DOUBLE column %s %s, but it is not in the metric table", name, d[1])
		}
	}
}

// TestMetricDefaults checks the thresholds and floors the brief fixes.
func TestMetricDefaults(t *testing.T) {
	want := map[string][2]float64{ // threshold, floor
		"ttft_p50_ms":  {0.05, 1},
		"ttft_p99_ms":  {0.10, 1},
		"e2el_p50_ms":  {0.05, 1},
		"e2el_p99_ms":  {0.10, 1},
		"itl_p50_ms":   {0.05, 0.2},
		"itl_p99_ms":   {0.10, 0.2},
		"tpot_p50_ms":  {0.05, 0.2},
		"ttft_ms":      {0.05, 1},
		"output_tok_s": {0.05, 1},
		"req_s":        {0.05, 0.1},
		"goodput":      {0.05, 0.1},
	}
	for name, w := range want {
		m, ok := LookupMetric(name)
		if !ok {
			t.Errorf("no metric %s", name)
			continue
		}
		if m.Threshold != w[0] || m.Floor != w[1] {
			t.Errorf("%s: threshold %v floor %v, want %v and %v", name, m.Threshold, m.Floor, w[0], w[1])
		}
	}
	var defaults []string
	for _, m := range DefaultMetrics() {
		defaults = append(defaults, m.Name)
	}
	if want := "ttft_p50_ms ttft_p99_ms e2el_p50_ms e2el_p99_ms tpot_p50_ms itl_p50_ms itl_p99_ms output_tok_s req_s"; strings.Join(defaults, " ") != want {
		t.Errorf("default metrics %v, want %s", defaults, want)
	}
	// Value reads the field, and nil stays nil (never 0).
	c := results.Cell{ITLP99Ms: results.Some(7.5)}
	m, _ := LookupMetric("itl_p99_ms")
	if v := m.Value(&c); v == nil || *v != 7.5 {
		t.Errorf("Value(itl_p99_ms) = %v, want 7.5", v)
	}
	m, _ = LookupMetric("ttft_p99_ms")
	if v := m.Value(&c); v != nil {
		t.Errorf("Value of a NULL column = %v, want nil", *v)
	}
	if _, err := SelectMetrics([]string{"ttft_p50_ms", "nope"}); err == nil || !strings.Contains(err.Error(), `unknown metric "nope"`) {
		t.Errorf("SelectMetrics with an unknown name: %v", err)
	}
}
