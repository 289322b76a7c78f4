//go:build !unix

package siyuan

import "sync"

var postMu sync.Mutex

// lockFile serialises posts within this process only: without flock, two
// processes posting the same run at once rely on the dedupe after the
// post (sink.go).
func lockFile(string) (func(), error) {
	postMu.Lock()
	return postMu.Unlock, nil
}
