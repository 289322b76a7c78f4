package siyuantest

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The SQL index. SiYuan keeps a SQLite copy of its trees and writes to it
// in the background: right after a write /api/query/sql does not see it,
// /api/sqlite/flushTransaction makes it. This kernel keeps a snapshot of
// the attributes table that only a flush refreshes (the real kernel also
// catches up on its own a few seconds later; this one never does, so a
// client that forgets the flush fails every time, not sometimes), and
// answers the one statement the sink sends:
//
//	SELECT block_id FROM attributes WHERE name='…' AND value='…' [LIMIT n]
//
// Any other SELECT answers code 1 "siyuantest: statement not supported".

type attrRow struct{ blockID, name, value string }

func (k *Kernel) flush() {
	k.removed = map[string]bool{}
	k.index = nil
	for _, d := range k.docs {
		for _, n := range slices.Sorted(maps.Keys(d.attrs)) {
			k.index = append(k.index, attrRow{d.id, n, d.attrs[n]})
		}
	}
}

var attrQuery = regexp.MustCompile(`(?i)^\s*SELECT\s+block_id\s+FROM\s+attributes\s+WHERE\s+name\s*=\s*'((?:[^']|'')*)'` +
	`\s+AND\s+value\s*=\s*'((?:[^']|'')*)'(?:\s+LIMIT\s+(\d+))?\s*;?\s*$`)

// leadWord is the statement's first token, where SQLite reports a
// statement that is no SELECT.
var leadWord = regexp.MustCompile(`^\s*(\w+|\S?)`)

// defaultLimit is the LIMIT the kernel adds to a SELECT without one.
const defaultLimit = 64

func (k *Kernel) querySQL(q *request, r *ret) {
	stmt := q.str("stmt")
	m := attrQuery.FindStringSubmatch(stmt)
	switch first := leadWord.FindStringSubmatch(stmt)[1]; {
	case multiStatement(stmt):
		r.fail(-1, "SQL statement is not single", nil)
	case !strings.EqualFold(first, "SELECT"):
		r.fail(1, fmt.Sprintf("near %q: syntax error", first), nil)
	case m == nil:
		r.fail(1, "siyuantest: statement not supported: "+stmt, nil)
	default:
		name, value := strings.ReplaceAll(m[1], "''", "'"), strings.ReplaceAll(m[2], "''", "'")
		limit := defaultLimit
		if m[3] != "" {
			limit, _ = strconv.Atoi(m[3])
		}
		rows := []map[string]string{}
		for _, a := range k.index {
			if a.name == name && a.value == value && len(rows) < limit {
				rows = append(rows, map[string]string{"block_id": a.blockID})
			}
		}
		r.Data = rows
	}
}

// multiStatement reports whether s holds more than one statement: a ';'
// outside quotes followed by more than white space.
func multiStatement(s string) bool {
	in := false
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\'':
			in = !in
		case s[i] == ';' && !in && strings.TrimSpace(s[i+1:]) != "":
			return true
		}
	}
	return false
}
