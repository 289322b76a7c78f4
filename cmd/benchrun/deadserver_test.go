package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchrun/benchrun/internal/results"
)

// deadURLPlan sweeps an open-loop ladder over a server benchrun did not
// launch (a URL target): each point 400 requests at 200 a second.
const deadURLPlan = `name: "dead-url"
model: {name: "sim"}
_url: string @tag(url)
stages: sweep: {
	kind:      "sweep"
	target:    _url
	cells:     [{isl: 16, osl: 4}]
	rates:     [200, 201, 202]
	requests:  400
	warmup:    0
	calibrate: "off"
}
`

// TestDeadServerIsNotFiredAt: a server that dies mid-point (here a URL
// target benchrun did not launch, exiting a second into the first point)
// is sent nothing once a connection to it is refused: the point is an
// error that says so, with about the requests due before the death sent
// (all 400 were, 332 of them failing, on a killed Ollama), and the later
// points are skipped with the reason, not run into 956 refused
// connections. The run does not exit 0.
func TestDeadServerIsNotFiredAt(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the simulator")
	}
	dir, bin, plan := simPlanDir(t, deadURLPlan)
	url := startSim(t, dir, "--ttft", "2ms", "--itl", "1ms", "--exit-after", "1s")
	code, stderr, rd := runPlanTagged(t, dir, bin, plan, filepath.Join(dir, "runs"), "url="+url)
	cells, err := rd.Cells()
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := rd.Requests()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cells {
		got = append(got, fmt.Sprintf("%s %s: %s", c.CellID, c.Status, c.Reason))
	}
	t.Logf("exit %d; %d requests recorded\n%s", code, len(reqs), strings.Join(got, "\n"))
	if code == 0 {
		t.Errorf("exit 0 for a run whose server died\n%s", stderr)
	}
	if len(cells) != 3 {
		t.Fatalf("%d rows, want one per point\n%s", len(cells), stderr)
	}
	first := cells[0]
	if first.Status != results.StatusError || !strings.Contains(first.Reason, "refused a connection") {
		t.Errorf("the point the server died in: %s %q, want an error naming the refused connection", first.Status, first.Reason)
	}
	// 200 a second for the second the server lived, and what was in
	// flight or due while the refusal came back.
	if sent := len(reqs); sent > 300 {
		t.Errorf("%d requests sent to a server that died after about 200", sent)
	}
	for _, c := range cells[1:] {
		if c.Status != results.StatusSkipped || !strings.Contains(c.Reason, "refused a connection") {
			t.Errorf("%s: %s %q, want skipped with the refusal as its reason", c.CellID, c.Status, c.Reason)
		}
	}
}
