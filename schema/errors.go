package schema

import (
	"fmt"
	"github.com/benchrun/benchrun/internal/suggest"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"cuelang.org/go/cue"
)

// fixErrors makes CUE's errors about a plan read as answers:
//   - an error placed in benchrun's embedded schema is moved to the plan's
//     own field (or the nearest field the plan writes);
//   - "incomplete value" for a field the plan does not write becomes
//     "missing required field";
//   - a value that matches no alternative of a disjunction (an enum, a type
//     with a default) is one error listing what is allowed, not one error
//     per alternative;
//   - an error about a whole value that only repeats, in the schema's
//     words, an error about one of its parts is dropped.
func fixErrors(errs []pathError, raw, unified cue.Value, planPath string) []pathError {
	for i := range errs {
		suggestField(&errs[i], unified)
	}
	fromSchema := map[int]bool{}
	for i := range errs {
		e := &errs[i]
		if e.Pos.Line > 0 && !inSchema(e.Pos) {
			continue
		}
		fromSchema[i] = true
		p, exact := rawPos(raw, e.path, planPath)
		if !exact && strings.Contains(e.Msg, ": incomplete value ") {
			want := e.Msg[strings.Index(e.Msg, ": incomplete value ")+len(": incomplete value "):]
			e.Msg = fmt.Sprintf("%s: missing required field (want %s)", e.path, want)
		}
		if p.Line > 0 {
			e.Pos = p
		} else {
			e.Pos = Pos{File: planPath, Line: 1, Col: 1}
		}
	}
	// Drop schema-placed errors about a value when an error about one of
	// its parts says what is wrong; a list's length error too, wherever
	// placed, when one of its elements is wrong (CUE reports a list whose
	// element failed as a list of another length).
	var kept []pathError
	for i, e := range errs {
		listLen := listLenRE.MatchString(e.Msg)
		if (fromSchema[i] || listLen) && e.path != "" {
			redundant := false
			for j, o := range errs {
				// CUE gives an element's error the list's own path
				// ("four" in [1, 2, 3, "four"] is at
				// stages.sweep.concurrency), beside "incompatible list
				// lengths (3 and 4)": the length is that element's.
				if j != i && (strings.HasPrefix(o.path, e.path+".") || listLen && o.path == e.path && !listLenRE.MatchString(o.Msg)) {
					redundant = true
					break
				}
			}
			if redundant {
				continue
			}
		}
		kept = append(kept, e)
	}
	// Group by place and path.
	type group struct{ errs []pathError }
	var order []string
	groups := map[string]*group{}
	for _, e := range kept {
		k := e.Pos.String() + "\x00" + e.path
		g, ok := groups[k]
		if !ok {
			g = &group{}
			groups[k] = g
			order = append(order, k)
		}
		g.errs = append(g.errs, e)
	}
	var out []pathError
	for _, k := range order {
		out = append(out, collapse(groups[k].errs)...)
	}
	return out
}

var (
	conflictRE = regexp.MustCompile(`^(.*?): conflicting values (.+?) and (.+)$`)
	mismatchRE = regexp.MustCompile(` \(mismatched types [a-z]+ and [a-z]+\)$`)
)

// collapse turns the errors of one field into the fewest that say it all.
func collapse(errs []pathError) []pathError {
	for i := range errs {
		errs[i].Msg = plainer(errs[i].path, errs[i].Msg)
	}
	if len(errs) == 1 {
		// One value against one type: say which is which.
		m := conflictRE.FindStringSubmatch(mismatchRE.ReplaceAllString(errs[0].Msg, ""))
		if m != nil && isLiteral(m[2]) != isLiteral(m[3]) {
			given, want := m[2], m[3]
			if !isLiteral(given) {
				given, want = want, given
			}
			errs[0].Msg = fmt.Sprintf("%s: %s is not allowed: want %s", m[1], given, want)
		}
		return errs
	}
	var specific []pathError
	for _, e := range errs {
		if !strings.Contains(e.Msg, ": conflicting values ") {
			specific = append(specific, e)
		}
	}
	if len(specific) > 0 {
		return specific // "invalid value 0 (out of bound >0)" says more than "conflicting values 128 and 0"
	}
	count := map[string]int{}
	var pairs [][2]string
	var prefix string
	for _, e := range errs {
		m := conflictRE.FindStringSubmatch(mismatchRE.ReplaceAllString(e.Msg, ""))
		if m == nil {
			return errs
		}
		prefix = m[1]
		pairs = append(pairs, [2]string{m[2], m[3]})
		count[m[2]]++
		if m[3] != m[2] {
			count[m[3]]++
		}
	}
	var given string
	for v, n := range count {
		if n == len(pairs) {
			given = v
		}
	}
	if given == "" {
		return errs
	}
	var alts []string
	for _, p := range pairs {
		a := p[0]
		if a == given {
			a = p[1]
		}
		alts = append(alts, a)
	}
	// When a type is among the alternatives, the literals beside it are
	// its default, not another choice.
	var types []string
	for _, a := range alts {
		if !isLiteral(a) {
			types = append(types, a)
		}
	}
	if len(types) > 0 {
		alts = types
	}
	sort.Strings(alts)
	e := errs[0]
	e.Msg = fmt.Sprintf("%s: %s is not allowed: want %s", prefix, given, strings.Join(alts, " | "))
	return []pathError{e}
}

