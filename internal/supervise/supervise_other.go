//go:build !linux

package supervise

import "os"

// Outcome is how a supervised worker ended (supervise_linux.go).
type Outcome struct {
	ExitCode  int
	Signal    os.Signal
	Forwarded bool
	Crashed   bool
	RunDir    string
	WaitErr   error
}

// Run: runs are supervised on Linux only (see supervise_linux.go).
func Run(args []string) (Outcome, bool) { return Outcome{}, false }

// AnnounceRunDir: no supervisor to tell off Linux.
func AnnounceRunDir(string) {}

// forwardedSignals: no supervisor forwards any off Linux.
var forwardedSignals chan os.Signal
