//go:build !linux

package main

import "io"

// superviseRun: runs are supervised on Linux only (see supervise_linux.go).
func superviseRun(args []string, stderr io.Writer) (int, bool) { return 0, false }

func announceRunDir(string) {}
