package report_test

import (
	"bytes"
	"encoding/xml"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/golden"
	"github.com/benchrun/benchrun/internal/results"
	"github.com/benchrun/benchrun/internal/results/resultstest"
	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/pipeline/pipelinetest"
	"github.com/benchrun/benchrun/schema"
	"github.com/benchrun/benchrun/sinks/report"
)

// Notes the sweep writes when a telemetry source cannot be opened
// (stages/sweep/telemetry.go), which the report quotes as the reason.
const (
	noNVML    = "GPU telemetry not measured: no NVML on this machine (libnvidia-ml.so.1 not found)"
	noMetrics = "server metrics not measured: the engine (sim) has no metrics endpoint known to benchrun; set telemetry.metrics to its URL"
	noProc    = "server CPU and memory not measured: the server was not launched by benchrun on this host"
)

// restage moves a fixture row to another stage (its cell id with it).
func restage(c results.Cell, stage string) results.Cell {
	c.CellID = stage + strings.TrimPrefix(c.CellID, c.Stage)
	c.Stage = stage
	return c
}

// gpuSamples are one second of NVML readings of a cell at 100 ms, on two
// devices: utilisation ramping up to conc-dependent level, power
// following it.
func gpuSamples(c results.Cell, level float64) []results.Sample {
	var out []results.Sample
	for i := 0; i <= 10; i++ {
		at := c.StartedAt.Add(200*time.Millisecond + time.Duration(i)*100*time.Millisecond)
		for d, dev := range []string{"gpu0", "gpu1"} {
			util := level * float64(min(i, 5)) / 5 * (1 - 0.1*float64(d))
			for _, m := range []struct {
				metric, unit string
				v            float64
			}{{"gpu_util_pct", "%", util}, {"power_w", "W", 90 + 5*util}, {"mem_used_bytes", "bytes", 40e9}} {
				out = append(out, results.Sample{RunID: c.RunID, Plan: c.Plan, Stage: c.Stage, CellID: c.CellID, Attempt: 1,
					At: at, Source: "nvml", Device: dev, Metric: m.metric, Unit: m.unit, Value: m.v})
			}
		}
	}
	return out
}

