package launch

import (
	"io"
	"os"
	"strings"
)

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
