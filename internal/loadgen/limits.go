package loadgen

import (
	"os"
	"strconv"
	"strings"
	"sync"
)

// The open loop's own ceiling. Every request in flight holds a connection
// of its own (HTTP/1.1), so a file descriptor and, towards one server
// address, a local port. An open loop offered more than the server (or the
// cores it shares with the client) carries piles requests up in flight;
// past the process's open-file limit a send fails with "socket: too many
// open files", and past the ephemeral ports with "cannot assign requested
// address": failures that are the client's, not the server's (at 16,000
// req/s on two cores, 10,793 of 80,000 requests failed so). Run therefore
// keeps at most InFlightLimit requests outstanding when the load sets no
// MaxInFlight: a request past it waits for one to finish, keeping its
// scheduled time, so the overload shows up as send lag (and RunStats.Held
// says the client was the limit) instead of as failed requests.

// fdReserve is what InFlightLimit leaves of the open-file limit to the
// rest of the process (result files, telemetry, the DNS resolver, a
// launched server's pipes): a sixteenth, at least 256.
func fdReserve(limit int) int { return max(256, limit/16) }

// inflightLimit is a variable so that a test can lower it.
var inflightLimit = sync.OnceValue(func() int {
	n := openFileLimit()
	n -= fdReserve(n)
	if p := localPorts(); p > 0 {
		// Closed connections linger in TIME_WAIT on the client's side and
		// keep their port: leave an eighth of the range for them.
		n = min(n, p-p/8)
	}
	return max(n, 64)
})

// InFlightLimit is the most requests this process can keep in flight to
// one server without running out of file descriptors or local ports.
func InFlightLimit() int { return inflightLimit() }

// localPorts is the size of Linux's ephemeral port range (0 elsewhere or
// when it cannot be read).
func localPorts() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0
	}
	lo, err1 := strconv.Atoi(f[0])
	hi, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || hi < lo {
		return 0
	}
	return hi - lo + 1
}
