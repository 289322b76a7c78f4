package livemetrics_test

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/internal/livemetrics"
	"github.com/benchrun/benchrun/internal/livemetrics/livemetricstest"
	"github.com/benchrun/benchrun/internal/loadgen"
	"github.com/benchrun/benchrun/pipeline"
)

// The run is handed the server as its live view.
var _ pipeline.Live = (*livemetrics.Server)(nil)

func TestListenRefusesBadAddresses(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, tt := range []struct{ addr, want string }{
		{"9464", "want HOST:PORT"},
		{"127.0.0.1", "want HOST:PORT"},
		{"127.0.0.1:notaport", "cannot listen there"},
		{"127.0.0.1:99999", "cannot listen there"},
		{busy.Addr().String(), "address already in use"},
	} {
		s, err := livemetrics.Listen(tt.addr)
		if err == nil {
			s.Close()
			t.Errorf("Listen(%q) served; want an error", tt.addr)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.addr) {
			t.Errorf("Listen(%q): %v; want the address and %q", tt.addr, err, tt.want)
		}
	}
}

// TestServesWhatTheRunFeeds: the request counts follow the loads'
// counters between scrapes, an ended pass's counts stay with its cell,
// the running stage and cell come and go, and the endpoint is gone after
// Close.
func TestServesWhatTheRunFeeds(t *testing.T) {
	s, err := livemetrics.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + s.Addr().String() + livemetrics.Path
	s.Run("quickstart", "run-1")
	endStage := s.Stage("sweep", "sweep")
	var warm, timed loadgen.Counters
	cell := "sweep/64:32/c4"
	warmLag, endWarm := s.Pass("sweep", cell, false, warm.Counts)
	warm.Sent.Add(4)
	warm.Done.Add(3)
	warmLag(2 * time.Millisecond)
	s.MachineLate("loop", 300*time.Microsecond)
	s.MachineLate("wake", 80*time.Microsecond)

	f := scrape(t, url)
	want(t, f, livemetrics.NameRun, 1, "plan", "quickstart", "run", "run-1")
	want(t, f, livemetrics.NameStage, 1, "stage", "sweep", "kind", "sweep")
	want(t, f, livemetrics.NameCell, 1, "cell", cell, "phase", "warmup")
	want(t, f, livemetrics.NameSent, 4, "cell", cell)
	want(t, f, livemetrics.NameCompleted, 3, "cell", cell)
	want(t, f, livemetrics.NameInFlight, 1, "cell", cell)
	want(t, f, livemetrics.NameSendLag, 1, "cell", cell) // a histogram: its count
	want(t, f, livemetrics.NameMachineLate, 1, "path", "loop")
	want(t, f, livemetrics.NameMachineLate, 1, "path", "wake")
	if v, ok := f.Value("process_resident_memory_bytes"); !ok || v <= 0 {
		t.Errorf("process_resident_memory_bytes = %v, %v; want the process's RSS", v, ok)
	}

	warm.Done.Add(1)
	endWarm()
	endWarm() // once
	_, endTimed := s.Pass("sweep", cell, true, timed.Counts)
	timed.Sent.Add(10)
	timed.Done.Add(7)
	timed.Failed.Add(1)
	f = scrape(t, url)
	want(t, f, livemetrics.NameSent, 14, "cell", cell)
	want(t, f, livemetrics.NameCompleted, 11, "cell", cell)
	want(t, f, livemetrics.NameFailed, 1, "cell", cell)
	want(t, f, livemetrics.NameInFlight, 2, "cell", cell)
	want(t, f, livemetrics.NameCell, 1, "cell", cell, "phase", "timed")
	if _, ok := f.Value(livemetrics.NameCell, "phase", "warmup"); ok {
		t.Errorf("the ended warm-up pass is still shown running")
	}

	timed.Done.Add(2)
	endTimed()
	endStage()
	f = scrape(t, url)
	want(t, f, livemetrics.NameSent, 14, "cell", cell)
	want(t, f, livemetrics.NameCompleted, 13, "cell", cell)
	want(t, f, livemetrics.NameInFlight, 0, "cell", cell)
	for _, name := range []string{livemetrics.NameStage, livemetrics.NameCell} {
		if _, ok := f.Value(name); ok {
			t.Errorf("%s is still shown after its end", name)
		}
	}

	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := livemetricstest.Scrape(url); err == nil {
		t.Errorf("%s still answers after Close", url)
	}
}

func scrape(t *testing.T, url string) livemetricstest.Families {
	t.Helper()
	f, err := livemetricstest.Scrape(url)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func want(t *testing.T, f livemetricstest.Families, name string, v float64, labels ...string) {
	t.Helper()
	got, ok := f.Value(name, labels...)
	if !ok || got != v {
		t.Errorf("%s%v = %v (found %v); want %v", name, labels, got, ok, v)
	}
}
