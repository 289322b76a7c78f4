package remote

import (
	"fmt"
	"strconv"
	"strings"
)

// The outputs a stage that provides a machine gives (a provision stage
// with an ssh: block), in pipeline.Outputs.Values, and that MachineFrom
// reads. None of them is a secret: the private key stays in benchrun's
// environment, and ssh_key_env only names the variable holding it.
//
// TODO(contract): a kind should not learn facts from another kind's
// Values; this belongs in pipeline.Outputs as a typed field (SSH
// *pipeline.SSHMachine{Host, Port, User, HostKey, KeyEnv}) with Provider
// in pipeline/contracts.go. Until then both sides meet here, in one
// package, through these names.
const (
	OutHost    = "ssh_host"     // the machine's address
	OutPort    = "ssh_port"     // its SSH port
	OutUser    = "ssh_user"     // the user to log in as
	OutHostKey = "ssh_host_key" // its host key as the provider returned it ("" is trust-on-first-use)
	OutKeyEnv  = "ssh_key_env"  // the environment variable holding the private key (a path, or the key)
)

// Provider is implemented by stage kinds whose outputs give a machine
// that other stages run on (on: "<stage>"): a provision stage with an
// ssh: block. A stage with on: checks its peer against it at vet time.
//
// TODO(contract): move to pipeline/contracts.go.
type Provider interface {
	// ProvidesSSH reports whether the stage's outputs will carry the
	// ssh_* values MachineFrom reads.
	ProvidesSSH() bool
}

// MachineFrom reads the machine a stage's outputs give (the Out* values),
// and the private key from the environment variable ssh_key_env names,
// through getenv (os.Getenv). The error says which value is missing or
// wrong; it never contains the key.
func MachineFrom(values map[string]any, getenv func(string) string) (Machine, error) {
	var m Machine
	str := func(k string) string {
		if v, ok := values[k]; ok && v != nil {
			return strings.TrimSpace(fmt.Sprint(v))
		}
		return ""
	}
	m.Host = str(OutHost)
	if m.Host == "" {
		return m, fmt.Errorf("no %s output: the provision stage's create or wait must print host (or ssh_host)", OutHost)
	}
	if p := str(OutPort); p != "" {
		port, err := strconv.Atoi(p)
		if err != nil || port <= 0 || port > 65535 {
			return m, fmt.Errorf("%s output %q is not a port", OutPort, p)
		}
		m.Port = port
	}
	m.User = str(OutUser)
	m.HostKey = str(OutHostKey)
	env := str(OutKeyEnv)
	if env == "" {
		return m, fmt.Errorf("no %s output: the provision stage's ssh: {key_env: ...} names the environment variable holding the private key", OutKeyEnv)
	}
	m.KeySource = "$" + env
	m.KeyFile = getenv(env)
	if strings.TrimSpace(m.KeyFile) == "" {
		return m, fmt.Errorf("$%s is not set: set it to the private key's path (or to the key itself) for SSH to %s", env, m)
	}
	return m, nil
}
