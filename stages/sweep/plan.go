package sweep

import (
	"math"
	"time"

	"github.com/benchrun/benchrun/pipeline"
)

// The dry-run estimate assumes a modest server: these rates are a guess,
// stated in docs/PLANS.md, good for "minutes or hours", not for planning
// to the second.
const (
	assumedPrefillTokS = 5000.0 // prompt tokens per second, per request
	assumedDecodeTokS  = 50.0   // output tokens per second, per stream
	// assumedBatch is how many requests the server runs at once (vLLM's
	// default max_num_seqs): sessions or arrivals beyond it queue, so a
	// point's time never shrinks below its requests' work over this many
	// streams.
	assumedBatch = 256
)

// Plan lists every cell × ladder point in the order Run measures them,
// with the requests it will send (warm-up passes included) and a rough
// duration (pipeline.Planner, for --dry-run). It reads only the
// configuration.
func (s *Stage) Plan() []pipeline.PlannedStep {
	return s.plan(func(c Cell) float64 {
		return float64(c.ISL)/assumedPrefillTokS + float64(c.OSL)/assumedDecodeTokS
	}, assumedBatch)
}

// PlanWith is Plan against a server whose speed is known before it runs
// (the built-in simulator in fixed mode: its TTFT, then a token every
// ITL, every request at once): the guessed modest server made a dry run
// of the quickstart estimate 40 s for an 11 s run.
func (s *Stage) PlanWith(speed pipeline.ServerSpeed) []pipeline.PlannedStep {
	if speed.TTFT <= 0 && speed.ITL <= 0 {
		return s.Plan()
	}
	return s.plan(func(c Cell) float64 {
		return speed.TTFT.Seconds() + float64(max(c.OSL-1, 0))*speed.ITL.Seconds()
	}, math.MaxInt32)
}

// plan is Plan with a request's latency and the requests the server runs
// at once.
func (s *Stage) plan(latencyOf func(Cell) float64, batch int) []pipeline.PlannedStep {
	if s.cfg.Search != nil {
		return s.planSearch()
	}
	passes := max(s.cfg.Warmup, 0) + max(s.cfg.Iterations, 1)
	perPass, _ := time.ParseDuration(s.cfg.Duration)
	requests := s.cfg.Requests
	if s.precision != nil {
		// A precision pass stops once precise: its budget is the most.
		requests, perPass = s.precision.maxRequests, s.precision.maxDuration
	}
	var steps []pipeline.PlannedStep
	for _, p := range s.points() {
		if p.trace {
			// The trace's length is in its file, which a plan does not read.
			steps = append(steps, pipeline.PlannedStep{ID: cellID(s.spec.Name, p), Label: p.label()})
			continue
		}
		// Seconds, in floating point: a product of counts and latencies
		// must not wrap around (an int64 of nanoseconds holds 292 years).
		latency := latencyOf(p.cell)
		n := requests
		var pass float64
		switch {
		case p.rate > 0:
			if n == 0 && perPass == 0 {
				n = max(32, int(math.Ceil(p.rate*10)))
			}
			if n == 0 {
				n = int(math.Ceil(p.rate * perPass.Seconds()))
			}
			n = max(n, s.cfg.MinRequests)
			// The arrivals, or the server's work when it cannot keep up.
			pass = math.Max(float64(n)/p.rate, float64(n)*latency/float64(batch)) + latency
		default:
			c := max(p.concurrency, 1)
			if n == 0 && perPass == 0 {
				n = max(8, 2*c)
			}
			n = max(n, s.cfg.MinRequests)
			streams := float64(min(c, batch))
			pass = math.Ceil(float64(n)/streams) * latency
		}
		if perPass > 0 {
			pass = math.Max(pass, perPass.Seconds())
		}
		steps = append(steps, pipeline.PlannedStep{
			ID:          cellID(s.spec.Name, p),
			Label:       p.label(),
			Requests:    n * passes,
			Estimate:    seconds(float64(passes) * pass),
			Concurrency: p.concurrency,
			Rate:        p.rate,
		})
	}
	return steps
}

// seconds is a duration of s seconds, saturating instead of wrapping.
func seconds(s float64) time.Duration {
	if s >= float64(math.MaxInt64)/float64(time.Second) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(s * float64(time.Second))
}
