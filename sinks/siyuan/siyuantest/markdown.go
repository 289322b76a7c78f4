package siyuantest

import (
	"fmt"
	"html"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"
)

// The kernel parses markdown with Lute into a block tree. This is a small
// approximation of its top level: headings ("h", subType h1..h6), tables
// ("t", re-formatted as Lute writes them), fenced code ("c", a mermaid
// fence included), lists ("l"), quotes ("b"), thematic breaks ("tb") and
// paragraphs ("p", images included: an image is inline, not a block).

var (
	headingRe = regexp.MustCompile(`^(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$`)
	listRe    = regexp.MustCompile(`^\s{0,3}([-*+]|\d+[.)])\s`)
	breakRe   = regexp.MustCompile(`^\s{0,3}([-*_])(\s*([-*_]))*\s*$`)
	tableSep  = regexp.MustCompile(`^\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$`)
	imageRe   = regexp.MustCompile(`!\[([^\]]*)\]\(([^)\s]*)(?:\s+"([^"]*)")?\)`)
)

func (k *Kernel) parseBlocks(md string) []Block {
	lines := strings.Split(strings.ReplaceAll(md, "\r\n", "\n"), "\n")
	var out []Block
	var para []string
	add := func(b Block) {
		b.ID = k.newID()
		out = append(out, b)
	}
	flush := func() {
		if len(para) == 0 {
			return
		}
		text := strings.Join(para, "\n")
		para = nil
		if listRe.MatchString(text) {
			add(Block{Type: "l", Content: text, Markdown: text})
			return
		}
		if strings.HasPrefix(text, ">") {
			add(Block{Type: "b", Content: strings.TrimSpace(strings.TrimLeft(text, "> ")), Markdown: text})
			return
		}
		content := imageRe.ReplaceAllStringFunc(text, func(m string) string {
			s := imageRe.FindStringSubmatch(m)
			return s[1] + " " + s[2] + " " + s[3]
		})
		add(Block{Type: "p", Content: content, Markdown: text})
	}
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		trim := strings.TrimSpace(line)
		switch {
		case trim == "":
			flush()
		case strings.HasPrefix(trim, "```") || strings.HasPrefix(trim, "~~~"):
			flush()
			fence := trim[:3]
			body := []string{}
			j := i + 1
			for ; j < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[j]), fence); j++ {
				body = append(body, lines[j])
			}
			end := min(j, len(lines)-1)
			add(Block{Type: "c", Content: strings.Join(body, "\n"), Markdown: strings.Join(append(append([]string{line}, body...), fence), "\n")})
			i = end
		case headingRe.MatchString(line):
			flush()
			m := headingRe.FindStringSubmatch(line)
			add(Block{Type: "h", SubType: fmt.Sprintf("h%d", len(m[1])), Content: m[2], Markdown: m[1] + " " + m[2]})
		case strings.HasPrefix(trim, "|") && len(para) == 0 && i+1 < len(lines) && tableSep.MatchString(strings.TrimSpace(lines[i+1])):
			rows := []string{}
			j := i
			for ; j < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[j]), "|"); j++ {
				rows = append(rows, strings.TrimSpace(lines[j]))
			}
			add(formatTable(rows))
			i = j - 1
		case len(para) == 0 && breakRe.MatchString(line) && strings.Count(trim, string(trim[0])) >= 3:
			add(Block{Type: "tb", Markdown: "---"})
		default:
			para = append(para, line)
		}
	}
	flush()
	if len(out) == 0 {
		add(Block{Type: "p"}) // an empty document holds one empty paragraph
	}
	return out
}

func splitRow(row string) []string {
	row = strings.TrimPrefix(row, "|")
	row = strings.TrimSuffix(row, "|")
	return strings.Split(row, "|")
}

