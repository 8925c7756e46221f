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

// Write replaces path with data, mode perm. The temporary file is a hidden
// sibling of path, so a directory watcher reading only *.json (Prometheus'
// file discovery) never sees it; it gets a random name and is created
// exclusively, so neither a file nor a symbolic link planted at a
// predictable name is written through (O_EXCL fails on both), and it is
// synced before the rename, and the directory after it, so that a crash
// leaves the old file or the new one, never a part.
func Write(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp") // O_RDWR|O_CREATE|O_EXCL, mode 0600
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	err = f.Chmod(perm)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		return errors.Join(fmt.Errorf("write %s: %w", path, err), os.Remove(tmp))
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // the rename's durability; not every filesystem can
		_ = d.Close()
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
