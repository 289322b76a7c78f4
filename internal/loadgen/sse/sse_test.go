package sse

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"testing/iotest"
)

// ev is a comparable copy of an Event (Data is only valid until Next).
type ev struct{ Type, Data, ID string }

// refParse is the reference implementation the Reader is checked against:
// whole input in memory, split into lines first, then the spec's field rules
// applied line by line. It is deliberately naive so that it is obviously
// correct; agreement with it is what FuzzReader checks.
func refParse(in []byte, max int) ([]ev, error) {
	in = bytes.TrimPrefix(in, []byte("\xEF\xBB\xBF")) // one BOM only
	var lines [][]byte
	start := 0
	for i := 0; i < len(in); i++ {
		switch in[i] {
		case '\r':
			lines = append(lines, in[start:i])
			if i+1 < len(in) && in[i+1] == '\n' {
				i++
			}
			start = i + 1
		case '\n':
			lines = append(lines, in[start:i])
			start = i + 1
		}
	}
	tail := in[start:]

	var evs []ev
	data, typ, id := "", "", ""
	pending := false
	for _, l := range lines {
		if len(l) > max {
			return evs, ErrEventTooLarge
		}
		s := string(l)
		switch {
		case s == "":
			pending = false
			if data != "" {
				evs = append(evs, ev{typ, data[:len(data)-1], id})
			}
			data, typ = "", ""
			continue
		case s[0] == ':':
			continue
		}
		pending = true
		name, value, found := strings.Cut(s, ":")
		if found {
			value = strings.TrimPrefix(value, " ")
		}
		switch name {
		case "data":
			if len(data)+len(value) > max {
				return evs, ErrEventTooLarge
			}
			data += value + "\n"
		case "event":
			typ = value
		case "id":
			if !strings.Contains(value, "\x00") {
				id = value
			}
		}
	}
	if len(tail) > max {
		return evs, ErrEventTooLarge
	}
	if pending || (len(tail) > 0 && tail[0] != ':') {
		return evs, io.ErrUnexpectedEOF
	}
	return evs, io.EOF
}

func collect(r *Reader) ([]ev, error) {
	var evs []ev
	for {
		e, err := r.Next()
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev{e.Type, string(e.Data), e.ID})
	}
}

// sameErr compares final errors by kind: EOF and ErrUnexpectedEOF must be
// returned unwrapped (callers compare with ==), ErrEventTooLarge wrapped.
func sameErr(got, want error) bool {
	if errors.Is(want, ErrEventTooLarge) {
		return errors.Is(got, ErrEventTooLarge)
	}
	return got == want
}

func evsEqual(a, b []ev) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// splitReader returns in[:at] on the first Read and the rest afterwards, to
// put a read boundary at every byte position.
type splitReader struct {
	parts [][]byte
}

func (s *splitReader) Read(p []byte) (int, error) {
	for len(s.parts) > 0 && len(s.parts[0]) == 0 {
		s.parts = s.parts[1:]
	}
	if len(s.parts) == 0 {
		return 0, io.EOF
	}
	n := copy(p, s.parts[0])
	s.parts[0] = s.parts[0][n:]
	return n, nil
}

