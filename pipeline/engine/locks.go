package engine

import (
	"fmt"
)

// lockReq is one resource lock a stage takes: exclusive, or shared (the
// family "gpu" of a device lock "gpu:0", so that a stage on "gpu" never
// overlaps one on "gpu:0" while stages on "gpu:0" and "gpu:1" may run
// together).
type lockReq struct {
	name   string
	shared bool
}

// lockTable is the run's resource locks. Only the scheduler's goroutine
// takes and frees them, all of a stage's at once or none (so no two
// stages deadlock over their order), before the stage takes a worker: a
// stage waiting for a GPU never holds a slot another needs to free it.
type lockTable struct {
	exclusive map[string]string          // lock -> holder
	shared    map[string]map[string]bool // lock -> holders
}

// take gives holder every lock of reqs, or none; when one is held
// elsewhere it returns false with who holds it.
func (t *lockTable) take(holder string, reqs []lockReq) (bool, string) {
	if t.exclusive == nil {
		t.exclusive, t.shared = map[string]string{}, map[string]map[string]bool{}
	}
	for _, q := range reqs {
		if h, ok := t.exclusive[q.name]; ok && h != holder {
			return false, fmt.Sprintf("%s (held by %s)", q.name, h)
		}
		if !q.shared {
			for h := range t.shared[q.name] {
				if h != holder {
					return false, fmt.Sprintf("%s (held by %s)", q.name, h)
				}
			}
		}
	}
	for _, q := range reqs {
		if q.shared {
			if t.shared[q.name] == nil {
				t.shared[q.name] = map[string]bool{}
			}
			t.shared[q.name][holder] = true
		} else {
			t.exclusive[q.name] = holder
		}
	}
	return true, ""
}

// free gives back every lock holder has.
func (t *lockTable) free(holder string, reqs []lockReq) {
	for _, q := range reqs {
		if q.shared {
			delete(t.shared[q.name], holder)
		} else if t.exclusive[q.name] == holder {
			delete(t.exclusive, q.name)
		}
	}
}
