//go:build cgo && linux

package telemetry

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/benchrun/benchrun/internal/results"
)

// NewNVMLProbe opens the GPU probe on this machine's NVIDIA driver
// library (see NewGPUProbe); ErrNoNVML when there is none.
func NewNVMLProbe(devices []string, interval time.Duration) (Probe, error) {
	return NewGPUProbe(nvml.New(), devices, interval)
}

// NewGPUProbe opens a probe that samples the given GPUs through lib every
// interval (100 ms when 0) over each cell's window: utilisation, memory,
// power, energy, temperature, clocks, clock event ("throttle") reasons,
// GPM SM utilisation where the device has GPM (Hopper and newer), and the
// compute processes on each device.
//
// devices are those the server was given, each a UUID ("GPU-…", "MIG-…"),
// a PCI bus id ("00000000:17:00.0") or an NVML index ("0"); none means
// every device. Whatever the selector, a device is measured and reported
// by its UUID and PCI bus id: NVML's indices are not stable across
// reboots and need not match CUDA's.
//
// The "processes" samples are best effort: NVML's compute process list is
// known to garble entries (PIDs and memory swapped or shifted) on some
// drivers when several processes share a GPU (NVIDIA/go-nvml#75).
//
// ErrNoNVML when the library is not found or the driver not loaded.
func NewGPUProbe(lib nvml.Interface, devices []string, interval time.Duration) (Probe, error) {
	if interval <= 0 {
		interval = defaultGPUInterval
	}
	if ret := nvCall0(lib.Init); ret != nvml.SUCCESS {
		if ret == nvml.ERROR_LIBRARY_NOT_FOUND || ret == nvml.ERROR_DRIVER_NOT_LOADED || ret == nvml.ERROR_FUNCTION_NOT_FOUND {
			return nil, ErrNoNVML
		}
		return nil, fmt.Errorf("initialising NVML: %w", ret)
	}
	p := &gpuProbe{lib: lib, interval: interval, notes: map[string]bool{}}
	handles, err := openDevices(lib, devices)
	if err != nil {
		nvCall0(lib.Shutdown)
		return nil, err
	}
	for _, h := range handles {
		dev, err := describeDevice(h)
		if err != nil {
			nvCall0(lib.Shutdown)
			return nil, err
		}
		if containsUUID(p.devs, dev.UUID) {
			continue // the same device named twice (by index and by UUID) is measured once
		}
		nd := &nvDevice{gpuDevice: dev, h: h, unsupported: map[string]bool{}}
		p.openGPM(nd)
		p.devs = append(p.devs, nd)
	}
	if len(p.devs) == 0 {
		nvCall0(lib.Shutdown)
		return nil, fmt.Errorf("NVML reports no GPU on this machine")
	}
	return p, nil
}

func containsUUID(devs []*nvDevice, uuid string) bool {
	for _, d := range devs {
		if d.UUID == uuid {
			return true
		}
	}
	return false
}

// openDevices finds the selected devices' handles.
func openDevices(lib nvml.Interface, sel []string) ([]nvml.Device, error) {
	if len(sel) == 0 {
		n, ret := nvCall(lib.DeviceGetCount)
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("counting GPUs: %w", ret)
		}
		out := make([]nvml.Device, 0, n)
		for i := 0; i < n; i++ {
			d, ret := nvCall(func() (nvml.Device, nvml.Return) { return lib.DeviceGetHandleByIndex(i) })
			if ret != nvml.SUCCESS {
				return nil, fmt.Errorf("GPU %d: %w", i, ret)
			}
			out = append(out, d)
		}
		return out, nil
	}
	out := make([]nvml.Device, 0, len(sel))
	for _, s := range sel {
		s = strings.TrimSpace(s)
		var d nvml.Device
		var ret nvml.Return
		switch {
		case strings.HasPrefix(s, "GPU-") || strings.HasPrefix(s, "MIG-"):
			d, ret = nvCall(func() (nvml.Device, nvml.Return) { return lib.DeviceGetHandleByUUID(s) })
		case isIndex(s):
			n, _ := strconv.Atoi(s)
			d, ret = nvCall(func() (nvml.Device, nvml.Return) { return lib.DeviceGetHandleByIndex(n) })
		case strings.Contains(s, ":"):
			d, ret = nvCall(func() (nvml.Device, nvml.Return) { return lib.DeviceGetHandleByPciBusId(s) })
			if ret != nvml.SUCCESS {
				// NVML spells bus ids with an 8-digit domain, nvidia-smi
				// and lspci sometimes with 4: match on the parsed id.
				if h, ok := findByBusID(lib, s); ok {
					d, ret = h, nvml.SUCCESS
				}
			}
		default:
			return nil, fmt.Errorf("GPU %q: want a UUID (GPU-…), a PCI bus id or an NVML index", s)
		}
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("GPU %q: %w", s, ret)
		}
		out = append(out, d)
	}
	return out, nil
}

