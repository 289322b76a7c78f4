// Package registry holds the state of redact's process-wide registry of
// secrets: redact fills and reads it, and redacttest empties it between
// tests, which benchrun itself never does (a secret once sent stays
// masked until the process ends).
package registry

import (
	"sync"
	"sync/atomic"
)

var (
	// Mu serialises the writers.
	Mu sync.Mutex
	// Secrets holds the registered forms, longest first (so that a secret
	// containing another is replaced whole). Readers load it without a
	// lock.
	Secrets atomic.Pointer[[]string]
)
