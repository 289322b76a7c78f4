package siyuantest

import (
	"encoding/json"
	"fmt"
	"html"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// The kernel parses markdown with Lute into a block tree. This is a small
// approximation of its top level, the block types the record shows:
// headings ("h", subType h1..h6), tables ("t", re-formatted as Lute writes
// them), fenced code ("c", a mermaid fence included) and paragraphs ("p",
// everything else, images included: an image is inline, not a block).

// block is a top-level block of a document, as getChildBlocks writes it.
type block struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	SubType  string `json:"subType,omitempty"`
	Content  string `json:"content"`
	Markdown string `json:"markdown"`
}

var (
	headingRe = regexp.MustCompile(`^(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$`)
	tableSep  = regexp.MustCompile(`^\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$`)
	imageRe   = regexp.MustCompile(`!\[([^\]]*)\]\(([^)\s]*)(?:\s+"([^"]*)")?\)`)
)

func (k *Kernel) parseBlocks(md string) []block {
	lines := strings.Split(strings.ReplaceAll(md, "\r\n", "\n"), "\n")
	var para []string
	var blocks []block
	endPara := func() {
		if text := strings.Join(para, "\n"); len(para) > 0 {
			blocks = append(blocks, block{Type: "p", Content: imageRe.ReplaceAllString(text, "$1 $2 $3"), Markdown: text})
		}
		para = nil
	}
	for i := 0; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) == "" {
			endPara()
			continue
		}
		b, n := nextBlock(lines[i:], len(para) > 0)
		if n == 0 {
			para = append(para, lines[i])
			continue
		}
		endPara()
		blocks = append(blocks, b)
		i += n - 1
	}
	endPara()
	if len(blocks) == 0 {
		blocks = append(blocks, block{Type: "p"}) // an empty document holds one empty paragraph
	}
	for i := range blocks {
		blocks[i].ID = k.newID()
	}
	return blocks
}

// nextBlock is the block lines start with and how many lines it takes; 0
// lines when the first one is (or continues) a paragraph.
func nextBlock(lines []string, inPara bool) (block, int) {
	trim := strings.TrimSpace(lines[0])
	switch {
	case strings.HasPrefix(trim, "```") || strings.HasPrefix(trim, "~~~"):
		return fenced(lines)
	case headingRe.MatchString(lines[0]):
		m := headingRe.FindStringSubmatch(lines[0])
		return block{Type: "h", SubType: fmt.Sprintf("h%d", len(m[1])), Content: m[2], Markdown: m[1] + " " + m[2]}, 1
	case strings.HasPrefix(trim, "|") && !inPara && len(lines) > 1 && tableSep.MatchString(strings.TrimSpace(lines[1])):
		return table(lines)
	}
	return block{}, 0
}

// fenced is the code block lines start with and how many lines it takes
// (to the closing fence or the end).
func fenced(lines []string) (block, int) {
	fence := strings.TrimSpace(lines[0])[:3]
	end := 1
	for end < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[end]), fence) {
		end++
	}
	md := strings.Join(append(slices.Clone(lines[:end]), fence), "\n")
	return block{Type: "c", Content: strings.Join(lines[1:end], "\n"), Markdown: md}, min(end+1, len(lines))
}

// table is the table lines start with and how many lines it takes,
// written as Lute does: cells trimmed, no padding, and a separator row of
// " " plus as many dashes as the widest cell of the column as written
// (surrounding spaces counted).
func table(lines []string) (block, int) {
	n := 0
	for n < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[n]), "|") {
		n++
	}
	var rows [][]string
	for i, l := range lines[:n] {
		if i != 1 { // the separator row
			rows = append(rows, strings.Split(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(l), "|"), "|"), "|"))
		}
	}
	width := make([]int, len(rows[0]))
	for _, row := range rows {
		for c := 0; c < len(width) && c < len(row); c++ {
			width[c] = max(width[c], utf8.RuneCountInString(row[c]))
		}
	}
	var md, content []string
	for i, row := range rows {
		cells := make([]string, len(width))
		for c := range cells {
			if c < len(row) {
				cells[c] = strings.TrimSpace(row[c])
			}
			if cells[c] != "" {
				content = append(content, cells[c])
			}
		}
		md = append(md, "|"+strings.Join(cells, "|")+"|")
		if i == 0 {
			var sep strings.Builder
			for _, w := range width {
				sep.WriteString(" " + strings.Repeat("-", max(w, 1)) + "|")
			}
			md = append(md, "|"+sep.String())
		}
	}
	return block{Type: "t", Content: strings.Join(content, " "), Markdown: strings.Join(md, "\n")}, n
}

// joinBlocks is the document's markdown as the kernel writes it back.
func joinBlocks(bs []block) string {
	var parts []string
	for _, b := range bs {
		if b.Markdown != "" {
			parts = append(parts, b.Markdown)
		}
	}
	return strings.Join(parts, "\n\n")
}

var nodeTypes = map[string][2]string{ // block type → DOM data-type, class
	"h": {"NodeHeading", ""}, "t": {"NodeTable", "table"}, "c": {"NodeCodeBlock", "code-block"}, "p": {"NodeParagraph", "p"},
}

// blocksDOM approximates the protyle DOM the kernel sends in insert
// operations.
func blocksDOM(bs []block, updated time.Time) string {
	var sb strings.Builder
	for i, b := range bs {
		nt := nodeTypes[b.Type]
		class, sub := nt[1], b.SubType
		if b.Type == "h" {
			class = b.SubType
		}
		if b.Type == "c" {
			sub = strings.TrimSpace(strings.TrimLeft(strings.SplitN(b.Markdown, "\n", 2)[0], "`~"))
		}
		sb.WriteString("<div ")
		if sub != "" {
			fmt.Fprintf(&sb, `data-subtype="%s" `, html.EscapeString(sub))
		}
		fmt.Fprintf(&sb, `data-node-id="%s" data-node-index="%d" data-type="%s" class="%s" updated="%s"><div contenteditable="true" spellcheck="false">%s</div><div class="protyle-attr" contenteditable="false">&#8203;</div></div>`,
			b.ID, i+1, nt[0], class, updated.Format(tsLayout), html.EscapeString(b.Content))
	}
	return sb.String()
}

// operation is one entry of doOperations with every key the kernel
// writes, in its order; data is JSON (an object) or a string to quote.
func operation(action, data, id, parentID, previousID string) string {
	if !strings.HasPrefix(data, "{") {
		b, _ := json.Marshal(data)
		data = string(b)
	}
	return fmt.Sprintf(`{"action":%q,"data":%s,"id":%q,"rootID":"","parentID":%q,"previousID":%q,"nextID":"","retData":null,`+
		`"blockIDs":null,"blockID":"","deckID":"","avID":"","srcIDs":null,"srcs":null,"isDetached":false,"name":"","type":"",`+
		`"format":"","keyID":"","rowID":"","isTwoWay":false,"backRelationKeyID":"","removeDest":false,"layout":"","groupID":"",`+
		`"targetGroupID":"","viewID":"","ignoreDefaultFill":false,"context":null}`, action, data, id, parentID, previousID)
}

// transaction is the answer of the block calls: one transaction of ops.
func transaction(ops []string) json.RawMessage {
	return json.RawMessage(`[{"timestamp":0,"doOperations":[` + strings.Join(ops, ",") + `],"undoOperations":null}]`)
}
