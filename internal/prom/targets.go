package prom

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"github.com/benchq/benchq/internal/atomicfile"
)

// The labels benchq puts on every target, so that one PromQL selects a
// component of a phase on the local backend and on Kubernetes alike.
const (
	LabelExperiment    = "experiment"
	LabelConfiguration = "configuration"
	LabelDBMS          = "dbms"
	LabelComponent     = "component" // sut | loader | benchmarker | service
	LabelPhase         = "phase"
)

// Group is one file_sd target group: addresses (host:port) and the labels
// every series scraped from them gets.
type Group struct {
	Targets []string          `json:"targets"`
	Labels  map[string]string `json:"labels,omitempty"`
}

// Targets writes file_sd files into Dir, one per target group: Prometheus
// scrapes a group from the moment its file appears until it is removed.
type Targets struct {
	Dir string
}

var (
	groupName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
	labelName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

func (t Targets) path(name string) (string, error) {
	if !groupName.MatchString(name) {
		return "", fmt.Errorf("target group name %q: letters, digits, '.', '_' and '-' only", name)
	}
	return filepath.Join(t.Dir, name+".json"), nil
}

// Write creates or replaces group name's file atomically (a temporary file
// that the *.json pattern does not match, then a rename), so Prometheus never
// reads half a file.
func (t Targets) Write(name string, g Group) error {
	path, err := t.path(name)
	if err != nil {
		return err
	}
	for k := range g.Labels {
		if !labelName.MatchString(k) {
			return fmt.Errorf("target group %s: label name %q is not a Prometheus label name", name, k)
		}
	}
	if len(g.Targets) == 0 {
		return fmt.Errorf("target group %s: no targets", name)
	}
	if err := os.MkdirAll(t.Dir, 0o755); err != nil {
		return fmt.Errorf("target group %s: %w", name, err)
	}
	if err := atomicfile.WriteJSON(path, []Group{g}, 0o644); err != nil {
		return fmt.Errorf("target group %s: %w", name, err)
	}
	return nil
}

// Remove deletes group name's file; Prometheus stops scraping its targets.
// A group that is not there is not an error.
func (t Targets) Remove(name string) error {
	path, err := t.path(name)
	if err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("target group %s: %w", name, err)
	}
	return nil
}

// EnvTargetsDir names the directory of the stack's file_sd target groups:
// `benchq up` sets it for the services, the deployer writes the groups of
// the exporters and phase agents it starts there.
const EnvTargetsDir = "BENCHQ_PROMETHEUS_TARGETS"
