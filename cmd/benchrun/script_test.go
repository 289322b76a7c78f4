package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benchrun/benchrun/sinks/siyuan/siyuantest"
	"github.com/rogpeppe/go-internal/testscript"
)

var update = flag.Bool("update", false, "rewrite the golden outputs (cmp sections of testdata/script/*.txtar, want blocks of testdata/plans/broken/*.cue)")

// TestMain lets the test binary act as `benchrun` inside the scripts, so
// the CLI is built once (testscript.Main).
func TestMain(m *testing.M) {
	// Go tests that need a real benchrun process (signals) re-execute
	// this binary with the variable set.
	if os.Getenv("BENCHRUN_TEST_AS_MAIN") == "1" {
		os.Exit(benchrunMain(os.Args[1:], os.Stdout, os.Stderr))
	}
	testscript.Main(m, map[string]func(){
		"benchrun": func() { os.Exit(benchrunMain(os.Args[1:], os.Stdout, os.Stderr)) },
	})
}

// TestScripts runs the end-to-end CLI scripts in testdata/script: vet,
// graph, dry-run, list, schema, runs against the built-in simulator,
// interrupts and exit codes.
func TestScripts(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:           "testdata/script",
		UpdateScripts: *update,
		Setup: func(env *testscript.Env) error {
			env.Setenv("PLANS", filepath.Join(root, "plans"))
			env.Setenv("BROKEN", filepath.Join(root, "testdata", "plans", "broken"))
			env.Setenv("MODELS", filepath.Join(root, "testdata", "models"))
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"waitfor":   cmdWaitFor,
			"dialfails": cmdDialFails,
			"siyuan":    cmdSiYuan(t),
		},
	})
}

// cmdSiYuan drives a test SiYuan kernel from a script (a real kernel is
// AGPL-3.0 and cannot be installed here; siyuantest answers as the
// recorded v3.7.3 one does): `siyuan start` starts one and sets
// SIYUAN_URL and SIYUAN_TOKEN; `siyuan docs` prints each document as
// "HPATH key=value..." (its custom-benchrun-* attributes, sorted), one a
// line; `siyuan stop` stops it (connections refused from then on).
func cmdSiYuan(t *testing.T) func(ts *testscript.TestScript, neg bool, args []string) {
	var mu sync.Mutex
	kernels := map[*testscript.TestScript]*siyuantest.Kernel{}
	return func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: siyuan start|docs|stop")
		}
		mu.Lock()
		defer mu.Unlock()
		k := kernels[ts]
		if args[0] != "start" && k == nil {
			ts.Fatalf("siyuan %s: no kernel started", args[0])
		}
		switch args[0] {
		case "start":
			k = siyuantest.Start(t, siyuantest.Options{})
			kernels[ts] = k
			ts.Setenv("SIYUAN_URL", k.URL)
			ts.Setenv("SIYUAN_TOKEN", siyuantest.DefaultToken)
		case "docs":
			for _, d := range k.Docs() {
				var attrs []string
				for name, v := range d.Attrs {
					attrs = append(attrs, strings.TrimPrefix(name, "custom-benchrun-")+"="+v)
				}
				sort.Strings(attrs)
				fmt.Fprintln(ts.Stdout(), strings.TrimSpace(d.HPath+" "+strings.Join(attrs, " ")))
			}
		case "stop":
			k.Stop()
		default:
			ts.Fatalf("usage: siyuan start|docs|stop")
		}
	}
}

// cmdWaitFor waits (at most 20 s) until a file matching a glob exists and
// contains a string: `waitfor GLOB TEXT`. The scripts use it to send a signal at a
// known moment of a background run.
func cmdWaitFor(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: waitfor FILE TEXT")
	}
	pattern := ts.MkAbs(args[0])
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		matches, _ := filepath.Glob(pattern)
		for _, path := range matches {
			if b, err := os.ReadFile(path); err == nil && strings.Contains(string(b), args[1]) {
				if neg {
					ts.Fatalf("%s contains %q", path, args[1])
				}
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !neg {
		ts.Fatalf("%s: no file containing %q after 20s", args[0], args[1])
	}
}

var hostPortRE = regexp.MustCompile(`127\.0\.0\.1:[0-9]+`)

// cmdDialFails checks that nothing listens any more at the first
// 127.0.0.1:PORT written in a file matching a glob (a server's log):
// `dialfails GLOB`. The scripts use it to prove a launched server was
// stopped, not merely reported stopped. It retries for 5 s, because a
// process group killed a moment ago may still hold its socket.
func cmdDialFails(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: dialfails GLOB")
	}
	matches, _ := filepath.Glob(ts.MkAbs(args[0]))
	if len(matches) == 0 {
		ts.Fatalf("no file matches %s", args[0])
	}
	b, err := os.ReadFile(matches[0])
	ts.Check(err)
	addr := hostPortRE.FindString(string(b))
	if addr == "" {
		ts.Fatalf("%s names no 127.0.0.1:PORT", matches[0])
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
		if err != nil {
			ts.Logf("%s: %v", addr, err)
			return
		}
		c.Close()
		if time.Now().After(deadline) {
			ts.Fatalf("%s still accepts connections: the server was not stopped", addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
