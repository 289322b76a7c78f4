// Package k8s renders the Kubernetes manifests that run a resolved plan
// in a cluster: the shards as an Indexed Job, the merge after them, and
// the plan's launch stages as Deployments. Every object is built from the
// official API types (k8s.io/api), never from hand-written YAML, so that
// a field the API does not know cannot be rendered (docs/SCALE.md).
//
// The package works on the resolved plan's JSON (plan.json as the run
// writes it) and imports nothing of benchrun's schema: what it needs of a
// launch stage it reads from that JSON.
package k8s

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/benchrun/benchrun/internal/engines"
	"github.com/benchrun/benchrun/internal/rundir"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// Options are what the command line decides about the rendering.
type Options struct {
	// Shards is the number of shard processes (the Indexed Job's completions).
	Shards int
	// Image is the container image with benchrun (and /bin/sh) in it.
	Image string
	// Namespace is set on every object; empty leaves it to kubectl's context.
	Namespace string
	// StartAt is the common start instant the shards are given
	// (`--start-at`); it is kept in the ConfigMap so it can be changed
	// there before the Job is applied.
	StartAt string
	// ServerImage overrides the image of every rendered launch Deployment
	// (default: the engine's own image, engines.Engine.Image).
	ServerImage string
}

// ImageRepo is the repository of the image scripts/build-image.sh builds
// (docs/SCALE.md): it is on the machine that built it until pushed.
const ImageRepo = "localhost/benchrun"

// DefaultImage is the benchrun image the shards and the merge run: the one
// scripts/build-image.sh builds from the checkout this benchrun was built
// from, ImageRepo:ImageTag(its version). A version tag, not latest: a
// cluster that was given the image (kind load, a node's image store) uses
// it without pulling (imagePullPolicy IfNotPresent).
func DefaultImage() string { return ImageRepo + ":" + ImageTag(rundir.Version()) }

// ImageTag is the image tag of a benchrun version: its characters an OCI
// tag cannot hold ("+dirty", "(devel)") made '-', none at either end, at
// most 128 (scripts/build-image.sh tags by the same rule).
func ImageTag(version string) string {
	tag := strings.Map(func(r rune) rune {
		if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_' || r == '.' || r == '-' {
			return r
		}
		return '-'
	}, version)
	tag = strings.TrimRight(strings.TrimLeft(tag, "-."), "-")
	if len(tag) > 128 {
		tag = tag[:128]
	}
	if tag == "" {
		return "devel"
	}
	return tag
}

// RunsClaim is the PersistentVolumeClaim the shards write their parts to
// and the merge reads them from: ReadWriteMany, since the shards' pods
// land on different nodes.
const RunsClaim = "benchrun-runs"

// DefaultPort is the port a launch stage with port "auto" listens on in
// its pod: a pod has its own network namespace, so any fixed port is free.
const DefaultPort = 8000

// Object is one rendered manifest and the file it is written to.
type Object struct {
	File   string
	Object runtime.Object
}

// Launch is what a rendered Deployment needs of a launch stage.
type Launch struct {
	Stage  string
	Engine string
	Cmd    []string
	Shell  bool
	Env    map[string]string
	Port   int
	Model  string
	GPUs   int
}

// Result is a rendering: the objects, and the plan the shards run (the
// resolved plan with its launch stages replaced by their Services' URLs).
type Result struct {
	Objects  []Object
	PlanJSON []byte
	Launches []Launch
	// Warnings are what may not work in a pod and was rendered anyway.
	Warnings []string
}

// CoordinatorPort is where shard 0 serves the shards' coordinator.
const CoordinatorPort = 7777

// EnvSecret is the Secret a launch Deployment takes ${NAME} values from
// (kubectl create secret generic benchrun-env --from-literal=NAME=...).
const EnvSecret = "benchrun-env"

var envRef = regexp.MustCompile(`^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$`)

// envRefs finds the ${NAME} references inside a longer value.
var envRefs = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// planVars are the ${…} names benchrun fills itself, never from its
// environment.
var planVars = map[string]bool{"port": true, "host": true, "model": true}

// secretEnv is the container variable a ${NAME} inside a longer value
// reads from the Secret: Kubernetes expands $(VAR) in an env value from
// the variables defined before it, so "Bearer ${TOKEN}" becomes
// "Bearer $(BENCHRUN_SECRET_TOKEN)" after that variable.
func secretEnv(name string) string { return "BENCHRUN_SECRET_" + name }

