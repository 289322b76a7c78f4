// Package remote runs benchrun's programs on another machine over SSH
// (golang.org/x/crypto/ssh, no ssh binary): a server a launch stage
// starts `on:` a provisioned machine, a benchmark an exec stage runs
// there. It is procrun's remote twin:
//
//   - Dial waits for SSH to come up (a freshly created pod takes a while),
//     with strict host-key checking: against the key the provider
//     returned, or trust-on-first-use recorded in the run directory's
//     known_hosts file and enforced from then on;
//   - Start runs a command in a session without a PTY, streams its stdout
//     and stderr back as they come, and learns the remote process's id,
//     which leads its own process group there;
//   - Stop signals that whole group on the remote side (SIGINT, SIGTERM,
//     then SIGKILL, with graces), so that nothing benchrun started keeps
//     a rented GPU busy. A watcher beside the program on the machine does
//     the same when the SSH connection drops, so the program also dies
//     when benchrun itself is SIGKILLed.
//
// Of the pipeline the package imports only its SSH contract
// (pipeline.SSHMachine, which MachineFrom reads), so that launch, exec and
// any other kind use it alike. No key material reaches an error or a log: errors
// name the key's source (an environment variable) and its public
// fingerprint only.
package remote

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// Machine is where to connect and how to log in.
type Machine struct {
	// Host is the machine's address (a name or an IP).
	Host string
	// Port is the SSH port; 0 is 22.
	Port int
	// User logs in; "" is root (what GPU clouds give).
	User string
	// KeyFile is the private key: the path of a key file, or the key
	// itself (PEM or OpenSSH format), as the plan's environment variable
	// holds it. It is never shown.
	KeyFile string
	// KeySource says where KeyFile came from ("$BENCHRUN_SSH_KEY"), for
	// errors; "" is "the SSH key".
	KeySource string
	// HostKey is the machine's public host key as the provider returned
	// it (authorized_keys format: "ssh-ed25519 AAAA... comment"); "" is
	// trust-on-first-use: the key the machine offers first is recorded in
	// the known_hosts file given to Dial and required from then on.
	HostKey string
	// Within bounds how long Dial waits for SSH to come up; 0 is
	// DefaultWithin. The context bounds it too.
	Within time.Duration
}

// DefaultWithin is how long Dial waits for SSH by default: a cloud pod
// can take minutes from "created" to a listening sshd.
const DefaultWithin = 5 * time.Minute

// Addr is host:port.
func (m Machine) Addr() string {
	port := m.Port
	if port == 0 {
		port = 22
	}
	return net.JoinHostPort(m.Host, strconv.Itoa(port))
}

func (m Machine) user() string {
	if m.User == "" {
		return "root"
	}
	return m.User
}

// String is user@host:port, for messages.
func (m Machine) String() string { return m.user() + "@" + m.Addr() }

func (m Machine) keySource() string {
	if m.KeySource == "" {
		return "the SSH key"
	}
	return m.KeySource
}

// ErrHostKey is the cause of a refused host key (a mismatch with the
// provider's key or with the one recorded on first use): Dial does not
// retry it.
var ErrHostKey = errors.New("host key mismatch")

// ErrAuth is the cause of a login the machine refused: Dial does not
// retry it.
var ErrAuth = errors.New("the machine refused the key")

// Client is a connection to a machine; it reconnects when the connection
// is lost and a stop still has to reach the machine.
type Client struct {
	m      Machine
	config *ssh.ClientConfig

	mu   sync.Mutex
	conn *ssh.Client
}

