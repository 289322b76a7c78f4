package loadgen

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

func TestReadAtMost(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789"), 300) // 3,000 bytes
	boom := errors.New("boom")
	for _, c := range []struct {
		name    string
		r       io.Reader
		n, size int64
		want    int
		err     error
	}{
		{"announced", bytes.NewReader(body), 10_000, 3000, 3000, nil},
		{"unknown size", bytes.NewReader(body), 10_000, -1, 3000, nil},
		{"one byte at a time", iotest.OneByteReader(bytes.NewReader(body)), 10_000, -1, 3000, nil},
		{"announced too small", bytes.NewReader(body), 10_000, 100, 3000, nil},
		{"announced too large", bytes.NewReader(body), 10_000, 5000, 3000, nil},
		{"over the cap", bytes.NewReader(body), 1001, 3000, 1001, nil},
		{"over the cap, unknown size", bytes.NewReader(body), 1001, -1, 1001, nil},
		{"empty", bytes.NewReader(nil), 10, 0, 0, nil},
		{"error midway", io.MultiReader(bytes.NewReader(body[:700]), iotest.ErrReader(boom)), 10_000, -1, 700, boom},
	} {
		got, err := readAtMost(c.r, c.n, c.size)
		if len(got) != c.want || !errors.Is(err, c.err) || !bytes.Equal(got, body[:len(got)]) {
			t.Errorf("%s: %d bytes, err %v; want %d bytes of the body, err %v", c.name, len(got), err, c.want, c.err)
		}
	}
	// A short answer of announced size costs one allocation.
	if a := testing.AllocsPerRun(100, func() { readAtMost(bytes.NewReader(body[:300]), 1<<20, 300) }); a > 2 {
		t.Errorf("%.0f allocations for an announced 300-byte answer, want the buffer's (and the reader's)", a)
	}
}
