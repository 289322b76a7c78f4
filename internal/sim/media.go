package sim

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	_ "image/jpeg" // chat images may be JPEG
	_ "image/png"  // ... or PNG
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The simulator's price of media, in prompt tokens (docs/SIM.md, "Media"):
// an image costs one token per 28×28 pixel tile (Qwen2-VL's 14-pixel
// patches merged 2×2), ceil(W/28) × ceil(H/28); a 512×512 image is 361.
// The tokens join the prompt (usage.prompt_tokens, the context, engine
// mode's prefill) and, in fixed mode, add MediaTokenTime each to TTFT.
const imageTile = 28

// imageTokens is what an image of w×h pixels costs.
func imageTokens(w, h int) int {
	return ((w + imageTile - 1) / imageTile) * ((h + imageTile - 1) / imageTile)
}

// chatMedia finds the image parts of chat messages
// ({"type":"image_url","image_url":{"url":"data:image/png;base64,..."}})
// and returns the prompt token ids they stand for: derived from each
// image's bytes, so the prompt cache hits on a repeated image and never
// on two different ones of one size (as vLLM hashes image content).
func chatMedia(raws []json.RawMessage) ([]int, error) {
	var ids []int
	for i, raw := range raws {
		var m struct {
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(raw, &m) != nil || len(m.Content) == 0 || m.Content[0] != '[' {
			continue
		}
		var parts []struct {
			Type     string `json:"type"`
			ImageURL struct {
				URL string `json:"url"`
			} `json:"image_url"`
		}
		if json.Unmarshal(m.Content, &parts) != nil {
			continue // parseMessages reports it
		}
		for k, p := range parts {
			if p.Type != "image_url" {
				continue
			}
			w, h, sum, err := decodeImageURL(p.ImageURL.URL)
			if err != nil {
				return nil, fmt.Errorf("messages[%d].content[%d]: %w", i, k, err)
			}
			n := imageTokens(w, h)
			for t := 0; t < n; t++ {
				ids = append(ids, 1000+int(mix(sum+uint64(t))%30000))
			}
		}
	}
	return ids, nil
}

// decodeImageURL reads a data URI's image size and a hash of its bytes.
func decodeImageURL(url string) (w, h int, sum uint64, err error) {
	meta, data, ok := strings.Cut(url, ",")
	if !ok || !strings.HasPrefix(meta, "data:image/") || !strings.HasSuffix(meta, ";base64") {
		return 0, 0, 0, errors.New("the simulator takes images as data URIs (data:image/png;base64,...) only")
	}
	raw, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("image data URI: %w", err)
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(raw))
	if err != nil {
		return 0, 0, 0, fmt.Errorf("image: %w", err)
	}
	sum = 0xcbf29ce484222325
	for _, b := range raw {
		sum = (sum ^ uint64(b)) * 1099511628211
	}
	return cfg.Width, cfg.Height, sum, nil
}

// wavSeconds reads a WAV file's duration from its fmt and data chunks.
func wavSeconds(b []byte) (float64, error) {
	if len(b) < 12 || string(b[:4]) != "RIFF" || string(b[8:12]) != "WAVE" {
		return 0, errors.New("not a WAV file (no RIFF/WAVE header)")
	}
	var byteRate uint32
	for off := 12; off+8 <= len(b); {
		id, size := string(b[off:off+4]), int(binary.LittleEndian.Uint32(b[off+4:]))
		body := off + 8
		switch id {
		case "fmt ":
			if size < 16 || body+16 > len(b) {
				return 0, errors.New("WAV fmt chunk too short")
			}
			byteRate = binary.LittleEndian.Uint32(b[body+8:])
		case "data":
			if byteRate == 0 {
				return 0, errors.New("WAV data before its fmt chunk")
			}
			size = min(size, len(b)-body) // a streamed WAV may say 0xffffffff
			return float64(size) / float64(byteRate), nil
		}
		off = body + size + size%2
	}
	return 0, errors.New("WAV file without a data chunk")
}

