package sse

import "io"

// NewReader returns a Reader with the default buffer size: the tests'
// reader; the client sizes its own (NewReaderSize).
func NewReader(r io.Reader) *Reader { return NewReaderSize(r, DefaultBufferSize) }

// SetMaxEventSize sets the cap on a single line (field name included, line
// terminator excluded; comment lines count too, since they are buffered
// whole) and on one event's joined data; n <= 0 restores
// DefaultMaxEventSize. Beyond it Next returns an error wrapping
// ErrEventTooLarge. The read buffer never grows past n+1 bytes. The
// client keeps the default; the tests move the cap to reach it cheaply
// (a small one) or to pass events over it (a large one).
func (r *Reader) SetMaxEventSize(n int) {
	if n <= 0 {
		n = DefaultMaxEventSize
	}
	r.max = n
}

// Reset discards all state and makes r read from rd, keeping its buffers
// (and maximum event size), so that one Reader reads stream after stream
// without allocating: the benchmark measures that steady state. A buffer
// grown for a huge event is kept as well.
func (r *Reader) Reset(rd io.Reader) {
	*r = Reader{
		rd:      rd,
		buf:     r.buf[:cap(r.buf)],
		data:    r.data[:0],
		typ:     r.typ[:0],
		lastTyp: r.lastTyp,
		retry:   -1,
		max:     r.max,
	}
}

// Retry returns the last valid `retry:` field value in milliseconds and
// whether one has been seen. The client never reconnects on its own, so
// only the tests read it: they hold the reader to the spec's field rules.
func (r *Reader) Retry() (ms int64, ok bool) { return r.retry, r.retry >= 0 }