var tableCases = []struct {
	name string
	in   string
	want []ev
	err  error
}{
	{"empty input", "", nil, io.EOF},
	{"LF", "data: hello\n\n", []ev{{"", "hello", ""}}, io.EOF},
	{"CRLF", "data: hello\r\n\r\n", []ev{{"", "hello", ""}}, io.EOF},
	{"CR", "data: hello\r\r", []ev{{"", "hello", ""}}, io.EOF},
	{"mixed endings", "data: a\r\ndata: b\rdata: c\n\r\ndata: d\r\n\n", []ev{{"", "a\nb\nc", ""}, {"", "d", ""}}, io.EOF},
	{"CR CR LF is two line ends", "data: a\r\r\ndata: b\n\n", []ev{{"", "a", ""}, {"", "b", ""}}, io.EOF},
	{"LF CR is two line ends", "data: a\n\rdata: b\n\n", []ev{{"", "a", ""}, {"", "b", ""}}, io.EOF},
	{"multi-line data", "data: a\ndata: b\ndata: c\n\n", []ev{{"", "a\nb\nc", ""}}, io.EOF},
	{"one leading space stripped", "data:  two\n\n", []ev{{"", " two", ""}}, io.EOF},
	{"no space after colon", "data:x\n\n", []ev{{"", "x", ""}}, io.EOF},
	{"tab not stripped", "data:\tx\n\n", []ev{{"", "\tx", ""}}, io.EOF},
	{"colon in value", "data: a:b: c\n\n", []ev{{"", "a:b: c", ""}}, io.EOF},
	{"comments ignored", ": ping\ndata: x\n: mid\ndata: y\n\n: tail\n", []ev{{"", "x\ny", ""}}, io.EOF},
	{"only comments", ":a\n:b\r\n:\r", nil, io.EOF},
	{"event type", "event: add\ndata: x\n\ndata: y\n\n", []ev{{"add", "x", ""}, {"", "y", ""}}, io.EOF},
	{"last event type wins", "event: a\nevent: b\ndata: x\n\n", []ev{{"b", "x", ""}}, io.EOF},
	{"event message kept verbatim", "event: message\ndata: x\n\n", []ev{{"message", "x", ""}}, io.EOF},
	{"id sticky and reset", "id: 1\ndata: a\n\ndata: b\n\nid\ndata: c\n\n", []ev{{"", "a", "1"}, {"", "b", "1"}, {"", "c", ""}}, io.EOF},
	{"id with NUL ignored", "id: 7\n\nid: a\x00b\ndata: x\n\n", []ev{{"", "x", "7"}}, io.EOF},
	{"id set by undispatched event", "id: 9\n\ndata: x\n\n", []ev{{"", "x", "9"}}, io.EOF},
	{"field without colon", "data\n\n", []ev{{"", "", ""}}, io.EOF},
	{"empty data values", "data\ndata:\n\n", []ev{{"", "\n", ""}}, io.EOF},
	{"no data not dispatched", "event: x\n\nid: 2\n\nretry: 5\n\n", nil, io.EOF},
	{"type reset when not dispatched", "event: x\n\ndata: y\n\n", []ev{{"", "y", ""}}, io.EOF},
	{"unknown field ignored", "foo: bar\ndata: x\nfoo\n\n", []ev{{"", "x", ""}}, io.EOF},
	{"field names case-sensitive", "Data: x\nDATA: y\n\n", nil, io.EOF},
	{"space before colon", "data : x\n\n", nil, io.EOF},
	{"BOM", "\xEF\xBB\xBFdata: x\n\n", []ev{{"", "x", ""}}, io.EOF},
	{"second BOM is data", "\xEF\xBB\xBF\xEF\xBB\xBFdata: x\n\n", nil, io.EOF},
	{"partial BOM", "\xEF\xBB", nil, io.ErrUnexpectedEOF},
	{"BOM-like prefix is not a BOM", "\xEF\xBB\xBEdata: x\n\n", nil, io.EOF},
	{"BOM only", "\xEF\xBB\xBF", nil, io.EOF},
	{"missing final blank line", "data: a\n\ndata: b\n", []ev{{"", "a", ""}}, io.ErrUnexpectedEOF},
	{"missing final blank line CR", "data: b\r", nil, io.ErrUnexpectedEOF},
	{"unterminated line", "data: a\n\ndata: {\"tok", []ev{{"", "a", ""}}, io.ErrUnexpectedEOF},
	{"unterminated event line", "data: a\n\nevent: x\n", []ev{{"", "a", ""}}, io.ErrUnexpectedEOF},
	{"unterminated comment is clean", "data: a\n\n: keep-alive", []ev{{"", "a", ""}}, io.EOF},
	{"trailing blank lines", "data: a\n\n\n\r\n\r", []ev{{"", "a", ""}}, io.EOF},
	{"retry line", "retry: 1500\ndata: x\n\n", []ev{{"", "x", ""}}, io.EOF},
	{"binary data passed through", "data: \xff\xfe\x00\n\n", []ev{{"", "\xff\xfe\x00", ""}}, io.EOF},
	{"openai stream", "data: {\"choices\":[{\"text\":\" a\"}]}\n\ndata: {\"choices\":[{\"text\":\" b\"}]}\n\ndata: [DONE]\n\n",
		[]ev{{"", `{"choices":[{"text":" a"}]}`, ""}, {"", `{"choices":[{"text":" b"}]}`, ""}, {"", "[DONE]", ""}}, io.EOF},
	{"anthropic-style typed stream", "event: message_start\ndata: {}\n\nevent: content_block_delta\ndata: {\"d\":1}\n\nevent: ping\ndata: {}\n\n",
		[]ev{{"message_start", "{}", ""}, {"content_block_delta", `{"d":1}`, ""}, {"ping", "{}", ""}}, io.EOF},
}

