package siyuantest

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The SQL index. SiYuan keeps a SQLite copy of its trees and writes to it
// in the background: right after a write /api/query/sql does not see it,
// /api/sqlite/flushTransaction makes it. The kernel keeps a snapshot that
// only flushLocked (or every write, with NoSQLLag) refreshes, and answers
// a small subset of SQL over it: one SELECT from blocks or attributes, a
// WHERE of col = 'v' / col != 'v' / col LIKE 'p' joined by AND, ORDER BY,
// LIMIT. Anything else answers code 1 "siyuantest: statement not
// supported", so a client that needs more fails visibly rather than
// getting a wrong answer.

type sqlIndex struct {
	tables map[string]*sqlTable
}

type sqlTable struct {
	cols []string
	rows []map[string]any
}

var blockCols = []string{"id", "parent_id", "root_id", "hash", "box", "path", "hpath", "name", "alias", "memo", "tag",
	"content", "fcontent", "markdown", "length", "type", "subtype", "ial", "sort", "created", "updated"}

var attrCols = []string{"id", "name", "value", "type", "block_id", "root_id", "box", "path"}

// synced is called after every write: with NoSQLLag the index follows at
// once.
func (k *Kernel) synced() {
	if k.opts.NoSQLLag {
		k.flushLocked()
	}
}

func (k *Kernel) flushLocked() {
	k.removed = map[string]bool{}
	blocks := &sqlTable{cols: blockCols}
	attrs := &sqlTable{cols: attrCols}
	for _, b := range k.boxes {
		// The notebook is a 'd' row of its own, with its name as hpath; the
		// recorded kernel listed it twice.
		row := map[string]any{"id": b.id, "parent_id": "", "root_id": b.id, "hash": "", "box": b.id, "path": "/",
			"hpath": "/" + b.name, "name": "", "alias": "", "memo": "", "tag": "", "content": b.name, "fcontent": "",
			"markdown": "", "length": utf8.RuneCountInString(b.name), "type": "d", "subtype": "", "ial": "",
			"sort": 0, "created": b.created.Format(tsLayout), "updated": b.created.Format(tsLayout)}
		blocks.rows = append(blocks.rows, row, row)
	}
	for _, d := range k.docs {
		storage, parentID := "/"+d.id+".sy", ""
		for p := d.parent; p != nil; p = p.parent {
			storage = "/" + p.id + storage
			if parentID == "" {
				parentID = p.id
			}
		}
		ial := fmt.Sprintf(`{: id="%s" title="%s" type="doc" updated="%s"}`, d.id, d.title, d.updated.Format(tsLayout))
		blocks.rows = append(blocks.rows, map[string]any{"id": d.id, "parent_id": parentID, "root_id": d.id, "hash": "",
			"box": d.box, "path": storage, "hpath": d.hpath(), "name": "", "alias": "", "memo": "", "tag": "",
			"content": d.title, "fcontent": "", "markdown": "", "length": utf8.RuneCountInString(d.title), "type": "d",
			"subtype": "", "ial": ial, "sort": 0, "created": d.created.Format(tsLayout), "updated": d.updated.Format(tsLayout)})
		for i, b := range d.blocks {
			blocks.rows = append(blocks.rows, map[string]any{"id": b.ID, "parent_id": d.id, "root_id": d.id, "hash": "",
				"box": d.box, "path": storage, "hpath": d.hpath(), "name": "", "alias": "", "memo": "", "tag": "",
				"content": b.Content, "fcontent": "", "markdown": b.Markdown, "length": utf8.RuneCountInString(b.Content),
				"type": b.Type, "subtype": b.SubType, "ial": fmt.Sprintf(`{: id="%s" updated="%s"}`, b.ID, d.updated.Format(tsLayout)),
				"sort": i, "created": d.created.Format(tsLayout), "updated": d.updated.Format(tsLayout)})
		}
		names := make([]string, 0, len(d.attrs))
		for n := range d.attrs {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			attrs.rows = append(attrs.rows, map[string]any{"id": k.newID(), "name": n, "value": d.attrs[n], "type": "b",
				"block_id": d.id, "root_id": d.id, "box": d.box, "path": storage})
		}
	}
	k.index = &sqlIndex{tables: map[string]*sqlTable{"blocks": blocks, "attributes": attrs}}
}

// sqlError is an answer of /api/query/sql other than rows.
type sqlError struct {
	code int
	msg  string
}

func (k *Kernel) querySQL(arg map[string]any, r *ret) {
	stmt := str(arg, "stmt")
	rows, err := k.index.query(stmt)
	if err != nil {
		r.fail(err.code, err.msg, nil)
		return
	}
	r.Data = rows
}

