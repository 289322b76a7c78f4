package remote

import (
	"errors"
	"fmt"
	"strings"

	"github.com/benchrun/benchrun/pipeline"
)

// MachineFrom is the Machine of a stage's Outputs.SSH (a provision stage's
// with an ssh: block), with the private key read from the environment
// variable ssh.KeyEnv names, through getenv (os.Getenv). The error says
// what is missing or wrong; it never contains the key.
func MachineFrom(ssh *pipeline.SSHMachine, getenv func(string) string) (Machine, error) {
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
