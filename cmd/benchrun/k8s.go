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

// k8sFlags declares `benchrun k8s render`'s flags: the manifests that
// run a plan in a cluster (docs/SCALE.md). It applies nothing: kubectl
// does that.
func k8sFlags(fs *flag.FlagSet) runFunc {
	var tags stringList
	fs.Var(&tags, "t", "set a @tag field: -t key=value (repeatable)")
	shards := fs.Int("shards", 1, "shard processes (the Indexed Job's completions and parallelism)")
	image := onceString(fs, "image", k8s.DefaultImage(), "image with benchrun and /bin/sh, for the shards and the merge (the default is what scripts/build-image.sh builds from this benchrun's checkout)")
	serverImage := onceString(fs, "server-image", "", "image for every launch stage's Deployment (default: the engine's)")
	namespace := onceString(fs, "namespace", "", "namespace of every object (default: kubectl's)")
	startAt := onceString(fs, "start-at", "", "the shards' common start (RFC 3339 or @UNIX; default: 10 minutes from now, kept in the ConfigMap's start-at)")
	out := onceString(fs, "out", "", "a directory (one file per object) or a FILE.yaml (one stream); default: stdout")
	return func(ctx context.Context, plans []string, stdout, stderr io.Writer) error {
		if *startAt == "" {
			// Ten minutes is time to apply the manifests and pull the image;
			// the ConfigMap holds it so that it can be set later instead.
			*startAt = time.Now().Add(10 * time.Minute).UTC().Truncate(time.Minute).Format(time.RFC3339)
		} else if err := checkStartAt(*startAt); err != nil {
			return fail(pipeline.ExitInvalid, fmt.Errorf("--start-at: %w", err))
		}
		res, err := renderK8s(ctx, plans[0], tags, k8s.Options{Shards: *shards, Image: *image, ServerImage: *serverImage, Namespace: *namespace, StartAt: *startAt}, stderr)
		if err != nil {
			return err
		}
		if err := writeK8s(res, *out, stdout); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "benchrun k8s render: %d objects, %d shards starting at %s, %d servers rendered\n",
			len(res.Objects), *shards, *startAt, len(res.Launches))
		return nil
	}
}

// renderK8s renders a plan's manifests and checks them: the shards' plan
// must load, and every object must be one the cluster takes.
func renderK8s(ctx context.Context, plan string, tags []string, o k8s.Options, stderr io.Writer) (*k8s.Result, error) {
	reg := registry()
	g, err := loadGraphContext(ctx, plan, tags, reg)
	if err != nil {
		return nil, exitWith(planErrorExit(stderr, err))
	}
	// plan.json as the run writes it, unmasked: the shards run it, so a
	// masked password would fail their requests (docs/SCALE.md: keep
	// secrets in the plan's ${ENV} references, not its text).
	resolved, err := g.Plan.JSON()
	if err != nil {
		return nil, fail(pipeline.ExitInvalid, err)
	}
	res, err := k8s.Render(resolved, o)
	if err != nil {
		return nil, fail(pipeline.ExitInvalid, err)
	}
	// The shards' plan (launch stages replaced by their Services' URLs)
	// must load as benchrun loads it in the pod: a rewrite that broke it
	// is refused here rather than found in the cluster.
	if _, err := loadGraphSource("plan.cue", res.PlanJSON, nil, reg); err != nil {
		fmt.Fprintln(stderr, "benchrun k8s render: the shards' plan does not load (a bug in benchrun):")
		printPlanError(stderr, err)
		return nil, exitWith(pipeline.ExitInternal)
	}
	for _, w := range res.Warnings {
		fmt.Fprintln(stderr, "benchrun k8s render: warning:", w)
	}
	for _, o := range res.Objects {
		if errs := k8s.Validate(o.Object); len(errs) > 0 {
			return nil, failf(pipeline.ExitInvalid, "%s:\n  %s", o.File, strings.Join(errs, "\n  "))
		}
	}
	return res, nil
}

// writeK8s writes the manifests to stdout, to one FILE.yaml, or one file
// per object into a directory.
func writeK8s(res *k8s.Result, out string, stdout io.Writer) error {
	switch {
	case out == "":
		b, err := k8s.MarshalAll(res.Objects)
		if err != nil {
			return fail(pipeline.ExitInternal, err)
		}
		_, _ = stdout.Write(b)
	case strings.HasSuffix(out, ".yaml") || strings.HasSuffix(out, ".yml"):
		b, err := k8s.MarshalAll(res.Objects)
		if err == nil {
			err = rundir.WriteFileAtomic(out, b)
		}
		return err
	default:
		if err := os.MkdirAll(out, 0o755); err != nil {
			return err
		}
		for _, o := range res.Objects {
			b, err := k8s.Marshal(o.Object)
			if err == nil {
				err = rundir.WriteFileAtomic(filepath.Join(out, o.File), b)
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
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