// handleTranscriptions is OpenAI's /v1/audio/transcriptions: a multipart
// form with the audio as `file` (WAV here) and `model`. The text comes
// after TTFT + seconds × AudioSecondTime, so a client's real-time factor
// is known exactly; usage is whisper's {"type":"duration","seconds":N}.
func (s *Server) handleTranscriptions(w http.ResponseWriter, r *http.Request) {
	received := arrivalOf(r, time.Now())
	n := s.seq.Add(1)
	rec := &record{base: s.started, r: RequestRecord{
		Seq: n, ID: "trsc-" + strconv.FormatUint(n, 10), Endpoint: "transcriptions",
		Received: received, ReceivedUnixNano: s.unixNano(received), RemoteAddr: r.RemoteAddr,
	}}
	s.records.add(rec)
	fail := func(status int, typ, msg string) {
		s.metrics.errors.Add(1)
		rec.update(func(r *RequestRecord) { r.Status, r.Error, r.Finished = status, msg, time.Now() })
		s.writeErr(w, status, typ, msg)
	}
	r.Body = http.MaxBytesReader(w, r.Body, 256<<20)
	if err := r.ParseMultipartForm(32 << 20); err != nil {
		fail(http.StatusBadRequest, "BadRequestError", "want a multipart form with the audio as file: "+err.Error())
		return
	}
	defer func() { _ = r.MultipartForm.RemoveAll() }()
	model, ok := s.resolveModel(w, r.FormValue("model"))
	if !ok {
		rec.update(func(r *RequestRecord) { r.Status, r.Finished = http.StatusNotFound, time.Now() })
		return
	}
	file, _, err := r.FormFile("file")
	if err != nil {
		fail(http.StatusBadRequest, "BadRequestError", "file is required: "+err.Error())
		return
	}
	var buf bytes.Buffer
	_, err = buf.ReadFrom(file)
	file.Close()
	if err != nil {
		fail(http.StatusBadRequest, "BadRequestError", "reading file: "+err.Error())
		return
	}
	secs, err := wavSeconds(buf.Bytes())
	if err != nil {
		fail(http.StatusBadRequest, "BadRequestError", err.Error())
		return
	}
	f, err := s.pickFaults(r, n)
	if err != nil {
		fail(http.StatusBadRequest, "BadRequestError", err.Error())
		return
	}
	rec.update(func(r *RequestRecord) { r.Model, r.Fault = model, f.String() })
	if s.faultBeforeAnswer(w, r, rec, false, f, fail) {
		return
	}
	start := received
	if at := s.modelReady(); at.After(received) {
		start = at
	}
	cost := s.cfg.TTFT + time.Duration(secs*float64(s.cfg.AudioSecondTime))
	if d := time.Until(start.Add(cost)); d > 0 && !s.sleep(r.Context(), d) {
		s.finishAbort(rec, "client gone or shutdown")
		s.abortIfClosing()
		return
	}
	// About 2.5 words a second of speech.
	words := max(1, int(math.Round(secs*2.5)))
	text := make([]string, words)
	for i := range text {
		text[i] = "word" + strconv.Itoa(int(mix(s.seedHash+uint64(n)<<20+uint64(i))%1000))
	}
	now := time.Now()
	var body []byte
	if r.FormValue("response_format") == "text" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		body = []byte(strings.Join(text, " ") + "\n")
	} else {
		w.Header().Set("Content-Type", "application/json")
		body, _ = json.Marshal(map[string]any{"text": strings.Join(text, " "),
			"usage": map[string]any{"type": "duration", "seconds": math.Ceil(secs)}})
	}
	w.WriteHeader(http.StatusOK)
	_, werr := w.Write(body)
	s.metrics.e2e.observe(now.Sub(received))
	rec.addEvent(now, 0)
	rec.update(func(r *RequestRecord) {
		r.Status, r.FinishReason, r.Finished = http.StatusOK, "stop", now
		if werr != nil {
			r.Error = werr.Error()
		}
	})
}