func isIndex(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n >= 0
}

// findByBusID looks through every device for one whose PCI bus id is s,
// however the domain is padded.
func findByBusID(lib nvml.Interface, s string) (nvml.Device, bool) {
	want := normBusID(s)
	n, ret := nvCall(lib.DeviceGetCount)
	if ret != nvml.SUCCESS {
		return nil, false
	}
	for i := 0; i < n; i++ {
		d, ret := nvCall(func() (nvml.Device, nvml.Return) { return lib.DeviceGetHandleByIndex(i) })
		if ret != nvml.SUCCESS {
			continue
		}
		if p, ret := nvCall(d.GetPciInfo); ret == nvml.SUCCESS && normBusID(cString(p.BusId[:])) == want {
			return d, true
		}
	}
	return nil, false
}

// normBusID spells a PCI bus id "domain:bus:device.function" in lower
// case with the domain's leading zeros dropped.
func normBusID(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	dom, rest, ok := strings.Cut(s, ":")
	if !ok || strings.Count(rest, ":") != 1 {
		return s
	}
	dom = strings.TrimLeft(dom, "0")
	return dom + ":" + rest
}

// describeDevice names a device: its UUID is required (it is how the
// rows name it), its PCI bus id and index are labels.
func describeDevice(h nvml.Device) (gpuDevice, error) {
	d := gpuDevice{Index: -1}
	var ret nvml.Return
	if d.UUID, ret = nvCall(h.GetUUID); ret != nvml.SUCCESS || d.UUID == "" {
		return d, fmt.Errorf("reading a GPU's UUID: %w", ret)
	}
	if p, ret := nvCall(h.GetPciInfo); ret == nvml.SUCCESS {
		d.PCIBusID = cString(p.BusId[:])
	}
	if i, ret := nvCall(h.GetIndex); ret == nvml.SUCCESS {
		d.Index = i
	}
	if n, ret := nvCall(h.GetName); ret == nvml.SUCCESS {
		d.Name = n
	}
	return d, nil
}

// nvDevice is one measured device and what the probe learnt of it. Its
// mutable state is touched only by the goroutine holding the probe's
// readMu.
type nvDevice struct {
	gpuDevice
	h nvml.Device
	// unsupported holds the readings the device answered
	// ERROR_NOT_SUPPORTED (or lacks the function for): not asked again.
	unsupported map[string]bool
	memV1       bool // GetMemoryInfo_v2 unsupported: v1, without reserved memory
	// GPM: two samples, the previous reading's and the next one's.
	gpm      bool
	gpmPrev  nvml.GpmSample
	gpmCur   nvml.GpmSample
	gpmValid bool // gpmPrev holds a sample
}