type token struct {
	kind byte // 'w' word, 's' string, 'n' number, 'p' punctuation
	text string
}

func tokenize(s string) ([]token, bool) {
	var out []token
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '\'':
			var b strings.Builder
			j := i + 1
			for ; j < len(s); j++ {
				if s[j] == '\'' {
					if j+1 < len(s) && s[j+1] == '\'' {
						b.WriteByte('\'')
						j++
						continue
					}
					break
				}
				b.WriteByte(s[j])
			}
			if j >= len(s) {
				return nil, false
			}
			out = append(out, token{'s', b.String()})
			i = j + 1
		case c >= '0' && c <= '9':
			j := i
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			out = append(out, token{'n', s[i:j]})
			i = j
		case c == '_' || c == '"' || (c|0x20 >= 'a' && c|0x20 <= 'z'):
			if c == '"' { // a quoted identifier
				j := strings.IndexByte(s[i+1:], '"')
				if j < 0 {
					return nil, false
				}
				out = append(out, token{'w', s[i+1 : i+1+j]})
				i += j + 2
				continue
			}
			j := i
			for j < len(s) && (s[j] == '_' || s[j]|0x20 >= 'a' && s[j]|0x20 <= 'z' || s[j] >= '0' && s[j] <= '9' || s[j] == '.') {
				j++
			}
			out = append(out, token{'w', s[i:j]})
			i = j
		case c == '!' || c == '<':
			if i+1 < len(s) && (s[i+1] == '=' || s[i+1] == '>') {
				out = append(out, token{'p', "!="})
				i += 2
				continue
			}
			out = append(out, token{'p', string(c)})
			i++
		default:
			out = append(out, token{'p', string(c)})
			i++
		}
	}
	return out, true
}

type cond struct {
	col, op, val string
}

type selCol struct {
	expr, as string // expr "count(*)" for the count
}

type orderBy struct {
	col  string
	desc bool
}

// statements holds more than one statement when a ';' outside quotes is
// followed by more than white space.
func multiStatement(s string) bool {
	in := false
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\'':
			in = !in
		case ';':
			if !in && strings.TrimSpace(s[i+1:]) != "" {
				return true
			}
		}
	}
	return false
}

