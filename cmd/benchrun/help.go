package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/benchrun/benchrun/pipeline"
)

// wantsHelp reports whether args ask for help: -h, -help or --help
// anywhere among them.
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

// versionLine is benchrun's version as the build recorded it: the module
// version, the VCS revision and time (and whether the tree was
// modified), the Go version and the platform.
func versionLine() string {
	s := "benchrun " + pipeline.Version()
	if bi, ok := debug.ReadBuildInfo(); ok {
		var rev, at, modified string
		for _, kv := range bi.Settings {
			switch kv.Key {
			case "vcs.revision":
				rev = kv.Value
			case "vcs.time":
				at = kv.Value
			case "vcs.modified":
				if kv.Value == "true" {
					modified = ", modified"
				}
			}
		}
		if rev != "" {
			s += fmt.Sprintf(" (revision %s%s, %s)", rev, modified, at)
		} else {
			s += " (no VCS revision recorded: built outside a checkout, or with -buildvcs=false)"
		}
	}
	return s + fmt.Sprintf(" %s %s/%s", runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