// telemetryFixture is the fixture's six rows on a GPU stage with every
// telemetry column measured (one row missing its energy reading, one with
// a measured 0 of preemptions and parks), two rows of a CPU-only stage
// (no NVML, no server metrics: the server's process and the client
// measured) and one row of a stage where nothing was measured; samples
// for the GPU stage's c=4 and c=16 rows and the CPU stage's first.
func telemetryFixture() report.Data {
	d := report.Data{Run: resultstest.Run()}
	some := results.Some[float64]
	somei := results.Some[int64]
	for i, p := range resultstest.Points() {
		c := restage(p.Cell, "gpu")
		f := float64(c.Concurrency)
		c.GPUUtilMean, c.GPUUtilP95 = some(20+3*f), some(30+4*f)
		c.GPUSMUtilMean, c.GPUMemUtilMean = some(15+2*f), some(10+f)
		c.GPUMemPeakBytes, c.GPUMemReservedBytes = somei(int64(40e9+f*1e8)), somei(int64(512<<20))
		c.PowerWMean, c.PowerWMax = some(180+10*f), some(220+12*f)
		c.EnergyJ = some(*c.PowerWMean * c.DurationS)
		out := *c.OutputTokS * c.DurationS
		c.TokensPerJoule, c.EnergyJPerToken = some(out/(*c.EnergyJ)), some(*c.EnergyJ/out)
		c.SMClockMHzMean, c.GPUTempCMax = some(1980), some(55+f/2)
		c.GPUs = "GPU-0a1b,GPU-2c3d"
		if c.Concurrency == 16 {
			c.ThrottleReasons = "sw_power_cap,hw_slowdown"
		}
		c.ServerRunningPeak, c.ServerWaitingPeak = some(f), some(f/4)
		c.ServerParkWaits, c.KVCacheUsagePeak, c.ServerPreemptions = some(f/2), some(0.05*f), some(0)
		c.ServerQueueMeanMs, c.ServerPrefixCacheHitRate = some(0.5*f), some(0)
		c.ServerCPUS, c.ServerCPUUtil, c.ServerRSSPeakBytes = some(c.DurationS*1.2), some(1.2), somei(int64(3<<30))
		c.ClientCPUUtil = some(0.05 * f)
		if c.Concurrency == 1 {
			c.ServerParkWaits, c.ServerWaitingPeak = some(0), some(0)
		}
		if i == 4 { // 256:32 c=4: the energy counter did not answer
			c.EnergyJ, c.TokensPerJoule, c.EnergyJPerToken = nil, nil, nil
			c.Notes += "; nvml: gpu1: total energy not supported"
		}
		d.Cells = append(d.Cells, c)
		d.Verdicts = append(d.Verdicts, p.Verdicts...)
		if c.Concurrency > 1 {
			d.Samples = append(d.Samples, gpuSamples(c, 40+3*f)...)
		}
	}
	for i, p := range resultstest.Points()[:2] {
		c := restage(p.Cell, "cpu")
		c.Notes += "; " + noNVML + "; " + noMetrics
		c.ServerCPUS, c.ServerCPUUtil, c.ServerRSSPeakBytes = some(3), some(1.5+float64(i)), somei(int64(6<<30))
		c.ClientCPUUtil = some(0.1)
		d.Cells = append(d.Cells, c)
		if i == 0 {
			for k := 0; k < 8; k++ {
				d.Samples = append(d.Samples, results.Sample{RunID: c.RunID, Plan: c.Plan, Stage: c.Stage, CellID: c.CellID, Attempt: 1,
					At: c.StartedAt.Add(time.Duration(k) * 250 * time.Millisecond), Source: "proc", Device: "pid 4242", Metric: "cpu_util", Unit: "cores", Value: 0.5 + 0.25*float64(k%4)})
			}
		}
	}
	bare := restage(resultstest.Points()[0].Cell, "bare")
	bare.Notes += "; " + noNVML + "; " + noMetrics + "; " + noProc
	d.Cells = append(d.Cells, bare)
	return d
}

func TestTelemetryMarkdownGolden(t *testing.T) {
	d := telemetryFixture()
	golden.Check(t, "telemetry.md", report.Markdown(d, nil, "charts/"))
}

func TestUsageChartGolden(t *testing.T) {
	d := telemetryFixture()
	ch, ok := report.UsageChart(d.Cells[1], d.Samples)
	if !ok {
		t.Fatal("no usage chart for a cell with samples")
	}
	golden.Check(t, "usage.svg", []byte(ch.SVG+"\n"))
	cpu, ok := report.UsageChart(d.Cells[6], d.Samples)
	if !ok {
		t.Fatal("no usage chart for the CPU-only cell with proc samples")
	}
	golden.Check(t, "usage-cpu.svg", []byte(cpu.SVG+"\n"))
}

