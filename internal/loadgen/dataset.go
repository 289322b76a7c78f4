package loadgen

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Dataset formats.
const (
	FormatShareGPT = "sharegpt" // a JSON array of {"conversations":[{"from":"human","value":...},...]}
	FormatJSONL    = "jsonl"    // one JSON object per line; Field names the prompt
	FormatText     = "text"     // a folder or glob of text documents, one prompt each
	// FormatConversations is multi-turn conversations, one JSON object per
	// line (or a JSON array of them, as a ShareGPT file): ShareGPT's
	// {"conversations":[{"from":"human","value":...},{"from":"gpt",...},...]}
	// or OpenAI's {"messages":[{"role":"user","content":...},...]}. A
	// session sends the human (user) turns in order; the dataset's answers
	// are not sent, the server's own are (Conversation).
	FormatConversations = "conversations"
)

// DatasetSpec names prompts on disk.
type DatasetSpec struct {
	// Path is a file, a folder, or a glob (docs/*.md).
	Path string
	// Format is sharegpt, jsonl or text; empty infers it from Path
	// (.json: sharegpt, .jsonl: jsonl, anything else: text).
	Format string
	// Field is the JSONL field holding the prompt (default "prompt").
	Field string
	// Limit keeps at most this many prompts, sampled with Seed (0: all).
	Limit int
	Seed  uint64
	// Split is a Hugging Face dataset's split (FormatHF; default "train").
	Split string
}

// LoadDataset reads the prompts. Errors say which file and line is wrong.
func LoadDataset(spec DatasetSpec) ([]string, error) {
	format := spec.Format
	if format == "" {
		format = InferFormat(spec.Path)
	}
	var prompts []string
	var err error
	switch format {
	case FormatShareGPT:
		prompts, err = loadShareGPT(spec.Path)
	case FormatJSONL:
		field := spec.Field
		if field == "" {
			field = "prompt"
		}
		prompts, err = loadJSONL(spec.Path, field)
	case FormatText:
		prompts, err = loadText(spec.Path)
	case FormatConversations:
		return nil, fmt.Errorf("dataset %s: a conversations dataset is read by LoadConversations", spec.Path)
	case FormatTools:
		prompts, _, err = LoadToolCases(spec.Path)
	case FormatHF:
		prompts, err = loadHF(spec)
	default:
		return nil, fmt.Errorf("dataset %s: format %q: want sharegpt, jsonl, text, conversations or hf", spec.Path, format)
	}
	if err != nil {
		return nil, err
	}
	if len(prompts) == 0 {
		return nil, fmt.Errorf("dataset %s: no prompts found (format %s)", spec.Path, format)
	}
	if spec.Limit > 0 && spec.Limit < len(prompts) {
		rng := rand.New(rand.NewPCG(spec.Seed, 0xda7a))
		rng.Shuffle(len(prompts), func(i, j int) { prompts[i], prompts[j] = prompts[j], prompts[i] })
		prompts = prompts[:spec.Limit]
	}
	return prompts, nil
}

func loadShareGPT(path string) ([]string, error) {
	b, err := readInput(path, "dataset")
	if err != nil {
		return nil, err
	}
	var convs []struct {
		Conversations []struct {
			From  string `json:"from"`
			Value string `json:"value"`
		} `json:"conversations"`
	}
	if err := json.Unmarshal(b, &convs); err != nil {
		return nil, fmt.Errorf("dataset %s: not a ShareGPT JSON array: %w", path, err)
	}
	var out []string
	for _, c := range convs {
		// The first human turn is the prompt (as vLLM's sharegpt loader).
		for _, turn := range c.Conversations {
			if (turn.From == "human" || turn.From == "user") && strings.TrimSpace(turn.Value) != "" {
				out = append(out, turn.Value)
				break
			}
		}
	}
	return out, nil
}

func loadJSONL(path, field string) ([]string, error) {
	f, err := openInput(path, "dataset")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 256<<20)
	var out []string
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(b, &obj); err != nil {
			return nil, fmt.Errorf("dataset %s:%d: not a JSON object: %w", path, line, err)
		}
		raw, ok := obj[field]
		if !ok {
			return nil, fmt.Errorf("dataset %s:%d: no field %q (set the dataset's field)", path, line, field)
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("dataset %s:%d: field %q is not a string", path, line, field)
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("dataset %s: %w", path, err)
	}
	return out, nil
}

