package measure

import "github.com/benchrun/benchrun/internal/results"

// UserStamps turns a request row timed by kernel receive stamps into
// the one its user-space stamps give: each event's stamp moves later by
// its stamp delay (loadgen.Result.StampDelays), so ttft and e2el grow by the
// first and last event's delay and every gap by the difference. A row
// without stamp delays is left as it is.
func UserStamps(r *results.Request) {
	d := r.StampDelaysMs
	if len(d) == 0 {
		return
	}
	last := d[len(d)-1]
	for _, p := range []*float64{r.TTFTMs, r.TTFTSchedMs} {
		if p != nil {
			*p += d[0]
		}
	}
	for _, p := range []*float64{r.E2ELMs, r.E2ELSchedMs} {
		if p != nil {
			*p += last
		}
	}
	for k := range r.ChunkGapsMs {
		if k+1 < len(d) {
			r.ChunkGapsMs[k] += d[k+1] - d[k]
		}
	}
	r.StampDelaysMs = nil
}
