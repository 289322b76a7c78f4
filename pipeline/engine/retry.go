package engine

import "time"

// retrying is the one retry loop of a stage's retry: block and a sink's
// policy. It calls try up to attempts times (at least once) until it
// succeeds; after a failure, again says whether it is worth another try
// (and may say so, or clean up, knowing the wait before it), and wait
// waits that long (false: cut short, no more tries). The wait starts at
// backoff and doubles. It returns the last try's error.
func retrying(attempts int, backoff time.Duration, try func(attempt int) error,
	again func(attempt int, err error, next time.Duration) bool, wait func(time.Duration) bool) error {
	var err error
	for i := 1; ; i++ {
		if err = try(i); err == nil || i >= attempts || !again(i, err, backoff) || !wait(backoff) {
			return err
		}
		backoff *= 2
	}
}
