package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/benchrun/benchrun/internal/coord"
	"github.com/benchrun/benchrun/pipeline"
)

// coordinateArgs is what coordinate says of a command line without
// --shards N or with arguments.
const coordinateArgs = "--shards N (N >= 2) is required, and nothing else"

// coordinateFlags declares `benchrun coordinate`'s flags: the coordinator
// of a sharded run served on its own, for shards that all join it with
// --coordinator (shard 0 can serve it instead: --coordinate). It exits
// once every shard joined and left, printing the shards' records (clock
// offsets, barriers) as JSON on stdout.
func coordinateFlags(fs *flag.FlagSet) runFunc {
	shards := fs.Int("shards", 0, "how many shards will join (the N of --shard i/N)")
	listen := onceString(fs, "listen", ":7070", "the address to serve on")
	lead := fs.Duration("lead", coord.DefaultLead, "how far ahead of the last shard's arrival each cell's start instant is set")
	return func(ctx context.Context, _ []string, stdout, stderr io.Writer) error {
		if *shards < 2 {
			return fail(pipeline.ExitInvalid, errors.New(coordinateArgs))
		}
		s := coord.NewServer(*shards, *lead)
		addr, stop, err := coord.Serve(ctx, *listen, s)
		if err != nil {
			return fail(pipeline.ExitInfra, err)
		}
		defer stop()
		fmt.Fprintf(stderr, "benchrun coordinate: serving %d shards on %s\n", *shards, addr)
		err = s.WaitAllLeft(ctx)
		st := s.Status()
		b, _ := json.MarshalIndent(st, "", "  ")
		fmt.Fprintln(stdout, string(b))
		if err != nil {
			return fail(pipeline.ExitInterrupted, fmt.Errorf("stopped before every shard left: %w", err))
		}
		code := pipeline.ExitOK
		for _, sh := range st.Joined {
			if sh.Left != "done" {
				fmt.Fprintf(stderr, "benchrun coordinate: shard %d/%d: %s\n", sh.Shard, st.Shards, sh.Left)
				code = pipeline.ExitInfra
			}
		}
		fmt.Fprintf(stderr, "benchrun coordinate: %d shards done, %d cells started in step (%s)\n", len(st.Joined), len(st.Barriers), time.Now().UTC().Format(time.RFC3339))
		return exitWith(code)
	}
}
