package testkit

import (
	"strings"
	"sync"
	"testing"
)

// TestSyncBufferTakesConcurrentWrites: writers and a reader at once (run
// with -race) lose nothing.
func TestSyncBufferTakesConcurrentWrites(t *testing.T) {
	var b SyncBuffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				_, _ = b.Write([]byte("x"))
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if got := b.String(); got != strings.Repeat("x", 800) {
		t.Errorf("%d bytes, want 800", len(got))
	}
}
