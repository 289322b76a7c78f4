package procrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/machine/machinetest"
	"github.com/benchrun/benchrun/internal/testkit"

	"github.com/benchrun/benchrun/internal/procrun/procruntest"
	"github.com/benchrun/benchrun/internal/redact"
	"github.com/benchrun/benchrun/internal/redact/redacttest"
)

// The test binary doubles as a stand-in for benchrun: with helperEnv set
// to a directory it runs a program through the runner (how: helperModeEnv)
// and blocks until it is killed.
const (
	helperEnv     = "PROCRUN_TEST_HELPER_DIR"
	helperModeEnv = "PROCRUN_TEST_HELPER_MODE"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(helperEnv); dir != "" {
		os.Exit(helper(dir, os.Getenv(helperModeEnv)))
	}
	os.Exit(m.Run())
}

// family is a shell script that starts a child in its own process group
// and a daemon in its own session (setsid, its parent subshell gone, as a
// daemonizing wrapper does), writes the three pids to dir, and waits.
func family(dir string) string {
	return `sleep 300 & echo $! > ` + dir + `/child.pid; ` +
		`(setsid sleep 300 & echo $! > ` + dir + `/daemon.pid); ` +
		`echo $$ > ` + dir + `/shell.pid; wait`
}

var familyPids = []string{"shell.pid", "child.pid", "daemon.pid"}

