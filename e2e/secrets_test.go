package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
)

// TestSecretsNeverWritten runs the real binary against a gateway that
// echoes the credentials it is sent in every error (as gateways do): the
// api_key_env key, a header value expanded from the environment, and the
// password of the target URL must appear in no file of the run directory
// (Parquet read as bytes and read back as values), nor on stdout or
// stderr.
func TestSecretsNeverWritten(t *testing.T) {
	const (
		key      = "sk-test-123456"
		token    = "tok-e2e-98765"
		password = "hunter2-pw-777"
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		user, pass, _ := r.BasicAuth()
		fmt.Fprintf(w, `{"error":{"message":"invalid key %s (x-token %s, basic %s:%s)"}}`,
			r.Header.Get("Authorization"), r.Header.Get("X-Token"), user, pass)
	}))
	defer srv.Close()
	target := strings.Replace(srv.URL, "http://", "http://bench:"+password+"@", 1)

	dir := t.TempDir()
	plan := filepath.Join(dir, "secrets.cue")
	src := fmt.Sprintf(`name: "secrets"
model: {name: "echo-model"}
stages: {
	health: {kind: "health", target: %[1]q, api_key_env: "E2E_API_KEY", headers: {"X-Token": "${E2E_TOKEN}"}, within: "2s"}
	warmup: {kind: "warmup", target: %[1]q, headers: {"X-Token": "${E2E_TOKEN}", Authorization: "Bearer ${E2E_API_KEY}"}, requests: 2, concurrency: 1}
	sweep: {
		kind:        "sweep"
		target:      %[1]q
		api_key_env: "E2E_API_KEY"
		headers: {"X-Token": "${E2E_TOKEN}"}
		cells:       [{isl: 16, osl: 4}]
		concurrency: [1, 2]
		requests:    3
		warmup:      0
		assert: ["status == \"ok\""]
	}
}
`, target)
	if err := os.WriteFile(plan, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := t.TempDir()
	cmd := exec.CommandContext(ctx, binary, plan, "--out", out, "--output", filepath.Join(out, "copy"))
	cmd.Env = append(os.Environ(), "E2E_API_KEY="+key, "E2E_TOKEN="+token, "XDG_CACHE_HOME="+t.TempDir())
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	_ = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("benchrun did not finish: %v\n%s", ctx.Err(), se.String())
	}
	if !strings.Contains(se.String(), "sweep") || so.Len() == 0 {
		t.Fatalf("the run did not get to the sweep\nstdout:\n%s\nstderr:\n%s", so.String(), se.String())
	}

	secrets := []string{key, token, password}
	check := func(where string, b []byte) {
		t.Helper()
		for _, s := range secrets {
			if bytes.Contains(b, []byte(s)) {
				i := bytes.Index(b, []byte(s))
				t.Errorf("%s holds the secret %q: …%s…", where, s, b[max(0, i-80):min(len(b), i+len(s)+40)])
			}
		}
	}
	check("stdout", so.Bytes())
	check("stderr", se.Bytes())

	files, parquets := 0, 0
	sawRedacted := false
	err := filepath.Walk(out, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		rel, _ := filepath.Rel(out, path)
		check(rel, b)
		if bytes.Contains(b, []byte("[REDACTED]")) {
			sawRedacted = true
		}
		if strings.HasSuffix(path, ".parquet") {
			parquets++
			check(rel+" (values read back)", parquetStrings(t, path))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 8 || parquets < 2 {
		t.Errorf("only %d files (%d Parquet) under %s: the run wrote less than expected", files, parquets, out)
	}
	if !sawRedacted {
		t.Errorf("no file says [REDACTED]: the server's echo did not reach the files, so the test proves nothing")
	}
	// The target URL keeps its shape in the plan copies, with the password masked.
	runDirs, _ := filepath.Glob(filepath.Join(out, "plan=secrets", "date=*", "run=*"))
	if len(runDirs) != 1 {
		t.Fatalf("run directories %v", runDirs)
	}
	for _, f := range []string{"plan.cue", "plan.json"} {
		b, err := os.ReadFile(filepath.Join(runDirs[0], f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte("http://bench:xxxxx@127.0.0.1")) {
			t.Errorf("%s: want the target URL with its password masked:\n%s", f, b)
		}
	}
}

// parquetStrings returns every byte-array value of a Parquet file, one a
// line, as parquet-go decodes them (dictionary and compression undone).
func parquetStrings(t *testing.T, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var buf bytes.Buffer
	rows := make([]parquet.Row, 64)
	for _, rg := range pf.RowGroups() {
		rr := rg.Rows()
		for {
			n, err := rr.ReadRows(rows)
			for _, row := range rows[:n] {
				for _, v := range row {
					if v.Kind() == parquet.ByteArray {
						buf.Write(v.ByteArray())
						buf.WriteByte('\n')
					}
				}
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
		}
		rr.Close()
	}
	return buf.Bytes()
}