// tableRow returns the Markdown row of a stage's telemetry table that
// starts with prefix, after the stage's heading.
func tableRow(t *testing.T, md, stage, prefix string) string {
	t.Helper()
	_, rest, ok := strings.Cut(md, "## Memory, utilisation and energy")
	if !ok {
		t.Fatalf("report.md has no telemetry section:\n%s", md)
	}
	_, rest, ok = strings.Cut(rest, "### Stage "+stage+"\n")
	if !ok {
		t.Fatalf("the telemetry section has no stage %s", stage)
	}
	rest, _, _ = strings.Cut(rest, "\n### ")
	for _, l := range strings.Split(rest, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	t.Fatalf("stage %s has no row %q:\n%s", stage, prefix, rest)
	return ""
}

// The telemetry table: measured values with their units, NULL as "–"
// (with the legend) and never 0, a measured 0 as 0, a source that
// measured nothing in the stage left out with its reason from the notes,
// a stage where nothing was measured collapsed to those lines.
func TestTelemetryTable(t *testing.T) {
	md := string(report.Markdown(telemetryFixture(), nil, "charts/"))

	head := tableRow(t, md, "gpu", "| isl:osl | load |")
	if want := "| isl:osl | load | GPU util mean % | GPU util p95 % | GPU mem peak GiB | GPU mem reserved GiB | power mean W | power max W | energy J | tok/J | J/tok | SM clock MHz | temp max °C | throttle | running peak | waiting peak | num\\_inflight\\_park\\_waits | KV cache peak % | preemptions | server CPU cores | server RSS peak GiB | client CPU cores |"; head != want {
		t.Errorf("gpu stage header:\n got %s\nwant %s", head, want)
	}
	// c=1: 0 waiting and 0 parks were measured; they print 0.
	if got, want := tableRow(t, md, "gpu", "| 64:32 | c=1 |"), "| 64:32 | c=1 | 23.00 | 34.00 | 37.35 | 0.50 | 190.0 | 232.0 | 77.61 | 0.82 | 1.21 | 1980 | 55.50 | none | 1 | 0 | 0 | 5 | 0 | 1.20 | 3.00 | 0.05 |"; got != want {
		t.Errorf("gpu stage c=1 row:\n got %s\nwant %s", got, want)
	}
	// 256:32 c=4 has no energy reading: – for energy, tok/J and J/tok.
	row := tableRow(t, md, "gpu", "| 256:32 | c=4 |")
	if cells := strings.Split(row, " | "); len(cells) < 11 || cells[8] != "–" || cells[9] != "–" || cells[10] != "–" {
		t.Errorf("the row without an energy reading does not dash energy, tok/J and J/tok: %s", row)
	}
	if !strings.Contains(tableRow(t, md, "gpu", "| 256:32 | c=16 |"), "| sw\\_power\\_cap, hw\\_slowdown |") {
		t.Errorf("throttle reasons not shown")
	}
	if !strings.Contains(md, "– not measured (null: the source gave no reading") {
		t.Error("the telemetry table has a – and no legend line")
	}

	// The CPU stage: GPU and server metrics left out, with the notes'
	// reasons; the process and client columns in the table.
	for _, want := range []string{
		"- GPU telemetry: not measured (no NVML on this machine (libnvidia-ml.so.1 not found))",
		"- server metrics: not measured (the engine (sim) has no metrics endpoint known to benchrun; set telemetry.metrics to its URL)",
	} {
		if !strings.Contains(md, mdEscape(want)) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if got, want := tableRow(t, md, "cpu", "| isl:osl |"), "| isl:osl | load | server CPU cores | server RSS peak GiB | client CPU cores |"; got != want {
		t.Errorf("cpu stage header:\n got %s\nwant %s", got, want)
	}

	// The bare stage: no table at all, one line per source.
	_, bare, _ := strings.Cut(md, "### Stage bare\n")
	bare, _, _ = strings.Cut(bare, "\n## ")
	if strings.Contains(bare, "|") {
		t.Errorf("a stage where nothing was measured still has a table:\n%s", bare)
	}
	for _, want := range []string{"GPU telemetry: not measured", "server metrics: not measured", "server CPU and memory: not measured (the server was not launched by benchrun on this host)", "benchrun client CPU: not measured"} {
		if !strings.Contains(bare, mdEscape(want)) {
			t.Errorf("the bare stage lacks %q:\n%s", want, bare)
		}
	}
	if strings.Contains(bare, "| 0 |") || strings.Contains(bare, " 0.00") {
		t.Errorf("the bare stage prints a 0 for a value never measured:\n%s", bare)
	}
}

// mdEscape is the report's Markdown escaping of running text, for the
// strings the tests look for.
func mdEscape(s string) string {
	return strings.NewReplacer("_", `\_`, "*", `\*`).Replace(s)
}

// Tokens per joule sits next to output tok/s in the cells table when some
// row measured it, and the table is unchanged otherwise.
func TestCellsTableTokensPerJoule(t *testing.T) {
	md := string(report.Markdown(telemetryFixture(), nil, "charts/"))
	if !strings.Contains(md, "| req/s | output tok/s | tok/J | speedup |") {
		t.Errorf("the cells table has no tok/J beside output tok/s:\n%s", md)
	}
	if !strings.Contains(md, "| gpu | 64:32 | c=1 | ok | 2 | 25.50 | 25.99 | 5.62 | 5.75 | 5.62 | 204.2 | 4.90 | 156.7 | 0.82 | 1.00 | 1.00 |") {
		t.Errorf("the gpu c=1 row of the cells table lacks its tokens per joule")
	}
	if !strings.Contains(md, "| cpu | 64:32 | c=1 | ok | 2 | 25.50 | 25.99 | 5.62 | 5.75 | 5.62 | 204.2 | 4.90 | 156.7 | – | 1.00 | 1.00 |") {
		t.Errorf("a row without an energy reading does not dash tok/J")
	}
	if plain := string(report.Markdown(fixture(), nil, "charts/")); strings.Contains(plain, "tok/J") {
		t.Error("the cells table has a tok/J column though no row measured it")
	}
	page, err := report.HTML(telemetryFixture(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), `<th class="n">output tok/s</th><th class="n">tok/J</th>`) {
		t.Error("report.html's cells table has no tok/J beside output tok/s")
	}
}

var usageSVG = regexp.MustCompile(`<figure class="chart usage" id="chart-([a-z0-9.-]+)"`)

// The HTML report has one usage chart per cell row with samples (three),
// none for the others, the same bytes whatever order the samples came in,
// and nothing from another attempt's samples of the cell.
func TestUsageChartsInHTML(t *testing.T) {
	d := telemetryFixture()
	page, err := report.HTML(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range usageSVG.FindAllStringSubmatch(string(page), -1) {
		ids = append(ids, m[1])
	}
	if got, want := strings.Join(ids, " "), "usage-gpu-64-32-c4 usage-gpu-64-32-c16 usage-gpu-256-32-c4 usage-gpu-256-32-c16 usage-cpu-64-32-c1"; got != want {
		t.Errorf("usage charts %q, want %q", got, want)
	}
	for _, want := range []string{`id="telemetry-gpu"`, `id="telemetry-cpu"`, "GPU utilisation, %", "power, W", "server CPU, cores", "gpu1 power", "GPU telemetry: not measured (no NVML on this machine"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("report.html lacks %q", want)
		}
	}

	shuffled := d
	shuffled.Samples = append([]results.Sample(nil), d.Samples...)
	rand.New(rand.NewSource(1)).Shuffle(len(shuffled.Samples), func(i, j int) {
		shuffled.Samples[i], shuffled.Samples[j] = shuffled.Samples[j], shuffled.Samples[i]
	})
	// An earlier attempt's readings of a cell are not its current row's.
	stale := gpuSamples(d.Cells[0], 99)
	for i := range stale {
		stale[i].Attempt = 7
	}
	shuffled.Samples = append(stale, shuffled.Samples...)
	again, err := report.HTML(shuffled, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(page, again) {
		t.Error("report.html differs when the same samples come in another order, or with another attempt's samples added")
	}

	none := d
	none.Samples = nil
	bare, err := report.HTML(none, nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(bare), "<svg") {
		t.Error("report.html has a chart though there are no samples and no charts")
	}
}

// Every usage chart is well-formed XML (a standalone SVG file must be).
func TestUsageChartsWellFormed(t *testing.T) {
	d := telemetryFixture()
	n := 0
	for _, c := range d.Cells {
		ch, ok := report.UsageChart(c, d.Samples)
		if !ok {
			continue
		}
		n++
		dec := xml.NewDecoder(strings.NewReader(ch.SVG))
		for {
			_, err := dec.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", ch.Name, err)
			}
		}
		if strings.Contains(ch.SVG, "NaN") || strings.Contains(ch.SVG, "Inf") {
			t.Errorf("%s carries a non-finite coordinate", ch.Name)
		}
	}
	if n != 5 {
		t.Errorf("%d usage charts, want 5", n)
	}
}

// A long cell's lines are averaged down to a bounded number of points.
func TestUsageChartBinsLongCells(t *testing.T) {
	c := telemetryFixture().Cells[0]
	var ss []results.Sample
	for i := 0; i < 6000; i++ {
		ss = append(ss, results.Sample{CellID: c.CellID, Attempt: 1, At: c.StartedAt.Add(time.Duration(i) * 100 * time.Millisecond), Source: "nvml", Device: "gpu0", Metric: "gpu_util_pct", Value: float64(i % 100)})
	}
	ch, ok := report.UsageChart(c, ss)
	if !ok {
		t.Fatal("no chart")
	}
	d := regexp.MustCompile(`class="usage-line" d="([^"]+)"`).FindStringSubmatch(ch.SVG)
	if d == nil {
		t.Fatal("no line")
	}
	if n := strings.Count(d[1], "L") + 1; n > 400 || n < 300 {
		t.Errorf("a 6000-sample line has %d points, want at most 400 (and most of them)", n)
	}
}

// The sink receives samples through pipeline.SampleSink: live, before the
// cells they belong to, and on a replay, after every cell; both write the
// same report. A resumed run's report keeps the usage chart of a cell the
// first attempt measured (its samples from the stored rows).
func TestSampleSinkLiveAndReplay(t *testing.T) {
	d := telemetryFixture()
	sum := func(ri *pipeline.RunInfo) *pipeline.Summary {
		return &pipeline.Summary{Run: ri, ExitCode: pipeline.ExitAssertion, FinishedAt: resultstest.T0.Add(time.Minute)}
	}
	drive := func(samplesFirst bool) []byte {
		dir := t.TempDir()
		ri := &pipeline.RunInfo{ID: resultstest.RunID, Plan: &schema.Plan{Name: "fixture"}, Dir: dir, StartedAt: resultstest.T0, Attempt: 1}
		var o pipeline.Sink = report.New()
		ss, ok := o.(pipeline.SampleSink)
		if !ok {
			t.Fatal("the report sink does not implement pipeline.SampleSink")
		}
		if err := o.Start(pipelinetest.LiveEnv(ri)); err != nil {
			t.Fatal(err)
		}
		for _, c := range d.Cells {
			if samplesFirst {
				var mine []results.Sample
				for _, s := range d.Samples {
					if s.CellID == c.CellID {
						mine = append(mine, s)
					}
				}
				if err := ss.Samples(mine); err != nil {
					t.Fatal(err)
				}
			}
			if err := o.Cell(c, nil); err != nil {
				t.Fatal(err)
			}
		}
		if !samplesFirst {
			if err := ss.Samples(d.Samples); err != nil {
				t.Fatal(err)
			}
		}
		if err := o.Stop(sum(ri)); err != nil {
			t.Fatal(err)
		}
		page, err := os.ReadFile(filepath.Join(dir, "report.html"))
		if err != nil {
			t.Fatal(err)
		}
		return page
	}
	live, replay := drive(true), drive(false)
	if !bytes.Equal(live, replay) {
		t.Error("report.html differs between samples given live (before each cell) and replayed (after every cell)")
	}
	if n := len(usageSVG.FindAll(live, -1)); n != 5 {
		t.Errorf("the sink's report.html has %d usage charts, want 5", n)
	}

	// Resume: the first attempt stored gpu 64:32 c=4 and its samples.
	dir := t.TempDir()
	first := d.Cells[1]
	writeParquet(t, filepath.Join(dir, "cells", "part-00001.parquet"), []results.Cell{first})
	var stored []results.Sample
	for _, s := range d.Samples {
		if s.CellID == first.CellID {
			stored = append(stored, s)
		}
	}
	writeParquet(t, filepath.Join(dir, "samples", "part-00001.parquet"), stored)
	o := report.New()
	ri := &pipeline.RunInfo{ID: resultstest.RunID, Plan: &schema.Plan{Name: "fixture"}, Dir: dir, StartedAt: resultstest.T0, Resumed: true, Attempt: 2}
	if err := o.Start(pipelinetest.LiveEnv(ri)); err != nil {
		t.Fatal(err)
	}
	if err := o.Stop(sum(ri)); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), `id="chart-usage-gpu-64-32-c4"`) {
		t.Error("a resumed run's report lost the usage chart of a cell its first attempt measured")
	}
}
