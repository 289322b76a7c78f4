//go:build cgo && linux

package sweep

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/telemetry"
)

// GPU telemetry in the sweep with go-nvml's mock standing in for a GPU
// (there is none on the machines these tests run on): one mock A100
// whose energy counter grows 50 J a reading, at 60% utilisation and
// 250 W. The row gets the GPU columns, the samples table the readings
// with the cell's id, and the notes no "not measured".
func TestTelemetryMockedGPU(t *testing.T) {
	srv := dgxa100.New()
	srv.Devices = srv.Devices[:1]
	d := srv.Devices[0].(*server.Device)
	var energy atomic.Uint64
	energy.Store(1_000_000)
	d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
		return nvml.Utilization{Gpu: 60, Memory: 30}, nvml.SUCCESS
	}
	d.GetMemoryInfo_v2Func = func() (nvml.Memory_v2, nvml.Return) {
		return nvml.Memory_v2{Total: 40 << 30, Used: 12 << 30, Reserved: 1 << 30}, nvml.SUCCESS
	}
	d.GetPowerUsageFunc = func() (uint32, nvml.Return) { return 250_000, nvml.SUCCESS }
	d.GetTotalEnergyConsumptionFunc = func() (uint64, nvml.Return) { return energy.Add(50_000), nvml.SUCCESS }
	d.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return 61, nvml.SUCCESS }
	d.GetClockInfoFunc = func(nvml.ClockType) (uint32, nvml.Return) { return 1410, nvml.SUCCESS }
	d.GetCurrentClocksEventReasonsFunc = func() (uint64, nvml.Return) { return 0, nvml.SUCCESS }
	old := newGPUProbe
	newGPUProbe = func(devices []string, interval time.Duration) (telemetry.Probe, error) {
		return telemetry.NewGPUProbe(srv, devices, interval)
	}
	t.Cleanup(func() { newGPUProbe = old })

	_, url := startSim(t, nil)
	st, p := loadStage(t, fmt.Sprintf(`kind: "sweep", target: %q
		cells: [{isl: 16, osl: 8}], concurrency: [2], requests: 8, warmup: 0, calibrate: "off"
		telemetry: {interval: "10ms", metrics: "off"}`, url), "")
	r, err := runWithSamples(t, st, p)
	if err != nil {
		t.Fatal(err)
	}
	c := r.cells[0]
	t.Logf("gpu util %v, mem peak %v, power %v W, energy %v J, tokens/J %v, notes %q", v(c.GPUUtilMean), v(c.GPUMemPeakBytes), v(c.PowerWMean), v(c.EnergyJ), v(c.TokensPerJoule), c.Notes)
	if v(c.GPUUtilMean) != 60 || v(c.GPUMemPeakBytes) != 12<<30 || v(c.PowerWMean) != 250 || v(c.EnergyJ) < 50 || c.TokensPerJoule == nil || c.GPUs == "" {
		t.Errorf("GPU columns: util %v, mem %v, power %v, energy %v, tokens/J %v, gpus %q", v(c.GPUUtilMean), v(c.GPUMemPeakBytes), v(c.PowerWMean), v(c.EnergyJ), v(c.TokensPerJoule), c.GPUs)
	}
	if strings.Contains(c.Notes, "GPU telemetry not measured") {
		t.Errorf("notes %q say the GPU was not measured", c.Notes)
	}
	var nvmlSamples int
	for _, s := range r.samples {
		if s.Source == "nvml" {
			nvmlSamples++
			if s.CellID != c.CellID {
				t.Fatalf("an nvml sample of cell %q, want %q", s.CellID, c.CellID)
			}
		}
	}
	if nvmlSamples == 0 {
		t.Error("no nvml samples")
	}
	_ = results.StatusOK
}
