package telemetry

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/benchrun/benchrun/internal/results"
)

// This file is the part of the GPU probe that needs no NVML (and so no
// cgo): what one reading holds, the names of the clock event reasons, and
// how a cell's readings become its GPU columns. gpuprobe_nvml.go takes
// the readings.

// defaultGPUInterval is the sampling interval when none is given: NVML's
// utilisation counters cover the past 1/6 s to 1 s, so sampling much
// faster than this only repeats readings.
const defaultGPUInterval = 100 * time.Millisecond

// gpuDevice is one measured device, named as NVML names it: by UUID and
// PCI bus id, the only names stable across reboots and equal for
// nvidia-smi, CUDA (CUDA_DEVICE_ORDER=PCI_BUS_ID) and benchrun. Index is
// NVML's index (-1 when unknown), kept only as a label.
type gpuDevice struct {
	UUID     string
	PCIBusID string
	Index    int
	Name     string
}

// labels are the identity labels every sample of the device carries.
func (d gpuDevice) labels() map[string]string {
	idx := ""
	if d.Index >= 0 {
		idx = strconv.Itoa(d.Index)
	}
	return map[string]string{"uuid": d.UUID, "pci_bus_id": d.PCIBusID, "index": idx}
}

// gpuReading is one device's reading at one moment; a nil field was not
// read (not supported, or the call failed), which is never a 0.
type gpuReading struct {
	Util, MemUtil         *float64 // %
	MemUsed, MemReserved  *int64   // bytes
	PowerW, PowerInstantW *float64 // W: NVML's averaged reading, the instantaneous field
	EnergyMJ              *uint64  // total-energy counter, mJ since the driver loaded
	TempC                 *float64
	SMClockMHz            *float64
	MemClockMHz           *float64
	Throttle              *uint64  // clock event reasons bitmask
	SMUtil, SMOccupancy   *float64 // GPM, %
	Procs                 []uint32 // compute process PIDs (best effort)
	ProcsRead             bool
}

// gpuRound is one reading of every measured device at the same moment
// (devs[i] belongs to the probe's i-th device).
type gpuRound struct {
	At   time.Time
	Devs []gpuReading
}

// clockEventNames name the clock event reason bits nvml.h documents
// (nvmlClocksEventReason*; the older "throttle reason" names are the same
// bits), in bit order.
var clockEventNames = []struct {
	bit  uint64
	name string
}{
	{0x1, "gpu_idle"},
	{0x2, "applications_clocks_setting"},
	{0x4, "sw_power_cap"},
	{0x8, "hw_slowdown"},
	{0x10, "sync_boost"},
	{0x20, "sw_thermal_slowdown"},
	{0x40, "hw_thermal_slowdown"},
	{0x80, "hw_power_brake_slowdown"},
	{0x100, "display_clock_setting"},
	{0x200, "board_limit"},
	{0x400, "reliability"},
}

// ClockEventReasonNames names the bits of an NVML clock event reasons
// mask ("sw_power_cap", "hw_thermal_slowdown", ...), in bit order; a bit
// nvml.h does not document (a newer driver's) is named by its value
// ("bit_0x800") rather than dropped.
func ClockEventReasonNames(mask uint64) []string {
	var out []string
	for _, r := range clockEventNames {
		if mask&r.bit != 0 {
			out = append(out, r.name)
			mask &^= r.bit
		}
	}
	for b := uint64(1); mask != 0 && b != 0; b <<= 1 {
		if mask&b != 0 {
			out = append(out, fmt.Sprintf("bit_%#x", b))
			mask &^= b
		}
	}
	return out
}

// gpuWindow is one cell's readings: the counters at Begin and the rounds
// sampled until End, folded as they come (add) into what the columns
// read, so that a soak's cell holds no more than a short one's; the
// samples table gets a uniform grid of at most maxKeptReadings rounds.
type gpuWindow struct {
	cellID string
	devs   []gpuDevice
	begin  gpuRound // energy counters (and GPM's first sample) only
	rounds thinned[gpuRound]
	// interval is the sampler's, said in the note when rounds are thinned.
	interval time.Duration

	n      int       // rounds folded
	lastAt time.Time // the latest round's time
	// util counts each round's mean over the devices of their
	// utilisation: NVML reads it as a whole percent, so a window of any
	// length has at most 100 × devices + 1 distinct values, and its p95
	// is read off the counts exactly.
	util                map[float64]int64
	utilMean, smUtil    meanFold
	memUtil, smClock    meanFold
	power               meanFold // the devices' summed power, rounds where every device read it
	powerPeak           *float64 // the largest summed (instantaneous where read) power
	memPeak, memPeakRsv *int64   // the largest device's used memory, and its reserved then
	devMemPeak          []*int64 // each device's used-memory peak (the samples table's)
	energyEnd           []*uint64
	temp                *float64
	clockEvents         map[string]bool
}

