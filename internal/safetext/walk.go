package safetext

import (
	"reflect"
	"sync"
)

// Map returns v with f applied to every string in it: the string fields
// of structs (exported ones), the keys and values of maps, the elements of
// slices and arrays, through pointers and interfaces. v itself is never
// modified: what changes is copied (a map or slice shared with other rows
// or goroutines stays as it was), and what does not change is shared.
func Map[T any](v T, f func(string) string) T {
	rv := reflect.ValueOf(&v).Elem()
	if out, changed := walk(rv, 0, f); changed {
		rv.Set(out)
	}
	return v
}

// Value returns v with every string in it made safe (String).
func Value[T any](v T) T { return Map(v, String) }

// maxDepth bounds the walk (a pointer cycle ends there).
const maxDepth = 16

// walk returns a copy of v with f applied to its strings, and whether it differs.
func walk(v reflect.Value, depth int, f func(string) string) (reflect.Value, bool) {
	if depth > maxDepth || !v.IsValid() || !hasText(v.Type()) {
		return v, false
	}
	switch v.Kind() {
	case reflect.String:
		s := v.String()
		r := f(s)
		if r == s {
			return v, false
		}
		out := reflect.New(v.Type()).Elem()
		out.SetString(r)
		return out, true
	case reflect.Pointer:
		if v.IsNil() {
			return v, false
		}
		e, changed := walk(v.Elem(), depth+1, f)
		if !changed {
			return v, false
		}
		p := reflect.New(v.Type().Elem())
		p.Elem().Set(e)
		return p, true
	case reflect.Interface:
		if v.IsNil() {
			return v, false
		}
		e, changed := walk(v.Elem(), depth+1, f)
		if !changed {
			return v, false
		}
		out := reflect.New(v.Type()).Elem()
		out.Set(e)
		return out, true
	case reflect.Struct:
		var out reflect.Value
		t := v.Type()
		for i := range t.NumField() {
			if !t.Field(i).IsExported() {
				continue
			}
			f, changed := walk(v.Field(i), depth+1, f)
			if !changed {
				continue
			}
			if !out.IsValid() {
				out = reflect.New(t).Elem()
				out.Set(v)
			}
			out.Field(i).Set(f)
		}
		if !out.IsValid() {
			return v, false
		}
		return out, true
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return v, false // bytes, not text
		}
		fallthrough
	case reflect.Array:
		var out reflect.Value
		for i := range v.Len() {
			e, changed := walk(v.Index(i), depth+1, f)
			if !changed {
				continue
			}
			if !out.IsValid() {
				if v.Kind() == reflect.Slice {
					out = reflect.MakeSlice(v.Type(), v.Len(), v.Len())
					reflect.Copy(out, v)
				} else {
					out = reflect.New(v.Type()).Elem()
					out.Set(v)
				}
			}
			out.Index(i).Set(e)
		}
		if !out.IsValid() {
			return v, false
		}
		return out, true
	case reflect.Map:
		if v.IsNil() {
			return v, false
		}
		changed := false
		type kv struct{ k, v reflect.Value }
		entries := make([]kv, 0, v.Len())
		it := v.MapRange()
		for it.Next() {
			k, kc := walk(it.Key(), depth+1, f)
			e, ec := walk(it.Value(), depth+1, f)
			changed = changed || kc || ec
			entries = append(entries, kv{k, e})
		}
		if !changed {
			return v, false
		}
		out := reflect.MakeMapWithSize(v.Type(), len(entries))
		for _, e := range entries {
			out.SetMapIndex(e.k, e.v)
		}
		return out, true
	}
	return v, false
}

// textTypes caches hasText per type.
var textTypes sync.Map // reflect.Type → bool

// hasText reports whether a value of type t can hold a string that walk
// would visit, so that a request row's []float64 of chunk gaps (or a
// time.Time) is skipped without looking at its elements.
func hasText(t reflect.Type) bool {
	if b, ok := textTypes.Load(t); ok {
		return b.(bool)
	}
	b := typeHasText(t, map[reflect.Type]bool{})
	textTypes.Store(t, b)
	return b
}

func typeHasText(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return false // a recursive type reaching itself adds nothing new
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.String, reflect.Interface:
		return true
	case reflect.Pointer, reflect.Array:
		return typeHasText(t.Elem(), seen)
	case reflect.Slice:
		return t.Elem().Kind() != reflect.Uint8 && typeHasText(t.Elem(), seen)
	case reflect.Map:
		return typeHasText(t.Key(), seen) || typeHasText(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && typeHasText(f.Type, seen) {
				return true
			}
		}
	}
	return false
}
