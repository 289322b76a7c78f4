//go:build linux

package loadgen

import (
	"net"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// aliveFunc returns a check of whether an idle connection is still open:
// a non-blocking peek at its socket finds nothing to read (EAGAIN). A
// server that closed it (llama-server closes after every stream while
// promising keep-alive) left an end of file; one that sent something
// unasked (a 408) left bytes no request of ours asked for. Either way the
// connection is not reused. One system call, no allocation.
func aliveFunc(c net.Conn) func() bool {
	sc, ok := c.(syscall.Conn) // a kconn is one by its TCPConn
	if !ok {
		return func() bool { return true }
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return func() bool { return true }
	}
	var peek [1]byte
	var alive bool
	check := func(fd uintptr) bool {
		_, _, errno := unix.Syscall6(unix.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&peek[0])), 1, unix.MSG_PEEK|unix.MSG_DONTWAIT, 0, 0)
		alive = errno == unix.EAGAIN
		return true
	}
	return func() bool {
		alive = false
		if rc.Read(check) != nil {
			return false
		}
		return alive
	}
}
