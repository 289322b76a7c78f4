// Package livemetricstest reads a run's live metrics as a Prometheus
// server would: an HTTP GET of the endpoint, its text parsed by the
// Prometheus text parser (prometheus/common/expfmt).
package livemetricstest

import (
	"fmt"
	"io"
	"net/http"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Families are one scrape's metric families by name.
type Families map[string]*dto.MetricFamily

// Scrape gets url and parses what it serves.
func Scrape(url string) (Families, error) {
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, b)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", url, err)
	}
	return fams, nil
}

// Value is the value of the series of family name whose labels include
// labels (name=value pairs): a counter's, a gauge's or an untyped one's,
// or a histogram's count. ok is false when there is no such series.
func (f Families) Value(name string, labels ...string) (v float64, ok bool) {
	fam := f[name]
	if fam == nil {
		return 0, false
	}
	for _, m := range fam.Metric {
		if !hasLabels(m, labels) {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		case m.Untyped != nil:
			return m.Untyped.GetValue(), true
		}
	}
	return 0, false
}

// Sum adds the values of every series of family name whose labels
// include labels.
func (f Families) Sum(name string, labels ...string) float64 {
	fam := f[name]
	if fam == nil {
		return 0
	}
	var sum float64
	for _, m := range fam.Metric {
		if hasLabels(m, labels) {
			one := Families{name: &dto.MetricFamily{Metric: []*dto.Metric{m}}}
			v, _ := one.Value(name)
			sum += v
		}
	}
	return sum
}

func hasLabels(m *dto.Metric, labels []string) bool {
	for i := 0; i+1 < len(labels); i += 2 {
		found := false
		for _, l := range m.Label {
			if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}
