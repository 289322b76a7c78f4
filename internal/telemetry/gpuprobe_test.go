//go:build cgo && linux

package telemetry

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"github.com/benchrun/benchrun/internal/machine"
	"github.com/benchrun/benchrun/internal/results"
)

// There is no GPU on the machines these tests run on: go-nvml's mock
// dgxa100 server (8 mock A100s) stands in for the driver. It wires only
// identity functions, so fakeGPU wires the telemetry ones, each reading
// the next value of a sequence the test sets and counting its calls.

type fakeGPU struct {
	mu sync.Mutex
	d  *server.Device

	util        []uint32 // GPU utilisation per reading (the last repeats)
	utilCalls   int
	memUsed     []uint64
	memCalls    int
	reserved    uint64
	powerMW     uint32
	instantMW   uint32 // 0: FI_DEV_POWER_INSTANT not supported
	energy      uint64
	energyStep  int64 // added before each energy read
	energyCalls int
	throttle    uint64 // clock event reasons from throttleFrom's call on
	throttleAt  int
	clockCalls  int
}

func next[T any](seq []T, i int) T {
	if i >= len(seq) {
		return seq[len(seq)-1]
	}
	return seq[i]
}

func wireGPU(d *server.Device) *fakeGPU {
	f := &fakeGPU{d: d, util: []uint32{50}, memUsed: []uint64{1 << 30}, reserved: 512 << 20, powerMW: 100_000, energy: 1_000_000, energyStep: 1000}
	d.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) {
		// The mock leaves BusId empty; NVML spells it with an 8-digit domain.
		var p nvml.PciInfo
		for i, c := range "0000" + d.PciBusID {
			p.BusId[i] = int8(c)
		}
		return p, nvml.SUCCESS
	}
	d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
		f.mu.Lock()
		defer f.mu.Unlock()
		u := next(f.util, f.utilCalls)
		f.utilCalls++
		return nvml.Utilization{Gpu: u, Memory: u / 2}, nvml.SUCCESS
	}
	d.GetMemoryInfo_v2Func = func() (nvml.Memory_v2, nvml.Return) {
		f.mu.Lock()
		defer f.mu.Unlock()
		u := next(f.memUsed, f.memCalls)
		f.memCalls++
		return nvml.Memory_v2{Total: 40 << 30, Used: u, Reserved: f.reserved + uint64(f.memCalls)}, nvml.SUCCESS
	}
	d.GetPowerUsageFunc = func() (uint32, nvml.Return) { return f.powerMW, nvml.SUCCESS }
	d.GetFieldValuesFunc = func(v []nvml.FieldValue) nvml.Return {
		for i := range v {
			if v[i].FieldId != nvml.FI_DEV_POWER_INSTANT || f.instantMW == 0 {
				v[i].NvmlReturn = uint32(nvml.ERROR_NOT_SUPPORTED)
				continue
			}
			v[i].ValueType = uint32(nvml.VALUE_TYPE_UNSIGNED_INT)
			v[i].Value = [8]byte{byte(f.instantMW), byte(f.instantMW >> 8), byte(f.instantMW >> 16), byte(f.instantMW >> 24)}
		}
		return nvml.SUCCESS
	}
	d.GetTotalEnergyConsumptionFunc = func() (uint64, nvml.Return) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.energyCalls > 0 {
			f.energy = uint64(int64(f.energy) + f.energyStep)
		}
		f.energyCalls++
		return f.energy, nvml.SUCCESS
	}
	d.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return 60 + uint32(d.Index), nvml.SUCCESS }
	d.GetClockInfoFunc = func(c nvml.ClockType) (uint32, nvml.Return) {
		if c == nvml.CLOCK_SM {
			return 1410, nvml.SUCCESS
		}
		return 1215, nvml.SUCCESS
	}
	d.GetCurrentClocksEventReasonsFunc = func() (uint64, nvml.Return) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.clockCalls++
		if f.throttle != 0 && f.clockCalls > f.throttleAt {
			return f.throttle, nvml.SUCCESS
		}
		return 0, nvml.SUCCESS
	}
	d.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) {
		return []nvml.ProcessInfo{{Pid: 4242, UsedGpuMemory: 1 << 30}}, nvml.SUCCESS
	}
	d.GpmQueryDeviceSupportFunc = func() (nvml.GpmSupport, nvml.Return) {
		return nvml.GpmSupport{}, nvml.ERROR_NOT_SUPPORTED // an A100: no GPM
	}
	return f
}