// gpuProbe is the NVML probe: a sampler goroutine per open window.
type gpuProbe struct {
	lib      nvml.Interface
	interval time.Duration
	devs     []*nvDevice

	// readMu is held while taking a reading: the sampler's and End's never
	// overlap, so device state needs no other lock.
	readMu sync.Mutex

	mu     sync.Mutex
	notes  map[string]bool // problems that hold every cell (a device that does not report power)
	win    *gpuWindow      // the open window; nil between End and Begin
	winID  uint64          // a sampler appends only to its own window
	cellN  []string        // problems of this window (a failed read)
	stop   chan struct{}
	done   chan struct{}
	closed bool
}

func (p *gpuProbe) Name() string { return "nvml" }

// Begin reads the energy counters (and GPM's first sample) and starts
// the sampler. Utilisation is not read here: NVML's reading covers the
// past sample period, which is before the window.
func (p *gpuProbe) Begin(ctx context.Context, cellID string) {
	p.stopSampler()
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.winID++
	id := p.winID
	w := &gpuWindow{cellID: cellID, devs: make([]gpuDevice, len(p.devs)), interval: p.interval}
	for i, d := range p.devs {
		w.devs[i] = d.gpuDevice
	}
	p.win = w
	p.cellN = nil
	stop, done := make(chan struct{}), make(chan struct{})
	p.stop, p.done = stop, done
	p.mu.Unlock()

	if p.readMu.TryLock() {
		begin := p.read(true)
		p.readMu.Unlock()
		p.mu.Lock()
		w.begin = begin
		p.mu.Unlock()
	} else {
		p.cellNote("the window's first reading was skipped: an earlier NVML call has not returned")
	}
	go p.sample(ctx, id, stop, done)
}

// sample takes a reading every interval until stopped.
func (p *gpuProbe) sample(ctx context.Context, id uint64, stop, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(p.interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		// A stop that came while waiting for the tick wins over the tick.
		select {
		case <-stop:
			return
		default:
		}
		p.tick(id)
	}
}

// tick takes one reading into window id, if it is still open.
func (p *gpuProbe) tick(id uint64) {
	p.readMu.Lock()
	r := p.read(false)
	p.readMu.Unlock()
	p.mu.Lock()
	if p.winID == id && p.win != nil {
		p.win.add(r)
	}
	p.mu.Unlock()
}

// stopSampler stops the open window's sampler and waits for it at most
// one interval: a sampler stuck in a driver call is left behind (its
// reading is dropped, as the window id moves on), End is not held up.
func (p *gpuProbe) stopSampler() bool {
	p.mu.Lock()
	stop, done := p.stop, p.done
	p.stop, p.done = nil, nil
	p.mu.Unlock()
	if stop == nil {
		return true
	}
	close(stop)
	select {
	case <-done:
		return true
	case <-time.After(p.interval):
		return false
	}
}

// End takes the last reading, stops the sampler and fills the row.
func (p *gpuProbe) End(ctx context.Context, row *results.Cell) ([]results.Sample, string) {
	stopped := p.stopSampler()
	if stopped && p.readMu.TryLock() {
		r := p.read(false)
		p.readMu.Unlock()
		p.mu.Lock()
		if p.win != nil {
			p.win.add(r)
		}
		p.mu.Unlock()
	} else {
		p.cellNote("the window's last reading was skipped: an NVML call has not returned")
	}
	p.mu.Lock()
	w := p.win
	p.win = nil
	p.winID++ // a sampler left behind drops its reading
	notes := make([]string, 0, len(p.notes)+len(p.cellN))
	for n := range p.notes {
		notes = append(notes, n)
	}
	sort.Strings(notes)
	notes = append(notes, p.cellN...)
	p.cellN = nil
	p.mu.Unlock()
	if w == nil {
		return nil, strings.Join(append(notes, "GPU telemetry not measured: End without Begin"), "; ")
	}
	notes = append(notes, w.aggregate(row)...)
	return w.samples(), strings.Join(notes, "; ")
}

