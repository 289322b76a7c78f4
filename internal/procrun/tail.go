package procrun

import (
	"github.com/benchrun/benchrun/internal/safetext"
	"io"
	"os"
	"regexp"
	"strings"
)

// startMarker begins each start's output in a log: Start writes it.
const startMarker = "benchrun: starting "

// TailLines is how many of a log's last lines a failure carries.
const TailLines = 20

// Tail returns up to n final lines of the log at path, each prefixed for
// display ("  | "): what a person needs to see when a program fails. It
// reads only the file's last 64 KiB; "" when there is no such file or it
// is empty.
func Tail(path string, n int) string { return FormatTail(readEnd(path, 64<<10), n) }

// startTail is Tail of what the last start wrote: the lines after the
// log's last "benchrun: starting" line (all of it when there is none).
func startTail(path string, n int) string { return FormatTail(sinceStart(readEnd(path, 64<<10)), n) }

// sinceStart cuts s to the lines after its last start marker.
func sinceStart(s string) string {
	i := strings.LastIndex(s, startMarker)
	if i < 0 || i > 0 && s[i-1] != '\n' {
		return s
	}
	if _, rest, ok := strings.Cut(s[i:], "\n"); ok {
		return rest
	}
	return ""
}

// readEnd reads the last max bytes of the file at path, made safe to
// print (safetext: a server's log may hold escape sequences that would
// clear the terminal, and bytes that are not UTF-8); "" on any error. The
// log itself keeps its bytes.
func readEnd(path string, max int64) string {
	if path == "" {
		return ""
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > max {
		if _, err := f.Seek(-max, io.SeekEnd); err != nil {
			return ""
		}
	}
	b, err := io.ReadAll(io.LimitReader(f, max))
	if err != nil {
		return ""
	}
	// A CRLF log's line ends are line ends, not a control to show.
	return safetext.String(strings.ReplaceAll(string(b), "\r\n", "\n"))
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

// errorLine matches a line that looks like an error. A program that dies
// at start-up often prints its real reason first ("flag provided but not
// defined: -x") and then a usage text longer than the tail.
var errorLine = regexp.MustCompile(`(?i)\berror\b|\bfatal\b|\bpanic\b|not defined|\bunknown (flag|option|argument|command|model|parameter)|\binvalid (argument|value|option|flag|parameter)|no such file|permission denied|address already in use|out of memory|segmentation fault|core dumped`)

// IsErrorLine says whether a program's output line looks like its
// reason for failing (an error, a fatal, an unknown flag), and not a
// structured log line below error level.
func IsErrorLine(l string) bool {
	return errorLine.MatchString(l) && !quietLine.MatchString(l)
}

// quietLine matches a structured log line below error level (Ollama's
// `level=WARN ... default=unknown`, `INFO`, `DEBUG`): words such as
// "unknown" in it are values, not the program's reason for dying.
var quietLine = regexp.MustCompile(`(?i)\blevel=(warn|warning|info|debug|trace)\b|^\S*\s*\[?(WARN|WARNING|INFO|DEBUG|TRACE)\]?[\s:]`)

// FirstErrorLine returns the first line of the last start's output (after
// benchrun's last "benchrun: starting" line) that looks like an error,
// leaving out benchrun's own lines; "" when there is none. It reads at
// most the log's last 4 MiB.
func FirstErrorLine(path string) string {
	for _, l := range strings.Split(sinceStart(readEnd(path, 4<<20)), "\n") {
		l = strings.TrimSpace(strings.TrimRight(l, "\r"))
		if l == "" || strings.HasPrefix(l, "benchrun: ") || strings.HasPrefix(l, "benchrun guard: ") {
			continue
		}
		if IsErrorLine(l) {
			return l
		}
	}
	return ""
}
