// Package atomicfile writes files that readers (and a process that crashes
// mid-write) see whole or not at all: the data goes to a temporary file in
// the same directory, which is then renamed over the target.
package atomicfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Write replaces path with data. The temporary file is a hidden sibling of
// path, so a directory watcher reading only *.json (Prometheus' file
// discovery) never sees it.
func Write(path string, data []byte, perm os.FileMode) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, data, perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return errors.Join(fmt.Errorf("write %s: %w", path, err), os.Remove(tmp))
	}
	return nil
}

// WriteJSON replaces path with v as indented JSON and a final newline.
func WriteJSON(path string, v any, perm os.FileMode) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return Write(path, append(b, '\n'), perm)
}

// Read decodes path as a T (see ReadJSON).
func Read[T any](path string) (T, error) {
	var v T
	err := ReadJSON(path, &v)
	return v, err
}

// ReadJSON decodes path into v. A missing file is returned as is (callers
// test os.ErrNotExist); a corrupt one names the file.
func ReadJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
