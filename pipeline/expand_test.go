package pipeline

import (
	"strings"
	"testing"

	"github.com/benchrun/benchrun/internal/redact"
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

// A credential expanded from the environment into a server's command or
// environment is masked wherever benchrun writes, like the keys it sends.
func TestExpandedCredentialsAreRegistered(t *testing.T) {
	t.Setenv("BENCHRUN_TEST_API_KEY", "sk-expanded-9876")
	t.Setenv("BENCHRUN_TEST_MODEL_DIR", "/models/llama")
	if _, err := ExpandEnv("--api-key ${BENCHRUN_TEST_API_KEY} --dir ${BENCHRUN_TEST_MODEL_DIR}", nil); err != nil {
		t.Fatal(err)
	}
	if got := redact.String("key sk-expanded-9876 in /models/llama"); strings.Contains(got, "sk-expanded-9876") || !strings.Contains(got, "/models/llama") {
		t.Fatalf("redacted: %q", got)
	}
}
