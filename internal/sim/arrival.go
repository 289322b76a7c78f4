package sim

import (
	"context"
	"net"
	"net/http"
	"time"
)

// A request's fixed-mode schedule starts when it arrived: when the kernel
// took in the last packet of the read that delivered its headers, where
// the connection can say (arrival_linux.go), rather than when its handler
// ran. On a machine where a wake-up costs a hypervisor exit the handler
// runs 0.1-0.3 ms after the bytes arrived, which a client's TTFT would
// otherwise read as the server's.

// arrivalConn is a connection that knows when its latest read's bytes
// arrived.
type arrivalConn interface {
	// lastArrival is the wall-clock (Unix ns) kernel stamp of the latest
	// read that carried one; 0 when none did.
	lastArrival() int64
}

type connKey struct{}

// withConn is an http.Server's ConnContext: it keeps the connection in
// the requests' contexts for arrivalOf.
func withConn(ctx context.Context, c net.Conn) context.Context {
	if ac, ok := c.(arrivalConn); ok {
		return context.WithValue(ctx, connKey{}, ac)
	}
	return ctx
}

// maxArrivalAge bounds how long before its handler a request may have
// arrived: an older stamp is a read of an earlier request (a connection
// that carries none for this one) and is not used.
const maxArrivalAge = 100 * time.Millisecond

// arrivalOf is when r arrived, on the monotonic clock of now (its
// handler's start): the kernel's stamp when the connection has one that
// is plausible, else now.
func arrivalOf(r *http.Request, now time.Time) time.Time {
	ac, ok := r.Context().Value(connKey{}).(arrivalConn)
	if !ok {
		return now
	}
	stamp := ac.lastArrival()
	if stamp == 0 {
		return now
	}
	age := time.Duration(now.UnixNano() - stamp)
	if age < 0 || age > maxArrivalAge {
		return now
	}
	return now.Add(-age)
}

// arrivalListener wraps a listener so that its TCP connections stamp
// their reads (newArrivalConn; as they are where the system cannot).
type arrivalListener struct{ net.Listener }

func (l arrivalListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		return newArrivalConn(tc), nil
	}
	return c, nil
}
