package siyuantest

import (
	"bytes"
	"fmt"
	"mime"
	"mime/multipart"
	"net/http"
	"path"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"
)

// routes are the API calls this kernel answers (POST only, as SiYuan's).
var routes = map[string]handler{
	"/api/system/bootProgress":      (*Kernel).bootProgress,
	"/api/system/version":           func(_ *Kernel, _ map[string]any, r *ret) { r.Data = Version },
	"/api/notebook/lsNotebooks":     (*Kernel).lsNotebooks,
	"/api/notebook/createNotebook":  (*Kernel).createNotebook,
	"/api/notebook/openNotebook":    (*Kernel).openNotebook,
	"/api/notebook/closeNotebook":   (*Kernel).closeNotebook,
	"/api/notebook/removeNotebook":  (*Kernel).removeNotebook,
	"/api/filetree/getIDsByHPath":   (*Kernel).getIDsByHPath,
	"/api/filetree/createDocWithMd": (*Kernel).createDocWithMd,
	"/api/filetree/getHPathByID":    (*Kernel).getHPathByID,
	"/api/filetree/renameDocByID":   (*Kernel).renameDocByID,
	"/api/filetree/removeDocByID":   (*Kernel).removeDocByID,
	"/api/filetree/removeDoc":       (*Kernel).removeDoc,
	"/api/block/updateBlock":        (*Kernel).updateBlock,
	"/api/block/appendBlock":        (*Kernel).appendBlock,
	"/api/block/getChildBlocks":     (*Kernel).getChildBlocks,
	"/api/export/exportMdContent":   (*Kernel).exportMdContent,
	"/api/attr/setBlockAttrs":       (*Kernel).setBlockAttrs,
	"/api/attr/getBlockAttrs":       (*Kernel).getBlockAttrs,
	"/api/sqlite/flushTransaction":  func(k *Kernel, _ map[string]any, _ *ret) { k.flushLocked() },
	"/api/query/sql":                (*Kernel).querySQL,
	"/api/asset/upload":             (*Kernel).upload,
}

const (
	msgInvalidID     = "invalid ID argument"
	msgTreeNotFound  = "tree not found"
	maxTitleRunes    = 512
	workspaceDataDir = "/siyuan/workspace/data"
)

// closeTimeout is the data SiYuan sends with "tree not found" from the
// rename/remove calls (the UI closes the tab after that many ms).
var closeTimeout = map[string]int{"closeTimeout": 7000}

// ---- system ----

func (k *Kernel) bootProgress(_ map[string]any, r *ret) {
	k.boots++
	if k.boots <= k.opts.BootCalls {
		r.Data = map[string]any{"details": "v" + Version + " Initializing database...", "progress": 2}
		return
	}
	r.Data = map[string]any{"details": "v" + Version + " Finishing boot...", "progress": 100}
}

// ---- notebooks ----

// nbJSON is a notebook as lsNotebooks and createNotebook write it (field
// order as recorded).
type nbJSON struct {
	ID                string `json:"id"`
	Name              string `json:"name"`
	Icon              string `json:"icon"`
	Sort              int    `json:"sort"`
	SortMode          int    `json:"sortMode"`
	Closed            bool   `json:"closed"`
	SubFileCount      int    `json:"subFileCount"`
	NewFlashcardCount int    `json:"newFlashcardCount"`
	DueFlashcardCount int    `json:"dueFlashcardCount"`
	FlashcardCount    int    `json:"flashcardCount"`
	Encrypted         bool   `json:"encrypted"`
	Unlocked          bool   `json:"unlocked"`
}

func (k *Kernel) nbJSON(b *box, sortIdx int) nbJSON {
	n := 0
	for _, d := range k.docs {
		if d.box == b.id && d.parent == nil {
			n++
		}
	}
	return nbJSON{ID: b.id, Name: b.name, Sort: sortIdx, SortMode: 15, Closed: b.closed, SubFileCount: n}
}

func (k *Kernel) lsNotebooks(_ map[string]any, r *ret) {
	list := []nbJSON{}
	for i := len(k.boxes) - 1; i >= 0; i-- { // newest first
		list = append(list, k.nbJSON(k.boxes[i], len(list)))
	}
	r.Data = map[string]any{"boxDocEnabled": true, "notebooks": list}
}

