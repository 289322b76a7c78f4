package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
)

// Graces are the waits of a stop: after SIGINT (0 skips SIGINT), then
// after SIGTERM; SIGKILL follows. They mirror procrun.Graces.
type Graces struct {
	Int, Term time.Duration
}

// DefaultGraces are a stop's graces when nothing configures them.
var DefaultGraces = Graces{Term: 5 * time.Second}

// killGrace is how long a stop waits for the session to end after SIGKILL.
const killGrace = 5 * time.Second

// WatchGrace is how long the watcher beside a remote program waits
// between SIGTERM and SIGKILL once the connection to benchrun is gone.
const WatchGrace = 5 * time.Second

// Process is one program started on the machine.
type Process struct {
	c     *Client
	sess  *ssh.Session
	stdin io.WriteCloser // held open: its end tells the watcher benchrun is gone
	pid   int            // the remote program's, which leads its process group
	argv0 string

	done chan struct{}
	err  error // the session's end, once done is closed

	stopMu sync.Mutex
}

// pidMarker starts the line the remote shell prints its pid on, before
// the program replaces it.
const pidMarker = "benchrun-remote-pid "

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Start runs argv on the machine in dir ("" is the login directory) with
// env added to the login environment, in a session without a PTY, its
// stdout and stderr written to stdout and stderr as they arrive. It
// returns once the remote program has started (its pid known). The
// program leads its own process group there (sshd starts each session's
// command in a new session); when ctx ends it is stopped (DefaultGraces).
// Beside it runs a watcher that reads the session's stdin, which benchrun
// holds open: when the connection drops (benchrun killed, the network
// gone) the watcher gets end-of-file and takes the group down with
// SIGTERM, then SIGKILL after WatchGrace. A launched server that must
// outlive ctx is started with context.Background() and stopped with Stop.
func (c *Client) Start(ctx context.Context, argv []string, env map[string]string, dir string, stdout, stderr io.Writer) (*Process, error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, errors.New("ssh: the command is empty")
	}
	script, err := startScript(argv, env, dir)
	if err != nil {
		return nil, err
	}
	s, err := c.session(ctx)
	if err != nil {
		return nil, fmt.Errorf("ssh %s: %w", c.m, err)
	}
	stdin, err := s.StdinPipe()
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("ssh %s: %w", c.m, err)
	}
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	sniff := &pidSniffer{w: stdout, found: make(chan int, 1)}
	s.Stdout, s.Stderr = sniff, stderr
	// The login shell runs the command line; /bin/sh runs the script, so
	// that a login shell of another family (fish, csh) reads only a quoted
	// word. exec keeps the pid: the shell's $$ is the program's.
	if err := s.Start("exec /bin/sh -c " + shQuote(script)); err != nil {
		s.Close()
		return nil, fmt.Errorf("ssh %s: starting %s: %w", c.m, argv[0], err)
	}
	p := &Process{c: c, sess: s, stdin: stdin, argv0: argv[0], done: make(chan struct{})}
	go func() {
		p.err = s.Wait()
		stdin.Close()
		s.Close()
		close(p.done)
	}()
	select {
	case p.pid = <-sniff.found:
	case <-p.done:
		// A quick program may have said its pid and ended already.
		select {
		case p.pid = <-sniff.found:
			return p, nil
		default:
		}
		return nil, fmt.Errorf("ssh %s: %s ended before it started: %s", c.m, argv[0], p.ExitStatus())
	case <-ctx.Done():
		s.Close()
		return nil, fmt.Errorf("ssh %s: starting %s: %w", c.m, argv[0], context.Cause(ctx))
	case <-time.After(30 * time.Second):
		s.Close()
		return nil, fmt.Errorf("ssh %s: starting %s: the remote shell did not say its pid within 30s", c.m, argv[0])
	}
	go func() {
		select {
		case <-ctx.Done():
			p.Stop(context.WithoutCancel(ctx), DefaultGraces)
		case <-p.done:
		}
	}()
	return p, nil
}