// Close stops the sampler, frees GPM's samples and shuts NVML down.
func (p *gpuProbe) Close() error {
	stopped := p.stopSampler()
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.win = nil
	p.winID++
	p.mu.Unlock()
	if stopped && p.readMu.TryLock() {
		for _, d := range p.devs {
			for _, s := range []nvml.GpmSample{d.gpmPrev, d.gpmCur} {
				if s != nil {
					nvCall0(func() nvml.Return { return p.lib.GpmSampleFree(s) })
				}
			}
			d.gpmPrev, d.gpmCur, d.gpm = nil, nil, false
		}
		p.readMu.Unlock()
	}
	if ret := nvCall0(p.lib.Shutdown); ret != nvml.SUCCESS {
		return fmt.Errorf("shutting NVML down: %w", ret)
	}
	return nil
}

// note records a problem that holds for every cell; cellNote one of this
// window only.
func (p *gpuProbe) note(s string) {
	p.mu.Lock()
	p.notes[s] = true
	p.mu.Unlock()
}

func (p *gpuProbe) cellNote(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, n := range p.cellN {
		if n == s {
			return
		}
	}
	p.cellN = append(p.cellN, s)
}

// ok sorts one call's result: success, a reading the device does not
// have (asked no more; noted when it feeds a column — a NULL column
// says why; the instantaneous power field, the memory clock and the
// process list feed none, so their absence is not news), or a failure of
// this reading (noted for the cell).
func (p *gpuProbe) ok(d *nvDevice, what string, column bool, ret nvml.Return) bool {
	switch {
	case ret == nvml.SUCCESS:
		return true
	case unsupported(ret):
		d.unsupported[what] = true
		if column {
			p.note(fmt.Sprintf("%s not reported by %s", what, d.UUID))
		}
	default:
		p.cellNote(fmt.Sprintf("%s read failed on %s: %s", what, d.UUID, ret.Error()))
	}
	return false
}

func unsupported(ret nvml.Return) bool {
	return ret == nvml.ERROR_NOT_SUPPORTED || ret == nvml.ERROR_FUNCTION_NOT_FOUND || ret == nvml.ERROR_ARGUMENT_VERSION_MISMATCH
}

// read takes one reading of every device: at Begin only the counters.
// The caller holds readMu.
func (p *gpuProbe) read(begin bool) gpuRound {
	r := gpuRound{At: time.Now(), Devs: make([]gpuReading, len(p.devs))}
	for i, d := range p.devs {
		g := &r.Devs[i]
		if !d.unsupported["energy"] {
			if v, ret := nvCall(d.h.GetTotalEnergyConsumption); p.ok(d, "energy", true, ret) {
				g.EnergyMJ = &v
			}
		}
		p.readGPM(d, g, begin)
		if begin {
			continue
		}
		if !d.unsupported["GPU utilisation"] {
			if u, ret := nvCall(d.h.GetUtilizationRates); p.ok(d, "GPU utilisation", true, ret) {
				g.Util, g.MemUtil = nvPtr(float64(u.Gpu)), nvPtr(float64(u.Memory))
			}
		}
		p.readMemory(d, g)
		if !d.unsupported["power"] {
			if mw, ret := nvCall(d.h.GetPowerUsage); p.ok(d, "power", true, ret) {
				g.PowerW = nvPtr(float64(mw) / 1000)
			}
		}
		if !d.unsupported["instantaneous power"] {
			g.PowerInstantW = p.readInstantPower(d)
		}
		if !d.unsupported["temperature"] {
			if c, ret := nvCall(func() (uint32, nvml.Return) { return d.h.GetTemperature(nvml.TEMPERATURE_GPU) }); p.ok(d, "temperature", true, ret) {
				g.TempC = nvPtr(float64(c))
			}
		}
		if !d.unsupported["SM clock"] {
			if c, ret := nvCall(func() (uint32, nvml.Return) { return d.h.GetClockInfo(nvml.CLOCK_SM) }); p.ok(d, "SM clock", true, ret) {
				g.SMClockMHz = nvPtr(float64(c))
			}
		}
		if !d.unsupported["memory clock"] {
			if c, ret := nvCall(func() (uint32, nvml.Return) { return d.h.GetClockInfo(nvml.CLOCK_MEM) }); p.ok(d, "memory clock", false, ret) {
				g.MemClockMHz = nvPtr(float64(c))
			}
		}
		if !d.unsupported["clock event reasons"] {
			// GetCurrentClocksThrottleReasons is deprecated since NVML 13.0:
			// the event reasons call reads the same bits.
			if m, ret := nvCall(d.h.GetCurrentClocksEventReasons); p.ok(d, "clock event reasons", true, ret) {
				g.Throttle = &m
			}
		}
		if !d.unsupported["processes"] {
			// Best effort: on some drivers the list garbles entries when
			// several processes share the GPU (NVIDIA/go-nvml#75), so only
			// the count and PIDs go into the samples, no column.
			if ps, ret := nvCall(d.h.GetComputeRunningProcesses); p.ok(d, "processes", false, ret) {
				g.ProcsRead = true
				for _, pr := range ps {
					g.Procs = append(g.Procs, pr.Pid)
				}
			}
		}
	}
	return r
}