// gpuSamplesPerDevice is about how many samples a device's reading
// gives (samples): what the kept rounds are bounded by.
const gpuSamplesPerDevice = 15

// meanFold is a running mean, summed in time order as stats.Mean sums.
type meanFold struct {
	sum float64
	n   int
}

func (m *meanFold) add(v float64) { m.sum += v; m.n++ }

func (m meanFold) mean() *float64 {
	if m.n == 0 {
		return nil
	}
	return nvPtr(m.sum / float64(m.n))
}

// add folds one round, in time order.
func (w *gpuWindow) add(r gpuRound) {
	if w.rounds.max == 0 {
		w.rounds.max = keptReadingsFor(gpuSamplesPerDevice * max(len(r.Devs), 1))
	}
	w.rounds.add(r)
	w.n++
	w.lastAt = r.At
	if w.devMemPeak == nil {
		w.devMemPeak = make([]*int64, len(w.devs))
		w.energyEnd = make([]*uint64, len(w.devs))
		w.util = map[float64]int64{}
		w.clockEvents = map[string]bool{}
	}
	devMean := func(get func(*gpuReading) *float64) (float64, bool) {
		var sum float64
		n := 0
		for i := range r.Devs {
			if v := get(&r.Devs[i]); v != nil {
				sum += *v
				n++
			}
		}
		return sum / float64(max(n, 1)), n > 0
	}
	if v, ok := devMean(func(g *gpuReading) *float64 { return g.Util }); ok {
		w.util[v]++
		w.utilMean.add(v)
	}
	if v, ok := devMean(func(g *gpuReading) *float64 { return g.SMUtil }); ok {
		w.smUtil.add(v)
	}
	if v, ok := devMean(func(g *gpuReading) *float64 { return g.MemUtil }); ok {
		w.memUtil.add(v)
	}
	if v, ok := devMean(func(g *gpuReading) *float64 { return g.SMClockMHz }); ok {
		w.smClock.add(v)
	}
	sum, peakSum, n, np := 0.0, 0.0, 0, 0
	for i := range r.Devs {
		g := &r.Devs[i]
		if g.MemUsed != nil {
			if w.memPeak == nil || *g.MemUsed > *w.memPeak {
				w.memPeak, w.memPeakRsv = nvPtr(*g.MemUsed), nil
				if g.MemReserved != nil {
					w.memPeakRsv = nvPtr(*g.MemReserved)
				}
			}
			if i < len(w.devMemPeak) && (w.devMemPeak[i] == nil || *g.MemUsed > *w.devMemPeak[i]) {
				w.devMemPeak[i] = nvPtr(*g.MemUsed)
			}
		}
		if g.PowerW != nil {
			sum += *g.PowerW
			n++
		}
		// The max prefers the instantaneous field: the averaged reading (a
		// 1 s window on Ampere and newer) smooths away the peaks a max is
		// for.
		switch {
		case g.PowerInstantW != nil:
			peakSum += *g.PowerInstantW
			np++
		case g.PowerW != nil:
			peakSum += *g.PowerW
			np++
		}
		if g.EnergyMJ != nil && i < len(w.energyEnd) {
			w.energyEnd[i] = nvPtr(*g.EnergyMJ)
		}
		if g.TempC != nil && (w.temp == nil || *g.TempC > *w.temp) {
			w.temp = nvPtr(*g.TempC)
		}
		if g.Throttle != nil {
			for _, name := range ClockEventReasonNames(*g.Throttle) {
				w.clockEvents[name] = true
			}
		}
	}
	if n == len(r.Devs) {
		w.power.add(sum)
	}
	if np == len(r.Devs) && (w.powerPeak == nil || peakSum > *w.powerPeak) {
		w.powerPeak = nvPtr(peakSum)
	}
}

