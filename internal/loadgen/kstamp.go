package loadgen

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/benchrun/benchrun/internal/results"
)

// Stamp sources (Result.StampSource, the cells' stamp_source).
const (
	// StampKernel: the token events' times are the kernel's receive
	// timestamps of the reads that completed them (kstamp_linux.go); an
	// event whose read carried none keeps its user stamp (StampMissing).
	StampKernel = "kernel"
	// StampUser: the time the reading goroutine ran (time.Now when the
	// SSE reader returned the event); Result.StampNote says why.
	StampUser = "user"
)

// rxStamper is a connection that knows the kernel's receive timestamp of
// the bytes its latest read delivered.
type rxStamper interface {
	// lastRxStamp is that stamp, wall clock in Unix ns; 0 when the read
	// carried none.
	lastRxStamp() int64
	// noStampReason is "" for a connection with kernel stamps, else why
	// it has none.
	noStampReason() string
}

// sendStamper is a connection that knows when each request's first byte
// was written to it: `a`, the request's actual send (docs/METRICS.md). A
// stamp taken before client.Do would also count the transport's write
// goroutine waiting to run, which is the client's delay, not the
// server's (docs/METRICS.md, "Kernel receive stamps").
type sendStamper interface {
	// beginRequest forgets the last request's writes: the next write is
	// the first of a new request (HTTP/1.1 sends one at a time).
	beginRequest()
	// firstWrite is when the first write since beginRequest began.
	firstWrite() (time.Time, bool)
}

// writeStamp is a sendStamper's state: the start of the first write since
// beginRequest, as nanoseconds after writeEpoch plus one (0: none yet),
// which keeps the monotonic clock and needs no lock.
type writeStamp struct{ at atomic.Int64 }

// writeEpoch is the origin of writeStamp's clock.
var writeEpoch = time.Now()

func (w *writeStamp) beginRequest() { w.at.Store(0) }

// wrote is called at the start of every write.
func (w *writeStamp) wrote() {
	if w.at.Load() == 0 {
		w.at.CompareAndSwap(0, int64(time.Since(writeEpoch))+1)
	}
}

func (w *writeStamp) firstWrite() (time.Time, bool) {
	n := w.at.Load()
	if n == 0 {
		return time.Time{}, false
	}
	return writeEpoch.Add(time.Duration(n - 1)), true
}

// connStamps finds the stamping connection under one the transport handed
// out (httptrace.GotConnInfo.Conn), through TLS: tls.Conn reads its
// records from it, so the latest read of the TCP connection is the one
// that delivered the latest decrypted bytes.
//
// HTTP/2 would carry many streams on one connection, so that its latest
// read is not one stream's: such a connection gets no kernel stamps
// (benchrun's transport speaks HTTP/1.1, see NewHTTPClient).
//
// The same connection stamps each request's first write (sendStamper),
// whether or not the kernel stamps its reads.
func connStamps(c net.Conn) (rxStamper, sendStamper, string) {
	for c != nil {
		switch x := c.(type) {
		case *tls.Conn:
			if x.ConnectionState().NegotiatedProtocol == "h2" {
				return nil, nil, "HTTP/2 multiplexes streams on one connection, so a read's kernel timestamp is not one stream's"
			}
			c = x.NetConn()
		case rxStamper:
			w, _ := x.(sendStamper)
			if why := x.noStampReason(); why != "" {
				return nil, w, why
			}
			return x, w, ""
		case interface{ NetConn() net.Conn }:
			c = x.NetConn()
		default:
			return nil, nil, noKernelStamps
		}
	}
	return nil, nil, noKernelStamps
}

// connStamp is what the request's GotConn hook found.
type connStamp struct {
	s   rxStamper
	w   sendStamper
	why string
}

// stampReader sits between the response body and the SSE reader. After
// every Read that returns bytes it takes the connection's latest kernel
// stamp. The body's bytes pass through net/http's bufio.Reader (and
// tls.Conn's buffers): a body Read that is served from those buffers
// without reading the socket returns bytes of the socket's latest read,
// and one that has to read the socket returns once that read completed
// what it returns. So the stamp taken after a body Read is the arrival of
// the last bytes it returned, the ones that completed an event. The SSE
// reader never reads ahead past a complete event (sse.Reader.Next), so
// the event it returns was completed by the latest body Read.
type stampReader struct {
	r       io.Reader
	c       rxStamper
	at      int64 // the kernel stamp behind the latest Read that returned bytes
	prev    int64 // the previous token event's kernel stamp
	events  int
	missing int // token events without a usable kernel stamp
	shared  int // token events whose stamp is the next one's
}

func (s *stampReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if n > 0 {
		s.at = s.c.lastRxStamp()
	}
	return n, err
}

// maxStampDelay bounds a believable user − kernel delay: beyond it (or
// below 0) the wall clock was stepped between the bytes' arrival and the
// event, and the event keeps its user stamp.
const maxStampDelay = 10 * time.Second

