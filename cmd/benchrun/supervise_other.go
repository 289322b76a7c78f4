//go:build !linux

package main

import (
	"io"
	"os"
)

// superviseRun: runs are supervised on Linux only (see supervise_linux.go).
func superviseRun(args []string, stderr io.Writer) (int, bool) { return 0, false }

func announceRunDir(string) {}

// forwardedSignals: no supervisor forwards any off Linux.
var forwardedSignals chan os.Signal
