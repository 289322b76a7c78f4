package siyuantest

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"mime"
	"mime/multipart"
	"path"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

type handler func(k *Kernel, q *request, r *ret)

type route struct {
	h    handler
	id   string // the argument holding the id the call is about, checked first
	open bool   // answered without a token
	raw  bool   // the body is not JSON arguments (none are read, or multipart)
}

// routes are the API calls the sink's client makes (POST only, as
// SiYuan's).
var routes = map[string]route{
	"/api/system/bootProgress":      {h: (*Kernel).bootProgress, open: true, raw: true},
	"/api/system/version":           {h: func(_ *Kernel, _ *request, r *ret) { r.Data = Version }, open: true, raw: true},
	"/api/notebook/lsNotebooks":     {h: (*Kernel).lsNotebooks, raw: true},
	"/api/notebook/createNotebook":  {h: (*Kernel).createNotebook},
	"/api/notebook/openNotebook":    {h: (*Kernel).openNotebook, id: "notebook"},
	"/api/notebook/closeNotebook":   {h: (*Kernel).closeNotebook, id: "notebook"},
	"/api/notebook/removeNotebook":  {h: (*Kernel).removeNotebook, id: "notebook"},
	"/api/filetree/getIDsByHPath":   {h: (*Kernel).getIDsByHPath},
	"/api/filetree/createDocWithMd": {h: (*Kernel).createDocWithMd, id: "notebook"},
	"/api/filetree/getHPathByID":    {h: (*Kernel).getHPathByID, id: "id"},
	"/api/filetree/renameDocByID":   {h: (*Kernel).renameDocByID, id: "id"},
	"/api/filetree/removeDocByID":   {h: (*Kernel).removeDocByID, id: "id"},
	"/api/block/updateBlock":        {h: (*Kernel).updateBlock, id: "id"},
	"/api/block/appendBlock":        {h: (*Kernel).appendBlock, id: "parentID"},
	"/api/block/getChildBlocks":     {h: (*Kernel).getChildBlocks, id: "id"},
	"/api/export/exportMdContent":   {h: (*Kernel).exportMdContent, id: "id"},
	"/api/attr/setBlockAttrs":       {h: (*Kernel).setBlockAttrs, id: "id"},
	"/api/attr/getBlockAttrs":       {h: (*Kernel).getBlockAttrs, id: "id"},
	"/api/sqlite/flushTransaction":  {h: func(k *Kernel, _ *request, _ *ret) { k.flush() }, raw: true},
	"/api/query/sql":                {h: (*Kernel).querySQL},
	"/api/asset/upload":             {h: (*Kernel).upload, raw: true},
}

const (
	msgTreeNotFound = "tree not found"
	maxTitleRunes   = 512
)

// closeTimeout is the data SiYuan sends with "tree not found" from the
// rename/remove calls (the UI closes the tab after that many ms).
var closeTimeout = map[string]int{"closeTimeout": 7000}

func (k *Kernel) bootProgress(_ *request, r *ret) {
	k.boots++
	details, progress := "Finishing boot...", 100
	if k.boots <= k.opts.BootCalls {
		details, progress = "Initializing database...", 2
	}
	r.Data = map[string]any{"details": "v" + Version + " " + details, "progress": progress}
}

func find[T any](s []*T, match func(*T) bool) *T {
	if i := slices.IndexFunc(s, match); i >= 0 {
		return s[i]
	}
	return nil
}

// ---- notebooks ----

// nbJSON is a notebook as lsNotebooks and createNotebook write it, every
// key in the recorded order.
func (k *Kernel) nbJSON(b *Notebook, sort int) json.RawMessage {
	name, _ := json.Marshal(b.Name)
	n := 0
	for _, d := range k.docs {
		if d.box == b.ID && d.parent == nil {
			n++
		}
	}
	return json.RawMessage(fmt.Sprintf(`{"id":%q,"name":%s,"icon":"","sort":%d,"sortMode":15,"closed":%t,"subFileCount":%d,`+
		`"newFlashcardCount":0,"dueFlashcardCount":0,"flashcardCount":0,"encrypted":false,"unlocked":false}`, b.ID, name, sort, b.Closed, n))
}

func (k *Kernel) lsNotebooks(_ *request, r *ret) {
	list := []json.RawMessage{}
	for i := len(k.boxes) - 1; i >= 0; i-- { // newest first
		list = append(list, k.nbJSON(k.boxes[i], len(list)))
	}
	r.Data = map[string]any{"boxDocEnabled": true, "notebooks": list}
}

func (k *Kernel) createBox(name string) *Notebook {
	b := &Notebook{ID: k.newID(), Name: cmp.Or(name, "Untitled")}
	k.boxes = append(k.boxes, b)
	return b
}

