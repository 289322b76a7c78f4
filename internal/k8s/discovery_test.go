package k8s

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// discoveryServer answers the Kubernetes discovery endpoints, and only
// those, for the kinds benchrun renders. It stands in for an API server
// (none can run here: no kube-apiserver in the registries) so that
// kubectl's client-side dry run, which maps kinds to resources through
// discovery before it does anything else, can run: what kubectl then
// checks (decoding every document with its own scheme, defaulting, the
// object names) is kubectl's, not this server's. It never sees an
// object: a client dry run sends none, and any other path is a 404 that
// fails the test.
func discoveryServer(t *testing.T) string {
	t.Helper()
	res := func(name, kind string, namespaced bool) metav1.APIResource {
		return metav1.APIResource{Name: name, Kind: kind, Namespaced: namespaced, SingularName: strings.ToLower(kind),
			Verbs: metav1.Verbs{"create", "delete", "get", "list", "patch", "update", "watch"}}
	}
	lists := map[string]*metav1.APIResourceList{
		"/api/v1": {GroupVersion: "v1", APIResources: []metav1.APIResource{
			res("configmaps", "ConfigMap", true), res("services", "Service", true),
			res("persistentvolumeclaims", "PersistentVolumeClaim", true), res("secrets", "Secret", true),
			res("namespaces", "Namespace", false), res("pods", "Pod", true)}},
		"/apis/batch/v1": {GroupVersion: "batch/v1", APIResources: []metav1.APIResource{res("jobs", "Job", true)}},
		"/apis/apps/v1":  {GroupVersion: "apps/v1", APIResources: []metav1.APIResource{res("deployments", "Deployment", true)}},
	}
	group := func(name string) metav1.APIGroup {
		gv := metav1.GroupVersionForDiscovery{GroupVersion: name + "/v1", Version: "v1"}
		return metav1.APIGroup{Name: name, Versions: []metav1.GroupVersionForDiscovery{gv}, PreferredVersion: gv}
	}
	mux := http.NewServeMux()
	send := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("/api", func(w http.ResponseWriter, r *http.Request) {
		send(w, &metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}})
	})
	mux.HandleFunc("/apis", func(w http.ResponseWriter, r *http.Request) {
		send(w, &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: []metav1.APIGroup{group("apps"), group("batch")}})
	})
	for path, l := range lists {
		l.Kind, l.APIVersion = "APIResourceList", "v1"
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) { send(w, l) })
	}
	mux.HandleFunc("/version", func(w http.ResponseWriter, r *http.Request) {
		send(w, map[string]string{"major": "1", "minor": "37", "gitVersion": "v1.37.2-discovery-stand-in"})
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("kubectl asked the discovery stand-in for %s %s (not discovery)", r.Method, r.URL.Path)
		http.NotFound(w, r)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	cfg := filepath.Join(t.TempDir(), "kubeconfig")
	kc := "apiVersion: v1\nkind: Config\nclusters:\n- name: stand-in\n  cluster:\n    server: " + srv.URL +
		"\ncontexts:\n- name: stand-in\n  context:\n    cluster: stand-in\n    user: nobody\n    namespace: bench\nusers:\n- name: nobody\n  user: {}\ncurrent-context: stand-in\n"
	if err := os.WriteFile(cfg, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestKubectlDryRunCatches shows the kubectl check can fail: broken YAML
// or a kind the API does not have is refused by kubectl itself. (With
// --validate=false kubectl passes field values through unchecked, and
// --validate=strict needs the API server's OpenAPI documents, which
// cannot be produced here: field checks are DecodeStrict's.)
func TestKubectlDryRunCatches(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl not installed")
	}
	for name, doc := range map[string]string{
		"unknown kind": "apiVersion: batch/v1\nkind: Jobb\nmetadata:\n  name: x\n",
		"broken yaml":  "apiVersion: batch/v1\nkind: Job\nmetadata: [x\n",
	} {
		f := filepath.Join(t.TempDir(), "x.yaml")
		if err := os.WriteFile(f, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(kubectl, "create", "--dry-run=client", "--validate=false", "-o", "yaml", "-f", f)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+discoveryServer(t), "HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Errorf("%s: kubectl accepted it:\n%s", name, out)
		} else {
			t.Logf("%s: kubectl refused: %s", name, firstLine(out))
		}
	}
}
