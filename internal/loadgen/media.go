package loadgen

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"mime/multipart"
	"net/textproto"
	"strings"
	"time"
)

// PNG is a deterministic w×h image for seed: a gradient with seeded
// blocks of colour, so that two seeds give different bytes (a server that
// caches images by content sees distinct ones) and it compresses well
// enough to be cheap to send.
func PNG(w, h int, seed uint64) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	r0, g0, b0 := uint8(splitmix(seed)), uint8(splitmix(seed+1)), uint8(splitmix(seed+2))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			cell := splitmix(seed ^ uint64(x/32)<<20 ^ uint64(y/32))
			img.Pix[img.PixOffset(x, y)+0] = r0 + uint8(x*255/max(w, 1))
			img.Pix[img.PixOffset(x, y)+1] = g0 + uint8(y*255/max(h, 1))
			img.Pix[img.PixOffset(x, y)+2] = b0 + uint8(cell)
			img.Pix[img.PixOffset(x, y)+3] = 255
		}
	}
	img.Set(0, 0, color.NRGBA{uint8(seed), uint8(seed >> 8), uint8(seed >> 16), 255})
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	_ = enc.Encode(&buf, img) // writing to memory cannot fail
	return buf.Bytes()
}

// ImageDataURI is PNG(w, h, seed) as a data URI for a chat content part.
func ImageDataURI(w, h int, seed uint64) string {
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(PNG(w, h, seed))
}

// ParseResolution reads "WxH" (512x512).
func ParseResolution(s string) (w, h int, err error) {
	if _, err := fmt.Sscanf(strings.ToLower(s), "%dx%d", &w, &h); err != nil || w < 1 || h < 1 || w > 16384 || h > 16384 {
		return 0, 0, fmt.Errorf("resolution %q: want WxH, such as 512x512, each side 1..16384", s)
	}
	return w, h, nil
}

// WAVRate is the sample rate of generated audio: 16 kHz mono 16-bit, what
// speech models (Whisper) resample everything to anyway.
const WAVRate = 16000

// WAV is deterministic audio of the given length for seed: a gliding tone
// with a little noise, as a 16 kHz mono 16-bit PCM WAV file.
func WAV(seconds float64, seed uint64) []byte {
	n := int(math.Round(seconds * WAVRate))
	var buf bytes.Buffer
	buf.Grow(44 + 2*n)
	le := func(v any) { _ = binary.Write(&buf, binary.LittleEndian, v) }
	buf.WriteString("RIFF")
	le(uint32(36 + 2*n))
	buf.WriteString("WAVEfmt ")
	le(uint32(16))
	le(uint16(1)) // PCM
	le(uint16(1)) // mono
	le(uint32(WAVRate))
	le(uint32(2 * WAVRate)) // byte rate
	le(uint16(2))           // block align
	le(uint16(16))          // bits per sample
	buf.WriteString("data")
	le(uint32(2 * n))
	f0 := 180 + float64(splitmix(seed)%200)
	samples := make([]byte, 2*n)
	for i := 0; i < n; i++ {
		t := float64(i) / WAVRate
		x := 0.4*math.Sin(2*math.Pi*(f0+20*math.Sin(t))*t) + 0.02*(float64(splitmix(seed+uint64(i))%2001)/1000-1)
		binary.LittleEndian.PutUint16(samples[2*i:], uint16(int16(x*32767)))
	}
	buf.Write(samples)
	return buf.Bytes()
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// multipartBody is OpenAI's transcription upload: model, response_format
// json, the extra body fields as form fields, and the audio as file.
func (t *Target) multipartBody(req Request) ([]byte, string, error) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fields := map[string]any{"model": t.Model, "response_format": "json"}
	for k, v := range t.ExtraBody {
		fields[k] = v
	}
	for k, v := range req.Body {
		fields[k] = v
	}
	for k, v := range fields {
		s, ok := v.(string)
		if !ok {
			b, err := json.Marshal(v)
			if err != nil {
				return nil, "", fmt.Errorf("form field %s: %w", k, err)
			}
			s = string(b)
		}
		if err := mw.WriteField(k, s); err != nil {
			return nil, "", err
		}
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="file"; filename="audio.wav"`)
	h.Set("Content-Type", "audio/wav")
	part, err := mw.CreatePart(h)
	if err != nil {
		return nil, "", err
	}
	if _, err := part.Write(req.Audio); err != nil {
		return nil, "", err
	}
	if err := mw.Close(); err != nil {
		return nil, "", err
	}
	return buf.Bytes(), mw.FormDataContentType(), nil
}

// readTranscription reads {"text": ...} (or plain text): one event, at
// the body's arrival, since a transcription has no tokens to time.
func readTranscription(b []byte, at time.Time, res *Result) error {
	text := strings.TrimSpace(string(b))
	if strings.HasPrefix(text, "{") {
		var body struct {
			Text  *string         `json:"text"`
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(b, &body); err != nil {
			return fmt.Errorf("malformed transcription response: %w (body %q)", err, truncate(b, 80))
		}
		if len(body.Error) > 0 && string(body.Error) != "null" {
			return &StreamError{Message: errorMessage(b)}
		}
		if body.Text == nil {
			return fmt.Errorf("transcription response without text: %q", truncate(b, 80))
		}
		text = *body.Text
	}
	res.OutputTokens = len(strings.Fields(text))
	res.Tokens = append(res.Tokens, TokenEvent{At: at, Tokens: max(res.OutputTokens, 1)})
	return nil
}