func (k *Kernel) createBox(name string) *box {
	if name == "" {
		name = "Untitled"
	}
	b := &box{id: k.newID(), name: name, created: k.now()}
	k.boxes = append(k.boxes, b)
	return b
}

func (k *Kernel) findBox(id string) *box {
	for _, b := range k.boxes {
		if b.id == id {
			return b
		}
	}
	return nil
}

func (k *Kernel) createNotebook(arg map[string]any, r *ret) {
	name, ok := arg["name"].(string)
	if !ok {
		r.fail(-1, "Field [name] is required", nil)
		return
	}
	b := k.createBox(name)
	r.Data = map[string]any{"notebook": k.nbJSON(b, 0)}
}

func (k *Kernel) openNotebook(arg map[string]any, r *ret) {
	id := str(arg, "notebook")
	if !validID(id) {
		r.fail(-1, msgInvalidID, nil)
		return
	}
	b := k.findBox(id)
	if b == nil {
		r.fail(-1, "can not open file, just support open folder only", nil)
		return
	}
	b.closed = false
}

func (k *Kernel) closeNotebook(arg map[string]any, r *ret) {
	id := str(arg, "notebook")
	if !validID(id) {
		r.fail(-1, msgInvalidID, nil)
		return
	}
	if b := k.findBox(id); b != nil {
		b.closed = true
	}
}

func (k *Kernel) removeNotebook(arg map[string]any, r *ret) {
	id := str(arg, "notebook")
	if !validID(id) {
		r.fail(-1, msgInvalidID, nil)
		return
	}
	for i, b := range k.boxes {
		if b.id == id {
			k.boxes = append(k.boxes[:i], k.boxes[i+1:]...)
			break
		}
	}
	var keep []*doc
	for _, d := range k.docs {
		if d.box == id {
			k.removed[d.id] = true
		} else {
			keep = append(keep, d)
		}
	}
	k.docs = keep
	k.synced()
}

// ---- documents ----

func (k *Kernel) findDoc(id string) *doc {
	for _, d := range k.docs {
		if d.id == id {
			return d
		}
	}
	return nil
}

// findBlock finds the document holding block id (a child block).
func (k *Kernel) findBlock(id string) (*doc, int) {
	for _, d := range k.docs {
		for i, b := range d.blocks {
			if b.ID == id {
				return d, i
			}
		}
	}
	return nil, -1
}

// openBox is a notebook documents can be read and written in.
func (k *Kernel) openBox(id string) *box {
	b := k.findBox(id)
	if b == nil || b.closed {
		return nil
	}
	return b
}

