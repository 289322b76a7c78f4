package loadgen

import (
	"bytes"
	"fmt"
	"runtime"
	"time"
)

// ParseStats is the client's in-memory per-event cost.
type ParseStats struct {
	EventsPerSec   float64
	AllocsPerEvent float64
}

// MeasureParse runs the whole per-event client path (SSE framing, JSON
// scan, stamp, bookkeeping) over an in-memory stream of simulator-shaped
// chunks for about d, on one goroutine (so: per core).
func MeasureParse(d time.Duration) (ParseStats, error) {
	const events = 1024
	var b bytes.Buffer
	for i := 0; i < events; i++ {
		b.WriteString(`data: {"id":"cmpl-42","object":"text_completion","created":1764547200,"model":"sim-llama","choices":[{"index":0,"text":" bado","logprobs":null,"finish_reason":null,"stop_reason":null}]}` + "\n\n")
	}
	fmt.Fprintf(&b, `data: {"id":"cmpl-42","choices":[],"usage":{"prompt_tokens":128,"completion_tokens":%d}}`+"\n\ndata: [DONE]\n\n", events)
	data := b.Bytes()
	rd := bytes.NewReader(data)
	res := Result{Tokens: make([]TokenEvent, 0, events)}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	n := 0
	for time.Since(start) < d {
		rd.Reset(data)
		res = Result{Tokens: res.Tokens[:0]}
		if err := readStream(rd, &res, nil, 0, false, nil); err != nil {
			return ParseStats{}, err
		}
		n++
	}
	el := time.Since(start)
	runtime.ReadMemStats(&after)
	total := float64(n * events)
	return ParseStats{EventsPerSec: total / el.Seconds(), AllocsPerEvent: float64(after.Mallocs-before.Mallocs) / total}, nil
}
