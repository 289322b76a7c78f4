package procrun

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A server's log is its own bytes, but what benchrun prints of it (the
// tail under a death, the first error line) is made safe: an escape
// sequence in the log would clear the terminal or draw a fake summary,
// and latin-1 would reach the manifest and the rows' reasons. A CRLF log
// reads as lines.
func TestTailIsSafeToPrint(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.log")
	log := "starting\r\n\x1b[2J\x1b[32m✓ all good\x1b[0m\r\nerror: d\xe9faillante\n"
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	tail := Tail(path, 5)
	want := "  | starting\n  | \\x1b[2J\\x1b[32m✓ all good\\x1b[0m\n  | error: d\uFFFDfaillante"
	if tail != want {
		t.Errorf("tail:\n%q\nwant:\n%q", tail, want)
	}
	if got := FirstErrorLine(path); got != "error: d\uFFFDfaillante" {
		t.Errorf("first error line %q", got)
	}
	err := Failed(os.ErrClosed, path).Error()
	if strings.ContainsRune(err, 0x1b) || strings.Contains(err, "\xe9") {
		t.Errorf("the failure's text holds raw bytes of the log: %q", err)
	}
	if b, _ := os.ReadFile(path); string(b) != log {
		t.Errorf("the log itself was changed")
	}
}
