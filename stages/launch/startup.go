package launch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/benchrun/benchrun/internal/loadgen"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/pipeline"
)

// This file is the start-up measurement (startup: {...}; docs/METRICS.md,
// Start-up): how long from the server process's start until it serves,
// as rows of the launch stage, and the latest start's for the cell a
// measuring stage measures right after a per-cell restart
// (pipeline.Outputs.StartupS).

// WritesRows reports whether the stage writes rows of its own
// (pipeline.RowWriter): its start-ups, with startup: {...}.
func (s *Stage) WritesRows() bool { return s.cfg.Startup != nil }

// measureStartups measures the start begun at started (the first of
// Run's) and, with repeats, stops the server and starts it again cold
// for each further one, each its own row (<stage>/startup/r<i>) with the
// first call's latency. The last start stays up and ready. A start that
// does not get ready, or whose first call fails, is an error row, and
// the stage fails with it.
func (s *Stage) measureStartups(ctx context.Context, env *pipeline.Env, base string, started time.Time) error {
	n := max(s.cfg.Startup.Repeats, 1)
	for i := 1; ; i++ {
		readyAt, err := s.waitReady(ctx, base, started, "starting")
		row := s.startupRow(fmt.Sprintf("%s/startup/r%d", s.spec.Name, i), started, readyAt, err)
		if n > 1 {
			row.Repeat = int64(i)
		}
		var reqs []results.Request
		if err == nil {
			s.setLatest(readyAt.Sub(started))
			reqs, err = s.firstCall(ctx, base, &row)
		}
		if env.Log != nil {
			fmt.Fprintf(env.Log, "benchrun: start-up %d/%d: %s\n", i, n, describeStartup(row))
		}
		if env.Progress != nil {
			fmt.Fprintf(env.Progress, "  %s: start-up %d/%d: %s\n", s.spec.Name, i, n, describeStartup(row))
		}
		if eerr := s.emitStartup(row, reqs); eerr != nil {
			return eerr
		}
		if err != nil {
			return fmt.Errorf("start-up %d of %d: %w", i, n, err)
		}
		if i == n {
			return nil
		}
		if err := s.stop(ctx); err != nil {
			return err
		}
		s.logLine(fmt.Sprintf("benchrun: starting the server again, cold (startup: repeats %d, start %d)", n, i+1))
		if started, err = s.startCold(ctx); err != nil {
			row := s.startupRow(fmt.Sprintf("%s/startup/r%d", s.spec.Name, i+1), started, time.Time{}, err)
			row.Repeat = int64(i + 1)
			if eerr := s.emitStartup(row, nil); eerr != nil {
				return eerr
			}
			return fmt.Errorf("start-up %d of %d: %w", i+1, n, err)
		}
	}
}

// startupRow is the row of one start begun at started: ok with startup_s
// when it was ready at readyAt, else an error row with err as its reason.
func (s *Stage) startupRow(id string, started, readyAt time.Time, err error) results.Cell {
	version := s.version
	if version == "" {
		version = "unknown"
	}
	row := results.Cell{
		Stage: s.spec.Name, CellID: id, StartedAt: started.UTC(), Model: s.model,
		Engine: s.cfg.Engine, EngineVersion: version, Status: results.StatusOK,
	}
	if err != nil {
		row.Status, row.Reason = results.StatusError, firstLine(err.Error())
		return row
	}
	row.StartupS = results.Some(readyAt.Sub(started).Seconds())
	return row
}

// firstCall sends the first request (startup.probe: a 1-token request)
// right after the server got ready and records its latency as the row's
// first_call_ms; it returns the request's row. A failed first call makes
// the row an error (the server said it was ready, and did not serve).
func (s *Stage) firstCall(ctx context.Context, base string, row *results.Cell) ([]results.Request, error) {
	probe := s.cfg.Startup.Probe
	if probe == "" || probe == "none" {
		return nil, nil
	}
	t := &loadgen.Target{BaseURL: base, Model: s.model, Endpoint: loadgen.Endpoint(probe), Stream: true,
		HTTP: loadgen.NewHTTPClient(1), Timeout: s.startWithin}
	defer t.HTTP.CloseIdleConnections()
	res := t.Do(ctx, loadgen.Request{Prompt: "Hello", MaxTokens: 1})
	row.Endpoint = probe
	row.Requests = 1
	reqs := loadgen.RequestRows(*row, []loadgen.Result{res})
	if !res.OK() {
		row.Failed = 1
		err := fmt.Errorf("the first call (a 1-token request on %s) failed after the server was ready: %v", t.Endpoint.Path(), res.Err)
		var he *loadgen.HTTPError
		if errors.As(res.Err, &he) && (he.Status == http.StatusUnauthorized || he.Status == http.StatusForbidden) {
			err = fmt.Errorf("%w (the server wants credentials, which the launch stage does not send: set startup.probe: \"none\" and read the first call from the sweep's first_call_ms)", err)
		}
		row.Status, row.Reason = results.StatusError, err.Error()
		return reqs, err
	}
	row.Completed = 1
	row.FirstCallMs = results.Some(float64(res.E2EL()) / float64(time.Millisecond))
	return reqs, nil
}

// emitStartup hands a start-up row (and its first call's request) to the
// run; without a run (a test's bare Env) it is dropped.
func (s *Stage) emitStartup(row results.Cell, reqs []results.Request) error {
	if s.emit == nil {
		return nil
	}
	return s.emit(row, results.AsRequests(reqs))
}

// setLatest records the latest start's start-up.
func (s *Stage) setLatest(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latest = results.Some(d.Seconds())
}

// latestStartup is Outputs.StartupS: the latest start's start-up in
// seconds, nil while it is not known (a restart under way, or one that
// failed).
func (s *Stage) latestStartup() *float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.latest == nil {
		return nil
	}
	v := *s.latest
	return &v
}

// describeStartup is a start-up row in a few words, for the log.
func describeStartup(row results.Cell) string {
	if row.Status != results.StatusOK {
		return "error: " + row.Reason
	}
	out := fmt.Sprintf("ready after %.3f s", *row.StartupS)
	if row.FirstCallMs != nil {
		out += fmt.Sprintf(", first call %.1f ms", *row.FirstCallMs)
	}
	return out
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// joinNotes joins row notes with "; ", leaving out empty ones.
func joinNotes(notes ...string) string {
	var out []string
	for _, n := range notes {
		if n != "" {
			out = append(out, n)
		}
	}
	return strings.Join(out, "; ")
}
