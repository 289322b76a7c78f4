//go:build linux

package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Kernel receive timestamps (SO_TIMESTAMPING, software receive stamps).
//
// The kernel stamps every incoming packet with CLOCK_REALTIME when the
// network stack takes it in (on loopback: during the sender's write, at
// IP local delivery); recvmsg hands the stamp of the last packet it copied
// from back as an SCM_TIMESTAMPING control message. A read that delivers
// the end of one packet and the start of the next carries the later one's
// stamp, and a packet the kernel coalesced into an earlier one in the
// receive queue gives that one its own (later) stamp: a read's stamp is
// the arrival of the last bytes it delivered, never of its first.

// noKernelStamps is why a connection that stampDial did not make has no
// kernel receive timestamps.
const noKernelStamps = "the connection was not dialed by benchrun's HTTP client (loadgen.NewHTTPClient), so it carries no kernel receive timestamps"

// rxStampFlags asks for software receive stamps and for them to be
// reported (the two halves of SO_TIMESTAMPING's generation/reporting).
const rxStampFlags = unix.SOF_TIMESTAMPING_RX_SOFTWARE | unix.SOF_TIMESTAMPING_SOFTWARE

// enableRxStamps turns kernel receive timestamps on for one socket; a
// variable so that a test can make the kernel refuse it.
var enableRxStamps = func(fd int) error {
	return unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPING, rxStampFlags)
}

// stampDial wraps a dial function so that every TCP connection it makes
// asks the kernel for receive timestamps and reads with recvmsg (kconn).
// A connection whose socket refuses the option is still a kconn, one that
// reads as before and says why it has no stamps.
func stampDial(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		tc, ok := c.(*net.TCPConn)
		if !ok {
			return c, nil
		}
		liveOnce.Do(liveStamps)
		return newKconn(tc), nil
	}
}

var liveOnce sync.Once

// liveStamps makes the kernel stamp packets from now on, for as long as
// the process lives. The kernel stamps received packets only while some
// socket on the machine asks for it; the first socket to ask turns
// stamping on from a work queue, a moment later (on a loaded machine,
// tens of milliseconds), so the first packets of a connection would come
// unstamped, and again after every moment without such a socket (all
// connections closed between two cells). A UDP socket that asks and stays
// open keeps stamping on; a datagram it sends itself until one arrives
// stamped (at most 200 ms) waits for the work queue once. It costs one
// file descriptor. Failures are ignored: events then count as missing
// their stamp (Result.StampMissing).
func liveStamps() {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return
	}
	if enableRxStamps(fd) != nil || unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}) != nil {
		unix.Close(fd)
		return
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return
	}
	buf, oob := make([]byte, 1), make([]byte, 128)
	for range 200 {
		if unix.Sendto(fd, buf, 0, sa) != nil {
			return
		}
		time.Sleep(100 * time.Microsecond)
		_, oobn, _, _, err := unix.Recvmsg(fd, buf, oob, unix.MSG_DONTWAIT)
		if err == nil && rxStamp(oob[:oobn]) != 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

func newKconn(tc *net.TCPConn) *kconn {
	k := &kconn{TCPConn: tc}
	rc, err := tc.SyscallConn()
	if err == nil {
		var serr error
		if err = rc.Control(func(fd uintptr) { serr = enableRxStamps(int(fd)) }); err == nil {
			err = serr
		}
	}
	if err != nil {
		k.why = fmt.Sprintf("the kernel refused receive timestamps (setsockopt SO_TIMESTAMPING: %v)", err)
		return k
	}
	k.rc = rc
	k.recv = k.recvmsg // one method value per connection: no allocation per read
	return k
}

// kconn is a TCP connection that reads with recvmsg and keeps the
// kernel's receive timestamp of its latest read. Writes and everything
// else are the TCPConn's.
type kconn struct {
	*net.TCPConn
	writeStamp
	rc   syscall.RawConn // nil: no kernel stamps (why says why)
	why  string
	recv func(fd uintptr) bool

	// last is the wall-clock (Unix ns) kernel stamp of the latest read
	// that delivered bytes with one; 0 when it carried none. Atomic: the
	// transport's read loop may read the connection for the next
	// response while the previous body's reader looks at the stamp.
	last atomic.Int64

	// The in-flight read (set by Read, used by recvmsg), under rmu:
	// net.Conn allows concurrent Reads.
	rmu   sync.Mutex
	p     []byte
	n     int
	err   error
	stamp int64
	// recvmsg's arguments live with the connection, so that a read
	// allocates nothing (unix.Recvmsg allocates the source address).
	msg unix.Msghdr
	iov unix.Iovec
	oob [128]byte // an SCM_TIMESTAMPING message is 64 bytes on 64-bit
}

func (c *kconn) lastRxStamp() int64 { return c.last.Load() }

func (c *kconn) noStampReason() string { return c.why }

func (c *kconn) Read(p []byte) (int, error) {
	if c.rc == nil {
		return c.TCPConn.Read(p)
	}
	if len(p) == 0 {
		return 0, nil
	}
	c.rmu.Lock()
	defer c.rmu.Unlock()
	c.p, c.n, c.err, c.stamp = p, 0, nil, 0
	// RawConn.Read parks the goroutine in the runtime poller while the
	// socket has nothing (recvmsg says EAGAIN), like TCPConn.Read, and
	// honours the read deadline and Close.
	err := c.rc.Read(c.recv)
	n, rerr := c.n, c.err
	c.p, c.iov.Base = nil, nil
	if err != nil {
		var oe *net.OpError
		if errors.As(err, &oe) && oe.Op == "raw-read" {
			oe.Op = "read" // what TCPConn.Read says
		}
		return 0, err
	}
	if rerr != nil {
		return 0, &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.NewSyscallError("recvmsg", rerr)}
	}
	if n == 0 {
		return 0, io.EOF
	}
	c.last.Store(c.stamp)
	return n, nil
}

