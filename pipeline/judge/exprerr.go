package judge

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/expr-lang/expr/file"

	"github.com/benchrun/benchrun/internal/suggest"
	"github.com/benchrun/benchrun/schema"
)

// ExprProblem turns an expr compile error into one line and the position
// of the offending character in the plan file: the string literal's
// position moved by the error's column, when the literal is one plain line
// (no escapes, so columns in the expression are columns in the file).
func ExprProblem(err error, src string, at schema.Pos, names []string) (string, schema.Pos) {
	var fe *file.Error
	if !errors.As(err, &fe) {
		return oneLine(err.Error()), at
	}
	msg := fe.Message
	if at.Line > 0 && fe.Line == 1 && !strings.ContainsAny(src, "\"\\\n") {
		at.Col += 1 + fe.Column
	}
	if m := noFieldRE.FindStringSubmatch(msg); m != nil {
		// `.stauts` inside all(rows, ...): a cell row has no such column.
		msg = fmt.Sprintf("unknown column %s of a cell row", m[1])
		if s := suggest.Closest(m[1], cellColumns()); s != "" {
			msg += " (did you mean " + s + "?)"
		}
		return msg, at
	}
	if m := unknownNameRE.FindStringSubmatch(msg); m != nil {
		if s := suggest.Closest(m[1], names); s != "" {
			msg += " (did you mean " + s + "?)"
		}
	}
	return msg, at
}

// oneLine is an error's first line: expr puts the expression and a caret
// under it on the lines that follow, which the position already says.
func oneLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}

var (
	unknownNameRE = regexp.MustCompile(`unknown name ([A-Za-z_][A-Za-z0-9_]*)`)
	noFieldRE     = regexp.MustCompile(`type results\.Cell has no field ([A-Za-z_][A-Za-z0-9_]*)`)
)
