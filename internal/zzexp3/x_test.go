package zzexp3
import ("testing"; "fmt"; "cuelang.org/go/cue"; "cuelang.org/go/cue/format"; "github.com/benchrun/benchrun/schema"; "os"; "cuelang.org/go/cue/cuecontext"; "cuelang.org/go/cue/build")
func TestX(t *testing.T) {
  
  ctx := cuecontext.New()
  inst := build.NewContext().NewInstance("benchrun.schema", nil)
  inst.AddFile("schema/plan.cue", schema.PlanSchema())
  for _, k := range []string{"sweep","launch","health"} { b, _ := os.ReadFile("../../stages/"+k+"/schema.cue"); inst.AddFile("schema/"+k+".cue", string(b)) }
  v := ctx.BuildInstance(inst)
  d := v.LookupPath(cue.ParsePath("#Sweep"))
  it, _ := d.Fields(cue.Optional(true))
  for it.Next() {
    f := it.Value()
    doc := ""
    for _, c := range f.Doc() { doc += c.Text() }
    def, ok := f.Default()
    src, _ := format.Node(f.Syntax(cue.Raw()))
    dsrc := []byte{}
    if ok { dsrc, _ = format.Node(def.Syntax()) }
    fmt.Printf("%s opt=%v kind=%v | %s | def=%v %s | %q\n", it.Selector(), it.IsOptional(), f.IncompleteKind(), src, ok, dsrc, doc)
  }
}
