package remote_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/remote"
	"github.com/benchrun/benchrun/internal/remote/sshdtest"
	"github.com/benchrun/benchrun/internal/testkit"
)

// These run against a real OpenSSH server on loopback (sshdtest), so the
// "machine" is this one: a remote pid is checked with a second SSH
// session and, being local too, through /proc.

func machine(s *sshdtest.Server) remote.Machine {
	return remote.Machine{Host: "127.0.0.1", Port: s.Port, User: s.User, KeyFile: s.KeyFile, KeySource: "$TEST_KEY", HostKey: s.HostKey, Within: 10 * time.Second}
}

func dial(t *testing.T, m remote.Machine, known string) *remote.Client {
	t.Helper()
	c, err := remote.Dial(context.Background(), m, known)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// syncBuffer is the tests' synchronized buffer (testkit).
type syncBuffer = testkit.SyncBuffer

func TestRunStreamsOutput(t *testing.T) {
	s := sshdtest.Start(t)
	c := dial(t, machine(s), filepath.Join(t.TempDir(), "known_hosts"))
	dir := t.TempDir()
	var stdout, stderr syncBuffer
	// The first line must arrive while the program still runs: the output
	// is streamed, not collected at the end.
	p, err := c.Start(context.Background(), []string{"sh", "-c", `echo "first $GREETING in $(pwd)"; echo oops >&2; read -r _ <&0 || true; sleep 2; echo last; exit 3`},
		map[string]string{"GREETING": "hello 'quoted' world"}, dir, &stdout, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if p.Pid() <= 0 {
		t.Fatalf("pid = %d", p.Pid())
	}
	want := "first hello 'quoted' world in " + dir + "\n"
	testkit.WaitFor(t, 5*time.Second, "the first line streamed back", func() bool { return stdout.String() == want })
	select {
	case <-p.Done():
		t.Fatal("the program ended before its last line: the first was not streamed")
	default:
	}
	err = p.Wait()
	var ee interface{ ExitStatus() int }
	if !errors.As(err, &ee) || ee.ExitStatus() != 3 || p.ExitStatus() != "exit status 3" {
		t.Fatalf("Wait = %v (%s), want exit status 3", err, p.ExitStatus())
	}
	if stdout.String() != want+"last\n" || stderr.String() != "oops\n" {
		t.Fatalf("stdout %q, stderr %q", stdout.String(), stderr.String())
	}
	if strings.Contains(stdout.String(), "benchrun-remote-pid") {
		t.Fatal("the pid line reached the program's output")
	}
}

func TestProviderHostKeyMismatchIsRefused(t *testing.T) {
	s := sshdtest.Start(t)
	m := machine(s)
	m.HostKey = sshdtest.WriteKey(t, filepath.Join(t.TempDir(), "other"))
	start := time.Now()
	_, err := remote.Dial(context.Background(), m, filepath.Join(t.TempDir(), "known_hosts"))
	if !errors.Is(err, remote.ErrHostKey) || !strings.Contains(err.Error(), "the provider returned ssh-ed25519 SHA256:") {
		t.Fatalf("Dial = %v, want a host key mismatch with the provider's key", err)
	}
	if time.Since(start) > 3*time.Second {
		t.Errorf("a mismatch was retried for %s: it is final", time.Since(start))
	}
}

func TestTrustOnFirstUseIsRecordedThenEnforced(t *testing.T) {
	s := sshdtest.Start(t)
	m := machine(s)
	m.HostKey = ""
	known := filepath.Join(t.TempDir(), "run", "known_hosts")
	c := dial(t, m, known)
	c.Close()
	b, err := os.ReadFile(known)
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(s.HostKey)
	if want := fmt.Sprintf("[127.0.0.1]:%d %s %s\n", s.Port, fields[0], fields[1]); string(b) != want {
		t.Fatalf("known_hosts = %q, want %q", b, want)
	}
	// The same key again: accepted, not recorded twice.
	dial(t, m, known).Close()
	if b2, _ := os.ReadFile(known); !bytes.Equal(b, b2) {
		t.Fatalf("known_hosts grew on a second connection: %q", b2)
	}
	// The machine re-created with a new key on the same address.
	s.Stop()
	s.NewHostKey()
	s.Start()
	_, err = remote.Dial(context.Background(), m, known)
	if !errors.Is(err, remote.ErrHostKey) || !strings.Contains(err.Error(), "delete line 1 of "+known) {
		t.Fatalf("Dial = %v, want a changed host key naming %s", err, known)
	}
}

func TestWrongUserKeyIsRefused(t *testing.T) {
	s := sshdtest.Start(t)
	m := machine(s)
	m.KeyFile = filepath.Join(t.TempDir(), "stranger")
	sshdtest.WriteKey(t, m.KeyFile)
	start := time.Now()
	_, err := remote.Dial(context.Background(), m, "")
	if !errors.Is(err, remote.ErrAuth) || !strings.Contains(err.Error(), "from $TEST_KEY") || !strings.Contains(err.Error(), "authorized_keys") {
		t.Fatalf("Dial = %v, want the refused key named by its source", err)
	}
	if time.Since(start) > 3*time.Second {
		t.Errorf("a refused key was retried for %s: it is final", time.Since(start))
	}
}

func TestKeyMaterialStaysOutOfErrors(t *testing.T) {
	s := sshdtest.Start(t)
	key, err := os.ReadFile(s.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	// The key itself in the variable works like its path.
	m := machine(s)
	m.KeyFile = string(key)
	dial(t, m, "").Close()
	// A broken key, and one that is neither a path nor a key: the errors
	// say so without showing it.
	for _, v := range []string{string(key[:len(key)/2]), strings.Repeat("c2VjcmV0", 200)} {
		m.KeyFile = v
		_, err := remote.Dial(context.Background(), m, "")
		if err == nil || !strings.Contains(err.Error(), "$TEST_KEY") {
			t.Fatalf("Dial with a broken key = %v", err)
		}
		if strings.Contains(err.Error(), v[40:80]) {
			t.Fatalf("the error shows the key: %v", err)
		}
	}
}

func TestDialWaitsForSSH(t *testing.T) {
	s := sshdtest.New(t) // prepared, not listening yet: a pod still booting
	m := machine(s)
	go func() {
		time.Sleep(1500 * time.Millisecond)
		s.Start()
	}()
	start := time.Now()
	c, err := remote.Dial(context.Background(), m, "")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if d := time.Since(start); d < time.Second {
		t.Fatalf("connected after %s, before sshd started", d)
	}
	// And one that never comes up gives up at Within, with the last error.
	m.Port = sshdtest.FreePort(t)
	m.Within = time.Second
	_, err = remote.Dial(context.Background(), m, "")
	if err == nil || !strings.Contains(err.Error(), "not up after") || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("Dial to nothing = %v", err)
	}
}

// startTree starts a remote shell with a child and returns both pids.
func startTree(t *testing.T, c *remote.Client, ctx context.Context) (*remote.Process, int) {
	t.Helper()
	var out syncBuffer
	p, err := c.Start(ctx, []string{"sh", "-c", `trap '' INT; sleep 300 & echo child=$!; wait`}, nil, "", &out, nil)
	if err != nil {
		t.Fatal(err)
	}
	var child int
	testkit.WaitFor(t, 5*time.Second, "the child's pid", func() bool {
		v, ok := strings.CutPrefix(strings.TrimSpace(out.String()), "child=")
		child, _ = strconv.Atoi(v)
		return ok && child > 0
	})
	return p, child
}

func TestCancelKillsTheRemoteProcessGroup(t *testing.T) {
	s := sshdtest.Start(t)
	c := dial(t, machine(s), "")
	ctx, cancel := context.WithCancel(context.Background())
	p, child := startTree(t, c, ctx)
	// A second session sees it running.
	if alive, err := c.Alive(context.Background(), p.Pid()); err != nil || !alive {
		t.Fatalf("Alive before the cancel = %v, %v", alive, err)
	}
	cancel()
	testkit.WaitFor(t, 10*time.Second, "the session ending after the cancel", func() bool {
		select {
		case <-p.Done():
			return true
		default:
			return false
		}
	})
	if alive, err := c.Alive(context.Background(), p.Pid()); err != nil || alive {
		t.Fatalf("Alive after the cancel = %v, %v: the remote program survived", alive, err)
	}
	testkit.WaitFor(t, 5*time.Second, "the remote child gone (/proc)", func() bool { return testkit.Gone(child) && testkit.Gone(p.Pid()) })
	if !strings.HasPrefix(p.ExitStatus(), "signal: TERM") && p.ExitStatus() != "exit status 143" {
		t.Logf("exit status after the cancel: %s", p.ExitStatus())
	}
}

func TestStopEscalatesToKill(t *testing.T) {
	s := sshdtest.Start(t)
	c := dial(t, machine(s), "")
	var out syncBuffer
	// Ignores INT and TERM: only KILL ends it.
	p, err := c.Start(context.Background(), []string{"sh", "-c", `trap '' INT TERM; echo up; while :; do sleep 0.1; done`}, nil, "", &out, nil)
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 5*time.Second, "up", func() bool { return out.String() == "up\n" })
	// A stop is its graces and a few commands over SSH (a signal each,
	// then a last KILL to the group): bounded by what one command costs
	// on this machine now, measured before and after (a session, and a
	// shell there, take seconds beside CPU-bound neighbours).
	roundTrip := func() time.Duration {
		start := time.Now()
		if _, err := c.Output(context.Background(), "true"); err != nil {
			t.Fatal(err)
		}
		return time.Since(start)
	}
	rtt := roundTrip()
	graces := remote.Graces{Int: 200 * time.Millisecond, Term: 200 * time.Millisecond}
	start := time.Now()
	if err := p.Stop(context.Background(), graces); err != nil {
		t.Fatal(err)
	}
	d := time.Since(start)
	rtt = max(rtt, roundTrip())
	const commands = 4 // INT, TERM, KILL, and the group's last KILL
	if bound := graces.Int + graces.Term + (commands+1)*rtt + time.Second; d > bound {
		t.Errorf("stop took %s, past its graces (%s + %s) and %d commands of %s each: it waited for more than the graces", d, graces.Int, graces.Term, commands, rtt)
	}
	if p.ExitStatus() != "signal: KILL" {
		t.Errorf("exit status %q, want signal: KILL", p.ExitStatus())
	}
	testkit.WaitFor(t, 5*time.Second, "the program gone", func() bool { return testkit.Gone(p.Pid()) })
}

// TestLostConnectionKillsTheRemoteProcess is benchrun SIGKILLed (or the
// network gone): nobody sends a signal, and the watcher on the machine
// takes the program down when the session's stdin ends.
func TestLostConnectionKillsTheRemoteProcess(t *testing.T) {
	s := sshdtest.Start(t)
	c, err := remote.Dial(context.Background(), machine(s), "")
	if err != nil {
		t.Fatal(err)
	}
	p, child := startTree(t, c, context.Background())
	c.Close() // the connection dropped, no stop sent
	testkit.WaitFor(t, 15*time.Second, "the remote program and its child gone after the connection dropped", func() bool { return testkit.Gone(p.Pid()) && testkit.Gone(child) })
}

func TestMachineFrom(t *testing.T) {
	env := map[string]string{"POD_KEY": "/keys/pod"}
	m, err := remote.MachineFrom(&remote.SSH{Host: "10.0.0.9", Port: 2222, User: "ubuntu", KeyEnv: "POD_KEY", HostKey: "ssh-ed25519 AAAA"}, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if m.String() != "ubuntu@10.0.0.9:2222" || m.KeyFile != "/keys/pod" || m.KeySource != "$POD_KEY" || m.HostKey != "ssh-ed25519 AAAA" {
		t.Fatalf("machine = %+v", m)
	}
	for _, tt := range []struct {
		ssh  *remote.SSH
		want string
	}{
		{nil, "gives no machine"},
		{&remote.SSH{KeyEnv: "POD_KEY"}, "no SSH host"},
		{&remote.SSH{Host: "h", Port: 70000, KeyEnv: "POD_KEY"}, "SSH port 70000 is not a port"},
		{&remote.SSH{Host: "h"}, "no SSH key variable"},
		{&remote.SSH{Host: "h", KeyEnv: "UNSET"}, "$UNSET is not set"},
	} {
		if _, err := remote.MachineFrom(tt.ssh, func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("MachineFrom(%+v) = %v, want %q", tt.ssh, err, tt.want)
		}
	}
}

func TestFreePort(t *testing.T) {
	s := sshdtest.Start(t)
	c := dial(t, machine(s), "")
	port, err := c.FreePort()
	if err != nil || port <= 0 {
		t.Fatalf("FreePort = %d, %v", port, err)
	}
}

func TestRunStopsAtTheContextsEnd(t *testing.T) {
	s := sshdtest.Start(t)
	c := dial(t, machine(s), "")
	var out syncBuffer
	if err := c.Run(context.Background(), []string{"echo", "done"}, nil, "", &out, nil, remote.DefaultGraces); err != nil || out.String() != "done\n" {
		t.Fatalf("Run = %v, output %q", err, out.String())
	}
	ctx, cancel := context.WithTimeoutCause(context.Background(), 700*time.Millisecond, errors.New("the stage's timeout"))
	defer cancel()
	out = syncBuffer{}
	start := time.Now()
	err := c.Run(ctx, []string{"sh", "-c", "echo $$; exec sleep 300"}, nil, "", &out, nil, remote.Graces{Term: time.Second})
	if err == nil || !strings.Contains(err.Error(), "the stage's timeout") || time.Since(start) > 10*time.Second {
		t.Fatalf("Run past its context = %v after %s", err, time.Since(start))
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(out.String()))
	testkit.WaitFor(t, 5*time.Second, "the program gone", func() bool { return pid > 0 && testkit.Gone(pid) })
}