// readers wraps an input in every read pattern the Reader must be immune to.
func readers(in string) map[string]io.Reader {
	return map[string]io.Reader{
		"whole":     strings.NewReader(in),
		"one-byte":  iotest.OneByteReader(strings.NewReader(in)),
		"half":      iotest.HalfReader(strings.NewReader(in)),
		"data+err":  iotest.DataErrReader(strings.NewReader(in)),
		"one+dataE": iotest.OneByteReader(iotest.DataErrReader(strings.NewReader(in))),
	}
}

func TestTable(t *testing.T) {
	for _, tc := range tableCases {
		t.Run(tc.name, func(t *testing.T) {
			// The reference must pass the table too, or fuzzing against it
			// would prove nothing.
			if got, err := refParse([]byte(tc.in), DefaultMaxEventSize); !evsEqual(got, tc.want) || err != tc.err {
				t.Fatalf("reference: got %q, %v; want %q, %v", got, err, tc.want, tc.err)
			}
			for _, size := range []int{MinBufferSize, DefaultBufferSize} {
				for name, rd := range readers(tc.in) { // readers are single-use
					got, err := collect(NewReaderSize(rd, size))
					if !evsEqual(got, tc.want) || err != tc.err {
						t.Errorf("%s/buf=%d: got %q, %v; want %q, %v", name, size, got, err, tc.want, tc.err)
					}
				}
			}
		})
	}
}

// TestEverySplit puts one read boundary at every byte of each table input,
// which covers CR|LF split across reads, a split BOM, and split field names.
func TestEverySplit(t *testing.T) {
	for _, tc := range tableCases {
		for at := 0; at <= len(tc.in); at++ {
			rd := &splitReader{parts: [][]byte{[]byte(tc.in[:at]), []byte(tc.in[at:])}}
			got, err := collect(NewReaderSize(rd, MinBufferSize))
			if !evsEqual(got, tc.want) || err != tc.err {
				t.Errorf("%s split at %d: got %q, %v; want %q, %v", tc.name, at, got, err, tc.want, tc.err)
			}
		}
	}
}

func TestRetry(t *testing.T) {
	r := NewReader(strings.NewReader("retry: 1500\nretry: x1\nretry:\nretry: 99999999999999999999\ndata: a\n\n"))
	if _, ok := r.Retry(); ok {
		t.Fatal("retry set before any input")
	}
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if ms, ok := r.Retry(); !ok || ms != 1500 {
		t.Fatalf("Retry() = %d, %v; want 1500, true (invalid values ignored)", ms, ok)
	}
}

func TestIsDone(t *testing.T) {
	for in, want := range map[string]bool{
		"[DONE]": true, " [DONE] ": true, "[DONE]\n": true,
		"": false, "[done]": false, "[DONE]x": false, `{"text":"[DONE]"}`: false,
	} {
		if got := IsDone([]byte(in)); got != want {
			t.Errorf("IsDone(%q) = %v, want %v", in, got, want)
		}
	}
}

// TestDefaultCapReadsAMegabyteLine: the default cap leaves room for a
// 1 MB line (one that stops a client with a 128 KiB line limit).
func TestDefaultCapReadsAMegabyteLine(t *testing.T) {
	payload := bytes.Repeat([]byte("y"), 1<<20)
	r := NewReader(bytes.NewReader([]byte("data: " + string(payload) + "\n\n")))
	if e, err := r.Next(); err != nil || !bytes.Equal(e.Data, payload) {
		t.Fatalf("a 1 MiB line: %d bytes, %v", len(e.Data), err)
	}
}

func TestLargeEvent(t *testing.T) {
	const size = 10 << 20
	payload := bytes.Repeat([]byte("x"), size)
	in := "data: " + string(payload) + "\n\ndata: [DONE]\n\n"
	// 64 KiB reads resemble a TCP stream and force many buffer growths.
	rd := &chunkReader{data: []byte(in), sizes: []byte{0xff}, scale: 1024}
	r := NewReader(rd)
	r.SetMaxEventSize(16 << 20) // over the default cap
	e, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Data) != size || !bytes.Equal(e.Data, payload) {
		t.Fatalf("got %d bytes, want %d", len(e.Data), size)
	}
	if e, err = r.Next(); err != nil || !IsDone(e.Data) {
		t.Fatalf("got %q, %v; want [DONE]", e.Data, err)
	}
	if _, err = r.Next(); err != io.EOF {
		t.Fatalf("got %v, want io.EOF", err)
	}

	// The same size spread over many data lines.
	line := "data: " + strings.Repeat("y", 1023) + "\n"
	r = NewReader(strings.NewReader(strings.Repeat(line, size/1024) + "\n"))
	r.SetMaxEventSize(16 << 20)
	if e, err = r.Next(); err != nil || len(e.Data) != size-1 {
		t.Fatalf("multi-line: got %d bytes, %v; want %d", len(e.Data), err, size-1)
	}
}