func helper(dir, mode string) int {
	switch mode {
	case "start":
		if _, err := Start(Spec{Argv: []string{"sh", "-c", family(dir)}, LogPath: filepath.Join(dir, "p.log")}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	case "run":
		go func() {
			err := Run(context.Background(), Spec{Argv: []string{"sh", "-c", family(dir)}, LogPath: filepath.Join(dir, "p.log")}, time.Minute)
			fmt.Fprintln(os.Stderr, "Run returned:", err)
		}()
	case "outlive":
		go func() {
			_ = Run(context.Background(), Spec{OutlivesBenchrun: true, LogPath: filepath.Join(dir, "p.log"),
				Argv: []string{"sh", "-c", `echo $$ > ` + dir + `/shell.pid; sleep 1; echo finished > ` + dir + `/finished`}}, time.Minute)
		}()
	default:
		fmt.Fprintln(os.Stderr, "unknown mode", mode)
		return 2
	}
	select {} // until SIGKILL
}

// readPids waits up to ten seconds for every pid file in dir.
func readPids(t *testing.T, dir string, names ...string) []int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var pids []int
		for _, f := range names {
			b, _ := os.ReadFile(filepath.Join(dir, f))
			if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				pids = append(pids, n)
			}
		}
		if len(pids) == len(names) {
			return pids
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid files %v never all appeared in %s", names, dir)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// killAtEnd makes sure a failing test leaves nothing behind.
func killAtEnd(t *testing.T, pids ...int) {
	t.Cleanup(func() {
		for _, pid := range pids {
			if !testkit.Gone(pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
}

// TestParentSIGKILLLeavesNoSurvivor SIGKILLs a stand-in for benchrun that
// runs a program (started, or run to its end) whose shell has a child in
// its group and a daemon in a session of its own: the guard's parent-death
// signal must take all of them down.
func TestParentSIGKILLLeavesNoSurvivor(t *testing.T) {
	for _, mode := range []string{"start", "run"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			self, _ := os.Executable()
			cmd := exec.Command(self, "-test.run=^$")
			cmd.Env = append(os.Environ(), helperEnv+"="+dir, helperModeEnv+"="+mode)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pids := readPids(t, dir, familyPids...)
			killAtEnd(t, pids...)
			// $! is known as soon as the shell forks: setsid may be yet to run.
			for deadline := time.Now().Add(5 * time.Second); session(pids[2]) != pids[2] && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
			if sid := session(pids[2]); sid != pids[2] {
				t.Fatalf("the daemon's session is %d, want its own (%d): the test would not test setsid", sid, pids[2])
			}
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			testkit.WaitGone(t, "after the stand-in's SIGKILL", pids...)
			if strings.Contains(stderr.String(), "Run returned") {
				t.Errorf("Run returned before the stand-in was killed: %s", stderr.String())
			}
		})
	}
}

// TestOutlivesBenchrun: a command run with OutlivesBenchrun (provision's
// teardown) finishes although the stand-in running it is SIGKILLed.
func TestOutlivesBenchrun(t *testing.T) {
	dir := t.TempDir()
	self, _ := os.Executable()
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+dir, helperModeEnv+"=outlive")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pids := readPids(t, dir, "shell.pid")
	killAtEnd(t, pids...)
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	if _, err := os.Stat(filepath.Join(dir, "finished")); err == nil {
		t.Fatal("the command finished before the stand-in was killed: the test tests nothing")
	}
	waitFile(t, filepath.Join(dir, "finished"), "finished")
}

// session is the session id of pid, from /proc/PID/stat.
func session(pid int) int {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 4 {
		return 0
	}
	n, _ := strconv.Atoi(f[3])
	return n
}

// syncBuffer is the tests' synchronized buffer (testkit).
type syncBuffer = testkit.SyncBuffer

func waitFile(t *testing.T, path, want string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never said %q:\n%s", path, want, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestStopEscalates: a program that ignores SIGINT and SIGTERM is killed
// after the two graces, each escalation said on the progress writer and
// in the log, and nothing of its group is left.
func TestStopEscalates(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "server.log")
	var progress syncBuffer
	script := `trap 'echo ignored INT' INT; trap 'echo ignored TERM' TERM; sleep 300 & echo $! > child.pid; echo traps" "set; while :; do sleep 0.05; done`
	p, err := Start(Spec{Argv: []string{"sh", "-c", script}, Dir: dir, LogPath: log, Name: "server", Noun: "server", Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	waitFile(t, log, "traps set")
	child := readPids(t, dir, "child.pid")[0]
	killAtEnd(t, child)
	start := time.Now()
	if err := p.Stop(context.Background(), Graces{Int: 300 * time.Millisecond, Term: 300 * time.Millisecond, IntName: "stop_grace", TermName: "term_grace"}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 600*time.Millisecond || d > 3*time.Second {
		t.Errorf("stop took %s, want about 600ms", d)
	}
	select {
	case <-p.Done():
	default:
		t.Fatal("Stop returned before the program ended")
	}
	if got := p.ExitStatus(); got != "signal: killed" {
		t.Errorf("exit status %q, want signal: killed", got)
	}
	testkit.WaitGone(t, "after Stop", child)
	if left := procruntest.LiveInGroup(p.Pid()); len(left) > 0 {
		t.Errorf("the group still has %v", left)
	}
	for _, want := range []string{"  server: still running 3", "ms after SIGINT; sending SIGTERM\n", "ms after SIGTERM; sending SIGKILL\n"} {
		if !strings.Contains(progress.String(), want) {
			t.Errorf("progress lacks %q:\n%s", want, progress.String())
		}
	}
	b, _ := os.ReadFile(log)
	for _, want := range []string{
		"benchrun: starting sh -c ",
		"ignored INT", "ignored TERM",
		"benchrun: server still running 3",
		"benchrun: SIGKILL was needed to stop the server: it ignored SIGINT (stop_grace 300ms) and SIGTERM (term_grace 300ms)",
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the log lacks %q:\n%s", want, b)
		}
	}
	if err := p.Stop(context.Background(), Graces{}); err != nil {
		t.Errorf("a second Stop: %v", err)
	}
}

// TestRunTimeoutKillsTheGroup: a command past its timeout is stopped, its
// whole group (a child in it, a daemon that left it) gone when Run
// returns, with an error that wraps ErrTimeout and says the timeout.
func TestRunTimeoutKillsTheGroup(t *testing.T) {
	machine := machinetest.Start()
	dir := t.TempDir()
	start := time.Now()
	// The timeout leaves the family time to start and write its pids on a
	// busy machine: what is checked is what is left after it.
	err := Run(context.Background(), Spec{Argv: []string{"sh", "-c", family(dir)}, LogPath: filepath.Join(dir, "c.log"),
		Graces: Graces{Int: 200 * time.Millisecond, Term: 200 * time.Millisecond}}, 2*time.Second)
	took := time.Since(start)
	if !errors.Is(err, ErrTimeout) || !strings.HasPrefix(err.Error(), "timed out after 2s") {
		t.Fatalf("err = %v, want one wrapping ErrTimeout", err)
	}
	var perr *Error
	if !errors.As(err, &perr) {
		t.Fatalf("err is %T, want *Error", err)
	}
	pids := readPids(t, dir, familyPids...)
	killAtEnd(t, pids...)
	for _, pid := range pids {
		if !testkit.Gone(pid) {
			t.Errorf("pid %d outlived Run", pid)
		}
	}
	// The timeout, then the two graces and the kill: well under 3 s more
	// on a quiet machine.
	if took > 5*time.Second {
		t.Logf("Run took %s", took)
		machine.Judge(t, "a timed-out Run returns within 3 s of its timeout")
		t.Errorf("Run took %s", took)
	}
}

// TestRunLeavesNoDaemon: a child that starts its own session and whose
// parent exits is gone once Run returns, whether the command ended by
// itself or was cancelled.
func TestRunLeavesNoDaemon(t *testing.T) {
	for _, tt := range []struct {
		name, script string
		cancel       bool
	}{
		{"ended", `(setsid sleep 300 & echo $! > daemon.pid); exit 0`, false},
		{"cancelled", `(setsid sh -c 'trap "" INT TERM; echo $$ > daemon.pid; while :; do sleep 0.05; done' &); sleep 300`, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancel {
				go func() {
					readPids(t, dir, "daemon.pid")
					cancel()
				}()
			}
			err := Run(ctx, Spec{Argv: []string{"sh", "-c", tt.script}, Dir: dir, LogPath: filepath.Join(dir, "c.log"),
				Graces: Graces{Int: 200 * time.Millisecond, Term: 200 * time.Millisecond}}, time.Minute)
			if tt.cancel {
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("err = %v, want one wrapping context.Canceled", err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			pid := readPids(t, dir, "daemon.pid")[0]
			killAtEnd(t, pid)
			if !testkit.Gone(pid) {
				t.Fatalf("the daemon (pid %d) outlived Run", pid)
			}
		})
	}
}

// TestRunFailureCarriesTheLog: a failing command's error wraps its exit
// error and carries the log's first error line and tail; stdout captured
// apart from the log stays out of it.
func TestRunFailureCarriesTheLog(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "c.log")
	var stdout bytes.Buffer
	script := `echo id=42; echo "error: no such flavour" >&2; i=0; while [ $i -lt 25 ]; do echo "  usage line $i" >&2; i=$((i+1)); done; exit 3`
	err := Run(context.Background(), Spec{Argv: []string{"sh", "-c", script}, LogPath: log, Stdout: &stdout}, time.Minute)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Fatalf("err = %v, want one wrapping exit status 3", err)
	}
	var perr *Error
	if !errors.As(err, &perr) {
		t.Fatalf("err is %T, want *Error", err)
	}
	first, rest, _ := strings.Cut(err.Error(), "\n")
	if want := "exit status 3; first error in c.log: error: no such flavour; last lines of c.log:"; first != want {
		t.Errorf("first line %q\nwant       %q", first, want)
	}
	if rest != perr.Detail() || strings.Count(rest, "\n") != TailLines-1 || !strings.HasSuffix(rest, "  |   usage line 24") {
		t.Errorf("detail:\n%s", rest)
	}
	if stdout.String() != "id=42\n" {
		t.Errorf("stdout %q", stdout.String())
	}
	if b, _ := os.ReadFile(log); strings.Contains(string(b), "\nid=42\n") {
		t.Errorf("stdout reached the log:\n%s", b)
	}
}

// TestStartFailures: a missing program is an error wrapping exec's.
func TestStartFailures(t *testing.T) {
	_, err := Start(Spec{Argv: []string{"no-such-program-xyz"}})
	if !errors.Is(err, exec.ErrNotFound) || !strings.HasPrefix(err.Error(), "starting no-such-program-xyz: ") {
		t.Fatalf("err = %v", err)
	}
	err = Run(context.Background(), Spec{Argv: []string{"no-such-program-xyz"}}, time.Second)
	if !errors.Is(err, exec.ErrNotFound) {
		t.Fatalf("Run: err = %v", err)
	}
}

// TestExitStatus: the guard hands on how the program ended.
func TestExitStatus(t *testing.T) {
	for _, tt := range []struct{ script, want string }{
		{"exit 0", "exit status 0"},
		{"exit 7", "exit status 7"},
		{"kill -9 $$", "signal: killed"},
	} {
		p, err := Start(Spec{Argv: []string{"sh", "-c", tt.script}})
		if err != nil {
			t.Fatal(err)
		}
		<-p.Done()
		if got := p.ExitStatus(); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.script, got, tt.want)
		}
	}
}

func TestCommandLine(t *testing.T) {
	if got := CommandLine([]string{"echo", "$HOME", "&&", "true"}, true); strings.Join(got, "|") != "/bin/sh|-c|echo $HOME && true" {
		t.Errorf("shell: %q", got)
	}
	self, _ := os.Executable()
	if got := CommandLine([]string{"benchrun", "sim"}, false); got[0] != self || got[1] != "sim" {
		t.Errorf("benchrun: %q", got)
	}
}

func TestTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.log")
	if got := Tail(path, 3); got != "" {
		t.Errorf("no file: %q", got)
	}
	os.WriteFile(path, []byte("a\nb\r\nc\nd\n"), 0o644)
	if got := Tail(path, 3); got != "  | b\n  | c\n  | d" {
		t.Errorf("tail %q", got)
	}
	// A failure's tail is what the last start wrote.
	os.WriteFile(path, []byte("before\nbenchrun: starting x\nold\nbenchrun: starting y\nnew 1\nnew 2\n"), 0o644)
	if got := startTail(path, 3); got != "  | new 1\n  | new 2" {
		t.Errorf("start tail %q", got)
	}
	if got := Tail(path, 3); got != "  | benchrun: starting y\n  | new 1\n  | new 2" {
		t.Errorf("tail %q", got)
	}
}