// startScript is what /bin/sh runs on the machine: print the pid, start
// the watcher on a copy of stdin, go to dir, export env, and exec the
// program with stdin from /dev/null (the watcher's stdin is the signal).
func startScript(argv []string, env map[string]string, dir string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "printf '%%s%%s\\n' %s \"$$\"\n", shQuote(pidMarker))
	// A background list's stdin is /dev/null unless redirected: the
	// watcher gets the session's through fd 3. It ignores the signals it
	// sends its own group, and ends with SIGKILL to it, itself included.
	fmt.Fprintf(&b, "exec 3<&0\n( trap '' INT TERM HUP; while read -r _; do :; done; kill -TERM -$$ 2>/dev/null; sleep %d; kill -KILL -$$ 2>/dev/null ) <&3 >/dev/null 2>&1 &\nexec 3<&-\n", int(WatchGrace/time.Second))
	if dir != "" {
		fmt.Fprintf(&b, "cd %s || exit 127\n", shQuote(dir))
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		if !envName.MatchString(k) {
			return "", fmt.Errorf("ssh: environment variable name %q is not a shell name", k)
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		// export in the script, not env(1) on the command line: a value
		// (a token) stays out of the machine's process list.
		fmt.Fprintf(&b, "export %s=%s\n", k, shQuote(env[k]))
	}
	words := make([]string, len(argv))
	for i, a := range argv {
		words[i] = shQuote(a)
	}
	fmt.Fprintf(&b, "exec %s </dev/null\n", strings.Join(words, " "))
	return b.String(), nil
}

// shQuote quotes s for sh as one word.
func shQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:@,+%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// pidSniffer passes the program's stdout on, after taking the remote
// shell's pid line out of it (lines before it, a login script's chatter,
// are passed on too).
type pidSniffer struct {
	w     io.Writer
	found chan int
	mu    sync.Mutex
	done  bool
	buf   []byte
}

func (p *pidSniffer) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return p.w.Write(b)
	}
	n := len(b)
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			return n, nil
		}
		line := p.buf[:i]
		if rest, ok := bytes.CutPrefix(line, []byte(pidMarker)); ok {
			if pid, err := strconv.Atoi(string(rest)); err == nil {
				p.done = true
				p.found <- pid
				after := p.buf[i+1:]
				p.buf = nil
				if len(after) > 0 {
					if _, err := p.w.Write(after); err != nil {
						return n, err
					}
				}
				return n, nil
			}
		}
		if _, err := p.w.Write(p.buf[:i+1]); err != nil {
			return n, err
		}
		p.buf = p.buf[i+1:]
	}
}

// Pid is the remote program's pid (on the machine, not here), which is
// also its process group's id there.
func (p *Process) Pid() int { return p.pid }

// Done is closed when the session ends: the program exited, was stopped,
// or the connection was lost.
func (p *Process) Done() <-chan struct{} { return p.done }

// Wait waits for the session to end and returns how: nil for exit status
// 0, an error wrapping *ssh.ExitError (a status or a signal) or
// *ssh.ExitMissingError (the connection was lost) otherwise.
func (p *Process) Wait() error {
	<-p.done
	if p.err == nil {
		return nil
	}
	return fmt.Errorf("%s on %s: %s: %w", p.argv0, p.c.m.Host, p.ExitStatus(), p.err)
}

// ExitStatus says how the program ended, or "running".
func (p *Process) ExitStatus() string {
	select {
	case <-p.done:
	default:
		return "running"
	}
	var ee *ssh.ExitError
	var em *ssh.ExitMissingError
	switch {
	case p.err == nil:
		return "exit status 0"
	case errors.As(p.err, &ee) && ee.Signal() != "":
		return "signal: " + ee.Signal()
	case errors.As(p.err, &ee):
		return fmt.Sprintf("exit status %d", ee.ExitStatus())
	case errors.As(p.err, &em):
		return "the SSH session ended without an exit status (the connection was lost, or the program was killed)"
	default:
		return p.err.Error()
	}
}

