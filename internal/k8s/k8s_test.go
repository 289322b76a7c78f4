package k8s

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/benchrun/benchrun/internal/golden"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// The resolved plans are what schema's Plan.JSON gives for
// plans/quickstart.cue and plans/vllm.cue (the command's testscript
// renders from the .cue plans themselves); kept here as JSON so that this
// package's tests do not load CUE.
const quickstartJSON = `{
  "name": "quickstart",
  "model": {"name": "sim-llama"},
  "stages": {
    "server": {"kind": "launch", "engine": "sim", "port": "auto", "host": "127.0.0.1", "shell": false,
      "cmd": ["benchrun", "sim", "--addr", "${host}:${port}", "--model", "sim-llama"]},
    "health": {"kind": "health", "target": "server"},
    "sweep": {"kind": "sweep", "target": "server", "needs": ["health"], "concurrency": [1, 4]}
  }
}`

const vllmJSON = `{
  "name": "vllm",
  "model": {"name": "llama-3.2-1b"},
  "stages": {
    "server": {"kind": "launch", "engine": "vllm", "port": 8080, "shell": false, "gpus": [0, 1],
      "env": {"HF_TOKEN": "${HF_TOKEN}", "VLLM_LOGGING_LEVEL": "INFO"},
      "cmd": ["vllm", "serve", "meta-llama/Llama-3.2-1B-Instruct", "--served-model-name", "${model}",
        "--host", "${host}", "--port", "${port}", "--tensor-parallel-size", "2"]},
    "health": {"kind": "health", "target": "server"},
    "warmup": {"kind": "warmup", "target": "server", "needs": ["health", "server"]},
    "sweep": {"kind": "sweep", "target": "server", "needs": ["warmup"]},
    "remote": {"kind": "sweep", "target": "http://existing.example:8000", "needs": ["sweep"]}
  }
}`

