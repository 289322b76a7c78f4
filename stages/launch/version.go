package launch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/benchrun/benchrun/internal/engines"
	"github.com/benchrun/benchrun/internal/procrun"
	"github.com/benchrun/benchrun/pipeline"
)

// versionTimeout bounds `<engine> --version`: it runs before the server
// starts, so a binary that takes --version for something else cannot
// hold the run up for long.
const versionTimeout = 3 * time.Second

// versionCommand says how to learn the version of the engine cmd starts,
// before it starts: the engine whose version parser reads the output (its
// descriptor's name, "generic" for an engine run as a Python module, or
// "sim" for `benchrun sim`, which needs no command) and the command to
// run. The engine is recognised by the binary cmd runs (a descriptor's
// Binaries), not by the preset alone: `ssh host vllm serve` or `docker
// run ...` with the vllm preset would report ssh's or docker's version.
// It returns "" when the engine is not recognised; a shell command line
// is not parsed.
func versionCommand(cfg Config, argv []string) (string, []string) {
	if cfg.Shell || len(cfg.Cmd) == 0 {
		return "", nil
	}
	if cfg.Cmd[0] == "benchrun" {
		if len(cfg.Cmd) > 1 && cfg.Cmd[1] == "sim" {
			return engines.Sim.Name, nil
		}
		return "", nil
	}
	base := filepath.Base(argv[0])
	for _, e := range engines.All() {
		if slices.Contains(e.Binaries, base) {
			return e.Name, []string{argv[0], "--version"}
		}
	}
	// python3 -m sglang.launch_server / python -m vllm.entrypoints.openai.api_server:
	// ask the package's metadata (no import of the engine itself).
	if strings.HasPrefix(base, "python") && len(argv) > 2 && argv[1] == "-m" {
		pkg, _, _ := strings.Cut(argv[2], ".")
		for _, e := range engines.All() {
			if e.PythonModule != "" && e.PythonModule == pkg {
				return genericParser, []string{argv[0], "-c", "import importlib.metadata as m; print(m.version(" + fmt.Sprintf("%q", pkg) + "))"}
			}
		}
	}
	return "", nil
}

// genericParser names the version parser of an engine benchrun has none
// for: engines.GenericVersion.
const genericParser = "generic"

// engineVersion runs the engine's version command (before the server
// starts, with the server's environment: `ollama --version` asks the
// OLLAMA_HOST it is given) and parses its output. Best effort: "" on any
// failure, logged.
func (s *Stage) engineVersion(ctx context.Context, log io.Writer) string {
	parser, argv := versionCommand(s.cfg, s.argv)
	switch parser {
	case "":
		return ""
	case engines.Sim.Name:
		v := pipeline.Version()
		fmt.Fprintf(log, "benchrun: engine version %s (benchrun sim is this benchrun)\n", v)
		return v
	}
	ctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	out, err := runVersion(ctx, argv, s.environ, s.dir)
	v := ParseVersion(parser, out)
	switch {
	case v != "":
		fmt.Fprintf(log, "benchrun: engine version %s (%s)\n", v, strings.Join(argv, " "))
	case err != nil:
		fmt.Fprintf(log, "benchrun: engine version unknown: %s: %v\n", strings.Join(argv, " "), err)
	default:
		fmt.Fprintf(log, "benchrun: engine version unknown: no version in the output of %s\n", strings.Join(argv, " "))
	}
	return v
}

// runVersion runs a short command (procrun.Run: in its own guarded
// process group, killed at once when ctx ends) and returns its stdout
// and stderr together.
func runVersion(ctx context.Context, argv, environ []string, dir string) (string, error) {
	var out bytes.Buffer
	err := procrun.Run(ctx, procrun.Spec{Argv: argv, Env: environ, Dir: dir, Stdout: &out, Stderr: &out}, 0)
	if errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("no answer within %s", versionTimeout)
	}
	return out.String(), err
}

// ParseVersion finds the engine's version in the output of its version
// command with the parser of the engine named parser (its descriptor's
// ParseVersion; "generic" or an engine without one: the first version
// anywhere, engines.GenericVersion). Normalization: llama.cpp's build
// number becomes its release tag ("version: 6500 (abcdef0)" is "b6500",
// the name of the GitHub release of that build); Ollama's is the
// client's, the binary benchrun launches ("ollama version is 0.6.5", or
// "Warning: client version is 0.6.5" when no server answers); the others
// are the version as printed, without a leading "v". It returns "" when
// there is none.
func ParseVersion(parser, out string) string {
	if e, ok := engines.Lookup(parser); ok {
		return e.Version(out)
	}
	return engines.GenericVersion(out)
}
