package loadgen

import (
	"bytes"
	"fmt"
	"io"
	"os"
)

// maxInputBytes bounds a dataset, trace, document or reference file: far
// beyond any prompt set, short of what a model file (gigabytes) or a
// device that never ends would cost.
const maxInputBytes = 1 << 30

// openInput opens a file a plan names as input (what says which: "dataset",
// "trace"), refusing what is no such file before reading any of it: a
// device (/dev/zero never ends), a FIFO (it may block forever), a folder,
// a file over maxInputBytes, and a GGUF model (a glob that caught the model).
func openInput(path, what string) (*os.File, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s %s is not a regular file (%s): give a file", what, path, fi.Mode().Type())
	}
	if fi.Size() > maxInputBytes {
		return nil, fmt.Errorf("%s %s is %.1f GiB, over the %d GiB an input file may be (a model file?)", what, path, float64(fi.Size())/(1<<30), maxInputBytes>>30)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	head := make([]byte, 4)
	if n, _ := io.ReadFull(f, head); n == 4 && bytes.Equal(head, []byte("GGUF")) {
		f.Close()
		return nil, fmt.Errorf("%s %s is a GGUF model file, not a %s (a glob that caught the model?)", what, path, what)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return f, nil
}

// readInput is openInput, read whole (never past maxInputBytes, should the
// file grow while it is read).
func readInput(path, what string) ([]byte, error) {
	f, err := openInput(path, what)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxInputBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if len(b) > maxInputBytes {
		return nil, fmt.Errorf("%s %s grew past %d GiB while it was read", what, path, maxInputBytes>>30)
	}
	return b, nil
}
