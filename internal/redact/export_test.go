package redact

import "github.com/benchrun/benchrun/internal/redact/redacttest"

// Reset forgets every registered secret (redacttest.Reset), so that each
// test starts from an empty registry.
func Reset() { redacttest.Reset() }