func mockServer(n int) (*server.Server, []*fakeGPU) {
	srv := dgxa100.New()
	srv.Devices = srv.Devices[:n]
	fakes := make([]*fakeGPU, n)
	for i := range fakes {
		fakes[i] = wireGPU(srv.Devices[i].(*server.Device))
	}
	return srv, fakes
}

// openProbe opens a probe whose sampler never ticks on its own (an hour's
// interval): the test takes the readings with ticks, so the counts and
// the values they produce are exact.
func openProbe(t *testing.T, lib nvml.Interface, devices ...string) *gpuProbe {
	t.Helper()
	p, err := NewGPUProbe(lib, devices, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p.(*gpuProbe)
}

// window runs a cell's window with n sampler ticks between Begin and End.
func window(p *gpuProbe, n int, row *results.Cell) ([]results.Sample, string) {
	p.Begin(context.Background(), "c1")
	for i := 0; i < n; i++ {
		p.mu.Lock()
		id := p.winID
		p.mu.Unlock()
		p.tick(id)
	}
	return p.End(context.Background(), row)
}

func approx(t *testing.T, name string, got *float64, want float64) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s = NULL, want %v", name, want)
	}
	if math.Abs(*got-want) > 1e-9 {
		t.Fatalf("%s = %v, want %v", name, *got, want)
	}
}

func TestGPUProbeOneDevice(t *testing.T) {
	srv, f := mockServer(1)
	f[0].util = []uint32{10, 20, 30, 40, 100}
	f[0].memUsed = []uint64{1 << 30, 5 << 30, 2 << 30}
	f[0].energyStep = 1500
	f[0].throttle = nvml.ClocksEventReasonSwPowerCap | nvml.ClocksThrottleReasonHwThermalSlowdown
	f[0].throttleAt = 2 // from the third reading on: mid-cell
	p := openProbe(t, srv)
	row := &results.Cell{OutputTokS: nvPtr(100.0), DurationS: 1.5}
	samples, note := window(p, 4, row)

	// 4 ticks and End's reading: five readings.
	if f[0].utilCalls != 5 {
		t.Fatalf("utilisation read %d times, want 5", f[0].utilCalls)
	}
	// mean(10,20,30,40,100) = 40; p95 = 40 + 0.8×(100−40) (linear).
	approx(t, "gpu_util_mean", row.GPUUtilMean, 40)
	approx(t, "gpu_util_p95", row.GPUUtilP95, 88)
	approx(t, "gpu_mem_util_mean", row.GPUMemUtilMean, (5+10+15+20+50)/5.0)
	// The energy counter is read at Begin and at each of the 5 readings,
	// 1500 mJ more each time: 7.5 J.
	approx(t, "energy_j", row.EnergyJ, 7.5)
	approx(t, "energy_j_per_token", row.EnergyJPerToken, 7.5/150)
	approx(t, "tokens_per_joule", row.TokensPerJoule, 150/7.5)
	approx(t, "power_w_mean", row.PowerWMean, 100)
	approx(t, "power_w_max", row.PowerWMax, 100) // no instantaneous field: the averaged reading
	approx(t, "sm_clock_mhz_mean", row.SMClockMHzMean, 1410)
	approx(t, "gpu_temp_c_max", row.GPUTempCMax, 60)
	if row.GPUMemPeakBytes == nil || *row.GPUMemPeakBytes != 5<<30 {
		t.Fatalf("gpu_mem_peak_bytes = %v, want 5 GiB", row.GPUMemPeakBytes)
	}
	// Reserved at the peak: the second memory reading's.
	if row.GPUMemReservedBytes == nil || *row.GPUMemReservedBytes != 512<<20+2 {
		t.Fatalf("gpu_mem_reserved_bytes = %v", row.GPUMemReservedBytes)
	}
	if row.ThrottleReasons != "hw_thermal_slowdown,sw_power_cap" {
		t.Fatalf("throttle_reasons = %q", row.ThrottleReasons)
	}
	if row.GPUSMUtilMean != nil || !strings.Contains(note, "GPM SM utilisation not reported by "+f[0].d.UUID) {
		t.Fatalf("no GPM on an A100: gpu_sm_util_mean = %v, note %q", row.GPUSMUtilMean, note)
	}
	if row.GPUs != f[0].d.UUID {
		t.Fatalf("gpus = %q, want %q", row.GPUs, f[0].d.UUID)
	}

	count := map[string]int{}
	for _, s := range samples {
		count[s.Metric]++
		if s.Source != "nvml" || s.Device != f[0].d.UUID || s.CellID != "c1" || s.At.IsZero() {
			t.Fatalf("sample %+v", s)
		}
		if s.Labels["uuid"] != f[0].d.UUID || s.Labels["pci_bus_id"] != "00000000:00:00.0" || s.Labels["index"] != "0" {
			t.Fatalf("labels %v", s.Labels)
		}
		switch s.Metric {
		case "throttle_reasons":
			if s.Value != 0 && s.Labels["names"] != "sw_power_cap,hw_thermal_slowdown" {
				t.Fatalf("throttle sample %+v", s)
			}
		case "processes":
			if s.Value != 1 || s.Labels["pids"] != "4242" {
				t.Fatalf("processes sample %+v", s)
			}
		}
	}
	for m, want := range map[string]int{"gpu_util_pct": 5, "mem_util_pct": 5, "mem_used_bytes": 5, "mem_reserved_bytes": 5, "power_w": 5,
		"energy_mj": 6, "temp_c": 5, "sm_clock_mhz": 5, "mem_clock_mhz": 5, "throttle_reasons": 5, "processes": 5, "mem_used_peak_bytes": 1, "power_instant_w": 0} {
		if count[m] != want {
			t.Errorf("%d %s samples, want %d (all: %v)", count[m], m, want, count)
		}
	}
}