// formatTable writes a table as Lute does: cells trimmed, no padding, and
// a separator row of " " plus as many dashes as the widest cell of the
// column as written (surrounding spaces counted).
func formatTable(rows []string) Block {
	var cells [][]string
	for i, r := range rows {
		if i == 1 {
			continue
		}
		cells = append(cells, splitRow(r))
	}
	cols := len(cells[0])
	width := make([]int, cols)
	var content []string
	for _, row := range cells {
		for c := 0; c < cols && c < len(row); c++ {
			width[c] = max(width[c], utf8.RuneCountInString(row[c]))
		}
	}
	var lines []string
	for i, row := range cells {
		var b strings.Builder
		b.WriteString("|")
		for c := 0; c < cols; c++ {
			v := ""
			if c < len(row) {
				v = strings.TrimSpace(row[c])
			}
			if v != "" {
				content = append(content, v)
			}
			b.WriteString(v + "|")
		}
		lines = append(lines, b.String())
		if i == 0 {
			var s strings.Builder
			s.WriteString("|")
			for c := 0; c < cols; c++ {
				s.WriteString(" " + strings.Repeat("-", max(width[c], 1)) + "|")
			}
			lines = append(lines, s.String())
		}
	}
	md := strings.Join(lines, "\n")
	return Block{Type: "t", Content: strings.Join(content, " "), Markdown: md}
}

// joinBlocks is the document's markdown as the kernel writes it back.
func joinBlocks(bs []Block) string {
	var parts []string
	for _, b := range bs {
		if b.Markdown != "" {
			parts = append(parts, b.Markdown)
		}
	}
	return strings.Join(parts, "\n\n")
}

var nodeTypes = map[string][2]string{ // block type → DOM data-type, class
	"h": {"NodeHeading", ""}, "t": {"NodeTable", "table"}, "c": {"NodeCodeBlock", "code-block"},
	"p": {"NodeParagraph", "p"}, "l": {"NodeList", "list"}, "b": {"NodeBlockquote", "bq"},
	"tb": {"NodeThematicBreak", "hr"},
}

// blocksDOM approximates the protyle DOM the kernel sends in insert
// operations.
func blocksDOM(bs []Block, updated time.Time) string {
	var sb strings.Builder
	for i, b := range bs {
		nt := nodeTypes[b.Type]
		class, sub := nt[1], b.SubType
		if b.Type == "h" {
			class = b.SubType
		}
		if b.Type == "c" {
			first := strings.SplitN(b.Markdown, "\n", 2)[0]
			sub = strings.TrimSpace(strings.TrimLeft(first, "`~"))
		}
		if sub != "" {
			fmt.Fprintf(&sb, `<div data-subtype="%s" `, html.EscapeString(sub))
		} else {
			sb.WriteString("<div ")
		}
		fmt.Fprintf(&sb, `data-node-id="%s" data-node-index="%d" data-type="%s" class="%s" updated="%s"><div contenteditable="true" spellcheck="false">%s</div><div class="protyle-attr" contenteditable="false">&#8203;</div></div>`,
			b.ID, i+1, nt[0], class, updated.Format(tsLayout), html.EscapeString(b.Content))
	}
	return sb.String()
}

// operation is one entry of doOperations, every key the kernel writes, in
// its order.
type operation struct {
	Action            string   `json:"action"`
	Data              any      `json:"data"`
	ID                string   `json:"id"`
	RootID            string   `json:"rootID"`
	ParentID          string   `json:"parentID"`
	PreviousID        string   `json:"previousID"`
	NextID            string   `json:"nextID"`
	RetData           any      `json:"retData"`
	BlockIDs          []string `json:"blockIDs"`
	BlockID           string   `json:"blockID"`
	DeckID            string   `json:"deckID"`
	AvID              string   `json:"avID"`
	SrcIDs            []string `json:"srcIDs"`
	Srcs              []any    `json:"srcs"`
	IsDetached        bool     `json:"isDetached"`
	Name              string   `json:"name"`
	Type              string   `json:"type"`
	Format            string   `json:"format"`
	KeyID             string   `json:"keyID"`
	RowID             string   `json:"rowID"`
	IsTwoWay          bool     `json:"isTwoWay"`
	BackRelationKeyID string   `json:"backRelationKeyID"`
	RemoveDest        bool     `json:"removeDest"`
	Layout            string   `json:"layout"`
	GroupID           string   `json:"groupID"`
	TargetGroupID     string   `json:"targetGroupID"`
	ViewID            string   `json:"viewID"`
	IgnoreDefaultFill bool     `json:"ignoreDefaultFill"`
	Context           any      `json:"context"`
}

func newOp(action, id string) operation { return operation{Action: action, ID: id} }

type transaction struct {
	Timestamp      int64       `json:"timestamp"`
	DoOperations   []operation `json:"doOperations"`
	UndoOperations []operation `json:"undoOperations"`
}

func transactions(ops []operation) []transaction {
	return []transaction{{DoOperations: ops}}
}
