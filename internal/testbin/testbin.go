// Package testbin builds the real benchrun binary for tests that drive it
// as a user would (a subprocess over real HTTP), once per test process.
package testbin

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

var (
	once sync.Once
	dir  string
	bin  string
	err  error
)

// Benchrun returns the path of a benchrun binary built from this checkout,
// building it on first use. The build failing fails the test.
func Benchrun(t testing.TB) string {
	t.Helper()
	path, err := Build()
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// Build builds the binary once and returns its path (for TestMain).
func Build() (string, error) {
	once.Do(func() {
		dir, err = os.MkdirTemp("", "benchrun-bin-")
		if err != nil {
			return
		}
		bin = filepath.Join(dir, "benchrun")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		// By import path, so it works from any package's directory.
		out, berr := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/benchrun/benchrun/cmd/benchrun").CombinedOutput()
		if berr != nil {
			err = fmt.Errorf("building benchrun: %w\n%s", berr, out)
		}
	})
	return bin, err
}

// Main is a TestMain for packages whose tests all drive the binary: it
// builds it into *binary, runs the tests, removes it, and exits.
func Main(m *testing.M, binary *string) {
	var err error
	if *binary, err = Build(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	Cleanup()
	os.Exit(code)
}

// Cleanup removes the built binary; call it from TestMain after m.Run.
func Cleanup() {
	if dir != "" {
		os.RemoveAll(dir)
	}
}
