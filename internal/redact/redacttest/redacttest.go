// Package redacttest gives a test that registers secrets (redact.Add, or
// a run that sends them) a registry of its own: the registry is
// process-wide, and a secret left registered changes what every later
// test in the binary writes (masked text, held-back log tails).
package redacttest

import "github.com/benchrun/benchrun/internal/redact/internal/registry"

// Reset forgets every registered secret.
func Reset() {
	registry.Mu.Lock()
	defer registry.Mu.Unlock()
	registry.Secrets.Store(nil)
}