func (ix *sqlIndex) query(stmt string) ([]map[string]any, *sqlError) {
	unsupported := &sqlError{1, "siyuantest: statement not supported: " + stmt}
	if multiStatement(stmt) {
		return nil, &sqlError{-1, "SQL statement is not single"}
	}
	s := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(stmt), ";"))
	toks, ok := tokenize(s)
	if !ok {
		return nil, &sqlError{1, "unrecognized token: \"" + s + "\""}
	}
	if len(toks) == 0 {
		return nil, &sqlError{1, "siyuantest: empty statement"}
	}
	if !strings.EqualFold(toks[0].text, "select") {
		return nil, &sqlError{1, "near \"" + toks[0].text + "\": syntax error"}
	}
	p := &parser{toks: toks, pos: 1}
	var cols []selCol
	for {
		var c selCol
		switch {
		case p.punct("*"):
			c.expr = "*"
		case p.peekWord("count"):
			p.pos++
			if !p.punct("(") || !p.punct("*") || !p.punct(")") {
				return nil, unsupported
			}
			c.expr = "count(*)"
		default:
			w, ok := p.word()
			if !ok {
				return nil, unsupported
			}
			c.expr = strings.ToLower(w)
		}
		if p.keyword("as") {
			w, ok := p.word()
			if !ok {
				return nil, unsupported
			}
			c.as = w
		}
		cols = append(cols, c)
		if !p.punct(",") {
			break
		}
	}
	if !p.keyword("from") {
		return nil, unsupported
	}
	tname, ok := p.word()
	if !ok {
		return nil, unsupported
	}
	t := ix.tables[strings.ToLower(tname)]
	if t == nil {
		if tname == "spans" || tname == "assets" || tname == "refs" || tname == "file_annotation_refs" {
			return nil, unsupported
		}
		return nil, &sqlError{1, "no such table: " + tname}
	}
	var conds []cond
	if p.keyword("where") {
		for {
			col, ok := p.word()
			if !ok {
				return nil, unsupported
			}
			var c cond
			c.col = strings.ToLower(col)
			switch {
			case p.punct("="):
				c.op = "="
			case p.punct("!="):
				c.op = "!="
			case p.keyword("like"):
				c.op = "like"
			default:
				return nil, unsupported
			}
			if p.pos >= len(p.toks) || p.toks[p.pos].kind != 's' {
				return nil, unsupported
			}
			c.val = p.toks[p.pos].text
			p.pos++
			conds = append(conds, c)
			if !p.keyword("and") {
				break
			}
		}
	}
	var order []orderBy
	if p.keyword("order") {
		if !p.keyword("by") {
			return nil, unsupported
		}
		for {
			col, ok := p.word()
			if !ok {
				return nil, unsupported
			}
			o := orderBy{col: strings.ToLower(col)}
			if p.keyword("desc") {
				o.desc = true
			} else {
				p.keyword("asc")
			}
			order = append(order, o)
			if !p.punct(",") {
				break
			}
		}
	}
	limit := 64 // the kernel adds LIMIT 64 to a SELECT without one
	if p.keyword("limit") {
		if p.pos >= len(p.toks) || p.toks[p.pos].kind != 'n' {
			return nil, unsupported
		}
		limit, _ = strconv.Atoi(p.toks[p.pos].text)
		p.pos++
	}
	if p.pos != len(p.toks) {
		return nil, unsupported
	}

	has := func(c string) bool {
		for _, x := range t.cols {
			if x == c {
				return true
			}
		}
		return false
	}
	for _, c := range conds {
		if !has(c.col) {
			return nil, &sqlError{1, "no such column: " + c.col}
		}
	}
	for _, o := range order {
		if !has(o.col) {
			return nil, &sqlError{1, "no such column: " + o.col}
		}
	}
	for _, c := range cols {
		if c.expr != "*" && c.expr != "count(*)" && !has(c.expr) {
			return nil, &sqlError{1, "no such column: " + c.expr}
		}
		if c.expr == "count(*)" && len(cols) > 1 {
			return nil, unsupported
		}
	}

	var match []map[string]any
	for _, row := range t.rows {
		ok := true
		for _, c := range conds {
			v := fmt.Sprint(row[c.col])
			switch c.op {
			case "=":
				ok = v == c.val
			case "!=":
				ok = v != c.val
			case "like":
				ok = likeRe(c.val).MatchString(v)
			}
			if !ok {
				break
			}
		}
		if ok {
			match = append(match, row)
		}
	}
	if len(order) > 0 {
		sort.SliceStable(match, func(i, j int) bool {
			for _, o := range order {
				a, b := match[i][o.col], match[j][o.col]
				if c := compare(a, b); c != 0 {
					return (c < 0) != o.desc
				}
			}
			return false
		})
	}
	if cols[0].expr == "count(*)" {
		name := cols[0].as
		if name == "" {
			name = "count(*)"
		}
		return []map[string]any{{name: len(match)}}, nil
	}
	out := []map[string]any{}
	for _, row := range match {
		if len(out) >= limit {
			break
		}
		o := map[string]any{}
		for _, c := range cols {
			if c.expr == "*" {
				for _, col := range t.cols {
					o[col] = row[col]
				}
				continue
			}
			name := c.as
			if name == "" {
				name = c.expr
			}
			o[name] = row[c.expr]
		}
		out = append(out, o)
	}
	return out, nil
}

func compare(a, b any) int {
	if x, ok := a.(int); ok {
		if y, ok := b.(int); ok {
			return x - y
		}
	}
	return strings.Compare(fmt.Sprint(a), fmt.Sprint(b))
}

// likeRe turns a LIKE pattern into a regexp: % any run, _ one character,
// ASCII case folded as SQLite does.
func likeRe(p string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("(?is)^")
	for _, r := range p {
		switch r {
		case '%':
			b.WriteString(".*")
		case '_':
			b.WriteString(".")
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

type parser struct {
	toks []token
	pos  int
}

func (p *parser) punct(s string) bool {
	if p.pos < len(p.toks) && p.toks[p.pos].kind == 'p' && p.toks[p.pos].text == s {
		p.pos++
		return true
	}
	return false
}

func (p *parser) peekWord(w string) bool {
	return p.pos < len(p.toks) && p.toks[p.pos].kind == 'w' && strings.EqualFold(p.toks[p.pos].text, w)
}

var keywords = map[string]bool{"select": true, "from": true, "where": true, "and": true, "or": true, "order": true,
	"by": true, "limit": true, "as": true, "like": true, "asc": true, "desc": true}

func (p *parser) keyword(w string) bool {
	if p.peekWord(w) {
		p.pos++
		return true
	}
	return false
}

// word reads an identifier (not a keyword).
func (p *parser) word() (string, bool) {
	if p.pos < len(p.toks) && p.toks[p.pos].kind == 'w' && !keywords[strings.ToLower(p.toks[p.pos].text)] {
		p.pos++
		return p.toks[p.pos-1].text, true
	}
	return "", false
}