// aggregate fills row's GPU columns from the window and says what it
// could not (a note per problem, "" when none).
//
// Devices are combined the way a user reads "the GPUs": utilisation, SM
// utilisation, memory utilisation and SM clock are the mean over the
// devices of each round, then the mean (and p95) over the rounds — the
// load of the server as a whole at each moment, so a tensor-parallel
// server with one idle GPU shows as half busy, not as one busy and one
// idle series averaged away; power is the sum over devices (what the
// server draws), energy the sum of the devices' counter deltas; memory
// peak and temperature are the worst device. A device that does not
// report a reading is left out of that round's mean; a sum needs every
// device, so a round where one device lacks power is not summed.
func (w *gpuWindow) aggregate(row *results.Cell) []string {
	var notes []string
	if w.n == 0 {
		return append(notes, "GPU telemetry not measured: no reading in the window")
	}
	row.GPUs = strings.Join(uuids(w.devs), ",")
	if w.utilMean.n > 0 {
		row.GPUUtilMean = w.utilMean.mean()
		row.GPUUtilP95 = nvPtr(countedPercentile(w.util, 95))
	}
	row.GPUSMUtilMean = w.smUtil.mean()
	row.GPUMemUtilMean = w.memUtil.mean()
	row.SMClockMHzMean = w.smClock.mean()
	row.GPUMemPeakBytes, row.GPUMemReservedBytes = w.memPeak, w.memPeakRsv
	row.PowerWMean = w.power.mean()
	row.PowerWMax = w.powerPeak
	notes = append(notes, w.fillEnergy(row)...)
	if w.temp != nil {
		row.GPUTempCMax = nvPtr(*w.temp)
	}
	names := make([]string, 0, len(w.clockEvents))
	for n := range w.clockEvents {
		names = append(names, n)
	}
	sort.Strings(names)
	row.ThrottleReasons = strings.Join(names, ",")
	if thin := w.rounds.note(w.interval.String()); thin != "" {
		notes = append(notes, thin)
	}
	return notes
}

// countedPercentile is stats.Percentile of the values counts holds (each
// value as many times as its count).
func countedPercentile(counts map[float64]int64, p float64) float64 {
	vals := make([]float64, 0, len(counts))
	var n int64
	for v, c := range counts {
		vals = append(vals, v)
		n += c
	}
	slices.Sort(vals)
	// at is the value of rank k (from 0) in the sorted sample.
	at := func(k int64) float64 {
		for _, v := range vals {
			if k < counts[v] {
				return v
			}
			k -= counts[v]
		}
		return vals[len(vals)-1]
	}
	switch {
	case n == 0:
		return math.NaN()
	case p <= 0:
		return vals[0]
	case p >= 100:
		return vals[len(vals)-1]
	}
	rank := p / 100 * float64(n-1)
	lo := int64(math.Floor(rank))
	if lo+1 >= n {
		return at(lo)
	}
	a, b := at(lo), at(lo+1)
	return a + (rank-float64(lo))*(b-a)
}

// fillEnergy fills the energy columns from each device's counter at its
// last reading minus at Begin, only when every device's could be read;
// the notes say why one could not.
func (w *gpuWindow) fillEnergy(row *results.Cell) []string {
	var notes []string
	var energyMJ uint64
	energyOK := true
	for i, d := range w.devs {
		var b, e *uint64
		if i < len(w.begin.Devs) {
			b = w.begin.Devs[i].EnergyMJ
		}
		if i < len(w.energyEnd) {
			e = w.energyEnd[i]
		}
		switch {
		case b == nil && e == nil:
			energyOK = false // not reported: the device's note says so
		case b == nil || e == nil:
			energyOK = false
			notes = append(notes, fmt.Sprintf("energy not measured: the energy counter of %s could not be read at the window's start or end", d.UUID))
		case *e < *b:
			energyOK = false
			notes = append(notes, fmt.Sprintf("energy not measured: the energy counter of %s went backwards (%d → %d mJ: driver reloaded or GPU reset?)", d.UUID, *b, *e))
		default:
			energyMJ += *e - *b
		}
	}
	if energyOK {
		fillEnergyPerToken(row, float64(energyMJ)/1000)
	}
	return notes
}