func (k *Kernel) findBox(id string) *Notebook {
	return find(k.boxes, func(b *Notebook) bool { return b.ID == id })
}

// openBox is a notebook documents can be read and written in.
func (k *Kernel) openBox(id string) *Notebook {
	return find(k.boxes, func(b *Notebook) bool { return b.ID == id && !b.Closed })
}

func (k *Kernel) createNotebook(q *request, r *ret) {
	if name, ok := q.arg["name"].(string); ok {
		r.Data = map[string]any{"notebook": k.nbJSON(k.createBox(name), 0)}
	} else {
		r.fail(-1, "Field [name] is required", nil)
	}
}

func (k *Kernel) openNotebook(q *request, r *ret) {
	if b := k.findBox(q.id); b != nil {
		b.Closed = false
	} else {
		r.fail(-1, "can not open file, just support open folder only", nil)
	}
}

func (k *Kernel) closeNotebook(q *request, _ *ret) {
	if b := k.findBox(q.id); b != nil {
		b.Closed = true
	}
}

func (k *Kernel) removeNotebook(q *request, _ *ret) {
	k.boxes = slices.DeleteFunc(k.boxes, func(b *Notebook) bool { return b.ID == q.id })
	k.removeDocs(func(d *doc) bool { return d.box == q.id })
}

// ---- documents ----

func (k *Kernel) findDoc(id string) *doc {
	return find(k.docs, func(d *doc) bool { return d.id == id })
}

// blockDoc finds the document holding child block id.
func (k *Kernel) blockDoc(id string) *doc {
	return find(k.docs, func(d *doc) bool { return slices.ContainsFunc(d.blocks, func(b block) bool { return b.ID == id }) })
}

func (k *Kernel) getIDsByHPath(q *request, r *ret) {
	nb, p := q.str("notebook"), q.str("path") // notebook missing: data null, as recorded
	ids := []string{}
	switch {
	case k.openBox(nb) == nil:
	case p == "/":
		ids = append(ids, nb) // boxDocEnabled: the notebook is a document
	default:
		for _, d := range k.docs {
			if d.box == nb && d.hpath() == p {
				ids = append(ids, d.id)
			}
		}
	}
	r.Data = ids
}

// cleanTitle is what SiYuan makes of a title: "/" dropped, cut to 512
// characters, "" → "Untitled".
func cleanTitle(t string) string {
	t = strings.ReplaceAll(t, "/", "")
	if utf8.RuneCountInString(t) > maxTitleRunes {
		t = string([]rune(t)[:maxTitleRunes])
	}
	return cmp.Or(t, "Untitled")
}

// createDoc makes a document the way createDocWithMd does: the title is
// path.Base of the path (so a trailing slash repeats the last segment,
// "/" gives "Untitled" and "" gives "."), missing parents become empty
// documents, and an existing document at the path is not reused.
func (k *Kernel) createDoc(boxID, p, markdown string) *doc {
	var parent *doc
	for _, seg := range strings.Split(path.Dir(p), "/") {
		if seg == "" || seg == "." {
			continue
		}
		seg = cleanTitle(seg)
		if found := find(k.docs, func(d *doc) bool { return d.box == boxID && d.parent == parent && d.title == seg }); found != nil {
			parent = found
		} else {
			parent = k.newDoc(boxID, parent, seg, "")
		}
	}
	return k.newDoc(boxID, parent, cleanTitle(path.Base(p)), markdown)
}

func (k *Kernel) newDoc(boxID string, parent *doc, title, markdown string) *doc {
	now := k.now()
	d := &doc{id: k.newID(), box: boxID, parent: parent, title: title, markdown: markdown,
		attrs: map[string]string{}, blocks: k.parseBlocks(markdown), created: now, updated: now}
	k.docs = append(k.docs, d)
	return d
}

func (k *Kernel) createDocWithMd(q *request, r *ret) {
	p, md := q.str("path"), q.str("markdown") // markdown missing: code 0, data null, no document
	if k.openBox(q.id) == nil {
		r.fail(-1, "Query notebook failed", nil)
		return
	}
	r.Data = k.createDoc(q.id, p, md).id
}

func (k *Kernel) getHPathByID(q *request, r *ret) {
	d := cmp.Or(k.findDoc(q.id), k.blockDoc(q.id))
	switch {
	case k.findBox(q.id) != nil:
		r.Data = "/"
	case d != nil:
		r.Data = d.hpath()
	case k.removed[q.id]:
		r.fail(-1, "indexing", nil) // right after a removal, until the index settles
	default:
		r.fail(-1, msgTreeNotFound, nil)
	}
}