func TestGPUProbeNoTokensNoEnergyRatio(t *testing.T) {
	srv, _ := mockServer(1)
	p := openProbe(t, srv)
	row := &results.Cell{DurationS: 2} // output_tok_s NULL
	window(p, 1, row)
	if row.EnergyJ == nil || row.EnergyJPerToken != nil || row.TokensPerJoule != nil {
		t.Fatalf("energy %v, J/token %v, tok/J %v: ratios NULL without output tokens", row.EnergyJ, row.EnergyJPerToken, row.TokensPerJoule)
	}
	row = &results.Cell{OutputTokS: nvPtr(0.0), DurationS: 2}
	window(p, 1, row)
	if row.EnergyJPerToken != nil || row.TokensPerJoule != nil {
		t.Fatal("zero output tokens: ratios NULL, not infinite")
	}
}

func TestGPUProbeMemoryV1Fallback(t *testing.T) {
	srv, f := mockServer(1)
	f[0].d.GetMemoryInfo_v2Func = func() (nvml.Memory_v2, nvml.Return) { return nvml.Memory_v2{}, nvml.ERROR_NOT_SUPPORTED }
	f[0].d.GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) { return nvml.Memory{Total: 40 << 30, Used: 3 << 30}, nvml.SUCCESS }
	p := openProbe(t, srv)
	row := &results.Cell{}
	_, note := window(p, 2, row)
	if row.GPUMemPeakBytes == nil || *row.GPUMemPeakBytes != 3<<30 {
		t.Fatalf("gpu_mem_peak_bytes = %v, want v1's 3 GiB", row.GPUMemPeakBytes)
	}
	if row.GPUMemReservedBytes != nil || !strings.Contains(note, "reserved memory not reported by "+f[0].d.UUID) {
		t.Fatalf("reserved = %v, note %q", row.GPUMemReservedBytes, note)
	}
}

