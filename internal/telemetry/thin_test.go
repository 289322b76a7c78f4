package telemetry

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/stats"
)

// TestThinnedSamplesStayBoundedAndUniform: past the bound the kept
// readings are every step-th one from the first, step a power of two, at
// most max and at least half of it; under the bound every reading is kept.
func TestThinnedSamplesStayBoundedAndUniform(t *testing.T) {
	for _, tt := range []struct{ max, readings, wantStep int }{
		{8, 8, 1}, {8, 9, 2}, {8, 16, 2}, {8, 17, 4}, {8, 1000, 128}, {1024, 18000, 32},
	} {
		t.Run(fmt.Sprintf("%d_of_%d", tt.max, tt.readings), func(t *testing.T) {
			var ts thinnedSamples
			ts.max = tt.max
			for i := range tt.readings {
				ts.addRows([]results.Sample{{Metric: "m", Value: float64(i)}, {Metric: "n", Value: float64(i)}})
			}
			rows := ts.rows()
			if ts.step != tt.wantStep {
				t.Errorf("step %d, want %d", ts.step, tt.wantStep)
			}
			kept := len(rows) / 2
			if kept > tt.max || (tt.readings > tt.max && kept <= tt.max/2) {
				t.Errorf("%d readings kept of %d, max %d", kept, tt.readings, tt.max)
			}
			for k := 0; k < len(rows); k += 2 {
				if want := float64(k / 2 * ts.step); rows[k].Value != want || rows[k+1].Value != want {
					t.Fatalf("kept reading %d is %v/%v, want %v", k/2, rows[k].Value, rows[k+1].Value, want)
				}
			}
			if note := ts.note("100ms"); (note != "") != (tt.wantStep > 1) {
				t.Errorf("note %q with step %d", note, ts.step)
			}
		})
	}
}

// TestPromLongWindowFoldsEveryScrape: a window of more scrapes than the
// probe keeps samples of still reads every scrape into its columns (a
// gauge's spike on a scrape the samples table thinned away is the peak;
// the rises count it), while the samples it returns stay within the
// bound and the note says they were thinned.
func TestPromLongWindowFoldsEveryScrape(t *testing.T) {
	var n atomic.Int64
	const spikeAt = 3 // an odd scrape: the first the grid drops
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i, running := n.Add(1)-1, 1
		if i == spikeAt {
			running = 9
		}
		fmt.Fprintf(w, "vllm:num_requests_running %d\nvllm:num_requests_waiting 0\n# TYPE vllm:prompt_tokens_total counter\nvllm:prompt_tokens_total %d\n", running, 10*i)
	}))
	defer srv.Close()
	p := NewPromProbe(srv.URL+"/metrics", "vllm", time.Millisecond, nil)
	defer p.Close()
	p.Begin(context.Background(), "c1")
	kept(t, p, 2*maxKeptReadings+1)
	var row results.Cell
	samples, note := p.End(context.Background(), &row)
	scrapes := int(n.Load())
	if row.ServerRunningPeak == nil || *row.ServerRunningPeak != 9 {
		t.Errorf("running peak %s over %d scrapes, want the spike's 9", f(row.ServerRunningPeak), scrapes)
	}
	if row.ServerPromptTokens == nil || *row.ServerPromptTokens < float64(10*2*maxKeptReadings) {
		t.Errorf("prompt tokens %s over %d scrapes", f(row.ServerPromptTokens), scrapes)
	}
	readings := map[time.Time]bool{}
	for _, s := range samples {
		readings[s.At] = true
		if s.Metric == "vllm:num_requests_running" && s.Value == 9 {
			t.Errorf("the spike's scrape (%d) was kept: the grid should have dropped it", spikeAt)
		}
	}
	if len(readings) > maxKeptReadings || len(readings) <= maxKeptReadings/2 {
		t.Errorf("samples of %d readings kept of %d scrapes; want (%d, %d]", len(readings), scrapes, maxKeptReadings/2, maxKeptReadings)
	}
	if !strings.Contains(note, "samples table thinned to every") {
		t.Errorf("note %q does not say the samples were thinned", note)
	}
}

