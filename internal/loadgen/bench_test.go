package loadgen

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"testing"
)

func TestMain(m *testing.M) {
	if spec := os.Getenv(simChildEnv); spec != "" {
		os.Exit(simChild(spec))
	}
	os.Exit(m.Run())
}

// simStream is a realistic stream: the simulator's completion chunks.
func simStream(events int) []byte {
	var b bytes.Buffer
	for i := 0; i < events; i++ {
		fmt.Fprintf(&b, `data: {"id":"cmpl-42","object":"text_completion","created":1764547200,"model":"sim-llama","choices":[{"index":0,"text":" bado","logprobs":null,"finish_reason":null,"stop_reason":null}]}`+"\n\n")
	}
	b.WriteString(`data: {"id":"cmpl-42","object":"text_completion","created":1764547200,"model":"sim-llama","choices":[],"usage":{"prompt_tokens":128,"total_tokens":` + fmt.Sprint(128+events) + `,"completion_tokens":` + fmt.Sprint(events) + "}}\n\ndata: [DONE]\n\n")
	return b.Bytes()
}

// BenchmarkClientStreamPath is the client's whole per-event path in memory
// (SSE framing, the JSON scan, the stamp and the token bookkeeping):
// events parsed per second on one core, and allocations per event.
func BenchmarkClientStreamPath(b *testing.B) {
	const events = 1024
	data := simStream(events)
	rd := bytes.NewReader(data)
	var res Result
	res.Tokens = make([]TokenEvent, 0, events)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rd.Reset(data)
		res = Result{Tokens: res.Tokens[:0]}
		if err := readStream(rd, &res, nil, 0, false, nil); err != nil || len(res.Tokens) != events {
			b.Fatalf("%v, %d events", err, len(res.Tokens))
		}
	}
	b.StopTimer()
	runtime.ReadMemStats(&after)
	perEvent := b.Elapsed().Seconds() / float64(b.N*events)
	b.ReportMetric(1/perEvent, "events/s")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(b.N*events), "allocs/event")
}