func loadText(path string) ([]string, error) {
	var files []string
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		entries, err := os.ReadDir(path)
		if err != nil {
			return nil, fmt.Errorf("dataset: %w", err)
		}
		for _, e := range entries {
			if e.Type().IsRegular() {
				files = append(files, filepath.Join(path, e.Name()))
			}
		}
	} else if err == nil {
		files = []string{path}
	} else {
		m, gerr := filepath.Glob(path)
		if gerr != nil {
			return nil, fmt.Errorf("dataset %s: bad glob: %w", path, gerr)
		}
		if len(m) == 0 {
			return nil, fmt.Errorf("dataset %s: no such file, folder or matching files", path)
		}
		files = m
	}
	sort.Strings(files)
	var out []string
	for _, f := range files {
		b, err := readInput(f, "dataset")
		if err != nil {
			return nil, err
		}
		if s := strings.TrimSpace(string(b)); s != "" {
			out = append(out, s)
		}
	}
	return out, nil
}

// LoadReferenceVectors reads a JSONL file's reference embeddings: for each
// line with both fields, the text in field and its vector (an array of
// numbers) in vectorField, keyed by the text. Lines without a vector are
// skipped; none at all gives nil.
func LoadReferenceVectors(path, field, vectorField string) (map[string][]float32, error) {
	b, err := readInput(path, "reference vectors")
	if err != nil {
		return nil, err
	}
	var out map[string][]float32
	for n, line := range bytes.Split(b, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(line, &obj); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n+1, err)
		}
		var text string
		var vec []float32
		if json.Unmarshal(obj[field], &text) != nil || len(obj[vectorField]) == 0 {
			continue
		}
		if err := json.Unmarshal(obj[vectorField], &vec); err != nil {
			return nil, fmt.Errorf("%s:%d: field %s: %w", path, n+1, vectorField, err)
		}
		if out == nil {
			out = map[string][]float32{}
		}
		out[text] = vec
	}
	return out, nil
}

// LoadConversations reads a conversations dataset (FormatConversations):
// the human turns of each conversation that has any. Errors say which file
// and line is wrong.
func LoadConversations(spec DatasetSpec) ([][]string, error) {
	b, err := readInput(spec.Path, "dataset")
	if err != nil {
		return nil, err
	}
	type turn struct {
		From    string `json:"from"`
		Value   string `json:"value"`
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	type conversation struct {
		Conversations []turn `json:"conversations"`
		Messages      []turn `json:"messages"`
	}
	var convs []conversation
	var lines []int // the line of each conversation (JSONL)
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '[' {
		if err := json.Unmarshal(t, &convs); err != nil {
			return nil, fmt.Errorf("dataset %s: not a JSON array of conversations: %w", spec.Path, err)
		}
	} else {
		for n, line := range bytes.Split(b, []byte("\n")) {
			line = bytes.TrimSpace(line)
			if len(line) == 0 {
				continue
			}
			var c conversation
			if err := json.Unmarshal(line, &c); err != nil {
				return nil, fmt.Errorf("dataset %s:%d: not a JSON object: %w", spec.Path, n+1, err)
			}
			convs = append(convs, c)
			lines = append(lines, n+1)
		}
	}
	var out [][]string
	for i, c := range convs {
		turns := c.Conversations
		if len(turns) == 0 {
			turns = c.Messages
		}
		if len(turns) == 0 && lines != nil {
			return nil, fmt.Errorf("dataset %s:%d: no \"conversations\" or \"messages\" list", spec.Path, lines[i])
		}
		var human []string
		for _, t := range turns {
			who, text := t.From, t.Value
			if who == "" {
				who, text = t.Role, t.Content
			}
			if (who == "human" || who == "user") && strings.TrimSpace(text) != "" {
				human = append(human, text)
			}
		}
		if len(human) > 0 {
			out = append(out, human)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("dataset %s: no conversation with a human turn (format conversations)", spec.Path)
	}
	if spec.Limit > 0 && spec.Limit < len(out) {
		rng := rand.New(rand.NewPCG(spec.Seed, 0xda7a))
		rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
		out = out[:spec.Limit]
	}
	return out, nil
}

// InferFormat is the dataset format a path without one is read as:
// .jsonl is jsonl, .json sharegpt, anything else text (a trace is never
// inferred: its format is always given).
func InferFormat(path string) string {
	switch {
	case strings.HasSuffix(path, ".jsonl"):
		return FormatJSONL
	case strings.HasSuffix(path, ".json"):
		return FormatShareGPT
	default:
		return FormatText
	}
}
