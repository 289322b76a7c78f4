package siyuan

import "errors"

// IsAuth and IsUnreachable classify a client error. The sink reports
// each fault by its message, and marks an unreachable kernel transient
// where it makes the error (the pipeline retries it); the tests hold
// every fault the client can meet to its class.

// IsAuth reports whether err is the kernel refusing the token.
func IsAuth(err error) bool {
	var e *APIError
	return errors.As(err, &e) && e.Auth()
}

// IsUnreachable reports whether err is a call that got no whole answer.
func IsUnreachable(err error) bool {
	var e *UnreachableError
	return errors.As(err, &e)
}

// AssetsFile is the sink's record of uploaded charts in the run directory.
const AssetsFile = assetsFile
