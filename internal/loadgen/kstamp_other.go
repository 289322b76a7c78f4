//go:build !linux

package loadgen

import (
	"context"
	"net"
	"runtime"
)

// noKernelStamps is why a connection has no kernel receive timestamps.
const noKernelStamps = "kernel receive timestamps (SO_TIMESTAMPING) need Linux; this is " + runtime.GOOS

// stampDial is the dial function itself: kernel receive timestamps are
// Linux's (kstamp_linux.go).
func stampDial(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return dial
}
