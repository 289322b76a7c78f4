package k8s

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Validate checks what the apimachinery validation helpers can check
// without an API server: names (a Service's is a DNS-1035 label, the
// others DNS-1123 subdomains), label keys and values, selectors matching
// their templates, and the Indexed Job's counts.
func Validate(obj runtime.Object) []string {
	var errs []string
	acc, ok := obj.(metav1.Object)
	if !ok {
		return []string{fmt.Sprintf("%T: not an object with metadata", obj)}
	}
	name := acc.GetName()
	check := func(what string, msgs []string) {
		for _, m := range msgs {
			errs = append(errs, fmt.Sprintf("%s %q: %s", what, name, m))
		}
	}
	checkLabels := func(where string, l map[string]string) {
		for k, v := range l {
			check(where+" label key "+k, validation.IsQualifiedName(k))
			check(where+" label value "+v, validation.IsValidLabelValue(v))
		}
	}
	checkLabels("metadata", acc.GetLabels())
	if ns := acc.GetNamespace(); ns != "" {
		check("namespace", validation.IsDNS1123Label(ns))
	}
	subset := func(where string, sel, labels map[string]string) {
		for k, v := range sel {
			if labels[k] != v {
				errs = append(errs, fmt.Sprintf("%s %q: selector %s=%s does not match the pod template's labels", where, name, k, v))
			}
		}
	}
	switch o := obj.(type) {
	case *corev1.Service:
		check("Service name", validation.IsDNS1035Label(name))
		for _, p := range o.Spec.Ports {
			check("Service port name", validation.IsValidPortName(p.Name))
			check("Service port", validation.IsValidPortNum(int(p.Port)))
		}
	case *corev1.ConfigMap:
		check("ConfigMap name", validation.IsDNS1123Subdomain(name))
		for k := range o.Data {
			check("ConfigMap key "+k, validation.IsConfigMapKey(k))
		}
		// A ConfigMap is stored in etcd whole: 1 MiB is the API's limit.
		size := 0
		for k, v := range o.Data {
			size += len(k) + len(v)
		}
		if size > corev1.MaxSecretSize {
			errs = append(errs, fmt.Sprintf("ConfigMap %q: %d bytes, over the API's %d", name, size, corev1.MaxSecretSize))
		}
	case *corev1.PersistentVolumeClaim:
		check("PersistentVolumeClaim name", validation.IsDNS1123Subdomain(name))
	case *batchv1.Job:
		check("Job name", validation.IsDNS1123Subdomain(name))
		// An Indexed Job's pod hostnames are <name>-<index>, a DNS label.
		check("Job name as a pod hostname", validation.IsDNS1123Label(name+"-99"))
		checkLabels("pod template", o.Spec.Template.Labels)
		if o.Spec.CompletionMode != nil && *o.Spec.CompletionMode == batchv1.IndexedCompletion {
			if o.Spec.Completions == nil || *o.Spec.Completions < 1 {
				errs = append(errs, fmt.Sprintf("Job %q: an Indexed Job needs completions", name))
			}
		}
		if sd := o.Spec.Template.Spec.Subdomain; sd != "" {
			check("pod subdomain", validation.IsDNS1123Label(sd))
		}
		errs = append(errs, checkContainers(name, o.Spec.Template.Spec)...)
	case *appsv1.Deployment:
		check("Deployment name", validation.IsDNS1123Subdomain(name))
		checkLabels("pod template", o.Spec.Template.Labels)
		if o.Spec.Selector == nil {
			errs = append(errs, fmt.Sprintf("Deployment %q: no selector", name))
		} else {
			subset("Deployment", o.Spec.Selector.MatchLabels, o.Spec.Template.Labels)
		}
		errs = append(errs, checkContainers(name, o.Spec.Template.Spec)...)
	default:
		errs = append(errs, fmt.Sprintf("%T: not a kind Render produces", obj))
	}
	return errs
}

func checkContainers(owner string, spec corev1.PodSpec) []string {
	var errs []string
	vols := map[string]bool{}
	for _, v := range spec.Volumes {
		vols[v.Name] = true
		for _, m := range validation.IsDNS1123Label(v.Name) {
			errs = append(errs, fmt.Sprintf("%s: volume %q: %s", owner, v.Name, m))
		}
	}
	for _, c := range spec.Containers {
		for _, m := range validation.IsDNS1123Label(c.Name) {
			errs = append(errs, fmt.Sprintf("%s: container %q: %s", owner, c.Name, m))
		}
		for _, e := range c.Env {
			for _, m := range validation.IsEnvVarName(e.Name) {
				errs = append(errs, fmt.Sprintf("%s: env %q: %s", owner, e.Name, m))
			}
		}
		for _, vm := range c.VolumeMounts {
			if !vols[vm.Name] {
				errs = append(errs, fmt.Sprintf("%s: mount of volume %q, which the pod does not have", owner, vm.Name))
			}
		}
		if c.Image == "" || strings.TrimSpace(c.Image) != c.Image {
			errs = append(errs, fmt.Sprintf("%s: container %q: image %q", owner, c.Name, c.Image))
		}
	}
	return errs
}
