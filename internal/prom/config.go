package prom

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Config is what the generated prometheus.yml says.
type Config struct {
	// ScrapeInterval is the global scrape_interval and scrape_timeout
	// (default 1s: a 6-second phase still gets samples at its edges).
	ScrapeInterval time.Duration
	// TargetsDir holds the file_sd files (*.json) that Targets writes.
	TargetsDir string
}

// DefaultScrapeInterval is used when Config.ScrapeInterval is zero.
const DefaultScrapeInterval = time.Second

func (c Config) interval() time.Duration {
	if c.ScrapeInterval <= 0 {
		return DefaultScrapeInterval
	}
	return c.ScrapeInterval
}

// YAML renders prometheus.yml. One job scrapes every target of the file_sd
// files; honor_labels lets a target that exports several components (one
// exporter for all local process trees) keep the labels on its series, the
// target group's labels filling in only what a series lacks.
func (c Config) YAML() ([]byte, error) {
	if c.TargetsDir == "" {
		return nil, fmt.Errorf("prometheus config: no targets directory")
	}
	dir, err := filepath.Abs(c.TargetsDir)
	if err != nil {
		return nil, fmt.Errorf("prometheus config: %w", err)
	}
	iv := promDuration(c.interval())
	var b strings.Builder
	b.WriteString("# written by benchq (internal/prom); rewritten on every start\n")
	fmt.Fprintf(&b, "global:\n  scrape_interval: %s\n  scrape_timeout: %s\n  evaluation_interval: %s\n", iv, iv, iv)
	b.WriteString("scrape_configs:\n")
	b.WriteString("  - job_name: benchq\n    honor_labels: true\n    file_sd_configs:\n")
	// inotify picks changes up at once; the refresh is a backstop.
	fmt.Fprintf(&b, "      - files: [%s]\n        refresh_interval: 30s\n", strconv.Quote(filepath.Join(dir, "*.json")))
	return []byte(b.String()), nil
}

// promDuration formats d as Prometheus' duration syntax (whole seconds, or
// milliseconds when finer).
func promDuration(d time.Duration) string {
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
}

// EnvScrapeInterval names the stack's scrape interval: `benchq up` reads it
// to configure Prometheus and hands it to the collector, whose pull step it is.
const EnvScrapeInterval = "BENCHQ_SCRAPE_INTERVAL"

// ParseScrapeInterval reads a scrape interval as EnvScrapeInterval holds
// it: a Go duration ("1s", "500ms") or seconds ("2", "0.5"); "" is the
// default.
func ParseScrapeInterval(v string) (time.Duration, error) {
	if v == "" {
		return DefaultScrapeInterval, nil
	}
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return d, nil
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 {
		return time.Duration(s * float64(time.Second)), nil
	}
	return 0, fmt.Errorf("%s=%q: want a duration such as 1s or 500ms, or seconds", EnvScrapeInterval, v)
}