func TestMaxEventSize(t *testing.T) {
	const max = 100
	x := func(n int) string { return strings.Repeat("x", n) }
	for _, tc := range []struct {
		name string
		in   string
		err  error
	}{
		{"line at limit", x(max) + "\n\n", io.EOF},                            // an ignored field
		{"data line over limit", "data:" + x(max) + "\n\n", ErrEventTooLarge}, // the limit counts "data:"
		{"data line at limit", "data:" + x(max-5) + "\n\n", io.EOF},
		{"line over limit", x(max+1) + "\n\n", ErrEventTooLarge},
		{"comment over limit", ":" + x(max) + "\n\n", ErrEventTooLarge},
		{"joined data over limit", strings.Repeat("data:"+x(40)+"\n", 3) + "\n", ErrEventTooLarge},
		{"joined data at limit", "data:" + x(49) + "\ndata:" + x(50) + "\n\n", io.EOF},
		{"joined data one over", "data:" + x(50) + "\ndata:" + x(50) + "\n\n", ErrEventTooLarge},
		{"unterminated over limit", "data:" + x(max), ErrEventTooLarge},
	} {
		if _, err := refParse([]byte(tc.in), max); !sameErr(err, tc.err) {
			t.Errorf("%s: reference got %v, want %v", tc.name, err, tc.err)
		}
		for _, size := range []int{MinBufferSize, 4 * max} {
			r := NewReaderSize(strings.NewReader(tc.in), size)
			r.SetMaxEventSize(max)
			if _, err := collect(r); !sameErr(err, tc.err) {
				t.Errorf("%s/buf=%d: got %v, want %v", tc.name, size, err, tc.err)
			}
		}
	}

	// An endless line must fail with bounded memory instead of reading forever.
	r := NewReader(io.MultiReader(strings.NewReader("data: "), endless{}))
	r.SetMaxEventSize(1 << 20)
	_, err := r.Next()
	if !errors.Is(err, ErrEventTooLarge) || !strings.Contains(err.Error(), "1048576") {
		t.Fatalf("got %v, want ErrEventTooLarge naming the limit", err)
	}
	if len(r.buf) > 1<<20+1 {
		t.Fatalf("buffer grew to %d, beyond the limit", len(r.buf))
	}
	if _, err2 := r.Next(); err2 != err {
		t.Fatalf("error not sticky: %v then %v", err, err2)
	}
}

type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'z'
	}
	return len(p), nil
}

type errAfter struct{ err error }

func (e errAfter) Read([]byte) (int, error) { return 0, e.err }

// onceErr fails the first Read with err and reports EOF afterwards.
type onceErr struct {
	err  error
	done bool
}

func (o *onceErr) Read([]byte) (int, error) {
	if o.done {
		return 0, io.EOF
	}
	o.done = true
	return 0, o.err
}

