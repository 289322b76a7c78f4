package zzexp3
import ("testing"; "fmt"; "cuelang.org/go/cue"; "cuelang.org/go/cue/cuecontext"; "cuelang.org/go/cue/load")
func TestY(t *testing.T) {
  ctx := cuecontext.New()
  for _, tags := range [][]string{nil, {"isl=5"}} {
  insts := load.Instances([]string{"/tmp/q.cue"}, &load.Config{Tags: tags, Dir: "/tmp", Overlay: map[string]load.Source{"/tmp/q.cue": load.FromString(`isl: *128 | int @tag(isl,type=int)
c: [{isl: isl, osl: 32}]
d: {isl: isl}
`)}})
  v := ctx.BuildInstance(insts[0])
  fmt.Println(v.Err(), v.Validate(cue.Concrete(true)))
  fmt.Printf("%v\n", v)
  }
}