func render(t *testing.T, plan string, o Options) *Result {
	t.Helper()
	r, err := Render([]byte(plan), o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestGolden(t *testing.T) {
	for _, c := range []struct {
		name string
		plan string
		o    Options
	}{
		{"quickstart", quickstartJSON, Options{Shards: 3, StartAt: "2026-12-01T17:00:00Z"}},
		{"vllm", vllmJSON, Options{Shards: 4, StartAt: "@1796000000", Namespace: "bench", Image: "registry.example/benchrun:v1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := render(t, c.plan, c.o)
			b, err := MarshalAll(r.Objects)
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, c.name+".yaml", b)
			checkManifests(t, r, b)
		})
	}
}

// TestShardJob checks the fields the shards' coordination rests on.
func TestShardJob(t *testing.T) {
	r := render(t, vllmJSON, Options{Shards: 4, StartAt: "@1"})
	var job *batchv1.Job
	var svcs []*corev1.Service
	for _, o := range r.Objects {
		switch v := o.Object.(type) {
		case *batchv1.Job:
			if v.Name == "benchrun-vllm-shards" {
				job = v
			}
		case *corev1.Service:
			svcs = append(svcs, v)
		}
	}
	if job == nil {
		t.Fatal("no shard Job")
	}
	s := job.Spec
	if *s.CompletionMode != batchv1.IndexedCompletion || *s.Completions != 4 || *s.Parallelism != 4 {
		t.Errorf("shard Job: mode %v completions %d parallelism %d", *s.CompletionMode, *s.Completions, *s.Parallelism)
	}
	c := s.Template.Spec.Containers[0]
	if !strings.Contains(c.Command[2], "--shard $(JOB_COMPLETION_INDEX)/4 --start-at $(START_AT)") {
		t.Errorf("shard command: %q", c.Command)
	}
	// The script as a pod runs it: Kubernetes expands $(VAR) from the
	// container's env, then /bin/sh runs it; a stub benchrun on PATH
	// prints its arguments. Shard 0 serves the coordinator, the others
	// join it by shard 0's stable name, and each writes its done marker.
	stub := t.TempDir()
	if err := os.WriteFile(filepath.Join(stub, "benchrun"), []byte("#!/bin/sh\necho \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	runs := t.TempDir()
	for _, idx := range []string{"0", "3"} {
		script := strings.NewReplacer("$(JOB_COMPLETION_INDEX)", idx, "$(START_AT)", "@1767225600", "/runs", runs).Replace(c.Command[2])
		sh := exec.Command("/bin/sh", "-c", script)
		sh.Env = append(os.Environ(), "PATH="+stub+":"+os.Getenv("PATH"))
		out, err := sh.CombinedOutput()
		if err != nil {
			t.Fatalf("shard %s script: %v\n%s", idx, err, out)
		}
		want := "--coordinator " + s.Template.Spec.Subdomain + "-0." + s.Template.Spec.Subdomain + ":7777"
		if idx == "0" {
			want = "--coordinate :7777"
		}
		if !strings.Contains(string(out), "--shard "+idx+"/4 --start-at @1767225600 "+want+" --out "+runs+"/shard-"+idx) {
			t.Errorf("shard %s runs %q, want %q in it", idx, out, want)
		}
		if b, err := os.ReadFile(filepath.Join(runs, "done", idx)); err != nil || strings.TrimSpace(string(b)) != "0" {
			t.Errorf("shard %s done marker: %q %v", idx, b, err)
		}
	}
	// The merge Job's script: it waits for the 4 markers, merges when
	// every shard exited 0 or 1 (a shard's own checks on its part), and
	// refuses a shard that failed otherwise.
	var merge *batchv1.Job
	for _, o := range r.Objects {
		if j, ok := o.Object.(*batchv1.Job); ok && j.Name != job.Name {
			merge = j
		}
	}
	for _, tc := range []struct {
		codes []string
		ok    bool
	}{{[]string{"0", "1", "0", "0"}, true}, {[]string{"0", "3", "0", "0"}, false}} {
		runs := t.TempDir()
		if err := os.MkdirAll(filepath.Join(runs, "done"), 0o755); err != nil {
			t.Fatal(err)
		}
		for i, code := range tc.codes {
			if err := os.WriteFile(filepath.Join(runs, "done", strconv.Itoa(i)), []byte(code+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		script := strings.ReplaceAll(merge.Spec.Template.Spec.Containers[0].Command[2], "/runs", runs)
		sh := exec.Command("/bin/sh", "-c", script)
		sh.Env = append(os.Environ(), "PATH="+stub+":"+os.Getenv("PATH"))
		out, err := sh.CombinedOutput()
		if (err == nil) != tc.ok || tc.ok && !strings.Contains(string(out), "merge ") {
			t.Errorf("merge script with shard statuses %v: %v\n%s", tc.codes, err, out)
		}
	}
	if c.Env[0].ValueFrom.FieldRef.FieldPath != "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
		t.Errorf("JOB_COMPLETION_INDEX from %v", c.Env[0].ValueFrom)
	}
	headless := false
	for _, svc := range svcs {
		if svc.Spec.ClusterIP == corev1.ClusterIPNone && svc.Name == s.Template.Spec.Subdomain {
			headless = true
			for k, v := range svc.Spec.Selector {
				if s.Template.Labels[k] != v {
					t.Errorf("headless Service selects %s=%s, the shard pods have %q", k, v, s.Template.Labels[k])
				}
			}
		}
	}
	if !headless {
		t.Error("no headless Service named as the shard pods' subdomain")
	}
	// The shards' plan: the launch stage is gone, its users target its Service.
	var plan struct {
		Stages map[string]map[string]any `json:"stages"`
	}
	if err := json.Unmarshal(r.PlanJSON, &plan); err != nil {
		t.Fatal(err)
	}
	if _, ok := plan.Stages["server"]; ok {
		t.Error("the launch stage is still in the shards' plan")
	}
	if got := plan.Stages["sweep"]["target"]; got != "http://benchrun-vllm-server:8080" {
		t.Errorf("sweep target %v", got)
	}
	if got := plan.Stages["remote"]["target"]; got != "http://existing.example:8000" {
		t.Errorf("a URL target was rewritten: %v", got)
	}
	if got := plan.Stages["warmup"]["needs"]; len(got.([]any)) != 1 {
		t.Errorf("warmup needs %v, want [health]", got)
	}
	if len(r.Launches) != 1 || r.Launches[0].GPUs != 2 {
		t.Errorf("launches %+v, want one with 2 GPUs", r.Launches)
	}
}

func TestRefused(t *testing.T) {
	for _, c := range []struct{ plan, want string }{
		{`{"name":"x","stages":{"s":{"kind":"launch","on":"pod","cmd":["x"]}}}`, "provisioned machine"},
		{`{"name":"x","stages":{"s":{"kind":"launch","cmd":["x"],"setup":[{"cmd":["y"]}]}}}`, "setup"},
	} {
		if _, err := Render([]byte(c.plan), Options{Shards: 1, StartAt: "@1"}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", c.plan, err, c.want)
		}
	}
	if _, err := Render([]byte(quickstartJSON), Options{Shards: 0, StartAt: "@1"}); err == nil {
		t.Error("0 shards rendered")
	}
	// Two servers whose names become one Kubernetes name: one would be
	// measured twice and the other never.
	two := `{"name":"x","stages":{"Server_a":{"kind":"launch","cmd":["x"]},"server-a":{"kind":"launch","cmd":["y"]}}}`
	if _, err := Render([]byte(two), Options{Shards: 1, StartAt: "@1"}); err == nil || !strings.Contains(err.Error(), "stages.Server_a and stages.server-a both become the Kubernetes name benchrun-x-server-a") {
		t.Errorf("two stages, one name: err %v", err)
	}
	if _, err := Render([]byte(quickstartJSON), Options{Shards: 1, StartAt: "@1", Namespace: "team a"}); err == nil || !strings.Contains(err.Error(), `--namespace "team a" is not a Kubernetes namespace name`) {
		t.Errorf("a bad namespace: err %v", err)
	}
}

// TestStrictDecodeCatches shows the strict decoder is strict: a field the
// API does not know is refused.
func TestStrictDecodeCatches(t *testing.T) {
	_, err := DecodeStrict([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndatta: {}\n"))
	if err == nil || !strings.Contains(err.Error(), "datta") {
		t.Fatalf("unknown field: %v", err)
	}
}

// kubectlDryRun runs kubectl's client-side dry run on the rendered set
// when kubectl is installed (the machine image's; test.sh installs it
// where a registry has it).
// kubectl maps kinds to resources through discovery first, so it is
// pointed at a discovery stand-in (discoveryServer: no API server can run
// here); everything else it checks is its own.
func kubectlDryRun(t *testing.T, r *Result) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Log("kubectl not installed: client dry run skipped")
		return
	}
	dir := t.TempDir()
	for _, o := range r.Objects {
		b, err := Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, o.File), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(kubectl, "create", "--dry-run=client", "--validate=false", "-o", "yaml", "-f", dir)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+discoveryServer(t), "HOME="+t.TempDir())
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("kubectl create --dry-run=client: %v\n%s", err, stderr)
	}
	// What kubectl printed is what it would send: every object, decoded
	// strictly again.
	n := 0
	for _, doc := range strings.Split(string(out), "\n---\n") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		if _, err := DecodeStrict([]byte(doc)); err != nil {
			t.Errorf("kubectl's dry-run output does not decode strictly: %v\n%s", err, doc)
		}
		n++
	}
	if n != len(r.Objects) {
		t.Errorf("kubectl dry run printed %d objects, want %d:\n%s", n, len(r.Objects), out)
	}
	t.Logf("kubectl create --dry-run=client accepted %d objects", n)
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return s
}

func TestLoopbackWarned(t *testing.T) {
	plan := strings.Replace(quickstartJSON, "${host}:${port}", "127.0.0.1:${port}", 1)
	r := render(t, plan, Options{Shards: 1, StartAt: "@1"})
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "loopback") {
		t.Errorf("warnings %q", r.Warnings)
	}
	if r := render(t, quickstartJSON, Options{Shards: 1, StartAt: "@1"}); len(r.Warnings) != 0 {
		t.Errorf("warnings on ${host}: %q", r.Warnings)
	}
}

func TestPerCellWarned(t *testing.T) {
	plan := strings.Replace(quickstartJSON, `"engine": "sim",`, `"engine": "sim", "restart": "per_cell",`, 1)
	r := render(t, plan, Options{Shards: 1, StartAt: "@1"})
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "per_cell") {
		t.Errorf("warnings %q", r.Warnings)
	}
}