var listLenRE = regexp.MustCompile(`incompatible list lengths \((\d+) and (\d+)\)`)

// plainer rewrites the CUE phrasings users meet most into plain words.
func plainer(path, msg string) string {
	const durationRE = `(out of bound =~"^([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$")`
	if strings.HasSuffix(msg, durationRE) {
		return strings.TrimSuffix(msg, " "+durationRE) + `: not a duration (write "500ms", "30s", "2m" or "1h30m")`
	}
	if m := listLenRE.FindStringSubmatch(msg); m != nil && atoi(m[1]) < atoi(m[2]) {
		return listLenRE.ReplaceAllString(msg, "the list has "+m[1]+" elements; it needs at least "+m[2])
	}
	if path == "stages" && strings.Contains(msg, "mismatched types list and struct") {
		return `stages: a struct keyed by stage name, not a list (stages: {server: {kind: "launch", ...}, ...})`
	}
	return msg
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

func isLiteral(s string) bool {
	switch {
	case s == "true" || s == "false" || s == "null":
		return true
	case strings.HasPrefix(s, `"`):
		return true
	case strings.HasPrefix(s, "[") || strings.HasPrefix(s, "{"):
		return !strings.Contains(s, "...")
	}
	_, err := fmt.Sscanf(s, "%g", new(float64))
	return err == nil
}

// rawPos finds where the plan writes path, or the nearest enclosing field
// it writes; exact says whether the field itself is written.
func rawPos(raw cue.Value, path, planPath string) (Pos, bool) {
	if path == "" {
		return Pos{}, false
	}
	parts := strings.Split(path, ".")
	for n := len(parts); n > 0; n-- {
		v := raw.LookupPath(cue.MakePath(selectors(parts[:n])...))
		if !v.Exists() {
			continue
		}
		if p := planPos(v); p.Line > 0 {
			return fixPos(p, planPath), n == len(parts)
		}
	}
	return Pos{}, false
}

// planPos is where the plan writes v: its position, or, when that is the
// schema's (a struct the schema declares too, such as `baseline: {...}`),
// the first of its conjuncts that the plan wrote.
func planPos(v cue.Value) Pos {
	if p := posOf(v.Pos()); p.Line > 0 && !inSchema(p) {
		return p
	}
	if _, conjuncts := v.Expr(); len(conjuncts) > 1 {
		for _, c := range conjuncts {
			if p := posOf(c.Pos()); p.Line > 0 && !inSchema(p) {
				return p
			}
		}
	}
	return Pos{}
}

// suggestField adds the nearest allowed name to "field not allowed".
func suggestField(e *pathError, unified cue.Value) {
	if !strings.HasSuffix(e.Msg, ": field not allowed") || e.path == "" {
		return
	}
	parts := strings.Split(e.path, ".")
	name := parts[len(parts)-1]
	parent := unified.LookupPath(cue.MakePath(selectors(parts[:len(parts)-1])...))
	it, err := parent.Fields(cue.Optional(true))
	if err != nil {
		return
	}
	var names []string
	for it.Next() {
		names = append(names, it.Selector().Unquoted())
	}
	best := suggest.Closest(name, names)
	if best != "" {
		e.Msg += " (did you mean " + best + "?)"
	}
}

// envelopeTypos reports top-level fields that are not envelope fields but
// nearly are (`stage:`, `sink:`): the envelope allows helper fields, so a
// misspelt `stages` would otherwise be a plan that silently does nothing.
func envelopeTypos(raw, plan cue.Value, planPath string) Errors {
	return fieldTypos(raw, plan, "", "a plan field", "helper fields", planPath)
}

// fieldTypos reports the fields of raw that def does not declare but
// nearly does (one edit, two for names over five letters; a swap of two
// letters is one): where extra fields are allowed, a typo of a declared
// one would otherwise be taken silently as one of them.
func fieldTypos(raw, def cue.Value, prefix, what, extra, planPath string) Errors {
	known := map[string]bool{}
	var names []string
	if it, err := def.Fields(cue.Optional(true)); err == nil {
		for it.Next() {
			n := it.Selector().Unquoted()
			known[n] = true
			names = append(names, n)
		}
	}
	var errs Errors
	it, err := raw.Fields()
	if err != nil {
		return nil
	}
	for it.Next() {
		n := it.Selector().Unquoted()
		if known[n] {
			continue
		}
		for _, k := range names {
			limit := 1
			if len(k) > 5 {
				limit = 2
			}
			if d := suggest.Distance(strings.ToLower(n), k); d <= limit {
				errs = append(errs, Error{
					Pos: fixPos(posOf(it.Value().Pos()), planPath),
					Msg: fmt.Sprintf("%s%s: not %s; did you mean %s%s? (%s are allowed, but this one looks like a typo)", prefix, n, what, prefix, k, extra),
				})
				break
			}
		}
	}
	return errs
}