// Dial connects to m, retrying while SSH is not up yet (connection
// refused, a handshake cut short, a timeout) until m.Within passes or ctx
// ends. A refused host key or key is an error at once: waiting would not
// change it. knownHostsPath is the file trust-on-first-use records the
// machine's key in (the run directory's known_hosts); it is read even
// when m.HostKey is set, never written then.
func Dial(ctx context.Context, m Machine, knownHostsPath string) (*Client, error) {
	if m.Host == "" {
		return nil, errors.New("ssh: the machine has no host")
	}
	signer, err := parseKey(m)
	if err != nil {
		return nil, err
	}
	hostKeyCallback, algos, err := hostKeyCheck(m, knownHostsPath)
	if err != nil {
		return nil, err
	}
	config := &ssh.ClientConfig{
		User:              m.user(),
		Auth:              []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback:   hostKeyCallback,
		HostKeyAlgorithms: algos,
		Timeout:           15 * time.Second,
	}
	c := &Client{m: m, config: config}
	within := m.Within
	if within <= 0 {
		within = DefaultWithin
	}
	conn, err := c.dialRetry(ctx, within, signer)
	if err != nil {
		return nil, err
	}
	c.conn = conn
	return c, nil
}

// dialRetry dials until it connects, a permanent error, within, or ctx.
func (c *Client) dialRetry(ctx context.Context, within time.Duration, signer ssh.Signer) (*ssh.Client, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	wait := 250 * time.Millisecond
	for {
		conn, err := c.dialOnce(ctx)
		if err == nil {
			return conn, nil
		}
		if errors.Is(err, ErrHostKey) {
			return nil, err
		}
		if strings.Contains(err.Error(), "unable to authenticate") {
			return nil, fmt.Errorf("ssh %s: %w (public key %s, from %s): add it to ~%s/.ssh/authorized_keys on the machine, or give the key the provider installed: %w",
				c.m, ErrAuth, ssh.FingerprintSHA256(signer.PublicKey()), c.m.keySource(), c.m.user(), err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("ssh %s: not up after %s (%v): %w", c.m, time.Since(start).Round(time.Second), context.Cause(ctx), err)
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// dialOnce is one TCP connection and SSH handshake, cut short by ctx.
func (c *Client) dialOnce(ctx context.Context) (*ssh.Client, error) {
	addr := c.m.Addr()
	d := net.Dialer{Timeout: 10 * time.Second}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	// The handshake reads with no deadline of its own: a half-up sshd
	// (accepting, not yet answering) would hold it forever.
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	defer stop()
	nc.SetDeadline(time.Now().Add(c.config.Timeout))
	sc, chans, reqs, err := ssh.NewClientConn(nc, addr, c.config)
	if err != nil {
		nc.Close()
		return nil, err
	}
	nc.SetDeadline(time.Time{})
	return ssh.NewClient(sc, chans, reqs), nil
}

// Close closes the connection; remote processes are not stopped by it
// (Stop them first), though the watcher beside each stops it once the
// connection is gone.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		return nil
	}
	err := c.conn.Close()
	c.conn = nil
	return err
}

// Machine is what the client connects to.
func (c *Client) Machine() Machine { return c.m }

// session opens a session, reconnecting once (within 30s) when the
// connection is gone: a stop must reach the machine even after a network
// blip took the first connection.
func (c *Client) session(ctx context.Context) (*ssh.Session, error) {
	c.mu.Lock()
	conn := c.conn
	c.mu.Unlock()
	if conn != nil {
		if s, err := conn.NewSession(); err == nil {
			return s, nil
		}
	}
	signer, err := parseKey(c.m)
	if err != nil {
		return nil, err
	}
	nc, err := c.dialRetry(ctx, 30*time.Second, signer)
	if err != nil {
		return nil, fmt.Errorf("reconnecting: %w", err)
	}
	c.mu.Lock()
	if c.conn != nil {
		c.conn.Close()
	}
	c.conn = nc
	c.mu.Unlock()
	return nc.NewSession()
}

// Output runs a short shell command line on the machine (its login
// shell's -c) and returns its stdout and stderr together.
func (c *Client) Output(ctx context.Context, cmdline string) ([]byte, error) {
	s, err := c.session(ctx)
	if err != nil {
		return nil, fmt.Errorf("ssh %s: %w", c.m, err)
	}
	defer s.Close()
	stop := context.AfterFunc(ctx, func() { s.Close() })
	defer stop()
	return s.CombinedOutput(cmdline)
}

// FreePort asks the machine's sshd for a free TCP port on its loopback
// (a remote forward on port 0, released at once): the remote twin of
// listening on :0 to pick a server's port. Another process could take it
// before the server binds, as locally.
func (c *Client) FreePort() (int, error) {
	c.mu.Lock()
	conn := c.conn
	c.mu.Unlock()
	if conn == nil {
		return 0, errors.New("ssh: not connected")
	}
	l, err := conn.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("ssh %s: asking the machine for a free port (a remote forward; AllowTcpForwarding may be off: set a fixed port): %w", c.m, err)
	}
	defer l.Close()
	a, ok := l.Addr().(*net.TCPAddr)
	if !ok || a.Port == 0 {
		return 0, fmt.Errorf("ssh %s: the machine gave no port for a remote forward: set a fixed port", c.m)
	}
	return a.Port, nil
}

// parseKey reads the private key: a file, or the key itself. Errors name
// the source and the path, never the content.
func parseKey(m Machine) (ssh.Signer, error) {
	v := strings.TrimSpace(m.KeyFile)
	if v == "" {
		return nil, fmt.Errorf("ssh %s: no private key: %s is empty (set it to the key file's path, or to the key itself)", m, m.keySource())
	}
	b := []byte(v)
	what := m.keySource() + " (the key itself)"
	// A value that does not look like a path is key material: showing it
	// as a path in "no such file" would print the key.
	if !strings.Contains(v, "PRIVATE KEY") && !strings.ContainsAny(v, "\n\r") && len(v) < 1024 {
		path := v
		if rest, ok := strings.CutPrefix(path, "~/"); ok {
			if home, err := os.UserHomeDir(); err == nil {
				path = filepath.Join(home, rest)
			}
		}
		var err error
		if b, err = os.ReadFile(path); err != nil {
			return nil, fmt.Errorf("ssh %s: reading the private key named by %s: %w", m, m.keySource(), err)
		}
		what = fmt.Sprintf("%s (%s)", m.keySource(), path)
	}
	signer, err := ssh.ParsePrivateKey(b)
	var pm *ssh.PassphraseMissingError
	switch {
	case errors.As(err, &pm):
		return nil, fmt.Errorf("ssh %s: the private key of %s is protected by a passphrase, which benchrun cannot type: use a key without one for the machine", m, what)
	case err != nil:
		// ParsePrivateKey's errors say what is wrong with the format, not
		// what the bytes are.
		return nil, fmt.Errorf("ssh %s: %s is not a private key: %w", m, what, err)
	}
	return signer, nil
}

// hostKeyCheck is the host-key callback and the host-key algorithms to
// ask for: the provider's key when there is one, else the known_hosts
// file, recording an unknown host's key there (trust on first use).
func hostKeyCheck(m Machine, knownHostsPath string) (ssh.HostKeyCallback, []string, error) {
	addr := m.Addr()
	if m.HostKey != "" {
		want, err := parseHostKey(m.HostKey)
		if err != nil {
			return nil, nil, fmt.Errorf("ssh %s: the host key the provider returned: %w", m, err)
		}
		cb := func(_ string, _ net.Addr, key ssh.PublicKey) error {
			if bytes.Equal(key.Marshal(), want.Marshal()) {
				return nil
			}
			return fmt.Errorf("ssh %s: %w: the machine offers %s %s, but the provider returned %s %s: the address may belong to another machine now, or someone is intercepting the connection",
				m, ErrHostKey, key.Type(), ssh.FingerprintSHA256(key), want.Type(), ssh.FingerprintSHA256(want))
		}
		return cb, algorithms(want.Type()), nil
	}
	if knownHostsPath == "" {
		return nil, nil, fmt.Errorf("ssh %s: no host key from the provider and no known_hosts file to record one in", m)
	}
	if err := os.MkdirAll(filepath.Dir(knownHostsPath), 0o755); err != nil {
		return nil, nil, fmt.Errorf("ssh %s: %w", m, err)
	}
	f, err := os.OpenFile(knownHostsPath, os.O_CREATE|os.O_RDONLY, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("ssh %s: %w", m, err)
	}
	f.Close()
	var mu sync.Mutex // one recording at a time (a reconnect, a second stage)
	cb := func(hostname string, remote net.Addr, key ssh.PublicKey) error {
		mu.Lock()
		defer mu.Unlock()
		known, err := knownhosts.New(knownHostsPath)
		if err != nil {
			return fmt.Errorf("reading %s: %w", knownHostsPath, err)
		}
		err = known(hostname, remote, key)
		var ke *knownhosts.KeyError
		switch {
		case err == nil:
			return nil
		case errors.As(err, &ke) && len(ke.Want) == 0:
			line := knownhosts.Line([]string{knownhosts.Normalize(addr)}, key) + "\n"
			f, err := os.OpenFile(knownHostsPath, os.O_APPEND|os.O_WRONLY, 0o644)
			if err != nil {
				return fmt.Errorf("recording the host key in %s: %w", knownHostsPath, err)
			}
			defer f.Close()
			if _, err := f.WriteString(line); err != nil {
				return fmt.Errorf("recording the host key in %s: %w", knownHostsPath, err)
			}
			return nil
		case errors.As(err, &ke):
			w := ke.Want[0]
			return fmt.Errorf("ssh %s: %w: the machine offers %s %s, but %s:%d recorded %s %s when benchrun first connected: if the machine was re-created, delete line %d of %s; otherwise someone may be intercepting the connection",
				m, ErrHostKey, key.Type(), ssh.FingerprintSHA256(key), w.Filename, w.Line, w.Key.Type(), ssh.FingerprintSHA256(w.Key), w.Line, w.Filename)
		default:
			return fmt.Errorf("ssh %s: %w: %w (%s)", m, ErrHostKey, err, knownHostsPath)
		}
	}
	return cb, recordedAlgorithms(knownHostsPath, addr), nil
}

// parseHostKey reads a public key in authorized_keys format, or a
// known_hosts line.
func parseHostKey(s string) (ssh.PublicKey, error) {
	if k, _, _, _, err := ssh.ParseAuthorizedKey([]byte(s)); err == nil {
		return k, nil
	}
	_, _, k, _, _, err := ssh.ParseKnownHosts([]byte(s))
	if err != nil {
		return nil, fmt.Errorf("want a public key in authorized_keys format (ssh-ed25519 AAAA...): %w", err)
	}
	return k, nil
}

// algorithms are the host-key algorithms that yield a key of this type:
// asking for them makes the machine offer the key that is checked, not
// another of its keys (which would be refused as a mismatch).
func algorithms(keyType string) []string {
	if keyType == ssh.KeyAlgoRSA {
		return []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}
	}
	return []string{keyType}
}

// recordedAlgorithms are the algorithms of the keys known_hosts records
// for addr (nil, any algorithm, when it records none): without them a
// machine with several host keys could offer another one than the one
// recorded, which would read as a changed key.
func recordedAlgorithms(path, addr string) []string {
	known, err := knownhosts.New(path)
	if err != nil {
		return nil
	}
	// Asking about a key no machine has lists the recorded ones.
	probe, err := ssh.NewPublicKey(ed25519.PublicKey(make([]byte, ed25519.PublicKeySize)))
	if err != nil {
		return nil
	}
	tcp, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		tcp = &net.TCPAddr{IP: net.IPv4zero}
	}
	var ke *knownhosts.KeyError
	if !errors.As(known(addr, tcp, probe), &ke) {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, w := range ke.Want {
		for _, a := range algorithms(w.Key.Type()) {
			if !seen[a] {
				seen[a] = true
				out = append(out, a)
			}
		}
	}
	return out
}
