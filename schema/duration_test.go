package schema

import (
	"strings"
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
		err  string
	}{
		{"2m", 2 * time.Minute, ""},
		{"1h30m", 90 * time.Minute, ""},
		{"500ms", 500 * time.Millisecond, ""},
		{"0s", 0, "not a positive duration"},
		{"-1s", 0, "not a positive duration"},
		{"soon", 0, "not a positive duration"},
		{"", 0, "not a positive duration"},
		{"3000000h", 0, "longer than any run"},
	} {
		got, err := ParseDuration(c.in)
		switch {
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", c.in, got, err, c.want)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("ParseDuration(%q) error %v; want one saying %q", c.in, err, c.err)
		}
	}
}
