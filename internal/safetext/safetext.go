// Package safetext makes text from outside benchrun (servers, programs,
// files, flags) safe to write anywhere benchrun writes: valid UTF-8 (a
// proxy's latin-1 error page would make a Parquet file that DuckDB
// refuses, for the whole history a glob reads) and no control characters
// that a terminal obeys (a server's text can clear a screen or draw a
// fake green summary). Newlines and tabs stay; every other C0 control,
// DEL and the C1 controls are written as visible escapes (\x1b, \u009b).
package safetext

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// String returns s made safe: invalid UTF-8 bytes become U+FFFD, and
// control characters other than newline and tab become escapes. A safe s
// is returned as is.
func String(s string) string {
	if Safe(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteRune(utf8.RuneError)
		case control(r):
			if r < 0x80 {
				fmt.Fprintf(&b, `\x%02x`, r)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// Safe reports whether String would return s unchanged.
func Safe(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 { // beyond ASCII: decode (C1 controls are 0xc2 0x80-0x9f)
			return utf8.ValidString(s) && !strings.ContainsFunc(s, control)
		}
		if (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

func control(r rune) bool {
	return (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || (r >= 0x80 && r <= 0x9f)
}

// CSVField keeps a spreadsheet from reading a CSV text field as a
// formula: a field that starts with = + - @ (or a tab or carriage return,
// which some read past) gets a leading apostrophe, as OWASP advises for
// CSV. Text from servers and programs (an engine's version
// "=HYPERLINK(…)") reaches the CSV files and outputs; numbers are written
// apart and keep their sign.
func CSVField(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