// readMemory reads v2 memory info (used without the driver's reserved
// memory, reserved separately) and falls back to v1 (used includes what
// v2 calls reserved) on a driver or device without v2.
func (p *gpuProbe) readMemory(d *nvDevice, g *gpuReading) {
	if !d.memV1 {
		m, ret := nvCall(d.h.GetMemoryInfo_v2)
		if ret == nvml.SUCCESS {
			g.MemUsed, g.MemReserved = nvPtr(int64(m.Used)), nvPtr(int64(m.Reserved))
			return
		}
		if !unsupported(ret) {
			p.cellNote(fmt.Sprintf("memory read failed on %s: %s", d.UUID, ret.Error()))
			return
		}
		d.memV1 = true
		p.note(fmt.Sprintf("reserved memory not reported by %s (no v2 memory info; used memory from v1)", d.UUID))
	}
	if d.unsupported["memory"] {
		return
	}
	if m, ret := nvCall(d.h.GetMemoryInfo); p.ok(d, "memory", true, ret) {
		g.MemUsed = nvPtr(int64(m.Used))
	}
}

// readInstantPower reads FI_DEV_POWER_INSTANT (mW), which not every
// device or driver has.
func (p *gpuProbe) readInstantPower(d *nvDevice) *float64 {
	fv := []nvml.FieldValue{{FieldId: nvml.FI_DEV_POWER_INSTANT}}
	ret := nvCall0(func() nvml.Return { return d.h.GetFieldValues(fv) })
	if ret == nvml.SUCCESS {
		ret = nvml.Return(fv[0].NvmlReturn)
	}
	if !p.ok(d, "instantaneous power", false, ret) {
		return nil
	}
	v, ok := fieldValue(fv[0])
	if !ok {
		d.unsupported["instantaneous power"] = true
		return nil
	}
	return nvPtr(v / 1000)
}

// fieldValue decodes a field's value union by its type.
func fieldValue(f nvml.FieldValue) (float64, bool) {
	b := f.Value[:]
	switch nvml.ValueType(f.ValueType) {
	case nvml.VALUE_TYPE_DOUBLE:
		return math.Float64frombits(binary.LittleEndian.Uint64(b)), true
	case nvml.VALUE_TYPE_UNSIGNED_INT:
		return float64(binary.LittleEndian.Uint32(b)), true
	case nvml.VALUE_TYPE_UNSIGNED_LONG, nvml.VALUE_TYPE_UNSIGNED_LONG_LONG:
		return float64(binary.LittleEndian.Uint64(b)), true
	case nvml.VALUE_TYPE_SIGNED_LONG_LONG:
		return float64(int64(binary.LittleEndian.Uint64(b))), true
	case nvml.VALUE_TYPE_SIGNED_INT:
		return float64(int32(binary.LittleEndian.Uint32(b))), true
	case nvml.VALUE_TYPE_UNSIGNED_SHORT:
		return float64(binary.LittleEndian.Uint16(b)), true
	}
	return 0, false
}

