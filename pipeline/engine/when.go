package engine

import "github.com/benchrun/benchrun/pipeline"

// evalWhen runs a compiled `when` against the states of the run so far.
func (r *runner) evalWhen(n *pipeline.Node) (bool, error) {
	env := pipeline.WhenEnv{Stages: map[string]pipeline.StageView{}, Metadata: r.g.Plan.Metadata, Tags: r.g.Plan.Given}
	for _, d := range n.Deps {
		st := r.states[d]
		sv := pipeline.StageView{Status: st.status, Reason: st.reason, DurationS: st.duration.Seconds(), Attempts: st.attempts, Outputs: map[string]any{}}
		if st.status == pipeline.StatusUp {
			// A service that is up counts as ok for its dependents.
			sv.Status = pipeline.StatusOK
		}
		if o := st.outputs; o != nil {
			sv.URL, sv.Model = o.URL, o.Model
			for k, v := range o.Values {
				sv.Outputs[k] = v
			}
		}
		env.Stages[d] = sv
	}
	return n.EvalWhen(env)
}
