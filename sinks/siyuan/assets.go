package siyuan

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/benchrun/benchrun/internal/chart"
	"github.com/benchrun/benchrun/internal/redact"
	"github.com/benchrun/benchrun/internal/rundir"
)

// assetsFile is the sink's record of the charts it uploaded, in the run
// directory: per kernel, per asset name, the content's sha256 and the
// path the kernel answered. A post that fails part way (the kernel died
// or erred after some uploads) is tried again, by the pipeline's retry or
// by `benchrun post RUN_DIR` later, and each try renders the same charts:
// without the record every try uploaded them all again, and what the
// kernel's own "same name, same content: the existing asset" did not
// catch stayed behind as assets no document shows (issue 46: 16 orphaned
// assets after a post the kernel died in). The record is the sink's own
// file, read back only by the sink.
const assetsFile = "siyuan-assets.json"

// assetLog is assetsFile's content.
type assetLog struct {
	// Kernels maps a kernel (kernelKey) to its assets by the name the
	// sink uploaded them under.
	Kernels map[string]map[string]assetRecord `json:"kernels"`
}

// assetRecord is one uploaded chart.
type assetRecord struct {
	SHA256 string `json:"sha256"`
	Path   string `json:"path"`
}

// lookup is the path recorded for name on kernel when its content still
// hashes to sum: a chart drawn differently since (more cells measured, a
// resumed run) is a new asset and is uploaded.
func (l *assetLog) lookup(kernel, name, sum string) (string, bool) {
	r, ok := l.Kernels[kernel][name]
	if !ok || r.SHA256 != sum || r.Path == "" {
		return "", false
	}
	return r.Path, true
}

func (l *assetLog) put(kernel, name, sum, path string) {
	if l.Kernels == nil {
		l.Kernels = map[string]map[string]assetRecord{}
	}
	if l.Kernels[kernel] == nil {
		l.Kernels[kernel] = map[string]assetRecord{}
	}
	l.Kernels[kernel][name] = assetRecord{SHA256: sum, Path: path}
}

// readAssetLog reads the record in dir; none yet is an empty one.
func readAssetLog(dir string) (assetLog, error) {
	var l assetLog
	b, err := os.ReadFile(filepath.Join(dir, assetsFile))
	if errors.Is(err, fs.ErrNotExist) {
		return l, nil
	}
	if err != nil {
		return l, err
	}
	if err := json.Unmarshal(b, &l); err != nil {
		return assetLog{}, fmt.Errorf("%s: %w", filepath.Join(dir, assetsFile), err)
	}
	return l, nil
}

// kernelKey names a kernel in the record: its URL without user, password,
// query or fragment, so no credential (a ?token= the kernel also takes)
// is ever written to the run directory.
func kernelKey(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	u.User, u.RawQuery, u.Fragment, u.RawFragment = nil, "", "", ""
	return redact.String(strings.TrimRight(u.String(), "/"))
}

func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// uploadCharts uploads the charts one per call, recording each as soon as
// the kernel answered its path, and reuses the recorded path of a chart
// this run already uploaded to this kernel with the same content. One
// call per chart, so a kernel that dies half way has answered, and the
// record holds, every chart before it. A record that cannot be read or
// written (a read-only run directory) is a warning: the post goes on, as
// it did before there was a record.
func (o *Sink) uploadCharts(ctx context.Context, c *Client, charts []chart.Rendered, runID string) ([]ChartRef, error) {
	dir, kernel := "", kernelKey(o.url)
	if o.env.Run != nil {
		dir = o.env.Run.Dir
	}
	keep := dir != "" && kernel != ""
	var log assetLog
	if keep {
		var err error
		if log, err = readAssetLog(dir); err != nil {
			fmt.Fprintf(o.env.Progress, "sink %s: warning: the record of uploaded charts cannot be read (%v): charts are uploaded anew\n", o.name, err)
		}
	}
	var refs []ChartRef
	for _, ch := range charts {
		name, data := assetName(runID, ch.Name), []byte(ch.SVG)
		sum := sha256Hex(data)
		p, ok := log.lookup(kernel, name, sum)
		if !ok {
			got, err := c.UploadAssets(ctx, []AssetFile{{Name: name, Data: data}})
			if err != nil {
				return nil, fmt.Errorf("uploading chart %s: %w", name, err)
			}
			p = got[name]
			if keep {
				log.put(kernel, name, sum, p)
				if err := writeAssetLog(dir, log); err != nil {
					fmt.Fprintf(o.env.Progress, "sink %s: warning: the uploaded charts are not recorded (%v): a post tried again uploads them again\n", o.name, err)
					keep = false // one warning per post
				}
			}
		}
		refs = append(refs, ChartRef{Title: ch.Title, Path: p})
	}
	return refs, nil
}

// writeAssetLog replaces the record in dir (atomically: a post killed
// while writing leaves the record before or after, never half of it).
func writeAssetLog(dir string, l assetLog) error {
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return err
	}
	return rundir.WriteFileAtomic(filepath.Join(dir, assetsFile), append(b, '\n'))
}