// stamp turns the user-space stamp of a token event into the kernel's and
// returns the delay between them (0 for an event without a usable kernel
// stamp, which keeps its user stamp).
//
// The kernel stamps with the wall clock, benchrun's stamps carry the
// monotonic one: the kernel stamp k becomes at − (wall(at) − k), a time
// with at's monotonic reading, so gaps stay immune to clock steps between
// events. A step in the microseconds between the bytes' arrival and the
// event moves that one event by the step (a negative or huge delay is
// refused, see maxStampDelay).
//
// Two events with one stamp came in one read (or one packet): the earlier
// one arrived no later than the stamp, but how much earlier the kernel
// does not say. That happens when the server wrote them together, or when
// benchrun read late, after both had arrived (its stamp delay exceeded
// the gap); StampShared counts such events.
func (s *stampReader) stamp(at time.Time) (time.Time, time.Duration) {
	s.events++
	if s.at != 0 && s.at == s.prev {
		s.shared++
	}
	s.prev = s.at
	d := time.Duration(at.UnixNano() - s.at)
	if s.at == 0 || d < 0 || d > maxStampDelay {
		s.missing++
		return at, 0
	}
	return at.Add(-d), d
}

// finish records the request's stamp source and how many of its events
// kept their user stamps.
func (s *stampReader) finish(res *Result) {
	res.StampSource = StampKernel
	res.StampMissing, res.StampShared = s.missing, s.shared
}

// userStamps sets a request's event times back to the user-space stamps.
func userStamps(res *Result) {
	if len(res.StampDelays) == len(res.Tokens) {
		for k := range res.Tokens {
			res.Tokens[k].At = res.Tokens[k].At.Add(res.StampDelays[k])
		}
	}
	res.StampDelays = nil
	res.StampSource = StampUser
	res.StampMissing, res.StampShared = 0, 0
	res.StampNote = "the cell's other requests had no kernel receive timestamps"
}

// CellStamps fills a cell row's stamp_source and events_joined_pct from
// its timed results (measure.FillCell computes the stamp_delay percentiles
// from the request rows) and returns the note
// the row's notes carry ("" for none). Call it before the row's latencies
// are computed: when only some of the cell's streamed requests had kernel
// stamps, those go back to their user-space stamps, so that every latency
// of the cell comes from one clock.
func CellStamps(row *results.Cell, rs []Result) string {
	var t StampTally
	for i := range rs {
		t.Add(&rs[i])
	}
	if t.Mixed() {
		for i := range rs {
			if rs[i].StampSource == StampKernel {
				userStamps(&rs[i])
			}
		}
	}
	return t.Fill(row)
}

// StampTally is what a cell's stamp columns and note need of its timed
// results, folded in as each finishes (Add), so that a measuring stage
// need not hold the results until its cell ends.
type StampTally struct {
	kernel, user, events, missing, shared int
	why                                   string
}

// Add folds in one result.
func (t *StampTally) Add(r *Result) {
	switch r.StampSource {
	case StampKernel:
		t.kernel++
		t.events += len(r.Tokens)
		t.missing += r.StampMissing
		t.shared += r.StampShared
	case StampUser:
		t.user++
		if t.why == "" {
			t.why = r.StampNote
		}
	}
}

// Mixed says some of the cell's streamed requests had kernel stamps and
// some not: the kernel-stamped ones go back to their user-space stamps
// (measure.UserStamps on their rows), so that one clock times the cell.
func (t *StampTally) Mixed() bool { return t.kernel > 0 && t.user > 0 }

// Fill sets the row's stamp_source and events_joined_pct and returns the
// note the row's notes carry ("" for none).
func (t *StampTally) Fill(row *results.Cell) string {
	row.StampSource, row.EventsJoinedPct = "", nil
	kernel, user, events, missing, shared, why := t.kernel, t.user, t.events, t.missing, t.shared, t.why
	switch {
	case kernel+user == 0:
		return "" // no streamed request: nothing was stamped per event
	case user == 0:
		row.StampSource = StampKernel
		if events > 0 {
			row.EventsJoinedPct = results.Some(100 * float64(shared) / float64(events))
		}
		var notes []string
		if missing > 0 {
			notes = append(notes, fmt.Sprintf("%d of %d token events had no usable kernel receive timestamp (their read carried none, or the wall clock stepped) and kept their user-space stamps", missing, events))
		}
		if events > 0 && float64(shared) >= 0.01*float64(events) {
			notes = append(notes, fmt.Sprintf("%.1f%% of token events came in one socket read with the next event (benchrun read after both had arrived, or the server wrote them together): they carry the later bytes' arrival, an upper bound of their own", 100*float64(shared)/float64(events)))
		}
		return strings.Join(notes, "; ")
	}
	row.StampSource = StampUser
	if kernel == 0 {
		return "event times are user-space stamps (when benchrun's reading goroutine ran), not kernel receive timestamps: " + why
	}
	return fmt.Sprintf("event times are user-space stamps: %d of %d streamed requests had no kernel receive timestamps (%s), so the others' were set aside to keep one clock", user, kernel+user, why)
}
