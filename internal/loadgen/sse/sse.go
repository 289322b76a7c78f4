// Package sse is a streaming Server-Sent-Events reader used to time streamed
// LLM responses (OpenAI-compatible /v1/completions and /v1/chat/completions
// with "stream": true).
//
// It follows the WHATWG HTML "Interpreting an event stream" rules at the byte
// level, with three goals that a benchmark client needs and generic readers
// do not give:
//
//   - The client must never be the bottleneck: no per-event allocations in the
//     steady state, and no fixed line limit (a 64 KB cap is what broke
//     aiohttp-based clients at long contexts). Lines and events grow the
//     buffer up to a cap (DefaultMaxEventSize).
//   - Timing must be honest: Next returns as soon as a complete event is
//     buffered and never issues another Read to "look ahead" (a CR at the end
//     of a read is handled with state, not by waiting for the next byte).
//   - Truncation must be visible: a stream that ends in the middle of an event
//     yields io.ErrUnexpectedEOF instead of silently dropping the last event.
//
// Bytes are passed through unchanged: the reader does not UTF-8-decode or
// replace invalid sequences (the spec's decoding step), because callers decode
// the JSON payload themselves and that is where invalid text should surface.
package sse

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
)

const (
	// DefaultBufferSize is the initial read buffer size. Typical LLM stream
	// events are 100-500 bytes, so this holds many of them per Read.
	DefaultBufferSize = 32 << 10
	// MinBufferSize is the smallest buffer NewReaderSize will use.
	MinBufferSize = 16
	// DefaultMaxEventSize caps a single line and an event's joined data.
	// It bounds memory per stream (a garbage line costs a few times this
	// while it grows, on each of a cell's streams at once) while leaving
	// room for payloads far larger than a streamed chunk (a 1 MB line;
	// logprobs of many tokens).
	DefaultMaxEventSize = 2 << 20

	// maxEmptyReads mirrors bufio: a reader that keeps returning 0, nil is
	// broken, and spinning on it forever would hang the benchmark.
	maxEmptyReads = 100
)

// ErrEventTooLarge is returned (wrapped) when a line or the data of one event
// exceeds the reader's maximum event size. Test with errors.Is.
var ErrEventTooLarge = errors.New("sse: event exceeds maximum size")

// Event is one dispatched server-sent event.
type Event struct {
	// Type is the value of the last `event:` field of the event; "" means
	// the field was absent (the spec's default type, "message").
	Type string
	// Data is the event's `data:` field values joined with "\n".
	// It aliases the Reader's internal buffer and is valid only until the
	// next call to Next; callers that keep it must copy it.
	Data []byte
	// ID is the stream's last event ID at dispatch time. Per the spec it is
	// sticky: it keeps the value of the most recent `id:` field, even from
	// earlier events, until another `id:` field changes it.
	ID string
}

// Reader reads events from an SSE byte stream. It is not safe for concurrent
// use. The zero value is not usable; use NewReaderSize.
type Reader struct {
	rd   io.Reader
	buf  []byte // read buffer; buf[r:w] is unconsumed input
	r, w int

	// scanned counts bytes of buf[r:w] already searched for a line end, so
	// a long line arriving in many reads is scanned once (O(n), not O(n^2)).
	scanned int
	// skipLF is set when a line ended with CR as the last buffered byte:
	// if the next byte is LF it belongs to the same CRLF and is dropped.
	// Deciding later avoids blocking on a Read just to peek one byte.
	skipLF  bool
	bomDone bool
	// pending is true when a field line has been seen since the last blank
	// line, i.e. EOF now would cut an event short.
	pending bool

	rerr  error // sticky error from the underlying reader
	final error // sticky error returned by Next

	data    []byte // spec "data buffer": each value followed by '\n'
	typ     []byte // spec "event type buffer"
	lastTyp string // cache so a repeated event type does not allocate
	lastID  string // spec "last event ID buffer"
	retry   int64  // last valid `retry:` value in ms, -1 if none
	max     int
	ignored []byte // the first line of an unknown field, up to maxIgnored
}

