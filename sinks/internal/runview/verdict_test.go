package runview

import (
	"testing"

	"github.com/benchrun/benchrun/internal/results"
)

// A verdict's values read as "name = value", short numbers, the compared
// column beside the limit it was held to; a check with no single limit
// (a conjunction, an equality, a column the values lack) lists its values.
func TestFormatValues(t *testing.T) {
	for _, c := range []struct {
		assertion string
		values    map[string]string
		want      string
	}{
		{"ttft_p50_ms < 150", map[string]string{"ttft_p50_ms": "12.345678"}, "ttft_p50_ms = 12.3 (limit 150)"},
		{"itl_p99_ms < 2*itl_p50_ms", map[string]string{"itl_p50_ms": "13.25", "itl_p99_ms": "40"}, "itl_p50_ms = 13.2, itl_p99_ms = 40.0 (limit 26.5)"},
		{"output_tok_s >= 500", map[string]string{"output_tok_s": "450.25"}, "output_tok_s = 450 (limit 500)"},
		{"2*itl_p50_ms > itl_p99_ms", map[string]string{"itl_p50_ms": "5", "itl_p99_ms": "12"}, "itl_p50_ms = 5.00, itl_p99_ms = 12.0"},
		{`status == "ok"`, map[string]string{"status": "ok"}, "status = ok"},
		{"ttft_p99_ms < 500 && itl_p99_ms < 50", map[string]string{"ttft_p99_ms": "600", "itl_p99_ms": "10"}, "itl_p99_ms = 10.0, ttft_p99_ms = 600"},
		{"req_s > 0", map[string]string{"req_s": "0", "ttft_p99_ms": "null"}, "req_s = 0, ttft_p99_ms = null"},
		{"ttft_p99_ms < 500", nil, ""},
	} {
		v := results.Verdict{Assertion: c.assertion, Values: c.values}
		if got := FormatValues(v); got != c.want {
			t.Errorf("%s %v: %q, want %q", c.assertion, c.values, got, c.want)
		}
	}
}