func (k *Kernel) getIDsByHPath(arg map[string]any, r *ret) {
	nb := str(arg, "notebook") // missing: data null, as recorded
	p := str(arg, "path")
	ids := []string{}
	b := k.openBox(nb)
	if b == nil {
		r.Data = ids
		return
	}
	if p == "/" {
		r.Data = []string{b.id} // boxDocEnabled: the notebook is a document
		return
	}
	for _, d := range k.docs {
		if d.box == nb && d.hpath() == p {
			ids = append(ids, d.id)
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
	if t == "" {
		t = "Untitled"
	}
	return t
}

// createDoc makes a document the way createDocWithMd does: the title is
// path.Base of the path (so a trailing slash repeats the last segment,
// "/" gives "Untitled" and "" gives "."), missing parents become empty
// documents, and an existing document at the path is not reused.
func (k *Kernel) createDoc(boxID, p, markdown string) *doc {
	title := cleanTitle(path.Base(p))
	var parent *doc
	for _, seg := range strings.Split(path.Dir(p), "/") {
		if seg == "" || seg == "." {
			continue
		}
		seg = cleanTitle(seg)
		var found *doc
		for _, d := range k.docs {
			if d.box == boxID && d.parent == parent && d.title == seg {
				found = d
				break
			}
		}
		if found == nil {
			found = k.newDoc(boxID, parent, seg, "")
		}
		parent = found
	}
	return k.newDoc(boxID, parent, title, markdown)
}

func (k *Kernel) newDoc(boxID string, parent *doc, title, markdown string) *doc {
	now := k.now()
	d := &doc{
		id: k.newID(), box: boxID, parent: parent, title: title, markdown: markdown,
		attrs: map[string]string{}, created: now, updated: now,
	}
	d.blocks = k.parseBlocks(markdown)
	k.docs = append(k.docs, d)
	k.synced()
	return d
}

func (k *Kernel) createDocWithMd(arg map[string]any, r *ret) {
	nb := str(arg, "notebook")
	if !validID(nb) {
		r.fail(-1, msgInvalidID, nil)
		return
	}
	p := str(arg, "path")
	md := str(arg, "markdown") // missing: code 0, data null, no document
	if k.openBox(nb) == nil {
		r.fail(-1, "Query notebook failed", nil)
		return
	}
	r.Data = k.createDoc(nb, p, md).id
}

func (k *Kernel) getHPathByID(arg map[string]any, r *ret) {
	id := str(arg, "id")
	if !validID(id) {
		r.fail(-1, msgInvalidID, nil)
		return
	}
	if k.findBox(id) != nil {
		r.Data = "/"
		return
	}
	d := k.findDoc(id)
	if d == nil {
		d, _ = k.findBlock(id)
	}
	switch {
	case d != nil:
		r.Data = d.hpath()
	case k.removed[id]:
		r.fail(-1, "indexing", nil) // right after a removal, until the index settles
	default:
		r.fail(-1, msgTreeNotFound, nil)
	}
}

func (k *Kernel) renameDocByID(arg map[string]any, r *ret) {
	id := str(arg, "id")
	if !validID(id) {
		r.fail(-1, msgInvalidID, nil)
		return
	}
	title := str(arg, "title") // missing: code 0, nothing renamed
	d := k.findDoc(id)
	if d == nil {
		r.fail(-1, msgTreeNotFound, closeTimeout)
		return
	}
	title = strings.ReplaceAll(title, "/", "")
	if utf8.RuneCountInString(title) > maxTitleRunes {
		r.fail(-1, "Maximum length is limited to 512 characters", nil)
		return
	}
	if title == "" {
		title = "Untitled"
	}
	d.title = title
	d.updated = k.now()
	k.synced()
}

func (k *Kernel) removeDocByID(arg map[string]any, r *ret) {
	id := str(arg, "id")
	if !validID(id) {
		r.fail(-1, msgInvalidID, nil)
		return
	}
	d := k.findDoc(id)
	if d == nil {
		r.fail(-1, msgTreeNotFound, closeTimeout)
		return
	}
	k.removeDocTree(d)
}

// removeDocTree removes d and the documents under it.
func (k *Kernel) removeDocTree(d *doc) {
	under := func(x *doc) bool {
		for ; x != nil; x = x.parent {
			if x == d {
				return true
			}
		}
		return false
	}
	var keep []*doc
	for _, x := range k.docs {
		if under(x) {
			k.removed[x.id] = true
		} else {
			keep = append(keep, x)
		}
	}
	k.docs = keep
	k.synced()
}

// removeDoc takes the storage path ("/<id>.sy", "/<parent>/<id>.sy").
func (k *Kernel) removeDoc(arg map[string]any, r *ret) {
	nb := str(arg, "notebook")
	p := str(arg, "path")
	id := strings.TrimSuffix(path.Base(p), ".sy")
	d := k.findDoc(id)
	if d == nil || d.box != nb {
		r.fail(-1, "block not found", nil)
		return
	}
	k.removeDocTree(d)
}

// ---- blocks ----

func (k *Kernel) updateBlock(arg map[string]any, r *ret) {
	id := str(arg, "id")
	if !validID(id) {
		r.fail(-1, msgInvalidID, nil)
		return
	}
	data := str(arg, "data")
	if dt := str(arg, "dataType"); dt != "markdown" {
		r.fail(-1, "siyuantest: updateBlock dataType "+dt+" not supported", nil)
		return
	}
	if d := k.findDoc(id); d != nil {
		// A document id replaces the whole body: one delete per old block,
		// one insert of the new blocks' DOM.
		var ops []operation
		for _, b := range d.blocks {
			op := newOp("delete", b.ID)
			op.Data = map[string]bool{"createEmptyParagraph": false}
			ops = append(ops, op)
		}
		d.markdown = data
		d.blocks = k.parseBlocks(data)
		d.updated = k.now()
		ins := newOp("insert", d.blocks[0].ID)
		ins.Data = blocksDOM(d.blocks, d.updated)
		ins.ParentID = d.id
		r.Data = transactions(append(ops, ins))
		k.synced()
		return
	}
	d, i := k.findBlock(id)
	if d == nil {
		r.fail(-1, "get block failed: "+msgTreeNotFound, nil)
		return
	}
	// A child block is replaced by what the markdown parses to; the first
	// new block keeps the id.
	nb := k.parseBlocks(data)
	nb[0].ID = id
	d.blocks = append(d.blocks[:i], append(nb, d.blocks[i+1:]...)...)
	d.markdown = joinBlocks(d.blocks)
	d.updated = k.now()
	op := newOp("update", id)
	op.Data = blocksDOM(nb, d.updated)
	r.Data = transactions([]operation{op})
	k.synced()
}

func (k *Kernel) appendBlock(arg map[string]any, r *ret) {
	parentID := str(arg, "parentID")
	if !validID(parentID) {
		r.fail(-1, msgInvalidID, nil)
		return
	}
	data := str(arg, "data")
	if dt := str(arg, "dataType"); dt != "markdown" {
		r.fail(-1, "siyuantest: appendBlock dataType "+dt+" not supported", nil)
		return
	}
	d := k.findDoc(parentID)
	if d == nil {
		if x, _ := k.findBlock(parentID); x != nil {
			r.fail(-1, "siyuantest: appendBlock into a child block not supported", nil)
			return
		}
		r.fail(-1, "get block failed: "+msgTreeNotFound, nil)
		return
	}
	prev := d.blocks[len(d.blocks)-1].ID
	nb := k.parseBlocks(data)
	d.blocks = append(d.blocks, nb...)
	if strings.TrimSpace(d.markdown) == "" {
		d.markdown = data
	} else {
		d.markdown = strings.TrimRight(d.markdown, "\n") + "\n\n" + data
	}
	d.updated = k.now()
	op := newOp("insert", nb[0].ID)
	op.Data = blocksDOM(nb, d.updated)
	op.ParentID = d.id
	op.PreviousID = prev
	r.Data = transactions([]operation{op})
	k.synced()
}

// childBlock is an entry of getChildBlocks (subType only for headings).
type childBlock struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	SubType  string `json:"subType,omitempty"`
	Content  string `json:"content"`
	Markdown string `json:"markdown"`
}

func (k *Kernel) getChildBlocks(arg map[string]any, r *ret) {
	id := str(arg, "id")
	if !validID(id) {
		r.fail(-1, msgInvalidID, nil)
		return
	}
	out := []childBlock{}
	if d := k.findDoc(id); d != nil {
		for _, b := range d.blocks {
			out = append(out, childBlock(b))
		}
	}
	r.Data = out
}

func (k *Kernel) exportMdContent(arg map[string]any, r *ret) {
	id := str(arg, "id")
	if !validID(id) {
		r.fail(-1, msgInvalidID, nil)
		return
	}
	yfm := boolOr(arg, "yfm", true)
	addTitle := boolOr(arg, "addTitle", true)
	d := k.findDoc(id)
	if d == nil {
		r.Data = map[string]string{"content": "", "hPath": ""}
		return
	}
	var sb strings.Builder
	if yfm {
		fmt.Fprintf(&sb, "---\ntitle: %s\ndate: %s\nlastmod: %s\n---\n\n", d.title,
			d.created.Format("2006-01-02T15:04:05Z07:00"), d.updated.Format("2006-01-02T15:04:05Z07:00"))
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

func (k *Kernel) setBlockAttrs(arg map[string]any, r *ret) {
	id := str(arg, "id")
	if !validID(id) {
		r.fail(-1, msgInvalidID, nil)
		return
	}
	raw, ok := arg["attrs"].(map[string]any)
	if !ok {
		panic(missingField{"attrs"})
	}
	names := make([]string, 0, len(raw))
	for n := range raw {
		names = append(names, n)
	}
	sort.Strings(names)
	attrs := map[string]string{}
	for _, n := range names {
		switch v := raw[n].(type) {
		case nil:
			attrs[n] = ""
		case string:
			attrs[n] = v
		default:
			r.fail(-1, fmt.Sprintf("the value of attr [%s] must be a string", n), nil)
			return
		}
	}
	d := k.findDoc(id)
	if d == nil {
		r.fail(-1, msgTreeNotFound, nil)
		return
	}
	// The whole call is refused when one name is bad; upper case is
	// lowered silently.
	set := map[string]string{}
	for _, n := range names {
		ln := strings.ToLower(n)
		if !attrName.MatchString(ln) {
			r.fail(-1, "The attribute name can only contain lowercase English letters, digits, and hyphens, and must start with a lowercase English letter ["+id+"]", nil)
			return
		}
		set[ln] = attrs[n]
	}
	for n, v := range set {
		switch {
		case n == "id" || n == "updated" || n == "type":
			// kept by the kernel
		case n == "title":
			if v != "" {
				d.title = cleanTitle(v)
			}
		case v == "":
			delete(d.attrs, n)
		default:
			d.attrs[n] = v
		}
	}
	d.updated = k.now()
	k.synced()
}

func (k *Kernel) getBlockAttrs(arg map[string]any, r *ret) {
	id := str(arg, "id")
	if !validID(id) {
		r.fail(-1, msgInvalidID, nil)
		return
	}
	out := map[string]string{}
	if d := k.findDoc(id); d != nil {
		for n, v := range d.attrs {
			out[n] = v
		}
		out["id"], out["title"], out["type"], out["updated"] = d.id, d.title, "doc", d.updated.Format(tsLayout)
	} else if d, _ := k.findBlock(id); d != nil {
		out["id"], out["updated"] = id, d.updated.Format(tsLayout)
	}
	r.Data = out
}

const tsLayout = "20060102150405"

// ---- assets ----

func (k *Kernel) upload(arg map[string]any, r *ret) {
	req := arg["_req"].(*http.Request)
	body := arg["_body"].([]byte)
	mt, params, err := mime.ParseMediaType(req.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		r.fail(-1, "request Content-Type isn't multipart/form-data", nil)
		return
	}
	form, err := multipart.NewReader(bytes.NewReader(body), params["boundary"]).ReadForm(64 << 20)
	if err != nil {
		r.fail(-1, "siyuantest: read multipart form: "+err.Error(), nil)
		return
	}
	defer func() { _ = form.RemoveAll() }()
	dir := "assets"
	if v := form.Value["assetsDirPath"]; len(v) > 0 && v[0] != "" {
		abs := path.Join(workspaceDataDir, v[0])
		if !strings.HasPrefix(abs+"/", path.Dir(workspaceDataDir)+"/") {
			r.fail(-1, "Path ["+abs+"] is not in workspace", nil)
			return
		}
		if rel := strings.TrimPrefix(abs, workspaceDataDir+"/"); rel != abs && strings.HasPrefix(rel+"/", "assets/") {
			dir = rel
		}
	}
	succ := map[string]string{}
	for _, fh := range form.File["file[]"] {
		f, err := fh.Open()
		if err != nil {
			continue
		}
		var buf bytes.Buffer
		_, _ = buf.ReadFrom(f)
		_ = f.Close()
		succ[fh.Filename] = k.storeAsset(dir, fh.Filename, buf.Bytes())
	}
	r.Data = struct {
		ErrFiles []string          `json:"errFiles"`
		SuccMap  map[string]string `json:"succMap"`
	}{nil, succ}
}

// uploadNameDrop are the characters SiYuan drops from an uploaded file's
// name (brackets and what file systems refuse); spaces are kept.
const uploadNameDrop = `()[]{}<>\/:*?"|`

func (k *Kernel) storeAsset(dir, name string, data []byte) string {
	for _, a := range k.assets {
		if a.Name == name && path.Dir(a.Path) == dir && bytes.Equal(a.Data, data) {
			return a.Path // same name, same content: the existing asset
		}
	}
	clean := strings.Map(func(c rune) rune {
		if strings.ContainsRune(uploadNameDrop, c) {
			return -1
		}
		return c
	}, name)
	ext := path.Ext(clean)
	p := dir + "/" + strings.TrimSuffix(clean, ext) + "-" + k.newID() + ext
	k.assets = append(k.assets, &Asset{Name: name, Path: p, Data: bytes.Clone(data)})
	return p
}

func (k *Kernel) serveAsset(p string) (int, any) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, a := range k.assets {
		if a.Path == p {
			ct := mime.TypeByExtension(path.Ext(p))
			if ct == "" {
				ct = "application/octet-stream"
			}
			return http.StatusOK, rawAnswer{contentType: ct, data: bytes.Clone(a.Data)}
		}
	}
	return http.StatusNotFound, nil
}
