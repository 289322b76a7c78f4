package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/k8s"
	"github.com/benchrun/benchrun/internal/merge"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/results/resultstest"
)

// buildahStore is a buildah of its own for a test: its images and
// containers in a vfs store under dir (no overlay mount, which fails
// inside a container; nothing left in the machine's store), its
// containers run with chroot isolation (no runtime, no daemon).
type buildahStore struct {
	t   *testing.T
	env []string
}

func newBuildahStore(t *testing.T) *buildahStore {
	t.Helper()
	dir := t.TempDir()
	conf := filepath.Join(dir, "storage.conf")
	text := fmt.Sprintf("[storage]\ndriver = \"vfs\"\ngraphroot = %q\nrunroot = %q\n", filepath.Join(dir, "graph"), filepath.Join(dir, "run"))
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return &buildahStore{t: t, env: append(os.Environ(), "CONTAINERS_STORAGE_CONF="+conf, "BUILDAH_ISOLATION=chroot")}
}

// run runs name with args in the store's environment.
func (b *buildahStore) run(name string, args ...string) (stdout, stderr string, err error) {
	cmd := exec.Command(name, args...)
	cmd.Env = b.env
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err = cmd.Run()
	return so.String(), se.String(), err
}

// must runs buildah and fails the test when it fails.
func (b *buildahStore) must(args ...string) string {
	b.t.Helper()
	so, se, err := b.run("buildah", args...)
	if err != nil {
		b.t.Fatalf("buildah %s: %v\n%s%s", strings.Join(args, " "), err, so, se)
	}
	return so
}

// usableBuildah says why buildah cannot run here ("" when it can): not
// installed (a failure where the tests must run everything: ./test.sh
// installs it), or refused what the test needs (an empty container).
func usableBuildah(t *testing.T, b *buildahStore) string {
	if _, err := exec.LookPath("buildah"); err != nil {
		if os.Getenv("CI") != "" || os.Getenv("BENCHRUN_REQUIRE_ENGINES") != "" {
			t.Fatal("buildah is not installed, and CI must build the image: ./test.sh installs it (apt-get install buildah busybox-static)")
		}
		return "buildah is not installed (apt-get install buildah busybox-static)"
	}
	so, se, err := b.run("buildah", "from", "scratch")
	if err != nil {
		return fmt.Sprintf("buildah cannot make a container here: %v: %s", err, strings.TrimSpace(se))
	}
	b.must("rm", strings.TrimSpace(so))
	return ""
}

// TestImage builds the image with the documented command
// (scripts/build-image.sh) and runs benchrun inside it, as a cluster's pod
// would: its version names the image's tag and `k8s render` defaults to
// the image itself; the quickstart plan passes; and two shards started
// together through the coordinator, merged by benchrun merge, give one
// cell of the whole load. It skips, saying why, only where buildah cannot
// run.
func TestImage(t *testing.T) {
	b := newBuildahStore(t)
	if why := usableBuildah(t, b); why != "" {
		t.Skip(why)
	}
	start := time.Now()
	so, se, err := b.run("../scripts/build-image.sh")
	if err != nil {
		t.Fatalf("scripts/build-image.sh: %v\n%s", err, se)
	}
	image := strings.TrimSpace(so)
	t.Logf("built %s in %s", image, time.Since(start).Round(time.Second))
	tag, ok := strings.CutPrefix(image, k8s.ImageRepo+":")
	if !ok || !regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`).MatchString(tag) {
		t.Fatalf("scripts/build-image.sh printed %q; want %s:TAG", image, k8s.ImageRepo)
	}
	t.Logf("image size: %s", strings.TrimSpace(b.must("images", "--format", "{{.Size}}", image)))
	ctr := strings.TrimSpace(b.must("from", image))
	defer b.must("rm", ctr)
	out := t.TempDir()
	in := func(script string) string {
		t.Helper()
		return b.must("run", "--volume", out+":/out", ctr, "--", "sh", "-c", script)
	}

	version := in("benchrun --version")
	fields := strings.Fields(version)
	if len(fields) < 2 || fields[0] != "benchrun" || k8s.ImageTag(fields[1]) != tag {
		t.Errorf("benchrun --version in the image says %q; want its version to make the tag %q", version, tag)
	}
	rendered := in("benchrun k8s render /usr/share/benchrun/plans/quickstart.cue 2>/dev/null | grep 'image: " + k8s.ImageRepo + "' | sort -u")
	if strings.TrimSpace(rendered) != "image: "+image {
		t.Errorf("k8s render in the image names %q; want its own image %s", rendered, image)
	}

	csv := in("benchrun /usr/share/benchrun/plans/quickstart.cue --out /out/quickstart --quiet")
	if lines := strings.Split(strings.TrimSpace(csv), "\n"); len(lines) != 5 || strings.Count(csv, ",ok,") != 4 {
		t.Errorf("the quickstart in the image printed %d lines, %d ok rows; want a header and 4 ok rows:\n%s", len(lines), strings.Count(csv, ",ok,"), csv)
	}

	imageShards(t, out, in)
}

// imageShards runs two shards of a plan in the image, in step through
// shard 0's coordinator as the Kubernetes Job runs them, merges them, and
// checks the merged cell against the load the plan asked for.
func imageShards(t *testing.T, out string, in func(string) string) {
	t.Helper()
	plan := `name: "imageshard"
model: {name: "sim"}
stages: {
	server: {
		kind: "launch"
		cmd: ["benchrun", "sim", "--addr", "127.0.0.1:${port}", "--model", "sim", "--mode", "fixed", "--ttft", "10ms", "--itl", "2ms", "--eos-prob", "0"]
	}
	health: {kind: "health", target: "server"}
	sweep: {kind: "sweep", target: "server", needs: ["health"], cells: [{isl: 16, osl: 8}], concurrency: [4], requests: 16, warmup: 0, calibrate: "off"}
}
`
	if err := os.WriteFile(filepath.Join(out, "plan.cue"), []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	in(fmt.Sprintf(`cd /out
benchrun plan.cue --shard 0/2 --coordinate 127.0.0.1:%[1]d --out s0 --quiet >/dev/null & first=$!
benchrun plan.cue --shard 1/2 --coordinator 127.0.0.1:%[1]d --out s1 --quiet >/dev/null
second=$?
wait $first
[ $? -eq 0 ] && [ $second -eq 0 ] || { echo "a shard failed" >&2; exit 1; }
benchrun merge s0/*/*/* s1/*/*/* --out merged`, port))

	var info merge.Info
	b, err := os.ReadFile(filepath.Join(out, "merged", "merge.json"))
	if err == nil {
		err = json.Unmarshal(b, &info)
	}
	if err != nil {
		t.Fatalf("the merged run's merge.json: %v\n%s", err, b)
	}
	if len(info.Cells) != 1 || len(info.Cells[0].Shards) != 2 || info.Cells[0].Flagged {
		t.Errorf("merge.json: %+v; want one cell from 2 shards started in step (not flagged)\n%s", info.Cells, b)
	}
	parts, _ := filepath.Glob(filepath.Join(out, "merged", "cells", "*.parquet"))
	var rows []results.Cell
	for _, p := range parts {
		rs, err := resultstest.ReadFile[results.Cell](p)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, rs...)
	}
	if len(rows) != 1 || rows[0].Requests != 16 || rows[0].Status != results.StatusOK || rows[0].Concurrency != 4 {
		t.Errorf("merged cell rows: %d; want one ok row of 16 requests at concurrency 4: %+v", len(rows), rows)
	}
}

// freePort is a loopback port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
