package pipeline

import (
	"fmt"
	"time"
)

// Stage statuses.
const (
	StatusPending = "pending"
	StatusRunning = "running"
	StatusUp      = "up" // a service whose Run returned; it serves until released
	StatusOK      = "ok"
	StatusFailed  = "failed"
	StatusSkipped = "skipped"
)

// StatusError is the status of a stage that ran to its end but some of
// whose cell rows are `error`: it measured, yet not everything it was
// asked to (every request of a cell failed, a cell did not fit the
// context, ...). Unlike `failed`, its dependents still run (a post stage
// posts a partly failed sweep), but the stage is not ok and the run does
// not exit 0 (docs/DESIGN.md, exit codes; docs/PLANS.md).
const StatusError = "error"

// ServiceDiedError cancels the stages using a service that stopped on its own.
type ServiceDiedError struct {
	Service string
	Reason  string
}

func (e *ServiceDiedError) Error() string {
	// "server died", with the stage named unless it is "server" itself
	// (which read "server server died").
	if e.Service == "server" || e.Service == "" {
		return "server died: " + e.Reason
	}
	return fmt.Sprintf("server %s died: %s", e.Service, e.Reason)
}

// TimeoutError is the cause of a stage's cancellation when its timeout passes.
type TimeoutError struct {
	Stage   string
	Timeout time.Duration
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("stage %s timed out after %s (timeout in the plan): cancelled, its processes killed", e.Stage, e.Timeout)
}