func TestReadErrorWrapped(t *testing.T) {
	in := io.MultiReader(strings.NewReader("data: a\n\ndata: b"), errAfter{syscall.ECONNRESET})
	r := NewReader(in)
	if e, err := r.Next(); err != nil || string(e.Data) != "a" {
		t.Fatalf("got %q, %v; want event a first", e.Data, err)
	}
	_, err := r.Next()
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("got %v, want wrapped ECONNRESET", err)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || err == io.EOF {
		t.Fatalf("read error %v must not look like EOF", err)
	}
	if _, err2 := r.Next(); err2 != err {
		t.Fatalf("error not sticky: %v then %v", err, err2)
	}

	// An error delivered with data: buffered events first, then the error.
	r = NewReader(iotest.TimeoutReader(strings.NewReader("data: a\n\n")))
	if e, err := r.Next(); err != nil || string(e.Data) != "a" {
		t.Fatalf("got %q, %v", e.Data, err)
	}
	if _, err := r.Next(); !errors.Is(err, iotest.ErrTimeout) {
		t.Fatalf("got %v, want wrapped iotest.ErrTimeout", err)
	}

	// A truncated HTTP body (net/http reports io.ErrUnexpectedEOF) stays
	// detectable through the wrapping.
	r = NewReader(io.MultiReader(strings.NewReader("data: a"), errAfter{io.ErrUnexpectedEOF}))
	if _, err := r.Next(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("got %v", err)
	}

	// A read error is final even if the reader would later report EOF, so
	// a reset during the first Read is not mistaken for an empty stream.
	r = NewReader(&onceErr{err: syscall.ECONNRESET})
	if _, err := r.Next(); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("got %v, want wrapped ECONNRESET", err)
	}

	r = NewReader(errAfter{nil}) // 0, nil forever
	if _, err := r.Next(); !errors.Is(err, io.ErrNoProgress) {
		t.Fatalf("got %v, want io.ErrNoProgress", err)
	}
}

// scriptReader serves fixed chunks and counts reads; reading past the script
// is a test failure, because it would block on a live connection.
type scriptReader struct {
	t      *testing.T
	chunks []string
	reads  int
}

func (s *scriptReader) Read(p []byte) (int, error) {
	if s.reads == len(s.chunks) {
		s.t.Fatalf("Next read past a complete event (read %d)", s.reads+1)
	}
	n := copy(p, s.chunks[s.reads])
	s.reads++
	return n, nil
}

// TestNoLookahead checks Next returns as soon as an event is complete: an
// extra Read would add a whole inter-token gap to the measured latency.
func TestNoLookahead(t *testing.T) {
	s := &scriptReader{t: t, chunks: []string{"data: a\n\n", "data: b\r", "\r", "\ndata: c\r\n", "\r\n"}}
	r := NewReader(s)
	for i, want := range []struct {
		data  string
		reads int
	}{{"a", 1}, {"b", 3}, {"c", 5}} {
		e, err := r.Next()
		if err != nil || string(e.Data) != want.data || s.reads != want.reads {
			t.Fatalf("event %d: got %q, %v after %d reads; want %q after %d", i, e.Data, err, s.reads, want.data, want.reads)
		}
	}
}

func TestReset(t *testing.T) {
	r := NewReaderSize(strings.NewReader("id: 1\nretry: 5\nevent: x\ndata: a\n\ndata: cut"), MinBufferSize)
	if _, err := collect(r); err != io.ErrUnexpectedEOF {
		t.Fatal(err)
	}
	r.Reset(strings.NewReader("data: b\n\n"))
	got, err := collect(r)
	if want := []ev{{"", "b", ""}}; !evsEqual(got, want) || err != io.EOF {
		t.Fatalf("after Reset got %q, %v; want %q", got, err, want)
	}
	if _, ok := r.Retry(); ok {
		t.Fatal("Retry survived Reset")
	}
}

// vllmEvent is one realistic /v1/completions stream chunk.
const vllmEvent = `data: {"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" word","logprobs":null,"finish_reason":null}]}` + "\n\n"

func vllmStream(n int) []byte {
	return []byte(strings.Repeat(vllmEvent, n) + "data: [DONE]\n\n")
}

// loopReader replays a stream forever, so allocation checks see only the
// steady state.
type loopReader struct {
	data []byte
	off  int
}

func (l *loopReader) Read(p []byte) (int, error) {
	n := copy(p, l.data[l.off:])
	l.off = (l.off + n) % len(l.data)
	return n, nil
}