// credsJSON is a plan whose client stages read credentials from the
// environment (a key and a header token) and whose launch env holds a
// token inside a longer value.
const credsJSON = `{
  "name": "creds",
  "model": {"name": "m"},
  "stages": {
    "server": {"kind": "launch", "engine": "vllm", "port": 8080, "shell": false,
      "env": {"HF_TOKEN": "${HF_TOKEN}", "EXTRA_HEADER": "Bearer ${GATE_TOKEN}", "LITERAL": "a $(b) ${port}"},
      "cmd": ["vllm", "serve", "m", "--port", "${port}"]},
    "health": {"kind": "health", "target": "server", "api_key_env": "OPENAI_KEY"},
    "sweep": {"kind": "sweep", "target": "server", "needs": ["health"], "headers": {"Authorization": "Bearer ${TOKEN}", "X-Org": "acme"}}
  }
}`

// TestShardsGetClientCredentials: the shards run the client stages, so
// what those read from benchrun's environment (api_key_env, ${NAME} in a
// header) is in every shard pod's environment, from the Secret, never
// written into a manifest; the merge Job gets the same. A ${NAME} inside
// a longer launch env value is expanded by Kubernetes from the Secret,
// not rendered literally.
func TestShardsGetClientCredentials(t *testing.T) {
	r := render(t, credsJSON, Options{Shards: 2, StartAt: "@1"})
	secretKeys := func(env []corev1.EnvVar) map[string]string {
		m := map[string]string{}
		for _, e := range env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				if e.ValueFrom.SecretKeyRef.Name != EnvSecret {
					t.Errorf("%s from Secret %s, want %s", e.Name, e.ValueFrom.SecretKeyRef.Name, EnvSecret)
				}
				m[e.Name] = e.ValueFrom.SecretKeyRef.Key
			}
		}
		return m
	}
	jobs := 0
	for _, o := range r.Objects {
		switch v := o.Object.(type) {
		case *batchv1.Job:
			jobs++
			got := secretKeys(v.Spec.Template.Spec.Containers[0].Env)
			if got["OPENAI_KEY"] != "OPENAI_KEY" || got["TOKEN"] != "TOKEN" || len(got) != 2 {
				t.Errorf("Job %s: variables from the Secret %v, want OPENAI_KEY and TOKEN", v.Name, got)
			}
		}
	}
	if jobs != 2 {
		t.Fatalf("%d Jobs, want the shards' and the merge's", jobs)
	}
	b, err := MarshalAll(r.Objects)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	for _, want := range []string{"value: Bearer $(BENCHRUN_SECRET_GATE_TOKEN)", "name: BENCHRUN_SECRET_GATE_TOKEN", "value: a $$(b) 8080"} {
		if !strings.Contains(text, want) {
			t.Errorf("the manifests lack %q", want)
		}
	}
	if strings.Contains(text, "${GATE_TOKEN}") {
		t.Errorf("a ${NAME} inside a launch env value is rendered literally")
	}
	if i, j := strings.Index(text, "name: BENCHRUN_SECRET_GATE_TOKEN"), strings.Index(text, "name: EXTRA_HEADER"); i < 0 || j < i {
		t.Errorf("the Secret's variable must come before the value that expands it (at %d, %d)", i, j)
	}
	if !slicesContains(r.Warnings, "OPENAI_KEY, TOKEN from the Secret benchrun-env") {
		t.Errorf("warnings %q, want the Secret's names said", r.Warnings)
	}
	checkManifests(t, r, b)
}