// TestGPUWindowFoldsEveryRound: a GPU window of more rounds than the
// samples table keeps fills its columns from every round — the
// utilisation mean and p95 equal sorting's over every round's
// device mean, and a spike on a round the grid drops is still the
// memory, power and temperature peak — while its samples stay within the
// bound.
func TestGPUWindowFoldsEveryRound(t *testing.T) {
	devs := []gpuDevice{{UUID: "GPU-a", Index: 0}, {UUID: "GPU-b", Index: 1}}
	w := &gpuWindow{cellID: "c1", devs: devs, interval: 100 * time.Millisecond,
		begin: gpuRound{Devs: []gpuReading{{EnergyMJ: nvPtr(uint64(1000))}, {EnergyMJ: nvPtr(uint64(5000))}}}}
	const rounds, spikeAt = 5000, 3
	var utilSeries []float64
	start := time.Unix(1_700_000_000, 0)
	for i := range rounds {
		r := gpuRound{At: start.Add(time.Duration(i) * 100 * time.Millisecond)}
		for d := range devs {
			util := float64((i*7 + d*31) % 101) // whole percents, as NVML reads them
			mem, power, temp := int64(1<<30+d), 200.0, 60.0
			if i == spikeAt && d == 1 {
				mem, power, temp = 3<<30, 700, 91
			}
			r.Devs = append(r.Devs, gpuReading{Util: nvPtr(util), MemUsed: nvPtr(mem), PowerW: nvPtr(power),
				TempC: nvPtr(temp), EnergyMJ: nvPtr(uint64(1000 + 4000*d + 10*(i+1)))})
		}
		utilSeries = append(utilSeries, (*r.Devs[0].Util+*r.Devs[1].Util)/2)
		w.add(r)
	}
	var row results.Cell
	notes := w.aggregate(&row)
	if want := stats.Mean(utilSeries); row.GPUUtilMean == nil || *row.GPUUtilMean != want {
		t.Errorf("util mean %v, want %v", row.GPUUtilMean, want)
	}
	if want := stats.Percentile(utilSeries, 95); row.GPUUtilP95 == nil || *row.GPUUtilP95 != want {
		t.Errorf("util p95 %v, want %v", row.GPUUtilP95, want)
	}
	if row.GPUMemPeakBytes == nil || *row.GPUMemPeakBytes != 3<<30 {
		t.Errorf("memory peak %v, want the spike's %d", row.GPUMemPeakBytes, 3<<30)
	}
	if row.PowerWMax == nil || *row.PowerWMax != 900 || row.GPUTempCMax == nil || *row.GPUTempCMax != 91 {
		t.Errorf("power max %v (want 900), temp max %v (want 91)", row.PowerWMax, row.GPUTempCMax)
	}
	if want := float64(2*10*rounds) / 1000; row.EnergyJ == nil || *row.EnergyJ != want {
		t.Errorf("energy %v J, want %v", row.EnergyJ, want)
	}
	times := map[time.Time]bool{}
	peakSample := 0.0
	for _, s := range w.samples() {
		times[s.At] = true
		if s.Metric == "mem_used_peak_bytes" && s.Device == "GPU-b" {
			peakSample = s.Value
		}
	}
	// The rounds kept, and the peaks' time (the last round's).
	if limit := keptReadingsFor(2 * gpuSamplesPerDevice); len(times) > limit+1 || len(times) <= limit/2 {
		t.Errorf("samples of %d rounds kept of %d; want (%d, %d]", len(times), rounds, limit/2, limit+1)
	}
	if peakSample != 3<<30 {
		t.Errorf("GPU-b's mem_used_peak_bytes sample %v, want the spike's", peakSample)
	}
	if !strings.Contains(strings.Join(notes, "; "), "samples table thinned") {
		t.Errorf("notes %q do not say the samples were thinned", notes)
	}
}