// recvmsg is the RawConn.Read callback: false asks the poller to wait.
func (c *kconn) recvmsg(fd uintptr) bool {
	c.iov.Base = &c.p[0]
	c.iov.SetLen(len(c.p))
	c.msg.Iov = &c.iov
	c.msg.SetIovlen(1)
	c.msg.Control = &c.oob[0]
	for {
		c.msg.SetControllen(len(c.oob))
		c.msg.Flags = 0
		// The pointers are to the connection's fields and the caller's
		// buffer, which outlive the call.
		n, _, errno := unix.Syscall(unix.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&c.msg)), unix.MSG_DONTWAIT)
		switch errno {
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false
		case 0:
			c.n = int(n)
			if c.msg.Flags&unix.MSG_CTRUNC == 0 {
				c.stamp = rxStamp(c.oob[:c.msg.Controllen])
			}
		default:
			c.err = errno
		}
		return true
	}
}

// rxStamp finds the software receive stamp in recvmsg's control messages
// (Unix ns; 0 when there is none).
func rxStamp(oob []byte) int64 {
	for len(oob) >= unix.SizeofCmsghdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		l := int(h.Len)
		if l < unix.SizeofCmsghdr || l > len(oob) {
			return 0
		}
		data := oob[unix.CmsgLen(0):l]
		if h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_TIMESTAMPING && len(data) >= 3*int(unsafe.Sizeof(unix.Timespec{})) {
			// struct scm_timestamping { struct timespec ts[3]; }: ts[0]
			// is the software stamp (ts[2] the hardware one).
			ts := (*unix.Timespec)(unsafe.Pointer(&data[0]))
			return ts.Nano()
		}
		next := unix.CmsgSpace(l - unix.CmsgLen(0))
		if next > len(oob) {
			return 0
		}
		oob = oob[next:]
	}
	return 0
}

func (c *kconn) Write(p []byte) (int, error) {
	c.wrote()
	return c.TCPConn.Write(p)
}

// ReadFrom is the TCPConn's (sendfile, splice), stamped as a write.
func (c *kconn) ReadFrom(r io.Reader) (int64, error) {
	c.wrote()
	return c.TCPConn.ReadFrom(r)
}

// WriteTo would let io.Copy read the socket with splice, around Read and
// its stamps (TCPConn.WriteTo is promoted otherwise).
func (c *kconn) WriteTo(w io.Writer) (int64, error) {
	return io.Copy(w, struct{ io.Reader }{c})
}
