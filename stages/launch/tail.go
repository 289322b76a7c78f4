package launch

import (
	"io"
	"os"
	"regexp"
	"strings"
)

// startMarker begins each start's output in the server log.
const startMarker = "benchrun: starting "

// tailLines returns up to n final lines of the log at path, each prefixed
// for display: what a person needs to see when a server fails. It reads
// only the file's last 64 KiB.
func tailLines(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	const max = 64 << 10
	if fi, err := f.Stat(); err == nil && fi.Size() > max {
		if _, err := f.Seek(-max, io.SeekEnd); err != nil {
			return ""
		}
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return ""
	}
	return FormatTail(string(b), n)
}

// FormatTail keeps the last n non-empty lines of s, indented with "  | ".
func FormatTail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	if len(lines) == 1 && strings.TrimSpace(lines[0]) == "" {
		return ""
	}
	for i, l := range lines {
		lines[i] = "  | " + strings.TrimRight(l, "\r")
	}
	return strings.Join(lines, "\n")
}

// errorLine matches a line that looks like an error. A server that dies
// at start-up often prints its real reason first ("flag provided but not
// defined: -x") and then a usage text longer than the tail.
var errorLine = regexp.MustCompile(`(?i)\berror\b|\bfatal\b|\bpanic\b|not defined|\bunknown (flag|option|argument|command|model|parameter)|\binvalid (argument|value|option|flag|parameter)|no such file|permission denied|address already in use`)

// quietLine matches a structured log line below error level (Ollama's
// `level=WARN ... default=unknown`, `INFO`, `DEBUG`): words such as
// "unknown" in it are values, not the server's reason for dying.
var quietLine = regexp.MustCompile(`(?i)\blevel=(warn|warning|info|debug|trace)\b|^\S*\s*\[?(WARN|WARNING|INFO|DEBUG|TRACE)\]?[\s:]`)

// firstErrorLine returns the first line of the last start's output (after
// benchrun's last "benchrun: starting" line) that looks like an error,
// leaving out benchrun's own lines; "" when there is none. It reads at
// most the log's last 4 MiB.
func firstErrorLine(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	const max = 4 << 20
	if fi, err := f.Stat(); err == nil && fi.Size() > max {
		if _, err := f.Seek(-max, io.SeekEnd); err != nil {
			return ""
		}
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return ""
	}
	s := string(b)
	if i := strings.LastIndex(s, startMarker); i >= 0 {
		s = s[i:]
	}
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(strings.TrimRight(l, "\r"))
		if l == "" || strings.HasPrefix(l, "benchrun: ") || strings.HasPrefix(l, "benchrun guard: ") {
			continue
		}
		if errorLine.MatchString(l) && !quietLine.MatchString(l) {
			return l
		}
	}
	return ""
}