func fromSecret(envName, key string) corev1.EnvVar {
	return corev1.EnvVar{Name: envName, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: EnvSecret}, Key: key}}}
}

// clientEnv is the environment the shards' benchrun reads credentials
// from: every api_key_env (and other *_env field) of the shards' plan and
// every ${NAME} in its values (a header "Bearer ${TOKEN}"), sorted. On a
// laptop they are benchrun's own environment; in a shard pod each comes
// from the Secret EnvSecret, or every shard would fail its first check.
func clientEnv(plan any) []string {
	seen := map[string]bool{}
	var walk func(key string, v any)
	walk = func(key string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				walk(k, e)
			}
		case []any:
			for _, e := range x {
				walk(key, e)
			}
		case string:
			if strings.HasSuffix(key, "_env") && envName.MatchString(x) {
				seen[x] = true
			}
			for _, m := range envRefs.FindAllStringSubmatch(x, -1) {
				if !planVars[m[1]] {
					seen[m[1]] = true
				}
			}
		}
	}
	walk("", plan)
	return slices.Sorted(maps.Keys(seen))
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// secretEnvVars are clientEnv's names as container variables from the
// Secret.
func secretEnvVars(names []string) []corev1.EnvVar {
	var env []corev1.EnvVar
	for _, n := range names {
		env = append(env, fromSecret(n, n))
	}
	return env
}

var nonName = regexp.MustCompile(`[^a-z0-9-]+`)

// dnsName turns s into a DNS-1035 label fragment (lower case, digits and
// dashes, starting with a letter), the strictest of the name rules the
// rendered kinds have (a Service's), so one prefix serves them all.
func dnsName(s string) string {
	s = strings.Trim(nonName.ReplaceAllString(strings.ToLower(s), "-"), "-")
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		s = "p-" + s
	}
	return strings.TrimRight(s, "-")
}

// Render builds the manifests for the resolved plan planJSON.
func Render(planJSON []byte, o Options) (*Result, error) {
	if err := o.complete(); err != nil {
		return nil, err
	}
	var plan map[string]any
	if err := json.Unmarshal(planJSON, &plan); err != nil {
		return nil, fmt.Errorf("the resolved plan: %w", err)
	}
	prefix, modelName := planNames(plan)
	r := &Result{}
	launches, warnings, err := rewriteLaunches(plan, prefix, o.Namespace, modelName)
	if err != nil {
		return nil, err
	}
	// What the shards' benchrun reads from its environment, the launch
	// stages taken out (their Deployments read their own).
	creds := secretEnvVars(clientEnv(plan))
	if len(creds) > 0 {
		var names []string
		for _, c := range creds {
			names = append(names, c.Name)
		}
		warnings = append(warnings, fmt.Sprintf("the shards and the merge read %s from the Secret %s: create it before applying (kubectl create secret generic %s --from-literal=%s=...)",
			strings.Join(names, ", "), EnvSecret, EnvSecret, names[0]))
	}
	r.Launches, r.Warnings = launches, append(warnings, loopbackWarnings(launches)...)
	shardPlan, err := json.MarshalIndent(plan, "", "  ")
	if err != nil {
		return nil, err
	}
	r.PlanJSON = shardPlan

	b := &objects{prefix: prefix, namespace: o.Namespace}
	cmName := prefix + "-plan"
	b.add("configmap-plan", &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: b.meta(cmName, "plan"),
		Data:       map[string]string{"plan.json": string(shardPlan) + "\n", "start-at": o.StartAt},
	})
	b.add("pvc-runs", &corev1.PersistentVolumeClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: b.meta(RunsClaim, "runs"),
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
			},
		},
	})
	for _, l := range launches {
		dep, svc := launchObjects(l, prefix, o, b.labels)
		b.add("deployment-"+dnsName(l.Stage), dep)
		b.add("service-"+dnsName(l.Stage), svc)
	}
	volumes := runVolumes(cmName)
	svc, job := shardObjects(b, o, cmName, volumes)
	job.Spec.Template.Spec.Containers[0].Env = append(job.Spec.Template.Spec.Containers[0].Env, creds...)
	b.add("service-shards", svc)
	b.add("job-shards", job)
	merge := mergeJob(b, o, volumes[1:])
	merge.Spec.Template.Spec.Containers[0].Env = creds // the sinks' tokens (SiYuan's token_env)
	b.add("job-merge", merge)
	r.Objects = b.list
	return r, nil
}

