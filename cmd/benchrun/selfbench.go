package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/benchrun/benchrun/internal/selfbench"
	"github.com/benchrun/benchrun/pipeline"
)

// selfBenchFlags declares `benchrun self-bench`'s flags: the load
// generator's own ceiling on this machine (internal/selfbench). It prints
// one CSV row per measurement on stdout, and saves the two ceilings
// (streams, request rate) where the dry run finds them.
func selfBenchFlags(fs *flag.FlagSet) runFunc {
	var cfg selfbench.Config
	fs.IntVar(&cfg.Concurrency, "concurrency", 64, "streams for the measurement-error check")
	fs.IntVar(&cfg.Streams, "streams", 1024, "streams held in flight for the memory check")
	fs.Float64Var(&cfg.MaxSendLagMs, "max-send-lag-ms", 5, "send-lag p99 a sustained load must stay under")
	fs.DurationVar(&cfg.Step, "step", time.Second, "how long each request rate is held, and each stream count sent over")
	fs.IntVar(&cfg.MaxStreams, "max-streams", 16384, "the most concurrent streams the search tries")
	fs.IntVar(&cfg.MaxRate, "max-rate", 64000, "the highest request rate (req/s) the search tries")
	save := fs.Bool("save", true, "save the ceilings for the dry run's check (in the user cache directory)")
	return func(ctx context.Context, _ []string, stdout, stderr io.Writer) error {
		if cfg.Concurrency < 1 || cfg.Streams < 1 || cfg.Step <= 0 || cfg.MaxStreams < 1 || cfg.MaxRate < 1 || !(cfg.MaxSendLagMs > 0) {
			return fail(pipeline.ExitInvalid, errors.New("--concurrency, --streams, --step, --max-streams, --max-rate and --max-send-lag-ms must be positive"))
		}
		c, err := selfbench.Run(ctx, cfg, stdout, stderr)
		if errors.Is(err, selfbench.ErrInterrupted) {
			return fail(pipeline.ExitInterrupted, err)
		} else if err != nil {
			return fail(pipeline.ExitInfra, err)
		}
		if *save {
			path, err := selfbench.Save(c)
			if err != nil {
				return fail(pipeline.ExitInfra, fmt.Errorf("saving the ceilings: %w", err))
			}
			fmt.Fprintf(stderr, "benchrun self-bench: saved max_streams %d and max_rate_req_s %d to %s; a dry run warns of plans that ask more\n", c.MaxStreams, int(c.MaxRate), path)
		}
		return nil
	}
}

// warnCapacity tells the dry run's reader (on stderr) which planned steps
// ask more of this machine's client than its last self-bench measured it
// to carry (selfbench.Capacity.Warn). A shard (--shard i/n) sends about
// 1/n of each step.
func warnCapacity(w io.Writer, g *pipeline.Graph, shards int) {
	c, path, ok := selfbench.LoadCapacity()
	if !ok {
		return
	}
	for _, n := range g.Order() {
		pl, ok := n.Stage.(pipeline.Planner)
		if !ok {
			continue
		}
		var steps []selfbench.Step
		for _, st := range pl.Plan() {
			steps = append(steps, selfbench.Step{Label: st.Label, Concurrency: st.Concurrency, Rate: st.Rate})
		}
		c.Warn(w, path, n.Spec.Name, steps, shards)
	}
}
