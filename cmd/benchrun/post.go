package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/benchrun/benchrun/internal/rundir"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/pipeline/engine"
)

// postFlags declares `benchrun post`'s flags: it sends a run's results to
// its remote sinks (SiYuan, webhooks) again, from its run directory: after
// a post that failed, for a run killed half way (what it finished is
// posted, marked crashed), or to a sink the plan did not name (--sink
// siyuan). Posting is idempotent where the sink is (SiYuan updates the one
// document of the run, and reuses the charts siyuan-assets.json records as
// uploaded); Parquet and the other files are never touched.
func postFlags(fs *flag.FlagSet) runFunc {
	var sinkNames stringList
	fs.Var(&sinkNames, "sink", "post to this sink only: a name of the run's sinks, or a remote sink kind (siyuan, webhook) with its defaults; repeatable")
	url := fs.String("url", "", "the sinks' url (a SiYuan kernel, a webhook), over what the plan says")
	dryRun := fs.Bool("dry-run", false, "print what would be posted and the calls that would post it; send nothing")
	return func(_ context.Context, pos []string, stdout, stderr io.Writer) error {
		dir := pos[0]
		run, err := rundir.Open(dir)
		if err != nil {
			return fail(pipeline.ExitInvalid, err)
		}
		state, err := rundir.Inspect(dir)
		if err != nil {
			return fail(pipeline.ExitInvalid, err)
		}
		status := run.Status
		switch {
		case state.Live:
			fmt.Fprintf(stderr, "benchrun post: the run is still being written (%s): posting it as it stands\n", state.Holder)
		case status == pipeline.RunCrashed:
			fmt.Fprintln(stderr, "benchrun post: the run crashed (its manifest still says running and no benchrun holds it): posting what it finished, marked crashed")
		}
		params := map[string]any{}
		if *url != "" {
			params["url"] = *url
		}
		if *dryRun {
			params["dry_run"] = true
		}
		uses, err := engine.PostSinks(registry(), dir, sinkNames, params)
		if err != nil {
			return fail(pipeline.ExitInvalid, err)
		}
		var names []string
		for _, u := range uses {
			names = append(names, u.Name())
		}
		var out io.Writer
		if *dryRun {
			out = stdout // what would be posted is the command's data
		}
		sum, err := engine.ReplayWith(dir, uses, engine.ReplayOptions{Status: status, Progress: stderr, Stdout: out})
		if sum != nil {
			for _, rec := range sum.Sinks {
				if rec.Status == pipeline.SinkWarned {
					fmt.Fprintf(stderr, "benchrun post: warning: optional sink %s did not post: %s\n", rec.Name, rec.LastError)
				}
			}
		}
		if err != nil {
			return fail(pipeline.ExitInfra, err)
		}
		verb := "posted to"
		if *dryRun {
			verb = "dry run of"
		}
		fmt.Fprintf(stderr, "benchrun post: %d cells of run %s %s %s\n", sum.Cells, run.ID(), verb, strings.Join(names, ", "))
		return nil
	}
}
