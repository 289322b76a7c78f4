//go:build !linux

package sim

import "net"

// newArrivalConn leaves tc as it is: without kernel stamps a request
// starts when its handler runs.
func newArrivalConn(tc *net.TCPConn) net.Conn { return tc }
