package safetext

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestString(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain text", "plain text"},
		{"two\nlines\tand a tab", "two\nlines\tand a tab"},
		{"d\xe9faillante", "d\uFFFDfaillante"},
		{"\x1b[2J\x1b[32m✓ ok\x1b[0m", `\x1b[2J\x1b[32m✓ ok\x1b[0m`},
		{"carriage\rreturn", `carriage\x0dreturn`},
		{"nul\x00del\x7f", `nul\x00del\x7f`},
		{"c1 \u009b csi", `c1 \u009b csi`},
		{"é ü 中文 🙂", "é ü 中文 🙂"},
		{"\xc2", "\uFFFD"},
		{"", ""},
	} {
		got := String(tc.in)
		if got != tc.want {
			t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if Safe(tc.in) != (tc.in == tc.want) {
			t.Errorf("Safe(%q) = %v", tc.in, Safe(tc.in))
		}
	}
}

// TestMapCopies: Map applies to every string in a row and leaves the
// original untouched.
func TestMapCopies(t *testing.T) {
	type row struct {
		Reason string
		Notes  []string
		Meta   map[string]string
		Ptr    *string
	}
	bad := "x\x1by"
	in := row{Reason: bad, Notes: []string{"ok", bad}, Meta: map[string]string{bad: bad}, Ptr: &bad}
	out := Value(in)
	if in.Reason != bad || in.Notes[1] != bad || in.Meta[bad] != bad || *in.Ptr != bad {
		t.Fatalf("the original changed: %+v", in)
	}
	want := `x\x1by`
	if out.Reason != want || out.Notes[1] != want || out.Meta[want] != want || *out.Ptr != want || out.Notes[0] != "ok" {
		t.Fatalf("Value = %+v", out)
	}
}

func FuzzString(f *testing.F) {
	for _, s := range []string{"", "abc", "d\xe9f", "\x1b[2J", "\u009b", "\xc2\x9b", "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := String(s)
		if !utf8.ValidString(out) {
			t.Fatalf("String(%q) = %q: not UTF-8", s, out)
		}
		if strings.ContainsFunc(out, control) {
			t.Fatalf("String(%q) = %q: holds a control character", s, out)
		}
		if !Safe(out) || String(out) != out {
			t.Fatalf("String(%q) = %q is not a fixed point", s, out)
		}
		if Safe(s) != (out == s) {
			t.Fatalf("Safe(%q) = %v but String changes it to %q", s, Safe(s), out)
		}
	})
}
