package pipeline

import (
	"testing"
	"time"
)

// SetDigestHooks makes every model file hash call onDone as it ends, and
// say so on the progress writer once it has run for progressAfter, until
// the test ends.
func SetDigestHooks(t testing.TB, onDone func(path, digest string), progressAfter time.Duration) {
	oldAfter := digestProgressAfter.Load()
	onDigest.Store(&onDone)
	digestProgressAfter.Store(int64(progressAfter))
	t.Cleanup(func() {
		onDigest.Store(nil)
		digestProgressAfter.Store(oldAfter)
	})
}
