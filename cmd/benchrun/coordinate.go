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

// runCoordinate serves the coordinator of a sharded run on its own, for
// shards that all join it with --coordinator (shard 0 can serve it
// instead: --coordinate). It exits once every shard joined and left,
// printing the shards' records (clock offsets, barriers) as JSON on
// stdout.
func runCoordinate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("coordinate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	shards := fs.Int("shards", 0, "how many shards will join (the N of --shard i/N)")
	listen := onceString(fs, "listen", ":7070", "the address to serve on")
	lead := fs.Duration("lead", coord.DefaultLead, "how far ahead of the last shard's arrival each cell's start instant is set")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: benchrun coordinate --shards N [--listen ADDR]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return pipeline.ExitOK
		}
		return pipeline.ExitInvalid
	}
	if *shards < 2 || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "benchrun coordinate: --shards N (N >= 2) is required, and nothing else")
		return pipeline.ExitInvalid
	}
	s := coord.NewServer(*shards, *lead)
	addr, stop, err := coord.Serve(ctx, *listen, s)
	if err != nil {
		fmt.Fprintln(stderr, "benchrun coordinate:", err)
		return pipeline.ExitInfra
	}
	defer stop()
	fmt.Fprintf(stderr, "benchrun coordinate: serving %d shards on %s\n", *shards, addr)
	err = s.WaitAllLeft(ctx)
	st := s.Status()
	b, _ := json.MarshalIndent(st, "", "  ")
	fmt.Fprintln(stdout, string(b))
	if err != nil {
		fmt.Fprintln(stderr, "benchrun coordinate: stopped before every shard left:", err)
		return pipeline.ExitInterrupted
	}
	code := pipeline.ExitOK
	for _, sh := range st.Joined {
		if sh.Left != "done" {
			fmt.Fprintf(stderr, "benchrun coordinate: shard %d/%d: %s\n", sh.Shard, st.Shards, sh.Left)
			code = pipeline.ExitInfra
		}
	}
	fmt.Fprintf(stderr, "benchrun coordinate: %d shards done, %d cells started in step (%s)\n", len(st.Joined), len(st.Barriers), time.Now().UTC().Format(time.RFC3339))
	return code
}