// openGPM allocates the device's two GPM samples where it has GPM.
func (p *gpuProbe) openGPM(d *nvDevice) {
	const what = "GPM SM utilisation"
	s, ret := nvCall(d.h.GpmQueryDeviceSupport)
	if ret == nvml.SUCCESS && s.IsSupportedDevice == 0 {
		ret = nvml.ERROR_NOT_SUPPORTED
	}
	if ret != nvml.SUCCESS {
		p.note(fmt.Sprintf("%s not reported by %s (%s)", what, d.UUID, ret.Error()))
		return
	}
	a, ret := nvCall(p.lib.GpmSampleAlloc)
	if ret != nvml.SUCCESS {
		p.note(fmt.Sprintf("%s not measured on %s: allocating a GPM sample: %s", what, d.UUID, ret.Error()))
		return
	}
	b, ret := nvCall(p.lib.GpmSampleAlloc)
	if ret != nvml.SUCCESS {
		nvCall0(func() nvml.Return { return p.lib.GpmSampleFree(a) })
		p.note(fmt.Sprintf("%s not measured on %s: allocating a GPM sample: %s", what, d.UUID, ret.Error()))
		return
	}
	d.gpm, d.gpmPrev, d.gpmCur = true, a, b
}

// readGPM takes a GPM sample and, with the previous one, the SM
// utilisation and occupancy between the two.
func (p *gpuProbe) readGPM(d *nvDevice, g *gpuReading, begin bool) {
	if !d.gpm {
		return
	}
	if begin {
		// A metric between the last cell's end and this one's start
		// would belong to neither.
		d.gpmValid = false
	}
	if ret := nvCall0(func() nvml.Return { return d.h.GpmSampleGet(d.gpmCur) }); ret != nvml.SUCCESS {
		d.gpmValid = false
		p.cellNote(fmt.Sprintf("GPM sample failed on %s: %s", d.UUID, ret.Error()))
		return
	}
	if d.gpmValid {
		m := &nvml.GpmMetricsGetType{Version: nvml.GPM_METRICS_GET_VERSION, NumMetrics: 2, Sample1: d.gpmPrev, Sample2: d.gpmCur}
		m.Metrics[0].MetricId = uint32(nvml.GPM_METRIC_SM_UTIL)
		m.Metrics[1].MetricId = uint32(nvml.GPM_METRIC_SM_OCCUPANCY)
		ret := nvCall0(func() nvml.Return { return p.lib.GpmMetricsGet(m) })
		if ret == nvml.SUCCESS {
			if m.Metrics[0].NvmlReturn == uint32(nvml.SUCCESS) {
				g.SMUtil = nvPtr(m.Metrics[0].Value)
			}
			if m.Metrics[1].NvmlReturn == uint32(nvml.SUCCESS) {
				g.SMOccupancy = nvPtr(m.Metrics[1].Value)
			}
		} else {
			p.cellNote(fmt.Sprintf("GPM metrics failed on %s: %s", d.UUID, ret.Error()))
		}
	}
	d.gpmPrev, d.gpmCur = d.gpmCur, d.gpmPrev
	d.gpmValid = true
}

// nvCall calls an NVML function, turning a panic into
// ERROR_FUNCTION_NOT_FOUND: a sampler goroutine that panicked would take
// the whole run down, and go-nvml's mock panics on a function a test did
// not wire — a function the "driver" does not have.
func nvCall[T any](f func() (T, nvml.Return)) (v T, ret nvml.Return) {
	defer func() {
		if recover() != nil {
			ret = nvml.ERROR_FUNCTION_NOT_FOUND
		}
	}()
	return f()
}

func nvCall0(f func() nvml.Return) (ret nvml.Return) {
	defer func() {
		if recover() != nil {
			ret = nvml.ERROR_FUNCTION_NOT_FOUND
		}
	}()
	return f()
}