func TestZeroAllocsSteadyState(t *testing.T) {
	typed := "event: content_block_delta\nid: 42\n" + vllmEvent
	for name, stream := range map[string]string{
		"vllm":          vllmEvent,
		"typed":         typed,
		"crlf":          strings.ReplaceAll(vllmEvent, "\n", "\r\n"),
		"comment+multi": ": ping\ndata: a\ndata: b\n\n",
	} {
		r := NewReader(&loopReader{data: []byte(strings.Repeat(stream, 64))})
		for range 1000 { // warm up: grow data buffer, cache type and id
			if _, err := r.Next(); err != nil {
				t.Fatal(err)
			}
		}
		allocs := testing.AllocsPerRun(2000, func() {
			if _, err := r.Next(); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocs per event, want 0", name, allocs)
		}
	}
}

// chunkReader serves data in read sizes taken cyclically from sizes
// (each size = (b%64+1)*scale), optionally returning io.EOF with the last
// bytes as some readers do.
type chunkReader struct {
	data     []byte
	sizes    []byte
	scale    int
	i        int
	eofFinal bool
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := len(c.data)
	if len(c.sizes) > 0 {
		n = (int(c.sizes[c.i%len(c.sizes)])%64 + 1) * max(c.scale, 1)
		c.i++
	}
	n = copy(p, c.data[:min(n, len(c.data))])
	c.data = c.data[n:]
	if len(c.data) == 0 && c.eofFinal {
		return n, io.EOF
	}
	return n, nil
}

func FuzzReader(f *testing.F) {
	for _, tc := range tableCases {
		f.Add([]byte(tc.in), uint8(0), uint8(0), []byte{})
		f.Add([]byte(tc.in), uint8(7), uint8(3), []byte{0, 1, 2})
	}
	f.Add(vllmStream(3), uint8(0), uint8(200), []byte{5, 63})
	f.Add([]byte("data: a\r"), uint8(0), uint8(1), []byte{7})
	f.Fuzz(func(t *testing.T, in []byte, maxSel, bufSel uint8, sizes []byte) {
		limit := DefaultMaxEventSize
		if maxSel != 0 {
			limit = int(maxSel) // tiny limits exercise the size checks
		}
		want, wantErr := refParse(in, limit)
		rd := &chunkReader{data: bytes.Clone(in), sizes: sizes, eofFinal: bufSel&1 == 1}
		r := NewReaderSize(rd, MinBufferSize+int(bufSel))
		r.SetMaxEventSize(limit)
		got, err := collect(r)
		if !evsEqual(got, want) || !sameErr(err, wantErr) {
			t.Fatalf("input %q limit %d:\n got  %q, %v\n want %q, %v", in, limit, got, err, want, wantErr)
		}
		if _, err2 := r.Next(); err2 != err {
			t.Fatalf("error not sticky: %v then %v", err, err2)
		}
	})
}

// netReader returns one event per Read, like a server flushing each token.
type netReader struct {
	events [][]byte
	i      int
}

func (n *netReader) Read(p []byte) (int, error) {
	if n.i == len(n.events) {
		return 0, io.EOF
	}
	c := copy(p, n.events[n.i])
	n.i++
	return c, nil
}

func BenchmarkReader(b *testing.B) {
	const events = 1000
	stream := vllmStream(events)
	perEvent := bytes.SplitAfter(stream, []byte("\n\n"))
	perEvent = perEvent[:len(perEvent)-1] // drop the empty tail after the last split
	for _, bc := range []struct {
		name string
		rd   func() io.Reader
	}{
		{"bulk", func() io.Reader { return bytes.NewReader(stream) }},
		{"read-per-event", func() io.Reader { return &netReader{events: perEvent} }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			readers := []io.Reader{bc.rd(), bc.rd()} // alternate so Reset sees a new source
			r := NewReader(readers[0])
			b.SetBytes(int64(len(stream)))
			b.ReportAllocs()
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			n := 0
			for b.Loop() {
				// Re-arm the source and Reset the Reader in the timed loop:
				// that is the per-request cost a pooled Reader pays. (Timer
				// stops would cost more than this: with ReportAllocs they
				// stop the world to read memory statistics.)
				switch rd := readers[n%2].(type) {
				case *bytes.Reader:
					rd.Reset(stream)
				case *netReader:
					rd.i = 0
				}
				r.Reset(readers[n%2])
				got := 0
				for {
					e, err := r.Next()
					if err != nil {
						if err != io.EOF {
							b.Fatal(err)
						}
						break
					}
					_ = e
					got++
				}
				if got != events+1 {
					b.Fatalf("got %d events", got)
				}
				n++
			}
			runtime.ReadMemStats(&ms1)
			total := float64(n * (events + 1))
			b.ReportMetric(total/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/total, "ns/event")
			b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/total, "allocs/event")
		})
	}
}

func ExampleReader() {
	body := strings.NewReader("data: {\"text\":\" Hi\"}\n\n: keep-alive\n\ndata: [DONE]\n\n")
	r := NewReader(body)
	for {
		e, err := r.Next()
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		if IsDone(e.Data) {
			fmt.Println("done")
			return
		}
		fmt.Printf("%s\n", e.Data)
	}
	// Output:
	// {"text":" Hi"}
	// done
}
