//go:build linux

package sim

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// stampConn reads with recvmsg and keeps the kernel's receive stamp
// (SO_TIMESTAMPNS) of its latest read. The technique is loadgen's kconn's
// (kstamp_linux.go), written again on purpose: the simulator is the
// ground truth the load generator is checked against, and shares no code
// with it, so that one defect cannot hide itself on both sides.
type stampConn struct {
	*net.TCPConn
	rc   syscall.RawConn
	last atomic.Int64

	mu    sync.Mutex // net.Conn allows concurrent Reads
	p     []byte
	n     int
	err   error
	stamp int64
	oob   [64]byte
}

// newArrivalConn asks the kernel to stamp tc's received packets; a
// socket that refuses stays as it was (its requests start when their
// handler runs).
func newArrivalConn(tc *net.TCPConn) net.Conn {
	rc, err := tc.SyscallConn()
	if err != nil {
		return tc
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1) }); err != nil || serr != nil {
		return tc
	}
	return &stampConn{TCPConn: tc, rc: rc}
}

func (c *stampConn) lastArrival() int64 { return c.last.Load() }

func (c *stampConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.p, c.n, c.err, c.stamp = p, 0, nil, 0
	err := c.rc.Read(c.recvmsg)
	n, rerr := c.n, c.err
	c.p = nil
	if err != nil {
		var oe *net.OpError
		if errors.As(err, &oe) && oe.Op == "raw-read" {
			oe.Op = "read"
		}
		return 0, err
	}
	if rerr != nil {
		return 0, &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.NewSyscallError("recvmsg", rerr)}
	}
	if n == 0 {
		return 0, io.EOF
	}
	if c.stamp != 0 {
		c.last.Store(c.stamp)
	}
	return n, nil
}

// recvmsg is the RawConn.Read callback: false asks the poller to wait.
func (c *stampConn) recvmsg(fd uintptr) bool {
	for {
		n, oobn, _, _, err := unix.Recvmsg(int(fd), c.p, c.oob[:], unix.MSG_DONTWAIT)
		switch err {
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false
		case nil:
			c.n = n
			if msgs, perr := unix.ParseSocketControlMessage(c.oob[:oobn]); perr == nil {
				for _, m := range msgs {
					if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SCM_TIMESTAMPNS && len(m.Data) >= 16 {
						ts := (*unix.Timespec)(unsafe.Pointer(&m.Data[0]))
						c.stamp = ts.Nano()
					}
				}
			}
		default:
			c.err = err
		}
		return true
	}
}

// WriteTo would let io.Copy read the socket with splice, around Read and
// its stamps.
func (c *stampConn) WriteTo(w io.Writer) (int64, error) {
	return io.Copy(w, struct{ io.Reader }{c})
}
