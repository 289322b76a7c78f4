package zzexp3
import ("testing"; "fmt"; "os"; "github.com/benchrun/benchrun/schema"; "github.com/benchrun/benchrun/stages"; "github.com/benchrun/benchrun/pipeline")
func TestX(t *testing.T) {
  reg := pipeline.NewRegistry(); stages.Builtin(reg)
  for i, src := range []string{
`name: "t"
isl:      *128 | int @tag(isl)
stages: sweep: {kind: "sweep", target: "http://x:1", cells: [{isl: isl, osl: 32}]}`,
`name: "t"
isl:      *128 | int @tag(isl)
c: [{isl: isl, osl: 32}]
stages: sweep: {kind: "sweep", target: "http://x:1", cells: c}`,
`name: "t"
isl:      *128 | int @tag(isl)
stages: sweep: {kind: "sweep", target: "http://x:1", requests: isl}`,
  } {
    os.WriteFile("/tmp/p.cue", []byte(src), 0o644)
    _, err := schema.Load("/tmp/p.cue", reg.LoadOptions(nil))
    fmt.Println(i, err)
  }
}
