package whisper

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Written is what a carbon-cache started by benchq counted as it wrote
// (internal/localdb's carbon-cache.py wraps carbon's whisper writer): the
// points it wrote to series files, carbon's own series apart. Unlike
// carbon's own counters (CarbonCounts), it loses nothing: it is the
// stored count benchq reports for Graphite.
type Written struct {
	// Points went to series that are not carbon's own: the workload's.
	Points int64 `json:"points"`
	// Own went to carbon's own series (carbon.*).
	Own int64 `json:"own"`
}

// WrittenFile is where the cache whose LOCAL_DATA_DIR is whisperDir keeps
// its Written: beside that directory. The cache replaces it, never
// rewriting it in place, within a tenth of a second of a write.
func WrittenFile(whisperDir string) string {
	return filepath.Join(filepath.Dir(whisperDir), "written.json")
}

// ReadWritten reads the Written of the cache whose LOCAL_DATA_DIR is
// whisperDir. A cache not started by benchq's carbon-cache.py has none:
// that is an error, not a count of 0.
func ReadWritten(whisperDir string) (Written, error) {
	var w Written
	b, err := os.ReadFile(WrittenFile(whisperDir))
	if errors.Is(err, os.ErrNotExist) {
		return w, fmt.Errorf("no count of written points in %s: the carbon-cache was not started by benchq's carbon-cache.py (internal/localdb)", WrittenFile(whisperDir))
	}
	if err != nil {
		return w, err
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return w, fmt.Errorf("%s: %w", WrittenFile(whisperDir), err)
	}
	return w, nil
}
