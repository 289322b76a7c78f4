package schema

import (
	"fmt"
	"github.com/benchrun/benchrun/internal/suggest"
	"regexp"
	"sort"
	"strings"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/parser"
)

// TagField is a plan field marked @tag(name) (or @tag(name, type=int)),
// which `-t name=value` sets.
type TagField struct {
	Name string
	// Path is the field's dotted path ("model.file").
	Path string
	// Type is the attribute's type= ("int", "number", "bool"), "" for string.
	Type string
	Pos  Pos
}

// scanTags finds the @tag() attributes of the plan. A plan that does not
// parse has none here; the parse error is reported by the load.
func scanTags(abs, path string, src []byte) []TagField {
	f, err := parser.ParseFile(abs, src, parser.ParseComments)
	if err != nil {
		return nil
	}
	var out []TagField
	var walk func(decls []ast.Decl, prefix string, depth int)
	walk = func(decls []ast.Decl, prefix string, depth int) {
		if depth > 100 {
			return
		}
		for _, d := range decls {
			switch x := d.(type) {
			case *ast.Field:
				name, _, err := ast.LabelName(x.Label)
				if err != nil {
					name = "?"
				}
				p := name
				if prefix != "" {
					p = prefix + "." + name
				}
				for _, a := range x.Attrs {
					key, body := a.Split()
					if key != "tag" {
						continue
					}
					tf := TagField{Path: p, Pos: fixPos(posOf(a.Pos()), path)}
					for i, part := range strings.Split(body, ",") {
						part = strings.TrimSpace(part)
						if i == 0 {
							tf.Name = part
							continue
						}
						if k, v, ok := strings.Cut(part, "="); ok && strings.TrimSpace(k) == "type" {
							tf.Type = strings.TrimSpace(v)
						}
					}
					if tf.Name != "" {
						out = append(out, tf)
					}
				}
				if s, ok := x.Value.(*ast.StructLit); ok {
					walk(s.Elts, p, depth+1)
				}
			case *ast.EmbedDecl:
				if s, ok := x.Expr.(*ast.StructLit); ok {
					walk(s.Elts, prefix, depth+1)
				}
			}
		}
	}
	walk(f.Decls, "", 0)
	return out
}

func tagNames(fields []TagField) string {
	var names []string
	for _, f := range fields {
		names = append(names, f.Name)
	}
	sort.Strings(names)
	names = compactStrings(names)
	if len(names) == 0 {
		return "the plan has no @tag() fields"
	}
	return "the plan's tags: " + strings.Join(names, ", ")
}

