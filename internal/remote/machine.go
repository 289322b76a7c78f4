package remote

import (
	"errors"
	"fmt"
	"strings"
)

// MachineFrom is the Machine of a stage's Outputs.SSH (pipeline.SSHMachine) (a provision stage's
// with an ssh: block), with the private key read from the environment
// variable ssh.KeyEnv names, through getenv (os.Getenv). The error says
// what is missing or wrong; it never contains the key.
func MachineFrom(ssh *SSH, getenv func(string) string) (Machine, error) {
	var m Machine
	if ssh == nil {
		return m, errors.New("the stage gives no machine: on: names a provision stage with an ssh: block")
	}
	m.Host = strings.TrimSpace(ssh.Host)
	if m.Host == "" {
		return m, errors.New("no SSH host: the provision stage's create or wait must print host (or ssh_host)")
	}
	if ssh.Port < 0 || ssh.Port > 65535 {
		return m, fmt.Errorf("SSH port %d is not a port", ssh.Port)
	}
	m.Port = ssh.Port
	m.User = strings.TrimSpace(ssh.User)
	m.HostKey = strings.TrimSpace(ssh.HostKey)
	env := strings.TrimSpace(ssh.KeyEnv)
	if env == "" {
		return m, errors.New("no SSH key variable: the provision stage's ssh: {key_env: ...} names the environment variable holding the private key")
	}
	m.KeySource = "$" + env
	m.KeyFile = getenv(env)
	if strings.TrimSpace(m.KeyFile) == "" {
		return m, fmt.Errorf("$%s is not set: set it to the private key's path (or to the key itself) for SSH to %s", env, m)
	}
	return m, nil
}

// SSH is where a stage with on: connects and how it logs in, as the
// providing stage learned it (its create or wait output, else its plan).
// None of it is a secret: the private key stays in benchrun's environment,
// and KeyEnv only names the variable holding it, so that outputs can be
// logged and stored without leaking it.
type SSH struct {
	// Host is the machine's address (a name or an IP).
	Host string
	// Port is its SSH port; 0 is 22.
	Port int
	// User logs in; "" is root (what GPU clouds give).
	User string
	// HostKey is the machine's public host key as the provider returned
	// it (authorized_keys format); "" is trust-on-first-use, recorded in
	// the run directory's known_hosts.
	HostKey string
	// KeyEnv names the environment variable of benchrun's that holds the
	// private key (its path, or the key itself).
	KeyEnv string
}
