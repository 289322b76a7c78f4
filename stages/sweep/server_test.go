package sweep

import (
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/benchrun/benchrun/pipeline"
)

// TestServerDiedWaitsWhenThePortRefused: a launched server whose process
// group still has a live member (a model runner outliving the server it
// belonged to) reads alive; when the point's connections were refused,
// its death is awaited all the same (the launch stage reaps it late on a
// busy machine), and when requests merely failed it is not.
func TestServerDiedWaitsWhenThePortRefused(t *testing.T) {
	// The lingering member: a process in a group of its own.
	runner := exec.Command("sleep", "30")
	runner.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := runner.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { runner.Process.Kill(); runner.Wait() })
	for _, tc := range []struct {
		name     string
		evidence deathEvidence
		died     bool
	}{
		{"requests failed: the live group is taken at its word", failedRequests, false},
		{"connections refused: the death is awaited", refusedConnections, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan struct{})
			target := &pipeline.Outputs{PID: runner.Process.Pid, Done: done, DoneReason: func() string { return "signal: killed" }}
			// The launch stage learns of the death a while after the port
			// closed.
			reaped := time.AfterFunc(300*time.Millisecond, func() { close(done) })
			defer reaped.Stop()
			err := serverDied(target, tc.evidence)
			if (err != nil) != tc.died {
				t.Fatalf("serverDied = %v, want died %v", err, tc.died)
			}
			if tc.died && err.Error() != "server died: signal: killed" {
				t.Errorf("reason %q", err)
			}
		})
	}
}