func (k *Kernel) renameDocByID(q *request, r *ret) {
	title := strings.ReplaceAll(q.str("title"), "/", "") // title missing: code 0, nothing renamed
	switch d := k.findDoc(q.id); {
	case d == nil:
		r.fail(-1, msgTreeNotFound, closeTimeout)
	case utf8.RuneCountInString(title) > maxTitleRunes:
		r.fail(-1, "Maximum length is limited to 512 characters", nil)
	default:
		d.title, d.updated = cmp.Or(title, "Untitled"), k.now()
	}
}

// removeDocByID removes the document and the documents under it.
func (k *Kernel) removeDocByID(q *request, r *ret) {
	if d := k.findDoc(q.id); d != nil {
		k.removeDocs(func(x *doc) bool { return x.under(d) })
	} else {
		r.fail(-1, msgTreeNotFound, closeTimeout)
	}
}

// under reports whether d is top or a document under it.
func (d *doc) under(top *doc) bool {
	for ; d != nil; d = d.parent {
		if d == top {
			return true
		}
	}
	return false
}

// removeDocs drops the documents gone and remembers them for "indexing".
func (k *Kernel) removeDocs(gone func(*doc) bool) {
	k.docs = slices.DeleteFunc(k.docs, func(d *doc) bool {
		if !gone(d) {
			return false
		}
		k.removed[d.id] = true
		return true
	})
}

// ---- blocks ----

// targetDoc is the document a block call writes to: an unknown id is
// "tree not found"; a child block is not supported here.
func (k *Kernel) targetDoc(q *request, r *ret, call string) (*doc, string) {
	data := q.str("data")
	d := k.findDoc(q.id)
	switch dt := q.str("dataType"); {
	case dt != "markdown":
		r.fail(-1, "siyuantest: "+call+" dataType "+dt+" not supported", nil)
	case d == nil && k.blockDoc(q.id) != nil:
		r.fail(-1, "siyuantest: "+call+" of a child block not supported", nil)
	case d == nil:
		r.fail(-1, "get block failed: "+msgTreeNotFound, nil)
	default:
		return d, data
	}
	return nil, ""
}

// updateBlock with a document id replaces the whole body: one delete per
// old block, one insert of the new blocks' DOM.
func (k *Kernel) updateBlock(q *request, r *ret) {
	if d, data := k.targetDoc(q, r, "updateBlock"); d != nil {
		var ops []string
		for _, b := range d.blocks {
			ops = append(ops, operation("delete", `{"createEmptyParagraph":false}`, b.ID, "", ""))
		}
		d.markdown, d.blocks, d.updated = data, k.parseBlocks(data), k.now()
		r.Data = transaction(append(ops, operation("insert", blocksDOM(d.blocks, d.updated), d.blocks[0].ID, d.id, "")))
	}
}

func (k *Kernel) appendBlock(q *request, r *ret) {
	if d, data := k.targetDoc(q, r, "appendBlock"); d != nil {
		prev, added := d.blocks[len(d.blocks)-1].ID, k.parseBlocks(data)
		d.blocks, d.updated = append(d.blocks, added...), k.now()
		if strings.TrimSpace(d.markdown) != "" {
			data = strings.TrimRight(d.markdown, "\n") + "\n\n" + data
		}
		d.markdown = data
		r.Data = transaction([]string{operation("insert", blocksDOM(added, d.updated), added[0].ID, d.id, prev)})
	}
}

func (k *Kernel) getChildBlocks(q *request, r *ret) {
	r.Data = []block{}
	if d := k.findDoc(q.id); d != nil {
		r.Data = d.blocks
	}
}

func (k *Kernel) exportMdContent(q *request, r *ret) {
	yfm, addTitle, d := q.boolOr("yfm", true), q.boolOr("addTitle", true), k.findDoc(q.id)
	if d == nil {
		r.Data = map[string]string{"content": "", "hPath": ""}
		return
	}
	var sb strings.Builder
	if yfm {
		const rfc3339 = "2006-01-02T15:04:05Z07:00"
		fmt.Fprintf(&sb, "---\ntitle: %s\ndate: %s\nlastmod: %s\n---\n\n", d.title, d.created.Format(rfc3339), d.updated.Format(rfc3339))
	}
	if addTitle {
		sb.WriteString("# " + d.title + "\n\n")
	}
	if body := joinBlocks(d.blocks); body != "" {
		sb.WriteString(body + "\n")
	}
	r.Data = map[string]string{"content": sb.String(), "hPath": d.hpath()}
}

// ---- attributes ----

