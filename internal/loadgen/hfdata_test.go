package loadgen

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// hfStrings is a one-batch record of string columns.
func hfStrings(cols map[string][]string) arrow.RecordBatch {
	var fields []arrow.Field
	var arrs []arrow.Array
	names := make([]string, 0, len(cols))
	for k := range cols {
		names = append(names, k)
	}
	slices.Sort(names)
	n := 0
	for _, k := range names {
		b := array.NewStringBuilder(memory.DefaultAllocator)
		b.AppendValues(cols[k], nil)
		fields = append(fields, arrow.Field{Name: k, Type: arrow.BinaryTypes.String, Nullable: true})
		arrs = append(arrs, b.NewArray())
		n = len(cols[k])
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), arrs, int64(n))
}

// hfConversations is a one-batch record of a messages column
// (list<struct<role, content>>), the datasets library's shape of OpenAI's
// conversations.
func hfConversations(convs [][][2]string) arrow.RecordBatch {
	msg := arrow.StructOf(arrow.Field{Name: "role", Type: arrow.BinaryTypes.String}, arrow.Field{Name: "content", Type: arrow.BinaryTypes.String})
	lb := array.NewListBuilder(memory.DefaultAllocator, msg)
	sb := lb.ValueBuilder().(*array.StructBuilder)
	for _, c := range convs {
		lb.Append(true)
		for _, m := range c {
			sb.Append(true)
			sb.FieldBuilder(0).(*array.StringBuilder).Append(m[0])
			sb.FieldBuilder(1).(*array.StringBuilder).Append(m[1])
		}
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: "messages", Type: arrow.ListOf(msg)}}, nil)
	return array.NewRecordBatch(schema, []arrow.Array{lb.NewArray()}, int64(len(convs)))
}

func writeParquet(t *testing.T, path string, rec arrow.RecordBatch) {
	t.Helper()
	os.MkdirAll(filepath.Dir(path), 0o755)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tbl := array.NewTableFromRecords(rec.Schema(), []arrow.RecordBatch{rec})
	if err := pqarrow.WriteTable(tbl, f, 1024, nil, pqarrow.DefaultWriterProps()); err != nil {
		t.Fatal(err)
	}
}

func writeArrowStream(t *testing.T, path string, rec arrow.RecordBatch) {
	t.Helper()
	os.MkdirAll(filepath.Dir(path), 0o755)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := ipc.NewWriter(f, ipc.WithSchema(rec.Schema()))
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	w.Close()
}