// complete fills in the default image and checks the options.
func (o *Options) complete() error {
	if o.Shards < 1 {
		return fmt.Errorf("--shards %d: want at least 1", o.Shards)
	}
	if o.Image == "" {
		o.Image = DefaultImage()
	}
	if o.StartAt == "" {
		return fmt.Errorf("no start time: the shards need a common --start-at")
	}
	if o.Namespace != "" {
		if errs := validation.IsDNS1123Label(o.Namespace); len(errs) > 0 {
			return fmt.Errorf("--namespace %q is not a Kubernetes namespace name: %s", o.Namespace, strings.Join(errs, "; "))
		}
	}
	return nil
}

// planNames are the prefix of every rendered object's name, from the
// plan's name, and the plan's model name.
func planNames(plan map[string]any) (prefix, modelName string) {
	planName, _ := plan["name"].(string)
	if m, ok := plan["model"].(map[string]any); ok {
		modelName, _ = m["name"].(string)
	}
	prefix = "benchrun-" + dnsName(planName)
	// 63 is a label's limit; the longest suffix added is "-shards" or a
	// stage's name, which is checked by Validate on the result.
	if len(prefix) > 40 {
		prefix = strings.TrimRight(prefix[:40], "-")
	}
	return prefix, modelName
}

// loopbackWarnings warn of launch commands that listen on loopback.
func loopbackWarnings(launches []Launch) []string {
	var warnings []string
	for _, l := range launches {
		for _, a := range l.Cmd {
			// ${host} becomes 0.0.0.0; a loopback address written out
			// is unreachable from the shards' pods.
			if strings.Contains(a, "127.0.0.1") || strings.Contains(a, "localhost") {
				warnings = append(warnings, fmt.Sprintf("stages.%s.cmd: %q listens on loopback, which the shards' pods cannot reach: write ${host} instead", l.Stage, a))
			}
		}
	}
	return warnings
}

// objects collects a rendering's manifests: they share the name prefix
// and the labels that tell them apart from another plan's, and their files
// are numbered in the order they are added, the order kubectl applies them in.
type objects struct {
	prefix    string
	namespace string
	list      []Object
}

func (b *objects) labels(role string) map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":      "benchrun",
		"app.kubernetes.io/instance":  b.prefix,
		"app.kubernetes.io/component": role,
	}
}

func (b *objects) meta(name, role string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: b.namespace, Labels: b.labels(role)}
}

func (b *objects) add(file string, obj runtime.Object) {
	b.list = append(b.list, Object{File: fmt.Sprintf("%02d-%s.yaml", len(b.list), file), Object: obj})
}

// runVolumes are the plan (from the ConfigMap cmName) and the runs claim,
// in that order: the shards mount both, the merge only the runs.
func runVolumes(cmName string) []corev1.Volume {
	return []corev1.Volume{
		{Name: "plan", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: cmName},
			// benchrun loads a plan by CUE's rules, which take a .json
			// file as data rather than as a plan: JSON is CUE, so the
			// resolved plan is mounted under a .cue name.
			Items: []corev1.KeyToPath{{Key: "plan.json", Path: "plan.cue"}},
		}}},
		{Name: "runs", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: RunsClaim}}},
	}
}

// noRetry is the rendered Jobs' backoff limit. A retried shard would start
// after the common instant and measure a different load than its peers:
// fail instead, and rerun the set.
func noRetry() *int32 {
	n := int32(0)
	return &n
}