// maxIgnored is how much of the first ignored line Ignored keeps.
const maxIgnored = 4 << 10

// Ignored is the first line of a field the spec ignores (a line that is
// no SSE: a bare JSON error object), up to 4 KiB; nil when none came.
func (r *Reader) Ignored() []byte { return r.ignored }

// NewReaderSize returns a Reader whose buffer starts at size bytes (at least
// MinBufferSize). The buffer grows as needed for long lines, up to the
// maximum event size.
func NewReaderSize(r io.Reader, size int) *Reader {
	if size < MinBufferSize {
		size = MinBufferSize
	}
	return &Reader{
		rd:    r,
		buf:   make([]byte, size),
		retry: -1,
		max:   DefaultMaxEventSize,
	}
}

var bom = []byte{0xEF, 0xBB, 0xBF}

// Next returns the next complete event. It returns io.EOF when the input ends
// cleanly (after a blank line, or with only comments/blank lines pending),
// io.ErrUnexpectedEOF when it ends with an unfinished event (the spec
// discards such an event; the error lets callers report the truncation), an
// error wrapping ErrEventTooLarge, or an error wrapping the underlying read
// error. Errors are sticky: later calls return the same error.
func (r *Reader) Next() (Event, error) {
	if r.final != nil {
		return Event{}, r.final
	}
	if !r.bomDone {
		r.skipBOM()
	}
	// Data of the previous event may be aliased by the caller until now.
	r.data = r.data[:0]
	for {
		line, err := r.readLine()
		if err != nil {
			r.final = err
			return Event{}, err
		}
		if len(line) == 0 {
			// Blank line: dispatch.
			r.pending = false
			if len(r.data) == 0 {
				r.typ = r.typ[:0]
				continue
			}
			ev := Event{Type: r.typeString(), Data: r.data[:len(r.data)-1], ID: r.lastID}
			r.typ = r.typ[:0]
			return ev, nil
		}
		if line[0] == ':' {
			continue // comment
		}
		r.pending = true
		field, value := line, line[len(line):]
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		// A switch on string(field) does not allocate.
		switch string(field) {
		case "data":
			if len(r.data)+len(value) > r.max {
				r.final = r.tooLarge()
				return Event{}, r.final
			}
			r.data = append(r.data, value...)
			r.data = append(r.data, '\n')
		case "event":
			r.typ = append(r.typ[:0], value...)
		case "id":
			if bytes.IndexByte(value, 0) < 0 && string(value) != r.lastID {
				r.lastID = string(value)
			}
		case "retry":
			if ms, ok := parseRetry(value); ok {
				r.retry = ms
			}
		default:
			// Other fields are ignored, as the spec requires; the first
			// is kept (a server that sent a bare JSON error where an SSE
			// stream was due is explained by it).
			if r.ignored == nil {
				r.ignored = append([]byte{}, line[:min(len(line), maxIgnored)]...)
			}
		}
	}
}

// typeString returns the event type as a string, reusing the previous string
// when unchanged so streams with a constant `event:` do not allocate.
func (r *Reader) typeString() string {
	if len(r.typ) == 0 {
		return ""
	}
	if string(r.typ) != r.lastTyp {
		r.lastTyp = string(r.typ)
	}
	return r.lastTyp
}

func parseRetry(v []byte) (int64, bool) {
	if len(v) == 0 {
		return 0, false
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int64(c - '0')
		if n > (math.MaxInt64-d)/10 {
			return 0, false // overflow: treat as invalid rather than wrap
		}
		n = n*10 + d
	}
	return n, true
}

func (r *Reader) tooLarge() error {
	return fmt.Errorf("%w (limit %d bytes)", ErrEventTooLarge, r.max)
}