// A structured warning is not the first error: Ollama logs
// `level=WARN ... key=general.type default=unknown` on every start.
func TestFirstErrorLineSkipsWarnings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.log")
	log := "benchrun: starting old\nerror: an earlier start's\nbenchrun: starting ollama serve\n" +
		"time=2026-12-01T11:15:38Z level=WARN source=ggml.go:152 msg=\"key not found\" key=general.type default=unknown\n" +
		"time=2026-12-01T11:15:39Z level=INFO msg=\"invalid option ignored\"\n" +
		"llama_model_loader: - kv   6:            tokenizer.ggml.unknown_token_id u32              = 0\n" +
		"Error: listen tcp 127.0.0.1:1: bind: permission denied\n"
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := FirstErrorLine(path); got != "Error: listen tcp 127.0.0.1:1: bind: permission denied" {
		t.Fatalf("first error %q", got)
	}
}

// TestLogMaskedAsWritten: when the run sends secrets, a program's output
// reaches its log masked as it is written: a server that prints the key
// leaves no copy in the file while it runs (benchrun killed before its
// end-of-run scrub kept it there), and a failure's tail still carries the
// last lines.
func TestLogMaskedAsWritten(t *testing.T) {
	redacttest.Reset()
	defer redacttest.Reset()
	const key = "sk-live-0123456789abcdef"
	redact.Add(key)
	dir := t.TempDir()
	log := filepath.Join(dir, "server.log")
	p, err := Start(Spec{Argv: []string{"sh", "-c", "echo starting with key " + key + "; echo ready; sleep 30"}, LogPath: log})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(context.Background(), Graces{})
	var b []byte
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(string(b), "ready"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the program never wrote its log:\n%s", b)
		}
		b, _ = os.ReadFile(log)
	}
	if strings.Contains(string(b), key) || !strings.Contains(string(b), "starting with key "+redact.Mask) {
		t.Errorf("the log while the program runs:\n%s", b)
	}
	err = Run(context.Background(), Spec{Argv: []string{"sh", "-c", "echo failing with " + key + " >&2; exit 3"}, LogPath: filepath.Join(dir, "c.log")}, time.Minute)
	if err == nil || strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "failing with "+redact.Mask) {
		t.Errorf("a failure's tail: %v", err)
	}
}