func compactStrings(s []string) []string {
	var out []string
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// checkTags refuses malformed tags, a tag given twice with different
// values (CUE would report a conflict far from the command line) and a tag
// the plan does not declare; it returns the tags as given (by name) and
// the normalised list for cue/load, leaving the refused ones out of both.
func checkTags(path string, tags []string, fields []TagField) (map[string]string, []string, error) {
	seen := map[string]string{}
	var out []string
	var errs Errors
	declared := map[string]bool{}
	for _, f := range fields {
		declared[f.Name] = true
	}
	for _, t := range tags {
		k, val, ok := strings.Cut(t, "=")
		if !ok || k == "" {
			errs = append(errs, Error{Msg: fmt.Sprintf("-t %s: a tag is key=value", t)})
			continue
		}
		if prev, dup := seen[k]; dup {
			if prev != val {
				errs = append(errs, Error{Msg: fmt.Sprintf("-t %s: tag %q given twice with different values (%q and %q)", t, k, prev, val)})
			}
			continue
		}
		seen[k] = val
		// fields is empty when the plan does not parse: the parse error
		// comes first then, and unknown tags are judged on the next try.
		if len(fields) > 0 && !declared[k] {
			msg := fmt.Sprintf("-t %s: unknown tag %q: no field is marked @tag(%s)", t, k, k)
			if near := nearestTag(k, fields); near != "" {
				msg += fmt.Sprintf(" (did you mean %s?)", near)
			}
			errs = append(errs, Error{Msg: msg + " (" + tagNames(fields) + ")"})
			continue
		}
		out = append(out, t)
	}
	if len(errs) > 0 {
		// The tags that are fine still load, so that vet reports the
		// plan's own problems beside these (every problem at once).
		return seen, out, errs
	}
	return seen, out, nil
}

var injectionTagRE = regexp.MustCompile(`injection tag "?([^" :]+)"?`)

// tagOrLoadErr names the tag in cue/load's tag errors.
func tagOrLoadErr(path string, err error, fields []TagField, given map[string]string) error {
	msg := err.Error()
	if strings.HasPrefix(msg, "no tag for ") {
		name := strings.Trim(strings.TrimPrefix(msg, "no tag for "), `"`)
		return Errors{{Pos: Pos{File: path}, Msg: fmt.Sprintf("-t %s=%s: unknown tag %q: no field is marked @tag(%s) (%s)", name, given[name], name, name, tagNames(fields))}}
	}
	if m := injectionTagRE.FindStringSubmatch(msg); m != nil {
		name := m[1]
		for _, f := range fields {
			if f.Name == name {
				return Errors{{Pos: f.Pos, Msg: fmt.Sprintf("-t %s=%s: tag %s takes a value of type %s: %s", name, given[name], name, f.Type, msg)}}
			}
		}
		return Errors{{Pos: Pos{File: path}, Msg: fmt.Sprintf("-t %s=%s: %s", name, given[name], msg)}}
	}
	return convertErr(err, path)
}

// tagErrs rewrites the errors about a field set by -t so that they name the
// tag (the value came from the command line, not from the file): all the
// errors of one tagged field become one, at the field's @tag.
func tagErrs(errs []pathError, fields []TagField, given map[string]string) Errors {
	owner := make([]*TagField, len(errs))
	byPath := map[string]*TagField{}
	for k, e := range errs {
		for i, f := range fields {
			if _, ok := given[f.Name]; !ok {
				continue
			}
			if e.path != "" && (e.path == f.Path || strings.HasPrefix(e.path, f.Path+".")) {
				owner[k] = &fields[i]
				break
			}
			// The value reached another field (`requests: reqs`): CUE
			// still names the tagged field's line among the positions.
			for _, p := range e.all {
				if p.File == f.Pos.File && p.Line == f.Pos.Line {
					owner[k] = &fields[i]
				}
			}
			if owner[k] != nil {
				break
			}
		}
		if owner[k] != nil && e.path != "" {
			byPath[e.path] = owner[k]
		}
	}
	// The other errors about the same field come from the same value.
	for k, e := range errs {
		if owner[k] == nil && e.path != "" {
			owner[k] = byPath[e.path]
		}
	}
	var out Errors
	best := map[string]int{} // tag -> index in out
	for k, e := range errs {
		tf := owner[k]
		if tf == nil {
			out = append(out, e.Error)
			continue
		}
		msg := fmt.Sprintf("-t %s=%s: %s", tf.Name, given[tf.Name], e.Msg)
		if tf.Type == "" && strings.Contains(e.Msg, "mismatched types string and") {
			msg += fmt.Sprintf(" (-t values are strings unless the field says otherwise: write @tag(%s,type=int), type=number or type=bool)", tf.Name)
		}
		if i, ok := best[tf.Name]; ok {
			// One error per tag: the most specific one.
			if strings.Contains(out[i].Msg, ": conflicting values ") && !strings.Contains(e.Msg, ": conflicting values ") {
				out[i].Msg = msg
			}
			continue
		}
		best[tf.Name] = len(out)
		out = append(out, Error{Pos: tf.Pos, Msg: msg})
	}
	return out
}

// nearestTag is the declared tag closest to a misspelt one
// (suggest.Closest), or "".
func nearestTag(name string, fields []TagField) string {
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.Name
	}
	return suggest.Closest(name, names)
}
