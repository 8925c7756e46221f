package prom

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestConfigYAML(t *testing.T) {
	t.Parallel()
	got, err := Config{TargetsDir: "/run/benchq/targets"}.YAML()
	if err != nil {
		t.Fatal(err)
	}
	want := `# written by benchq (internal/prom); rewritten on every start
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: benchq
    honor_labels: true
    file_sd_configs:
      - files: ["/run/benchq/targets/*.json"]
        refresh_interval: 30s
`
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got, _ := (Config{TargetsDir: "/t", ScrapeInterval: 250 * time.Millisecond}).YAML(); !contains(got, "scrape_interval: 250ms\n  scrape_timeout: 250ms\n") {
		t.Errorf("250ms:\n%s", got)
	}
	if _, err := (Config{}).YAML(); err == nil {
		t.Error("no error without a targets directory")
	}
}

// TestConfigPromtool has Prometheus' own checker read the configuration
// and a target file.
func TestConfigPromtool(t *testing.T) {
	t.Parallel()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("skipping: no promtool (apt-get install prometheus)")
	}
	dir := t.TempDir()
	tg := Targets{Dir: filepath.Join(dir, "targets")}
	if err := tg.Write("sut-1", Group{Targets: []string{"127.0.0.1:9121"}, Labels: map[string]string{LabelComponent: "sut", LabelPhase: "load"}}); err != nil {
		t.Fatal(err)
	}
	for _, iv := range []time.Duration{0, 15 * time.Second, 500 * time.Millisecond} {
		yml, err := Config{TargetsDir: tg.Dir, ScrapeInterval: iv}.YAML()
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "prometheus.yml")
		if err := os.WriteFile(path, yml, 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(promtool, "check", "config", path).CombinedOutput(); err != nil {
			t.Errorf("promtool check config (interval %s): %v\n%s\n%s", iv, err, out, yml)
		}
	}
}

func contains(b []byte, s string) bool { return strings.Contains(string(b), s) }
