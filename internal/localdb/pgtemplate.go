package localdb

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/benchq/benchq/internal/cachedir"
	"github.com/benchq/benchq/internal/procs"
)

// A new cluster is a copy of a template when one is at hand: initdb takes
// about a second of the two cores here, a copy of the ~40 MB it makes tens
// of milliseconds, and every configuration of a grid (and every test) gets
// a new cluster. The template is the first cluster initdb made with the
// same binaries and arguments, without a password, copied aside before the
// server first started, so it holds nothing but initdb's work and no
// secret. (A password is set at each start on the unix socket; only a
// cluster too deep for the socket gets it from initdb, into its catalog,
// and is made by initdb.) It lives in the cache, beside the binaries:
// ~/.cache/benchq/pg-template/<key>, the key from the binaries' directory,
// which names the major version (Debian: /usr/lib/postgresql/15/bin; a
// minor release keeps the cluster's format), and initdb's arguments.

// pgTemplate is the template's directory for a cluster initdb makes from
// bin with args (the data directory's own argument left out).
func pgTemplate(bin string, args []string) string {
	h := sha256.Sum256([]byte(bin + "\x00" + strings.Join(args, "\x00")))
	return filepath.Join(cachedir.Root(), "pg-template", hex.EncodeToString(h[:8]))
}

// fromTemplate fills the empty directory tmp with a copy of template, owned
// by osUser ("": ours). It reports false, leaving tmp empty, when there is
// no complete template or the copy failed: initdb then makes the cluster.
func fromTemplate(template, tmp, osUser string) bool {
	if _, err := os.Stat(filepath.Join(template, "PG_VERSION")); err != nil {
		return false
	}
	var owner *fileOwner // not root: ours, as the template's files are
	if osUser != "" {
		u, err := procs.LookupUser(osUser)
		if err != nil {
			return false
		}
		owner = &fileOwner{uid: int(u.UID), gid: int(u.GID)}
	}
	if err := copyTree(template, tmp, owner); err != nil {
		emptyDir(tmp)
		return false
	}
	return true
}

// saveTemplate copies the new cluster made in dir to template unless a
// template is there already; best effort, as a cache: it is made in a
// directory of its own and renamed into place, so a reader never sees half
// of it and two writers at once leave one.
func saveTemplate(dir, template string) {
	if _, err := os.Stat(template); err == nil {
		return
	}
	if err := os.MkdirAll(filepath.Dir(template), 0o755); err != nil {
		return
	}
	tmp, err := os.MkdirTemp(filepath.Dir(template), ".new-")
	if err != nil {
		return
	}
	if err := copyTree(dir, tmp, nil); err != nil || os.Rename(tmp, template) != nil {
		_ = os.RemoveAll(tmp)
	}
}

// fileOwner is who a copy's files belong to.
type fileOwner struct{ uid, gid int }

// copyTree copies the directories and regular files under src into the
// existing directory dst with their modes, owned by owner (nil: by the
// source's owner); anything else (a link, a
// socket) is an error, as a fresh cluster holds none.
func copyTree(src, dst string, owner *fileOwner) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case rel == ".":
		case d.IsDir():
			if err := os.Mkdir(to, info.Mode().Perm()); err != nil {
				return err
			}
		case info.Mode().IsRegular():
			if err := copyFile(path, to, info.Mode().Perm()); err != nil {
				return err
			}
		default:
			return fmt.Errorf("copy %s: not a directory or a regular file", path)
		}
		sys := info.Sys().(*syscall.Stat_t)
		uid, gid := int(sys.Uid), int(sys.Gid)
		if owner != nil {
			uid, gid = owner.uid, owner.gid
		}
		if err := os.Lchown(to, uid, gid); err != nil && !errors.Is(err, fs.ErrPermission) {
			return err
		}
		return os.Chmod(to, info.Mode().Perm()) // the umask cut the mode Mkdir and OpenFile were given
	})
}

func copyFile(from, to string, perm fs.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close() //nolint:errcheck // read only
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in) // copy_file_range on Linux
	return errors.Join(err, out.Close())
}

// emptyDir removes what dir holds, leaving dir.
func emptyDir(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		_ = os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}
