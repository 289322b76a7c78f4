package suggest

import "testing"

func TestClosest(t *testing.T) {
	cols := []string{"ttft_p95_ms", "ttft_p99_ms", "ttft_ms", "itl_p99_ms", "decode_tok_s", "status", "stage", "isl", "osl"}
	for _, c := range []struct{ name, want string }{
		{"ttft_p95", "ttft_p95_ms"}, // a forgotten unit
		{"ttft", "ttft_ms"},         // the shortest that extends it
		{"decode_tok", "decode_tok_s"},
		{"stauts", "status"},          // a transposition
		{"STATUS", "status"},          // case
		{"itl_p99_mss", "itl_p99_ms"}, // one too many
		{"banana", ""},                // nothing near
		{"status", ""},                // itself is no suggestion
		{"x", ""},
	} {
		if got := Closest(c.name, cols); got != c.want {
			t.Errorf("Closest(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"a", "", 1}, {"kitten", "sitting", 3}, {"stauts", "status", 1}, {"modle", "model", 1}, {"flaw", "lawn", 2}, {"ca", "abc", 3}} {
		if got := Distance(c.a, c.b); got != c.d {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.d)
		}
	}
}
