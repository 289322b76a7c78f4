package launch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/benchrun/benchrun/internal/procrun"
	"github.com/benchrun/benchrun/pipeline"
)

// versionTimeout bounds `<engine> --version`: it runs before the server
// starts, so a binary that takes --version for something else cannot
// hold the run up for long.
const versionTimeout = 3 * time.Second

// versionCommand says how to learn the version of the engine cmd starts,
// before it starts: the parser's name ("llama-server", "vllm", "ollama",
// "generic", or "sim" for `benchrun sim`, which needs no command) and the
// command to run. The engine is recognised by the binary cmd runs, not by
// the preset alone: `ssh host vllm serve` or `docker run ...` with the
// vllm preset would report ssh's or docker's version. It returns "" when
// the engine is not recognised; a shell command line is not parsed.
func versionCommand(cfg Config, argv []string) (string, []string) {
	if cfg.Shell || len(cfg.Cmd) == 0 {
		return "", nil
	}
	if cfg.Cmd[0] == "benchrun" {
		if len(cfg.Cmd) > 1 && cfg.Cmd[1] == "sim" {
			return "sim", nil
		}
		return "", nil
	}
	switch filepath.Base(argv[0]) {
	case "llama-server":
		return "llama-server", []string{argv[0], "--version"}
	case "vllm":
		return "vllm", []string{argv[0], "--version"}
	case "ollama":
		return "ollama", []string{argv[0], "--version"}
	case "sglang", "text-generation-launcher", "max":
		return "generic", []string{argv[0], "--version"}
	}
	// python3 -m sglang.launch_server / python -m vllm.entrypoints.openai.api_server:
	// ask the package's metadata (no import of the engine itself).
	if b := filepath.Base(argv[0]); strings.HasPrefix(b, "python") && len(argv) > 2 && argv[1] == "-m" {
		pkg, _, _ := strings.Cut(argv[2], ".")
		switch pkg {
		case "sglang", "vllm":
			return "generic", []string{argv[0], "-c", "import importlib.metadata as m; print(m.version(" + fmt.Sprintf("%q", pkg) + "))"}
		}
	}
	return "", nil
}

// engineVersion runs the engine's version command (before the server
// starts, with the server's environment: `ollama --version` asks the
// OLLAMA_HOST it is given) and parses its output. Best effort: "" on any
// failure, logged.
func (s *Stage) engineVersion(ctx context.Context, log io.Writer) string {
	parser, argv := versionCommand(s.cfg, s.argv)
	switch parser {
	case "":
		return ""
	case "sim":
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

var (
	// llama.cpp, common/arg.cpp: fprintf(stderr, "version: %d (%s)\n", LLAMA_BUILD_NUMBER, LLAMA_COMMIT).
	llamaVersion = regexp.MustCompile(`(?m)^version: (\d+) \(([0-9a-f]+)\)`)
	// Current llama.cpp: "version: 0.2.0-dev (build 7236, commit 3f545be)";
	// a source archive without git metadata: "(build 0, commit unknown)".
	llamaVersionBuild = regexp.MustCompile(`(?m)^version: (\S+) \(build (\d+), commit (\S+)\)`)
	// ollama, cmd/cmd.go versionHandler.
	ollamaClient = regexp.MustCompile(`client version is (\S+)`)
	ollamaServer = regexp.MustCompile(`ollama version is (\S+)`)
	// A line that is only a version (vllm --version: importlib.metadata's
	// version, "0.11.0" or "0.11.1.dev12+g1234abc").
	versionOnly = regexp.MustCompile(`^v?(\d+\.\d+(?:\.\d+)*(?:[.+-][0-9A-Za-z.+-]*)?)$`)
	// The first version-looking word anywhere ("text-generation-launcher 2.4.0").
	versionWord = regexp.MustCompile(`(?:^|[\s(])v?(\d+\.\d+(?:\.\d+)*(?:[.+-][0-9A-Za-z.+-]*)?)(?:$|[\s),])`)
)

// ParseVersion finds the engine's version in the output of its version
// command. Normalization: llama.cpp's build number becomes its release
// tag ("version: 6500 (abcdef0)" is "b6500", the name of the GitHub
// release of that build); Ollama's is the client's, the binary benchrun
// launches ("ollama version is 0.6.5", or "Warning: client version is
// 0.6.5" when no server answers); the others are the version as printed,
// without a leading "v". It returns "" when there is none.
func ParseVersion(parser, out string) string {
	switch parser {
	case "llama-server":
		if m := llamaVersion.FindStringSubmatch(out); m != nil {
			return "b" + m[1]
		}
		if m := llamaVersionBuild.FindStringSubmatch(out); m != nil {
			if m[2] != "0" {
				return "b" + m[2]
			}
			return m[1] // no build number: the version it names
		}
		return ""
	case "ollama":
		if m := ollamaClient.FindStringSubmatch(out); m != nil {
			return m[1]
		}
		if m := ollamaServer.FindStringSubmatch(out); m != nil {
			return m[1]
		}
		return ""
	}
	// vllm and the generic parser: the last line that is only a version
	// (vllm may log INFO lines first), else the first version-looking word.
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if m := versionOnly.FindStringSubmatch(strings.TrimSpace(lines[i])); m != nil {
			return m[1]
		}
	}
	if parser == "vllm" {
		return ""
	}
	if m := versionWord.FindStringSubmatch(out); m != nil {
		return m[1]
	}
	return ""
}
