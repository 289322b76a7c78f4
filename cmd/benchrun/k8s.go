package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/benchrun/benchrun/internal/k8s"
	"github.com/benchrun/benchrun/internal/rundir"
	"github.com/benchrun/benchrun/pipeline"
)

// runK8s is `benchrun k8s render`: the manifests that run a plan in a
// cluster (docs/SCALE.md). It applies nothing: kubectl does that.
func runK8s(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "render" {
		fmt.Fprintln(stderr, "usage: benchrun k8s render PLAN [-t key=value]... [--shards N] [--image IMAGE] [--namespace NS] [--start-at TIME] [--out DIR|FILE.yaml]")
		return pipeline.ExitInvalid
	}
	fs := flag.NewFlagSet("k8s render", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var tags stringList
	fs.Var(&tags, "t", "set a @tag field: -t key=value (repeatable)")
	shards := fs.Int("shards", 1, "shard processes (the Indexed Job's completions and parallelism)")
	image := onceString(fs, "image", k8s.DefaultImage, "image with benchrun and /bin/sh, for the shards and the merge")
	serverImage := onceString(fs, "server-image", "", "image for every launch stage's Deployment (default: the engine's)")
	namespace := onceString(fs, "namespace", "", "namespace of every object (default: kubectl's)")
	startAt := onceString(fs, "start-at", "", "the shards' common start (RFC 3339 or @UNIX; default: 10 minutes from now, kept in the ConfigMap's start-at)")
	out := onceString(fs, "out", "", "a directory (one file per object) or a FILE.yaml (one stream); default: stdout")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: benchrun k8s render PLAN [-t key=value]... [--shards N] [--image IMAGE] [--namespace NS] [--start-at TIME] [--out DIR|FILE.yaml]")
		fs.PrintDefaults()
	}
	plans, err := parseInterspersed(fs, args[1:])
	if err != nil {
		return pipeline.ExitInvalid
	}
	if len(plans) != 1 {
		fs.Usage()
		return pipeline.ExitInvalid
	}
	if *startAt == "" {
		// Ten minutes is time to apply the manifests and pull the image;
		// the ConfigMap holds it so that it can be set later instead.
		*startAt = time.Now().Add(10 * time.Minute).UTC().Truncate(time.Minute).Format(time.RFC3339)
	} else if err := checkStartAt(*startAt); err != nil {
		fmt.Fprintln(stderr, "benchrun k8s render: --start-at:", err)
		return pipeline.ExitInvalid
	}
	reg := registry()
	g, err := loadGraphContext(ctx, plans[0], tags, reg)
	if err != nil {
		return planErrorExit(stderr, err)
	}
	// plan.json as the run writes it, unmasked: the shards run it, so a
	// masked password would fail their requests (docs/SCALE.md: keep
	// secrets in the plan's ${ENV} references, not its text).
	resolved, err := g.Plan.JSON()
	if err != nil {
		fmt.Fprintln(stderr, "benchrun k8s render:", err)
		return pipeline.ExitInvalid
	}
	res, err := k8s.Render(resolved, k8s.Options{Shards: *shards, Image: *image, ServerImage: *serverImage, Namespace: *namespace, StartAt: *startAt})
	if err != nil {
		fmt.Fprintln(stderr, "benchrun k8s render:", err)
		return pipeline.ExitInvalid
	}
	// The shards' plan (launch stages replaced by their Services' URLs)
	// must load as benchrun loads it in the pod: a rewrite that broke it
	// is refused here rather than found in the cluster.
	if _, err := loadGraphSource("plan.cue", res.PlanJSON, nil, reg); err != nil {
		fmt.Fprintln(stderr, "benchrun k8s render: the shards' plan does not load (a bug in benchrun):")
		printPlanError(stderr, err)
		return pipeline.ExitInternal
	}
	for _, w := range res.Warnings {
		fmt.Fprintln(stderr, "benchrun k8s render: warning:", w)
	}
	for _, o := range res.Objects {
		if errs := k8s.Validate(o.Object); len(errs) > 0 {
			fmt.Fprintf(stderr, "benchrun k8s render: %s:\n  %s\n", o.File, strings.Join(errs, "\n  "))
			return pipeline.ExitInvalid
		}
	}
	switch {
	case *out == "":
		b, err := k8s.MarshalAll(res.Objects)
		if err != nil {
			fmt.Fprintln(stderr, "benchrun k8s render:", err)
			return pipeline.ExitInternal
		}
		_, _ = stdout.Write(b)
	case strings.HasSuffix(*out, ".yaml") || strings.HasSuffix(*out, ".yml"):
		b, err := k8s.MarshalAll(res.Objects)
		if err == nil {
			err = rundir.WriteFileAtomic(*out, b)
		}
		if err != nil {
			fmt.Fprintln(stderr, "benchrun k8s render:", err)
			return pipeline.ExitInfra
		}
	default:
		if err := os.MkdirAll(*out, 0o755); err != nil {
			fmt.Fprintln(stderr, "benchrun k8s render:", err)
			return pipeline.ExitInfra
		}
		for _, o := range res.Objects {
			b, err := k8s.Marshal(o.Object)
			if err == nil {
				err = rundir.WriteFileAtomic(filepath.Join(*out, o.File), b)
			}
			if err != nil {
				fmt.Fprintln(stderr, "benchrun k8s render:", err)
				return pipeline.ExitInfra
			}
		}
	}
	fmt.Fprintf(stderr, "benchrun k8s render: %d objects, %d shards starting at %s, %d servers rendered\n",
		len(res.Objects), *shards, *startAt, len(res.Launches))
	return 0
}

// checkStartAt accepts what `benchrun PLAN --start-at` does: RFC 3339,
// or @ and Unix seconds.
func checkStartAt(s string) error {
	if rest, ok := strings.CutPrefix(s, "@"); ok {
		for _, c := range rest {
			if c < '0' || c > '9' {
				return fmt.Errorf("%q: want @ and Unix seconds", s)
			}
		}
		if rest == "" {
			return fmt.Errorf("%q: want @ and Unix seconds", s)
		}
		return nil
	}
	if _, err := time.Parse(time.RFC3339, s); err != nil {
		return fmt.Errorf("%q: want RFC 3339 or @UNIX", s)
	}
	return nil
}