// shardObjects are the shards' Indexed Job and the headless Service that
// names its pods.
func shardObjects(b *objects, o Options, cmName string, volumes []corev1.Volume) (*corev1.Service, *batchv1.Job) {
	shardJob := b.prefix + "-shards"
	// The headless Service gives every shard pod a stable DNS name,
	// <job>-<index>.<service>: an Indexed Job sets each pod's hostname to
	// <job>-<index>, and the pod's subdomain names this Service.
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: b.meta(shardJob, "shard"),
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			Selector:  b.labels("shard"),
			// A shard is addressed before it is ready (a coordinator
			// waits for the others), so not-ready pods are published too.
			PublishNotReadyAddresses: true,
			Ports:                    []corev1.ServicePort{{Name: "coordinate", Port: CoordinatorPort, TargetPort: intstr.FromInt32(CoordinatorPort)}},
		},
	}
	mounts := []corev1.VolumeMount{{Name: "plan", MountPath: "/plan", ReadOnly: true}, {Name: "runs", MountPath: "/runs"}}
	completions := int32(o.Shards)
	indexed := batchv1.IndexedCompletion
	job := &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: b.meta(shardJob, "shard"),
		Spec: batchv1.JobSpec{
			CompletionMode: &indexed,
			Completions:    &completions,
			Parallelism:    &completions,
			BackoffLimit:   noRetry(),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: b.labels("shard")},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Subdomain:     shardJob,
					Containers: []corev1.Container{{
						Name:    "shard",
						Image:   o.Image,
						Command: []string{"/bin/sh", "-c", shardScript(shardJob, o.Shards)},
						Env: []corev1.EnvVar{
							// Kubernetes sets JOB_COMPLETION_INDEX itself in an
							// Indexed Job; declaring it from the annotation makes
							// $(JOB_COMPLETION_INDEX) in the command expand by
							// the API's own rule rather than by the shell's.
							{Name: "JOB_COMPLETION_INDEX", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
								FieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}},
							{Name: "START_AT", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
								LocalObjectReference: corev1.LocalObjectReference{Name: cmName}, Key: "start-at"}}},
						},
						Ports:        []corev1.ContainerPort{{Name: "coordinate", ContainerPort: CoordinatorPort}},
						VolumeMounts: mounts,
					}},
					Volumes: volumes,
				},
			},
		},
	}
	return svc, job
}

// shardScript is a shard pod's command, for the Job shardJob of n shards.
//
// Each shard writes its run under /runs/shard-<i> and, whatever its exit,
// a done marker holding its exit status: the merge Job waits for the N
// markers (Kubernetes has no "after that Job" for a Job). Shard 0 serves
// the coordinator (--coordinate) that every shard joins by shard 0's
// stable name, so that every cell starts on all shards together;
// --start-at is the first cell's "not before".
func shardScript(shardJob string, n int) string {
	coordAddr := fmt.Sprintf("%s-0.%s:%d", shardJob, shardJob, CoordinatorPort)
	return fmt.Sprintf("sync='--coordinator %s'; if [ \"$(JOB_COMPLETION_INDEX)\" = 0 ]; then sync='--coordinate :%d'; fi; ", coordAddr, CoordinatorPort) +
		"benchrun /plan/plan.cue --shard $(JOB_COMPLETION_INDEX)/" + strconv.Itoa(n) +
		" --start-at $(START_AT) $sync --out /runs/shard-$(JOB_COMPLETION_INDEX)" +
		"; rc=$?; mkdir -p /runs/done && echo $rc > /runs/done/$(JOB_COMPLETION_INDEX); exit $rc"
}

// mergeJob is the Job that merges the shards' parts once all of them are
// done; volumes holds the runs claim.
func mergeJob(b *objects, o Options, volumes []corev1.Volume) *batchv1.Job {
	// A shard's exit 1 is its own assertions on its part of the load:
	// the merge judges the whole again. Any other status is a failure.
	mergeScript := "n=" + strconv.Itoa(o.Shards) + "; while [ \"$(ls /runs/done 2>/dev/null | wc -l)\" -lt $n ]; do sleep 5; done" +
		"; if [ -n \"$(grep -LxE '0|1' /runs/done/*)\" ]; then echo 'a shard failed:' $(grep -LxE '0|1' /runs/done/*) >&2; exit 1; fi" +
		"; exec benchrun merge /runs/shard-*/* --out /runs/merged"
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: b.meta(b.prefix+"-merge", "merge"),
		Spec: batchv1.JobSpec{
			BackoffLimit: noRetry(),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: b.labels("merge")},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{
						Name:         "merge",
						Image:        o.Image,
						Command:      []string{"/bin/sh", "-c", mergeScript},
						VolumeMounts: []corev1.VolumeMount{{Name: "runs", MountPath: "/runs"}},
					}},
					Volumes: volumes,
				},
			},
		},
	}
}