func TestGPUProbePowerUnsupported(t *testing.T) {
	srv, f := mockServer(2)
	// Device 1 reports no power at all: the summed power is unknown.
	f[1].d.GetPowerUsageFunc = func() (uint32, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	p := openProbe(t, srv)
	row := &results.Cell{}
	samples, note := window(p, 3, row)
	if row.PowerWMean != nil || row.PowerWMax != nil {
		t.Fatalf("power_w_mean %v, power_w_max %v: NULL when a device reports no power, never 0", row.PowerWMean, row.PowerWMax)
	}
	if !strings.Contains(note, "power not reported by "+f[1].d.UUID) {
		t.Fatalf("note %q", note)
	}
	for _, s := range samples {
		if s.Metric == "power_w" && s.Device == f[1].d.UUID {
			t.Fatalf("a power sample for a device without power: %+v", s)
		}
	}
	if row.EnergyJ == nil || row.GPUUtilMean == nil {
		t.Fatal("the other columns are still measured")
	}
	// The note is the same next cell (the caller says it once).
	_, note2 := window(p, 1, &results.Cell{})
	if note2 != note {
		t.Fatalf("note changed between cells: %q then %q", note, note2)
	}
}

func TestGPUProbeTwoDevices(t *testing.T) {
	srv, f := mockServer(2)
	f[0].energyStep, f[1].energyStep = 1000, 2000
	f[0].memUsed = []uint64{1 << 30, 5 << 30, 2 << 30}
	f[1].memUsed = []uint64{3 << 30, 4 << 30, 6 << 30}
	f[0].util, f[1].util = []uint32{100}, []uint32{0}
	f[0].powerMW, f[1].powerMW = 200_000, 300_000
	f[0].instantMW = 250_000 // device 1 has no instantaneous field: its averaged reading counts
	p := openProbe(t, srv)
	row := &results.Cell{}
	samples, note := window(p, 2, row)
	// Begin and 3 readings: 3 steps each, (3×1000 + 3×2000) mJ.
	approx(t, "energy_j", row.EnergyJ, 9)
	// One device busy, one idle: the server's GPUs were half busy.
	approx(t, "gpu_util_mean", row.GPUUtilMean, 50)
	approx(t, "power_w_mean", row.PowerWMean, 500)
	approx(t, "power_w_max", row.PowerWMax, 550)
	approx(t, "gpu_temp_c_max", row.GPUTempCMax, 61)
	if row.GPUMemPeakBytes == nil || *row.GPUMemPeakBytes != 6<<30 {
		t.Fatalf("gpu_mem_peak_bytes = %v, want device 1's 6 GiB", row.GPUMemPeakBytes)
	}
	if row.GPUMemReservedBytes == nil || *row.GPUMemReservedBytes != 512<<20+3 {
		t.Fatalf("reserved at the peak = %v, want device 1's third reading's", row.GPUMemReservedBytes)
	}
	if want := f[0].d.UUID + "," + f[1].d.UUID; row.GPUs != want {
		t.Fatalf("gpus = %q, want %q", row.GPUs, want)
	}
	peaks := map[string]float64{}
	for _, s := range samples {
		if s.Metric == "mem_used_peak_bytes" {
			peaks[s.Device] = s.Value
		}
	}
	if peaks[f[0].d.UUID] != 5<<30 || peaks[f[1].d.UUID] != 6<<30 {
		t.Fatalf("per-device peaks %v", peaks)
	}
	if strings.Contains(note, "power") || strings.Contains(note, "energy") {
		t.Fatalf("note %q", note)
	}
}

func TestGPUProbeEnergyBackwards(t *testing.T) {
	srv, f := mockServer(1)
	f[0].energyStep = -10
	p := openProbe(t, srv)
	row := &results.Cell{OutputTokS: nvPtr(10.0), DurationS: 1}
	_, note := window(p, 1, row)
	if row.EnergyJ != nil || row.EnergyJPerToken != nil || row.TokensPerJoule != nil {
		t.Fatalf("energy_j = %v: NULL when the counter goes backwards", row.EnergyJ)
	}
	if !strings.Contains(note, "went backwards") {
		t.Fatalf("note %q", note)
	}
}

func TestGPUProbeGPM(t *testing.T) {
	srv, f := mockServer(1)
	var mu sync.Mutex
	freed, calls := 0, 0
	srv.GpmSampleAllocFunc = func() (nvml.GpmSample, nvml.Return) { return &mock.GpmSample{}, nvml.SUCCESS }
	srv.GpmSampleFreeFunc = func(nvml.GpmSample) nvml.Return { mu.Lock(); freed++; mu.Unlock(); return nvml.SUCCESS }
	srv.GpmMetricsGetFunc = func(m *nvml.GpmMetricsGetType) nvml.Return {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if m.Sample1 == m.Sample2 || m.NumMetrics != 2 || m.Metrics[0].MetricId != uint32(nvml.GPM_METRIC_SM_UTIL) {
			return nvml.ERROR_INVALID_ARGUMENT
		}
		m.Metrics[0].Value = float64(10 * calls)
		m.Metrics[1].Value = 5
		return nvml.SUCCESS
	}
	f[0].d.GpmQueryDeviceSupportFunc = func() (nvml.GpmSupport, nvml.Return) {
		return nvml.GpmSupport{IsSupportedDevice: 1}, nvml.SUCCESS
	}
	f[0].d.GpmSampleGetFunc = func(nvml.GpmSample) nvml.Return { return nvml.SUCCESS }
	p := openProbe(t, srv)
	row := &results.Cell{}
	samples, note := window(p, 2, row)
	// Begin takes the first GPM sample; two ticks and End give three
	// metrics between consecutive samples: 10, 20, 30.
	approx(t, "gpu_sm_util_mean", row.GPUSMUtilMean, 20)
	if strings.Contains(note, "GPM") {
		t.Fatalf("note %q", note)
	}
	n := 0
	for _, s := range samples {
		if s.Metric == "sm_util_pct" {
			n++
		}
	}
	if n != 3 {
		t.Fatalf("%d sm_util_pct samples, want 3", n)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if freed != 2 {
		t.Fatalf("%d GPM samples freed, want the 2 allocated", freed)
	}
}

func TestGPUProbeSelectsDevices(t *testing.T) {
	srv, f := mockServer(8)
	uuid3 := f[3].d.UUID
	tests := []struct {
		name string
		sel  []string
		want []string
	}{
		{"every device", nil, func() []string {
			var u []string
			for _, g := range f {
				u = append(u, g.d.UUID)
			}
			return u
		}()},
		{"by UUID", []string{uuid3}, []string{uuid3}},
		{"by PCI bus id as NVML spells it", []string{"0000:05:00.0"}, []string{f[5].d.UUID}},
		{"by PCI bus id with an 8-digit domain", []string{"00000000:06:00.0"}, []string{f[6].d.UUID}},
		{"by index", []string{"2"}, []string{f[2].d.UUID}},
		{"mixed, in the given order", []string{"7", uuid3}, []string{f[7].d.UUID, uuid3}},
		{"the same device twice is measured once", []string{"3", uuid3}, []string{uuid3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := openProbe(t, srv, tt.sel...)
			row := &results.Cell{}
			samples, _ := window(p, 0, row)
			if row.GPUs != strings.Join(tt.want, ",") {
				t.Fatalf("gpus = %q, want %q", row.GPUs, strings.Join(tt.want, ","))
			}
			for _, s := range samples {
				if !strings.Contains(row.GPUs, s.Device) {
					t.Fatalf("sample of an unselected device %s", s.Device)
				}
			}
		})
	}
	for _, sel := range []string{"GPU-nonesuch", "9", "0000:99:00.0", "RTX 3090"} {
		_, err := NewGPUProbe(srv, []string{sel}, 0)
		if err == nil || !strings.Contains(err.Error(), sel) {
			t.Errorf("selector %q: err = %v, want one naming it", sel, err)
		}
	}
}

func TestGPUProbeWithoutNVML(t *testing.T) {
	for _, ret := range []nvml.Return{nvml.ERROR_LIBRARY_NOT_FOUND, nvml.ERROR_DRIVER_NOT_LOADED} {
		lib := &mock.Interface{InitFunc: func() nvml.Return { return ret }}
		if _, err := NewGPUProbe(lib, nil, 0); !errors.Is(err, ErrNoNVML) {
			t.Errorf("Init %v: err = %v, want ErrNoNVML", ret, err)
		}
	}
	lib := &mock.Interface{InitFunc: func() nvml.Return { return nvml.ERROR_NO_PERMISSION }}
	_, err := NewGPUProbe(lib, nil, 0)
	if err == nil || errors.Is(err, ErrNoNVML) || !errors.Is(err, nvml.ERROR_NO_PERMISSION) || !strings.Contains(err.Error(), "initialising NVML") {
		t.Fatalf("err = %v, want the wrapped NVML error", err)
	}
	// The real library: on a machine without the driver, ErrNoNVML.
	if p, err := NewNVMLProbe(nil, 0); err == nil {
		_ = p.Close()
	} else if !errors.Is(err, ErrNoNVML) {
		t.Logf("NVML present but failed: %v", err)
	}
}

// TestGPUProbeSampler runs the sampler on its own clock (with -race, this
// is also the test that End and the sampler share nothing unguarded).
func TestGPUProbeSampler(t *testing.T) {
	srv, f := mockServer(2)
	p, err := NewGPUProbe(srv, nil, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// How late the machine ran an event loop meanwhile bounds both claims
	// (beside busy neighbours one End took 132 ms and a cell got 2
	// readings): a sampler starved for L ms misses about L/10 ticks.
	machine, err := machine.StartProbe()
	if err != nil {
		t.Fatal(err)
	}
	defer machine.Stop()
	for cell := 0; cell < 2; cell++ {
		win := machine.Begin()
		p.Begin(context.Background(), "c")
		time.Sleep(100 * time.Millisecond)
		start := time.Now()
		row := &results.Cell{}
		samples, _ := p.End(context.Background(), row)
		took := time.Since(start)
		late := time.Duration(0)
		if m := win.End(); m.LateMaxMs != nil {
			late = time.Duration(*m.LateMaxMs * float64(time.Millisecond))
		}
		if took > 50*time.Millisecond+late {
			t.Errorf("End took %v (the machine ran up to %v late)", took, late)
		}
		n := 0
		for _, s := range samples {
			if s.Metric == "gpu_util_pct" && s.Device == f[0].d.UUID {
				n++
			}
		}
		// ~10 ticks and End's reading; a loaded 2-core machine under -race
		// may miss some ticks, and a starved one about late/10 more.
		least := 4 - int(late/(10*time.Millisecond))
		if n < least || n > 13 {
			t.Errorf("cell %d: %d readings in ~100 ms at 10 ms (the machine ran up to %v late)", cell, n, late)
		}
		if row.GPUUtilMean == nil || row.EnergyJ == nil {
			t.Fatalf("row %+v", row)
		}
	}
	// After End the sampler is stopped: no reading in between cells.
	f[0].mu.Lock()
	before := f[0].utilCalls
	f[0].mu.Unlock()
	time.Sleep(40 * time.Millisecond)
	f[0].mu.Lock()
	after := f[0].utilCalls
	f[0].mu.Unlock()
	if after != before {
		t.Fatalf("%d readings after End", after-before)
	}
}

// TestGPUProbeStuckDriver: a reading that does not return holds End up
// at most about one interval, and its late reading is dropped.
func TestGPUProbeStuckDriver(t *testing.T) {
	srv, f := mockServer(1)
	release := make(chan struct{})
	var once sync.Once
	entered := make(chan struct{})
	f[0].d.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) {
		once.Do(func() { close(entered); <-release })
		return 60, nvml.SUCCESS
	}
	p, err := NewGPUProbe(srv, nil, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	p.Begin(context.Background(), "c")
	<-entered
	start := time.Now()
	_, note := p.End(context.Background(), &results.Cell{})
	if d := time.Since(start); d > 200*time.Millisecond {
		t.Errorf("End took %v with a stuck driver call", d)
	}
	if !strings.Contains(note, "last reading was skipped") {
		t.Errorf("note %q", note)
	}
	close(release)
	time.Sleep(30 * time.Millisecond)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestClockEventReasonNames(t *testing.T) {
	got := strings.Join(ClockEventReasonNames(nvml.ClocksEventReasonAll|0x1000), ",")
	want := "gpu_idle,applications_clocks_setting,sw_power_cap,hw_slowdown,sync_boost,sw_thermal_slowdown,hw_thermal_slowdown,hw_power_brake_slowdown,display_clock_setting,board_limit,reliability,bit_0x1000"
	if got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
	if ClockEventReasonNames(0) != nil {
		t.Fatal("no bit, no name")
	}
}

// TestCUDADevicesEnvByUUID: the mock's devices, named by UUID for CUDA.
func TestCUDADevicesEnvByUUID(t *testing.T) {
	srv, f := mockServer(3)
	list := func() ([]GPU, error) { return ListGPUsWith(srv) }
	u, err := GPUUUIDs([]int{2, 0}, list)
	if err != nil {
		t.Fatal(err)
	}
	env := CUDADevicesEnv(u)
	want := []string{"CUDA_DEVICE_ORDER=PCI_BUS_ID", "CUDA_VISIBLE_DEVICES=" + f[2].d.UUID + "," + f[0].d.UUID}
	if strings.Join(env, " ") != strings.Join(want, " ") {
		t.Fatalf("env %q, want %q", env, want)
	}
	if _, err := GPUUUIDs([]int{5}, list); !errors.Is(err, ErrNoSuchGPU) {
		t.Fatalf("err = %v, want ErrNoSuchGPU", err)
	}
	if _, err := GPUUUIDs([]int{0}, func() ([]GPU, error) { return nil, ErrNoNVML }); !errors.Is(err, ErrNoNVML) {
		t.Fatalf("err = %v, want ErrNoNVML", err)
	}
	f[1].d.GetUUIDFunc = func() (string, nvml.Return) { return "", nvml.ERROR_NOT_SUPPORTED }
	if _, err := GPUUUIDs([]int{1}, list); err == nil || errors.Is(err, ErrNoSuchGPU) {
		t.Fatalf("err = %v, want a fall-back-to-indices error", err)
	}
}
