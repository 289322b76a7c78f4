// Package sshdtest starts a throwaway OpenSSH server for tests: Debian's
// openssh-server (/usr/sbin/sshd), on a free loopback port, with a host
// key, a user key and every file of its own in a temporary directory,
// logging in the current user. It never touches the machine's own sshd
// or its configuration. Tests skip, saying why, when sshd is missing
// (./test.sh installs it).
package sshdtest

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// Server is one sshd.
type Server struct {
	Port    int
	User    string
	Dir     string
	KeyFile string // the user's private key (OpenSSH format)
	// HostKey is the server's public host key, authorized_keys format.
	HostKey string

	t       testing.TB
	bin     string
	config  string
	hostKey string // its private host key's path
	cmd     *exec.Cmd
	log     *os.File
}

// Binary is sshd's path, or "" when it is not installed.
func Binary() string {
	for _, p := range []string{"/usr/sbin/sshd", "/usr/local/sbin/sshd"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("sshd"); err == nil {
		return p
	}
	return ""
}

// New prepares a server (keys and config, nothing listening yet): Start
// starts it. It skips the test when sshd is missing.
func New(t testing.TB) *Server {
	t.Helper()
	bin := Binary()
	if bin == "" {
		t.Skip("sshd not found (install Debian's openssh-server: ./test.sh does): the SSH tests run against a real OpenSSH server")
	}
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		// sshd run by root wants its privilege separation directory; it
		// is empty and harmless.
		if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
			t.Skipf("sshd as root needs /run/sshd: %v", err)
		}
	}
	dir := t.TempDir()
	s := &Server{t: t, bin: bin, Dir: dir, User: u.Username, Port: FreePort(t)}
	s.hostKey = filepath.Join(dir, "host_ed25519")
	s.HostKey = WriteKey(t, s.hostKey)
	s.KeyFile = filepath.Join(dir, "user_ed25519")
	pub := WriteKey(t, s.KeyFile)
	s.Authorize(pub)
	s.config = filepath.Join(dir, "sshd_config")
	s.writeConfig()
	t.Cleanup(s.Stop)
	return s
}

// Start starts a prepared server (also after Stop, on the same port) and
// waits until it accepts connections.
func Start(t testing.TB) *Server {
	s := New(t)
	s.Start()
	return s
}

func (s *Server) writeConfig() {
	cfg := fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
HostKey %s
PidFile %s
AuthorizedKeysFile %s
UsePAM no
StrictModes no
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
PermitRootLogin prohibit-password
AllowUsers %s
AllowTcpForwarding yes
LogLevel VERBOSE
`, s.Port, s.hostKey, filepath.Join(s.Dir, "sshd.pid"), filepath.Join(s.Dir, "authorized_keys"), s.User)
	if err := os.WriteFile(s.config, []byte(cfg), 0o600); err != nil {
		s.t.Fatal(err)
	}
}

// Authorize adds a public key (authorized_keys format) to the user's keys.
func (s *Server) Authorize(pub string) {
	f, err := os.OpenFile(filepath.Join(s.Dir, "authorized_keys"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		s.t.Fatal(err)
	}
	defer f.Close()
	fmt.Fprintln(f, strings.TrimSpace(pub))
}

// NewHostKey gives the server a new host key (as a re-created machine
// has), taking effect at the next Start.
func (s *Server) NewHostKey() {
	s.HostKey = WriteKey(s.t, s.hostKey)
}

// Start starts sshd in the foreground (-D, logging to its log file with
// -e) and waits until its port accepts connections.
func (s *Server) Start() {
	s.t.Helper()
	if s.cmd != nil {
		s.t.Fatal("sshdtest: already started")
	}
	log, err := os.OpenFile(filepath.Join(s.Dir, "sshd.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		s.t.Fatal(err)
	}
	cmd := exec.Command(s.bin, "-f", s.config, "-D", "-e")
	cmd.Stdout, cmd.Stderr = log, log
	// Its own process group: Stop takes its session processes down too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		log.Close()
		s.t.Fatalf("starting sshd: %v", err)
	}
	s.cmd, s.log = cmd, log
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port))
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		select {
		case err := <-exited:
			s.cmd = nil
			s.t.Fatalf("sshd exited: %v; its log:\n%s", err, s.Log())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("sshd not listening on %s within 10s; its log:\n%s", addr, s.Log())
		}
	}
}

// Stop stops sshd (only the listener: sessions already open have
// processes of their own, which are stopped with it when the test ends).
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(s.cmd.Process.Pid, 0) == nil && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	s.cmd.Process.Kill()
	s.log.Close()
	s.cmd = nil
}

// Log is sshd's log so far.
func (s *Server) Log() string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, "sshd.log"))
	return string(b)
}

// FreePort is a TCP port free on loopback just now.
func FreePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// WriteKey writes a new ed25519 private key (OpenSSH format) to path and
// returns its public key in authorized_keys format.
func WriteKey(t testing.TB, path string) string {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "benchrun test")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	sp, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sp)))
}
