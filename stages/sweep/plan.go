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
)

// Plan lists every cell × ladder point in the order Run measures them,
// with the requests it will send (warm-up passes included) and a rough
// duration (pipeline.Planner, for --dry-run). It reads only the
// configuration.
func (s *Stage) Plan() []pipeline.PlannedStep {
	passes := max(s.cfg.Warmup, 0) + max(s.cfg.Iterations, 1)
	perPass, _ := time.ParseDuration(s.cfg.Duration)
	var steps []pipeline.PlannedStep
	for _, p := range s.points() {
		latency := time.Duration((float64(p.cell.ISL)/assumedPrefillTokS + float64(p.cell.OSL)/assumedDecodeTokS) * float64(time.Second))
		n := s.cfg.Requests
		var pass time.Duration
		switch {
		case p.rate > 0:
			if n == 0 && perPass == 0 {
				n = max(32, int(math.Ceil(p.rate*10)))
			}
			if n == 0 {
				n = int(math.Ceil(p.rate * perPass.Seconds()))
			}
			n = max(n, s.cfg.MinRequests)
			pass = time.Duration(float64(n)/p.rate*float64(time.Second)) + latency
		default:
			c := max(p.concurrency, 1)
			if n == 0 && perPass == 0 {
				n = max(8, 2*c)
			}
			n = max(n, s.cfg.MinRequests)
			pass = time.Duration((n+c-1)/c) * latency
		}
		if perPass > 0 {
			pass = max(pass, perPass)
		}
		steps = append(steps, pipeline.PlannedStep{
			ID:       cellID(s.spec.Name, p),
			Label:    p.label(),
			Requests: n * passes,
			Estimate: time.Duration(passes) * pass,
		})
	}
	return steps
}