// skipBOM drops one leading UTF-8 BOM. It reads only until it can decide, so
// a BOM split across reads is still recognised.
func (r *Reader) skipBOM() {
	for {
		b := r.buf[r.r:r.w]
		if len(b) >= len(bom) {
			if bytes.HasPrefix(b, bom) {
				r.r += len(bom)
			}
			break
		}
		if !bytes.HasPrefix(bom, b) {
			break
		}
		if r.fill() != nil {
			break // the sticky read error surfaces from readLine
		}
	}
	r.bomDone = true
}

// readLine returns the next line without its terminator. The slice aliases
// the read buffer and is valid until the next readLine. At the end of input
// it returns io.EOF, io.ErrUnexpectedEOF, or the wrapped read error.
func (r *Reader) readLine() ([]byte, error) {
	for {
		if r.skipLF && r.r < r.w {
			if r.buf[r.r] == '\n' {
				r.r++
			}
			r.skipLF = false
		}
		start := r.r + r.scanned
		seg := r.buf[start:r.w]
		// Two IndexByte calls (assembly-optimised) beat a byte loop looking
		// for either terminator; CR is only searched up to the first LF.
		lf := bytes.IndexByte(seg, '\n')
		lim := seg
		if lf >= 0 {
			lim = seg[:lf]
		}
		if cr := bytes.IndexByte(lim, '\r'); cr >= 0 {
			end := start + cr
			line := r.buf[r.r:end]
			r.r = end + 1
			if r.r < r.w {
				if r.buf[r.r] == '\n' {
					r.r++
				}
			} else {
				r.skipLF = true
			}
			r.scanned = 0
			return r.checkLine(line)
		}
		if lf >= 0 {
			end := start + lf
			line := r.buf[r.r:end]
			r.r = end + 1
			r.scanned = 0
			return r.checkLine(line)
		}
		// No terminator buffered.
		r.scanned = r.w - r.r
		if r.scanned > r.max {
			return nil, r.tooLarge()
		}
		if err := r.fill(); err != nil {
			if err != io.EOF {
				return nil, fmt.Errorf("sse: read: %w", err)
			}
			partial := r.buf[r.r:r.w]
			r.r, r.scanned = r.w, 0
			// An unterminated comment is not event content; anything else
			// (or field lines since the last blank line) is a cut event.
			if r.pending || (len(partial) > 0 && partial[0] != ':') {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, io.EOF
		}
	}
}

func (r *Reader) checkLine(line []byte) ([]byte, error) {
	// A line can be complete in the buffer yet over the limit when the
	// buffer started larger than the maximum.
	if len(line) > r.max {
		return nil, r.tooLarge()
	}
	return line, nil
}

// fill reads once from the underlying reader, first compacting the buffer and
// growing it if the unconsumed bytes fill it. It returns an error only when
// no new bytes were read; an error delivered together with data is kept and
// returned by the next call, so buffered events are served first.
func (r *Reader) fill() error {
	if r.rerr != nil {
		return r.rerr
	}
	if r.r > 0 {
		r.w = copy(r.buf, r.buf[r.r:r.w])
		r.r = 0
	}
	if r.w == len(r.buf) {
		// Double, but never beyond what the size check needs: max bytes of
		// line plus one byte to detect that it is over the limit.
		n := 2 * len(r.buf)
		if n > r.max+1 {
			n = r.max + 1
		}
		if n <= r.w {
			n = r.w + 1
		}
		nb := make([]byte, n)
		copy(nb, r.buf[:r.w])
		r.buf = nb
	}
	for range maxEmptyReads {
		n, err := r.rd.Read(r.buf[r.w:])
		if n < 0 || n > len(r.buf)-r.w {
			err = errors.New("sse: reader returned invalid count")
			n = 0
		}
		r.w += n
		if err != nil {
			r.rerr = err
			if n > 0 {
				return nil
			}
			return err
		}
		if n > 0 {
			return nil
		}
	}
	r.rerr = io.ErrNoProgress
	return r.rerr
}

// IsDone reports whether data is the OpenAI end-of-stream sentinel "[DONE]",
// ignoring surrounding whitespace.
func IsDone(data []byte) bool {
	return string(bytes.TrimSpace(data)) == "[DONE]"
}
