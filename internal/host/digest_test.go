package host

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestModelDigest: a model file's digest is its sha256, found as given
// and then beside the plan; a directory or a missing file has none.
func TestModelDigest(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "m.gguf"), []byte("abc"), 0o644); err != nil {
		t.Fatal(err)
	}
	const abc = "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
	for _, tc := range []struct{ file, planDir, want string }{
		{filepath.Join(dir, "m.gguf"), "", abc},
		{"m.gguf", dir, abc},
		{"missing.gguf", dir, ""},
		{dir, "", ""}, // a directory is not a model file
	} {
		if got := ModelDigest(tc.file, tc.planDir); got != tc.want {
			t.Errorf("ModelDigest(%q, %q) = %q, want %q", tc.file, tc.planDir, got, tc.want)
		}
	}
	// The disk cache answers for an unchanged file, and a changed file
	// (new size and mtime) is hashed again.
	cache, err := os.ReadFile(filepath.Join(os.Getenv("XDG_CACHE_HOME"), "benchrun", "digests.json"))
	if err != nil || !strings.Contains(string(cache), abc) {
		t.Fatalf("digest cache (%v):\n%s", err, cache)
	}
	later := time.Now().Add(time.Hour)
	if err := os.WriteFile(filepath.Join(dir, "m.gguf"), []byte("abcd"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(filepath.Join(dir, "m.gguf"), later, later); err != nil {
		t.Fatal(err)
	}
	const abcd = "sha256:88d4266fd4e6338d13b845fcf289579d209c897823b9217da3e161936f031589"
	if got := ModelDigest("m.gguf", dir); got != abcd {
		t.Errorf("after the file changed: %q, want %q", got, abcd)
	}
}