// Kill stops the program with DefaultGraces (SIGTERM, then SIGKILL).
func (p *Process) Kill() error { return p.Stop(context.Background(), DefaultGraces) }

// Stop stops the program's whole process group on the machine: SIGINT
// (when g.Int > 0), SIGTERM, SIGKILL, waiting g.Int and g.Term for the
// session to end between them, and then SIGKILL to whatever of the group
// is left (a child that outlived the program). A lost connection is
// redialled for it. It returns an error only when the machine could not
// be told, or the session did not end after SIGKILL.
func (p *Process) Stop(ctx context.Context, g Graces) error {
	p.stopMu.Lock()
	defer p.stopMu.Unlock()
	wait := func(d time.Duration) bool {
		select {
		case <-p.done:
			return true
		case <-time.After(d):
			return false
		}
	}
	var sendErr error
	send := func(sig string) {
		if err := p.signal(ctx, sig); err != nil && sendErr == nil {
			sendErr = err
		}
	}
	if !wait(0) {
		if g.Int > 0 {
			send("INT")
		}
		if !wait(g.Int) {
			send("TERM")
			if !wait(g.Term) {
				send("KILL")
				if !wait(killGrace) {
					p.sess.Close()
					if sendErr != nil {
						return sendErr
					}
					return fmt.Errorf("ssh %s: %s (pid %d there) did not end %s after SIGKILL", p.c.m, p.argv0, p.pid, killGrace)
				}
			}
		}
	}
	// The group outlives its leader when a child stays behind (holding no
	// output); nothing of it may keep the machine busy.
	p.signal(ctx, "KILL")
	return sendErr
}

// signal sends sig to the remote process group (or the process, where the
// group is already gone). "No such process" is not an error: the program
// ended meanwhile.
func (p *Process) signal(ctx context.Context, sig string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := fmt.Sprintf("kill -%s -%d 2>/dev/null || kill -%s %d 2>/dev/null; true", sig, p.pid, sig, p.pid)
	if _, err := p.c.Output(ctx, cmd); err != nil {
		return fmt.Errorf("ssh %s: sending SIG%s to %s (pid %d there): %w", p.c.m, sig, p.argv0, p.pid, err)
	}
	return nil
}

// Alive reports whether the remote program (pid) is still running, asking
// the machine.
func (c *Client) Alive(ctx context.Context, pid int) (bool, error) {
	out, err := c.Output(ctx, fmt.Sprintf("kill -0 %d 2>/dev/null && echo alive || echo gone", pid))
	if err != nil {
		return false, err
	}
	return strings.TrimSpace(string(out)) == "alive", nil
}

// Run runs argv on the machine to its end (Start, then Wait), as an exec
// stage runs a benchmark: when ctx ends (the stage's timeout, an
// interrupt) the program is stopped there with g, and Run returns ctx's
// cause wrapped; otherwise Wait's error.
func (c *Client) Run(ctx context.Context, argv []string, env map[string]string, dir string, stdout, stderr io.Writer, g Graces) error {
	// Its own stop, with g, rather than Start's (DefaultGraces).
	p, err := c.Start(context.WithoutCancel(ctx), argv, env, dir, stdout, stderr)
	if err != nil {
		return err
	}
	select {
	case <-p.Done():
		return p.Wait()
	case <-ctx.Done():
		stopErr := p.Stop(context.WithoutCancel(ctx), g)
		if stopErr != nil {
			return fmt.Errorf("%s on %s: %w (and stopping it: %w)", argv[0], c.m.Host, context.Cause(ctx), stopErr)
		}
		return fmt.Errorf("%s on %s: stopped (%s): %w", argv[0], c.m.Host, p.ExitStatus(), context.Cause(ctx))
	}
}

// ExitCode is the exit status of the remote program in err (Run's or
// Wait's), or -1 when err carries none (a signal, a lost connection, a
// stop). 127 is the shell's "command not found": the program is not
// installed on the machine.
func ExitCode(err error) int {
	var ee *ssh.ExitError
	if errors.As(err, &ee) && ee.Signal() == "" {
		return ee.ExitStatus()
	}
	return -1
}