var attrName = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// setBlockAttrs refuses the whole call when one value is not a string or
// one name is bad; upper case is lowered silently, an empty value deletes.
// The kernel's own attributes (id, title, type, updated) are not
// supported here.
func (k *Kernel) setBlockAttrs(q *request, r *ret) {
	attrs, ok := q.arg["attrs"].(map[string]any)
	if !ok {
		panic(missingField{"attrs"})
	}
	names := slices.Sorted(maps.Keys(attrs))
	notString := slices.IndexFunc(names, func(n string) bool { _, ok := attrs[n].(string); return !ok && attrs[n] != nil })
	d := k.findDoc(q.id)
	switch {
	case notString >= 0:
		r.fail(-1, fmt.Sprintf("the value of attr [%s] must be a string", names[notString]), nil)
	case d == nil:
		r.fail(-1, msgTreeNotFound, nil)
	case slices.ContainsFunc(names, func(n string) bool { return !attrName.MatchString(strings.ToLower(n)) }):
		r.fail(-1, "The attribute name can only contain lowercase English letters, digits, and hyphens, and must start with a lowercase English letter ["+q.id+"]", nil)
	case slices.ContainsFunc(names, func(n string) bool { _, own := kernelAttrs(d)[strings.ToLower(n)]; return own }):
		r.fail(-1, "siyuantest: setting the kernel's own attributes not supported", nil)
	default:
		for _, n := range names {
			if v, _ := attrs[n].(string); v != "" {
				d.attrs[strings.ToLower(n)] = v
			} else {
				delete(d.attrs, strings.ToLower(n))
			}
		}
		d.updated = k.now()
	}
}

// kernelAttrs are the attributes getBlockAttrs adds of its own.
func kernelAttrs(d *doc) map[string]string {
	return map[string]string{"id": d.id, "title": d.title, "type": "doc", "updated": d.updated.Format(tsLayout)}
}

func (k *Kernel) getBlockAttrs(q *request, r *ret) {
	out := map[string]string{}
	if d := k.findDoc(q.id); d != nil {
		maps.Copy(out, d.attrs)
		maps.Copy(out, kernelAttrs(d))
	} else if d := k.blockDoc(q.id); d != nil {
		out["id"], out["updated"] = q.id, d.updated.Format(tsLayout)
	}
	r.Data = out
}

// ---- assets ----

// workspaceDataDir is where the kernel resolves assetsDirPath from.
const workspaceDataDir = "/siyuan/workspace/data"

func (k *Kernel) upload(q *request, r *ret) {
	mt, params, err := mime.ParseMediaType(q.contentType)
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		r.fail(-1, "request Content-Type isn't multipart/form-data", nil)
		return
	}
	form, err := multipart.NewReader(bytes.NewReader(q.body), params["boundary"]).ReadForm(64 << 20)
	if err != nil {
		r.fail(-1, "siyuantest: read multipart form: "+err.Error(), nil)
		return
	}
	defer func() { _ = form.RemoveAll() }()
	dir := ""
	if v := form.Value["assetsDirPath"]; len(v) > 0 {
		dir = v[0]
	}
	if dir != "" && path.Clean(dir) != "/assets" {
		abs := path.Join(workspaceDataDir, dir)
		if !strings.HasPrefix(abs+"/", path.Dir(workspaceDataDir)+"/") {
			r.fail(-1, "Path ["+abs+"] is not in workspace", nil)
		} else {
			r.fail(-1, "siyuantest: assetsDirPath "+dir+" not supported", nil)
		}
		return
	}
	succ := map[string]string{}
	for _, fh := range form.File["file[]"] {
		if f, err := fh.Open(); err == nil {
			var buf bytes.Buffer
			_, _ = buf.ReadFrom(f)
			_ = f.Close()
			succ[fh.Filename] = k.storeAsset(fh.Filename, buf.Bytes())
		}
	}
	r.Data = map[string]any{"errFiles": nil, "succMap": succ}
}

// storeAsset stores an upload under assets/ as "<stem>-<id><ext>", with
// the characters SiYuan drops from a file name (brackets and what file
// systems refuse, not spaces) dropped; the same name with the same content
// is the existing asset.
func (k *Kernel) storeAsset(name string, data []byte) string {
	if a := find(k.assets, func(a *Asset) bool { return a.Name == name && bytes.Equal(a.Data, data) }); a != nil {
		return a.Path
	}
	clean := strings.Map(func(c rune) rune {
		if strings.ContainsRune(`()[]{}<>\/:*?"|`, c) {
			return -1
		}
		return c
	}, name)
	ext := path.Ext(clean)
	p := "assets/" + strings.TrimSuffix(clean, ext) + "-" + k.newID() + ext
	k.assets = append(k.assets, &Asset{Name: name, Path: p, Data: bytes.Clone(data)})
	return p
}