// checkManifests decodes each rendered document strictly, validates it,
// and has kubectl accept them (a client dry run, where kubectl is).
func checkManifests(t *testing.T, r *Result, b []byte) {
	t.Helper()
	for _, doc := range bytes.Split(b, []byte("\n---\n")) {
		obj, err := DecodeStrict(doc)
		if err != nil {
			t.Fatalf("strict decode: %v\n%s", err, doc)
		}
		if errs := Validate(obj); len(errs) > 0 {
			t.Errorf("validation: %s", strings.Join(errs, "; "))
		}
	}
	kubectlDryRun(t, r)
}

func slicesContains(list []string, part string) bool {
	for _, s := range list {
		if strings.Contains(s, part) {
			return true
		}
	}
	return false
}

// TestImageTag: every version benchrun can say it is becomes a tag an OCI
// registry takes ([A-Za-z0-9_][A-Za-z0-9_.-]{0,127}), as
// scripts/build-image.sh tags the image it builds.
func TestImageTag(t *testing.T) {
	valid := regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	for _, tt := range []struct{ version, want string }{
		{"(devel)", "devel"},
		{"v0.0.0-20261206181341-05bfeae2b1c3", "v0.0.0-20261206181341-05bfeae2b1c3"},
		{"v0.0.0-20261206181341-05bfeae2b1c3+dirty", "v0.0.0-20261206181341-05bfeae2b1c3-dirty"},
		{"v1.2.3", "v1.2.3"},
		{"", "devel"},
		{".hidden", "hidden"},
		{strings.Repeat("a", 200), strings.Repeat("a", 128)},
	} {
		got := ImageTag(tt.version)
		if got != tt.want || !valid.MatchString(got) {
			t.Errorf("ImageTag(%q) = %q; want %q, a valid tag", tt.version, got, tt.want)
		}
	}
	if img := DefaultImage(); !strings.HasPrefix(img, ImageRepo+":") {
		t.Errorf("DefaultImage() = %q; want %s:TAG", img, ImageRepo)
	}
}