func writeText(t *testing.T, path, s string) {
	t.Helper()
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestHFLayouts: a Hugging Face dataset read offline from each layout it
// lies on disk in, made for the test: a downloaded repository of Parquet
// shards (data/train-00000-of-00002.parquet, the split in the name, a
// "text" column found without naming it), the hub cache's entry
// (datasets--org--name: refs/main names the snapshot), JSONL shards in
// split folders with ShareGPT conversations (the first human turn), and
// the datasets library's cache (Arrow stream files <name>-<split>.arrow,
// an OpenAI messages column); only the split asked for is read.
func TestHFLayouts(t *testing.T) {
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	writeParquet(t, filepath.Join(repo, "data", "train-00000-of-00002.parquet"), hfStrings(map[string][]string{"id": {"1", "2"}, "text": {"a cat", "a dog"}}))
	writeParquet(t, filepath.Join(repo, "data", "train-00001-of-00002.parquet"), hfStrings(map[string][]string{"id": {"3"}, "text": {"a cow"}}))
	writeParquet(t, filepath.Join(repo, "data", "test-00000-of-00001.parquet"), hfStrings(map[string][]string{"id": {"4"}, "text": {"a test"}}))
	writeText(t, filepath.Join(repo, "README.md"), "---\nlicense: mit\n---\n")

	hub := filepath.Join(dir, "hub", "datasets--org--tiny")
	writeText(t, filepath.Join(hub, "refs", "main"), "abc123\n")
	writeParquet(t, filepath.Join(hub, "snapshots", "abc123", "data", "validation-00000-of-00001.parquet"), hfStrings(map[string][]string{"question": {"why?", "how?"}}))
	writeParquet(t, filepath.Join(hub, "snapshots", "old999", "data", "validation-00000-of-00001.parquet"), hfStrings(map[string][]string{"question": {"stale"}}))

	jsonl := filepath.Join(dir, "jsonl")
	writeText(t, filepath.Join(jsonl, "train", "part-0.jsonl"), `{"conversations": [{"from": "system", "value": "be brief"}, {"from": "human", "value": "hello"}, {"from": "gpt", "value": "hi"}]}
{"conversations": [{"from": "gpt", "value": "no human turn"}]}

{"conversations": [{"from": "human", "value": "bye"}]}
`)
	writeText(t, filepath.Join(jsonl, "test", "part-0.jsonl"), `{"conversations": [{"from": "human", "value": "not this"}]}`+"\n")

	cache := filepath.Join(dir, "datasets", "org___chats", "default", "0.0.0", "f00d")
	writeArrowStream(t, filepath.Join(cache, "chats-train.arrow"), hfConversations([][][2]string{{{"system", "s"}, {"user", "first"}, {"assistant", "a"}}, {{"user", "second"}}}))
	writeArrowStream(t, filepath.Join(cache, "chats-test-00000-of-00001.arrow"), hfConversations([][][2]string{{{"user", "test only"}}}))
	writeText(t, filepath.Join(cache, "dataset_info.json"), "{}")

	for _, tc := range []struct {
		path, split, field string
		want               []string
	}{
		{repo, "", "", []string{"a cat", "a dog", "a cow"}},
		{repo, "test", "", []string{"a test"}},
		{repo, "train", "id", []string{"1", "2", "3"}},
		{hub, "validation", "", []string{"why?", "how?"}},
		{jsonl, "train", "", []string{"hello", "bye"}},
		{filepath.Join(dir, "datasets", "org___chats"), "train", "", []string{"first", "second"}},
		{filepath.Join(dir, "datasets", "org___chats"), "test", "messages", []string{"test only"}},
	} {
		got, err := LoadDataset(DatasetSpec{Path: tc.path, Format: FormatHF, Split: tc.split, Field: tc.field})
		if err != nil {
			t.Errorf("%s split %q: %v", tc.path, tc.split, err)
			continue
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s split %q field %q: %q, want %q", tc.path, tc.split, tc.field, got, tc.want)
		}
	}
}

// TestHFErrors: what cannot be read is refused with the file and the
// line (JSONL) or row (Parquet, Arrow), or what is missing.
func TestHFErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad")
	writeText(t, filepath.Join(bad, "train.jsonl"), "{\"text\": \"ok\"}\n{\"text\": \"cut\n")
	nums := filepath.Join(dir, "nums")
	b := array.NewInt64Builder(memory.DefaultAllocator)
	b.AppendValues([]int64{1, 2}, nil)
	writeParquet(t, filepath.Join(nums, "train-00000-of-00001.parquet"), array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "prompt", Type: arrow.PrimitiveTypes.Int64}}, nil), []arrow.Array{b.NewArray()}, 2))
	junk := filepath.Join(dir, "junk")
	writeText(t, filepath.Join(junk, "data", "train-00000-of-00001.parquet"), "not parquet")
	for _, tc := range []struct{ path, split, field, want string }{
		{bad, "", "", filepath.Join(bad, "train.jsonl") + ":2: not a JSON object"},
		{bad, "", "body", `train.jsonl:1: no column "body" (the columns: text): set dataset.field`},
		{bad, "test", "", `no Parquet, JSONL or Arrow shard of split "test" (splits found: train)`},
		{nums, "", "", "train-00000-of-00001.parquet: row 1: column \"prompt\": 1: want a string or a conversation"},
		{junk, "", "", "train-00000-of-00001.parquet: not a Parquet file Arrow can read"},
		{filepath.Join(dir, "missing"), "", "", "no such file or directory"},
	} {
		_, err := LoadDataset(DatasetSpec{Path: tc.path, Format: FormatHF, Split: tc.split, Field: tc.field})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.path, err, tc.want)
		}
	}
}