// rewriteLaunches takes the launch stages out of plan: each becomes a
// Deployment + Service, and the stages that targeted it target the
// Service's URL instead (a URL target is an existing server to benchrun,
// so a shard starts nothing). A stage already targeting a URL is left as
// it is: that server exists and nothing is rendered for it.
func rewriteLaunches(plan map[string]any, prefix, namespace, modelName string) (launches []Launch, warnings []string, err error) {
	st, _ := plan["stages"].(map[string]any)
	names := make([]string, 0, len(st))
	for k := range st {
		names = append(names, k)
	}
	sort.Strings(names)
	urls := map[string]string{}
	engineOf := map[string]string{}
	byService := map[string]string{} // Kubernetes name → the stage that took it
	for _, name := range names {
		s, _ := st[name].(map[string]any)
		if s["kind"] != "launch" {
			continue
		}
		var c struct {
			Engine  string            `json:"engine"`
			On      string            `json:"on"`
			Cmd     []string          `json:"cmd"`
			Shell   bool              `json:"shell"`
			Env     map[string]string `json:"env"`
			Port    any               `json:"port"`
			Model   string            `json:"model"`
			GPUs    []any             `json:"gpus"`
			Setup   []any             `json:"setup"`
			After   []any             `json:"after_start"`
			Files   map[string]any    `json:"files"`
			Restart string            `json:"restart"`
		}
		b, _ := json.Marshal(s)
		if err := json.Unmarshal(b, &c); err != nil {
			return nil, nil, fmt.Errorf("stages.%s: %w", name, err)
		}
		// What a pod cannot do the way a local launch does is refused
		// rather than rendered wrong.
		switch {
		case c.On != "":
			return nil, nil, fmt.Errorf("stages.%s: on: a provisioned machine is not rendered for Kubernetes (give its server a URL target)", name)
		case len(c.Setup) > 0 || len(c.After) > 0 || len(c.Files) > 0:
			return nil, nil, fmt.Errorf("stages.%s: setup, after_start and files are not rendered for Kubernetes (bake them into the server image)", name)
		}
		if c.Restart == "per_cell" {
			// A Deployment keeps one server up: restarting it per cell
			// would take the shards' coordination, which is not rendered.
			warnings = append(warnings, fmt.Sprintf("stages.%s.restart: per_cell is not honoured in a cluster: the Deployment's server is started once", name))
		}
		l := Launch{Stage: name, Engine: c.Engine, Shell: c.Shell, Env: c.Env, Port: DefaultPort, Model: c.Model, GPUs: len(c.GPUs)}
		if p, ok := c.Port.(float64); ok {
			l.Port = int(p)
		}
		if l.Model == "" {
			l.Model = modelName
		}
		// A GPU server gets at least one GPU; benchrun's simulator none.
		if l.GPUs == 0 && !engines.For(l.Engine).NoGPU {
			l.GPUs = 1
		}
		rep := strings.NewReplacer("${port}", strconv.Itoa(l.Port), "${host}", "0.0.0.0", "${model}", l.Model)
		for _, a := range c.Cmd {
			l.Cmd = append(l.Cmd, rep.Replace(a))
		}
		if len(c.Env) > 0 {
			// The plan's own variables, as a local launch fills them in
			// its env too; the rest are the environment's (launchObjects).
			l.Env = make(map[string]string, len(c.Env))
			for k, v := range c.Env {
				l.Env[k] = rep.Replace(v)
			}
		}
		svc := prefix + "-" + dnsName(name)
		if other, ok := byService[svc]; ok {
			// One Service for two servers: one would be measured twice, the
			// other never.
			return nil, nil, fmt.Errorf("stages.%s and stages.%s both become the Kubernetes name %s (names are lower case, with dashes): rename one", other, name, svc)
		}
		byService[svc] = name
		host := svc
		if namespace != "" {
			host += "." + namespace + ".svc"
		}
		urls[name] = "http://" + host + ":" + strconv.Itoa(l.Port)
		engineOf[name] = c.Engine
		launches = append(launches, l)
		delete(st, name)
	}
	for _, name := range names {
		s, ok := st[name].(map[string]any)
		if !ok {
			continue
		}
		if t, _ := s["target"].(string); urls[t] != "" {
			s["target"] = urls[t]
			// A health stage on a URL takes its paths from its own engine.
			if s["kind"] == "health" && s["engine"] == nil {
				s["engine"] = engineOf[t]
			}
		}
		if needs, ok := s["needs"].([]any); ok {
			kept := []any{}
			for _, n := range needs {
				if ns, _ := n.(string); urls[ns] == "" {
					kept = append(kept, n)
				}
			}
			s["needs"] = kept
		}
	}
	return launches, warnings, nil
}

