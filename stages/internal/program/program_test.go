package program

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchrun/benchrun/pipeline"
	"github.com/benchrun/benchrun/schema"
)

func TestDecodeAndCheck(t *testing.T) {
	spec := &schema.Stage{Name: "p"}
	d, errs := Config{Cmd: []string{"x"}, GPUs: []any{float64(1), "RTX 3090", 2}, StopGrace: "250ms"}.Decode(spec)
	if len(errs) > 0 || strings.Join(d.GPUs, ",") != "1,RTX 3090,2" || d.StopGrace != 250*time.Millisecond {
		t.Errorf("decoded %+v %v: want GPUs 1, RTX 3090, 2 and a 250ms grace", d, errs)
	}
	if _, errs := (Config{GPUs: []any{true}, StopGrace: "soon"}).Decode(spec); len(errs) != 2 ||
		!strings.Contains(errs[0].Msg, "stages.p.stop_grace") || !strings.Contains(errs[1].Msg, "stages.p.gpus[0]: want an index or a GPU name") {
		t.Errorf("bad grace and GPU: %v", errs)
	}
	errs = Config{Cmd: []string{"  "}}.Check(spec, Decoded{GPUs: []string{"0", " "}})
	if len(errs) != 2 || !strings.Contains(errs[0].Msg, "the command is empty") || !strings.Contains(errs[1].Msg, "gpus[1]: empty GPU name") {
		t.Errorf("empty command and GPU name: %v", errs)
	}
}

func TestVars(t *testing.T) {
	dir := t.TempDir()
	env := &pipeline.Env{Dir: filepath.Join(dir, "run"), Plan: &schema.Plan{Path: filepath.Join(dir, "plan.cue"), Model: schema.Model{File: "m.gguf"}},
		Deps: map[string]*pipeline.Outputs{"pod": {URL: "http://10.0.0.2:8000", Values: map[string]any{"host": "10.0.0.2", "port": 22}}}}
	v := Vars(env, "bench", "tiny")
	for k, want := range map[string]string{
		"model": "tiny", "model_file": filepath.Join(dir, "m.gguf"), "run_dir": filepath.Join(dir, "run"), "plan_dir": dir, "stage": "bench",
		"pod.host": "10.0.0.2", "pod.port": "22", "pod.url": "http://10.0.0.2:8000",
	} {
		if v[k] != want {
			t.Errorf("${%s} = %q, want %q", k, v[k], want)
		}
	}
	if got := RemoteEnv([]string{"A=1", "B=x=y", "A=2", "junk"}); len(got) != 2 || got["A"] != "2" || got["B"] != "x=y" {
		t.Errorf("RemoteEnv = %v: want the later A and B=x=y", got)
	}
}
