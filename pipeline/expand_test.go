package pipeline

import (
	"strings"
	"testing"
)

func TestExpandOneRule(t *testing.T) {
	t.Setenv("BENCHRUN_TEST_TOKEN", "tok-1")
	for _, tc := range []struct {
		in, want, err string
	}{
		{"Bearer ${BENCHRUN_TEST_TOKEN}", "Bearer tok-1", ""},
		{"pa$$word$1", "pa$$word$1", ""}, // os.ExpandEnv made it "paword"
		{"$HOME stays", "$HOME stays", ""},
		{"${port}:${BENCHRUN_TEST_TOKEN}", "8000:tok-1", ""},
		{"Bearer ${BENCHRUN_TEST_UNSET}", "", "${BENCHRUN_TEST_UNSET} is neither a plan variable nor set"},
	} {
		got, err := ExpandEnv(tc.in, map[string]string{"port": "8000"})
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err %v", tc.in, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	if got := Expand("${a} ${b} $c", map[string]string{"a": "1"}); got != "1 ${b} $c" {
		t.Errorf("Expand: %q", got)
	}
}
