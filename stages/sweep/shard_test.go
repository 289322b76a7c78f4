package sweep

import (
	"testing"

	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
)

func stageOf(t *testing.T, stageCUE string) *Stage {
	t.Helper()
	reg := pipeline.NewRegistry()
	reg.AddKind(Kind)
	src := "name: \"t\"\nmodel: {name: \"m\"}\nstages: s: {kind: \"sweep\", target: \"http://127.0.0.1:1\"\n" + stageCUE + "\n}\n"
	p, err := schema.LoadSource("plan.cue", []byte(src), reg.LoadOptions(nil))
	if err != nil {
		t.Fatalf("plan:\n%s\n%v", src, err)
	}
	st, err := New(p.Stages[0])
	if err != nil {
		t.Fatal(err)
	}
	s := st.(*Stage)
	s.setDefaults()
	return s
}

// A shard's load is its share of the sessions, the requests and the rate,
// on its own seed; the shares of every shard sum to the cell's.
func TestShardLoadSplits(t *testing.T) {
	closed := stageOf(t, `cells: [{isl: 8, osl: 8}], concurrency: [5], requests: 11`)
	open := stageOf(t, `cells: [{isl: 8, osl: 8}], rates: [30], arrival: "constant", requests: 9`)
	var sessions, reqs, openReqs int
	var rate float64
	seeds := map[uint64]bool{}
	for i := range 3 {
		closed.shard, closed.shards = i, 3
		l, _ := closed.load(closed.points()[0], nil, 0)
		sessions += l.Concurrency
		reqs += l.Requests
		open.shard, open.shards = i, 3
		o, _ := open.load(open.points()[0], nil, 0)
		openReqs += o.Requests
		rate += o.Schedule.Rate
		seeds[o.Schedule.Seed] = true
		if want := float64(i) / 30; o.Schedule.Phase.Seconds()-want > 1e-9 || want-o.Schedule.Phase.Seconds() > 1e-9 {
			t.Errorf("shard %d: phase %v, want %v s", i, o.Schedule.Phase, want)
		}
	}
	if sessions != 5 || reqs != 11 || openReqs != 9 || rate < 29.999 || rate > 30.001 || len(seeds) != 3 {
		t.Errorf("shares sum to %d sessions, %d and %d requests, %v req/s, %d seeds; want 5, 11, 9, 30, 3", sessions, reqs, openReqs, rate, len(seeds))
	}
	if ids := cellID("s", closed.points()[0]); ids != "s/8:8/c5" {
		t.Errorf("cell id %s: the shard must not change it", ids)
	}
}
