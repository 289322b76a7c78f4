package csvout

import (
	"errors"
	"strings"
	"sync"
	"testing"
)

// syncBuilder is a strings.Builder safe for the writer's goroutine.
type syncBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuilder) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuilder) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRowsReachTheReader: what is written reaches the reader, in order,
// by the time Close returns.
func TestRowsReachTheReader(t *testing.T) {
	var out, errb syncBuilder
	w := New(&out, &errb)
	for _, row := range []string{"a,b\n", "1,2\n", "3,4\n"} {
		if n, err := w.Write([]byte(row)); n != len(row) || err != nil {
			t.Fatalf("Write: %d, %v", n, err)
		}
	}
	w.Close()
	if out.String() != "a,b\n1,2\n3,4\n" || errb.String() != "" {
		t.Errorf("stdout %q, stderr %q", out.String(), errb.String())
	}
}

type closedPipe struct{}

func (closedPipe) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

// TestReaderGone: a reader that went away is said once; writes go on
// succeeding (the run goes on).
func TestReaderGone(t *testing.T) {
	var errb syncBuilder
	w := New(closedPipe{}, &errb)
	for range 3 {
		if _, err := w.Write([]byte("1,2\n")); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	if n := strings.Count(errb.String(), "benchrun: stdout closed (broken pipe)"); n != 1 {
		t.Errorf("said %d times:\n%s", n, errb.String())
	}
}