// fillEnergyPerToken fills the energy column (j joules) and, where the
// row has output tokens, the per-token ones. Output tokens: output_tok_s
// is ΣN_out / duration_s over the same timed window (docs/RESULTS.md), so
// their product gives back the window's output tokens, the count the row
// does not store.
func fillEnergyPerToken(row *results.Cell, j float64) {
	row.EnergyJ = &j
	if row.OutputTokS != nil && row.DurationS > 0 && j > 0 {
		if tok := math.Round(*row.OutputTokS * row.DurationS); tok > 0 {
			row.EnergyJPerToken = nvPtr(j / tok)
			row.TokensPerJoule = nvPtr(tok / j)
		}
	}
}

// samples are the window's kept readings (every one up to
// maxKeptReadings, then a grid) as rows of the samples table, and per
// device its memory peak over every reading of the window (metric
// "mem_used_peak_bytes", at the window's last reading).
func (w *gpuWindow) samples() []results.Sample {
	var out []results.Sample
	// A device's identity labels are one map its samples share; a sample
	// with labels of its own gets a map of its own.
	base := map[string]map[string]string{}
	add := func(at time.Time, d gpuDevice, metric, unit string, v float64, extra map[string]string) {
		l := base[d.UUID]
		if l == nil {
			l = d.labels()
			base[d.UUID] = l
		}
		if len(extra) > 0 {
			l = d.labels()
			for k, x := range extra {
				l[k] = x
			}
		}
		out = append(out, results.Sample{CellID: w.cellID, At: at, Source: "nvml", Device: d.UUID, Metric: metric, Unit: unit, Value: v, Labels: l})
	}
	f := func(at time.Time, d gpuDevice, metric, unit string, v *float64) {
		if v != nil {
			add(at, d, metric, unit, *v, nil)
		}
	}
	for i, d := range w.devs {
		if i < len(w.begin.Devs) && w.begin.Devs[i].EnergyMJ != nil {
			add(w.begin.At, d, "energy_mj", "mJ", float64(*w.begin.Devs[i].EnergyMJ), nil)
		}
	}
	for _, r := range w.rounds.all() {
		for i, d := range w.devs {
			g := &r.Devs[i]
			f(r.At, d, "gpu_util_pct", "%", g.Util)
			f(r.At, d, "mem_util_pct", "%", g.MemUtil)
			if g.MemUsed != nil {
				add(r.At, d, "mem_used_bytes", "bytes", float64(*g.MemUsed), nil)
			}
			if g.MemReserved != nil {
				add(r.At, d, "mem_reserved_bytes", "bytes", float64(*g.MemReserved), nil)
			}
			f(r.At, d, "power_w", "W", g.PowerW)
			f(r.At, d, "power_instant_w", "W", g.PowerInstantW)
			if g.EnergyMJ != nil {
				add(r.At, d, "energy_mj", "mJ", float64(*g.EnergyMJ), nil)
			}
			f(r.At, d, "temp_c", "C", g.TempC)
			f(r.At, d, "sm_clock_mhz", "MHz", g.SMClockMHz)
			f(r.At, d, "mem_clock_mhz", "MHz", g.MemClockMHz)
			if g.Throttle != nil {
				add(r.At, d, "throttle_reasons", "bitmask", float64(*g.Throttle), map[string]string{"names": strings.Join(ClockEventReasonNames(*g.Throttle), ",")})
			}
			f(r.At, d, "sm_util_pct", "%", g.SMUtil)
			f(r.At, d, "sm_occupancy_pct", "%", g.SMOccupancy)
			if g.ProcsRead {
				pids := make([]string, len(g.Procs))
				for j, p := range g.Procs {
					pids[j] = strconv.FormatUint(uint64(p), 10)
				}
				add(r.At, d, "processes", "count", float64(len(g.Procs)), map[string]string{"pids": strings.Join(pids, ",")})
			}
		}
	}
	for i, d := range w.devs {
		if i < len(w.devMemPeak) && w.devMemPeak[i] != nil {
			add(w.lastAt, d, "mem_used_peak_bytes", "bytes", float64(*w.devMemPeak[i]), nil)
		}
	}
	return out
}

func uuids(devs []gpuDevice) []string {
	out := make([]string, len(devs))
	for i, d := range devs {
		out[i] = d.UUID
	}
	return out
}

func nvPtr[T any](v T) *T { return &v }