// launchObjects is a launch stage's Deployment and Service.
func launchObjects(l Launch, prefix string, o Options, labels func(string) map[string]string) (*appsv1.Deployment, *corev1.Service) {
	name := prefix + "-" + dnsName(l.Stage)
	sel := labels("server")
	sel["benchrun.dev/stage"] = dnsName(l.Stage)
	image := o.ServerImage
	if image == "" {
		image = engines.For(l.Engine).Image
	}
	if image == "" {
		image = o.Image
	}
	cmd := l.Cmd
	if l.Shell {
		cmd = []string{"/bin/sh", "-c", strings.Join(l.Cmd, " ")}
	}
	var env, secrets []corev1.EnvVar
	fromSecrets := map[string]bool{}
	for k, v := range l.Env {
		// A value that is wholly ${NAME} is benchrun's own environment
		// (a token, typically): in a pod it comes from the Secret
		// EnvSecret, so that it is never written into a manifest.
		if m := envRef.FindStringSubmatch(v); m != nil && !planVars[m[1]] {
			env = append(env, fromSecret(k, m[1]))
			continue
		}
		// Inside a longer value ("Bearer ${TOKEN}"), each name comes from
		// the Secret through a variable of its own that Kubernetes
		// expands ($(VAR)); a literal "$(" is escaped as "$$(" so that
		// nothing else is expanded.
		v = strings.ReplaceAll(v, "$(", "$$(")
		v = envRefs.ReplaceAllStringFunc(v, func(ref string) string {
			name := envRefs.FindStringSubmatch(ref)[1]
			if planVars[name] {
				return ref
			}
			if !fromSecrets[name] {
				fromSecrets[name] = true
				secrets = append(secrets, fromSecret(secretEnv(name), name))
			}
			return "$(" + secretEnv(name) + ")"
		})
		env = append(env, corev1.EnvVar{Name: k, Value: v})
	}
	sort.Slice(env, func(i, j int) bool { return env[i].Name < env[j].Name })
	sort.Slice(secrets, func(i, j int) bool { return secrets[i].Name < secrets[j].Name })
	env = append(secrets, env...) // defined before the values that expand them
	var res corev1.ResourceRequirements
	if l.GPUs > 0 {
		q := *resource.NewQuantity(int64(l.GPUs), resource.DecimalSI)
		// Extended resources are requested through limits (requests
		// default to them and may not differ).
		res.Limits = corev1.ResourceList{"nvidia.com/gpu": q}
	}
	health := engines.For(l.Engine).HealthPath
	one := int32(1)
	dep := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: o.Namespace, Labels: sel},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: sel},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name:      "server",
					Image:     image,
					Command:   cmd,
					Env:       env,
					Ports:     []corev1.ContainerPort{{Name: "http", ContainerPort: int32(l.Port)}},
					Resources: res,
					ReadinessProbe: &corev1.Probe{
						ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
							Path: health, Port: intstr.FromInt32(int32(l.Port))}},
						PeriodSeconds: 5,
						// Loading a model takes minutes: readiness, not
						// liveness, so a slow load is waited for, not killed.
						FailureThreshold: 3,
					},
				}}},
			},
		},
	}
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: o.Namespace, Labels: sel},
		Spec: corev1.ServiceSpec{
			Selector: sel,
			Ports:    []corev1.ServicePort{{Name: "http", Port: int32(l.Port), TargetPort: intstr.FromInt32(int32(l.Port))}},
		},
	}
	return dep, svc
}

// Marshal is one object as YAML.
func Marshal(obj runtime.Object) ([]byte, error) {
	return yaml.Marshal(obj)
}

// MarshalAll is the objects as one multi-document YAML stream.
func MarshalAll(objs []Object) ([]byte, error) {
	var buf bytes.Buffer
	for i, o := range objs {
		b, err := Marshal(o.Object)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(b)
	}
	return buf.Bytes(), nil
}
