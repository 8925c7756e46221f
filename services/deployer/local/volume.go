package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/benchq/benchq/catalog"
	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/atomicfile"
	"github.com/benchq/benchq/services/deployer/backend"
)

// Persistent volumes on the local backend (docs/volumes.md): with -rst a SUT keeps
// its data directory in a named volume, VolumesDir/<name>/data, which its
// configuration directory links to (data -> the volume's data). The name is
// the Kubernetes backend's (volumeName: bq-<dbms>-<use case>), so one DBMS,
// use case and scale factor share one volume across experiments and across
// benchq down/up. volume.json beside the data says what it holds.
//
// Rules:
//   - a volume is used by one configuration at a time: the configuration
//     directory's claim file names it, and teardown (which removes that
//     directory) releases it; a second deploy waits for it;
//   - only a loading phase that ended done marks it loaded (the scheduler's
//     teardown job carries Loaded); a volume that is not marked loaded is
//     emptied before its next use, so an interrupted load never counts;
//   - -rsr empties it first (unless this configuration claimed it already:
//     a redelivered deploy).

// volumeMeta is a local volume's volume.json.
type volumeMeta struct {
	Name         string    `json:"name"`
	DBMS         string    `json:"dbms"`
	UseCase      string    `json:"use_case"`
	Class        string    `json:"class"`
	Loaded       bool      `json:"loaded"`
	LoadedAt     time.Time `json:"loaded_at,omitzero"`
	LoadingTimeS float64   `json:"loading_time_s,omitempty"`
	LoadedBy     string    `json:"loaded_by,omitempty"`
	CreatedAt    time.Time `json:"created_at"`
	// Shape is a cluster's topology (volumeShape): its data fits only the
	// same one.
	Shape string `json:"shape,omitempty"`
	// EmptiedFor is the experiment whose -rsr emptied (or made) the
	// volume: -rsr removes the storage once, at the experiment's start,
	// and its later configurations (-nc, a grid) use what the first one
	// loaded, as bexhoma's do.
	EmptiedFor string `json:"emptied_for,omitempty"`
}

const (
	volumeMetaFile = "volume.json"
	// volumeClaimFile in a configuration directory names the volume it uses.
	volumeClaimFile = "volume"
)

// volumeKinds are the kinds whose data the local backend keeps on a volume:
// a server's data directory (PgBouncer: its PostgreSQL's), a cluster's node
// directories.
var volumeKinds = []string{catalog.KindRedis, catalog.KindPostgreSQL, catalog.KindPgBouncer, catalog.KindRedisCluster}

// volumeLink is the directory of a configuration that the volume's data/
// stands for: the cluster's node directories, or the server's data.
func volumeLink(kind string) string {
	if kind == catalog.KindRedisCluster {
		return clusterDir
	}
	return "data"
}

// volumeShape is what must match for a volume's data to be used again: a
// cluster's masters and replicas (its nodes' slots and files); "" for a
// single server.
func volumeShape(s backend.Spec, entry catalog.Entry) (string, error) {
	if entry.Kind != catalog.KindRedisCluster {
		return "", nil
	}
	masters, replicas, err := clusterShape(entry, s.SUT)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d masters with %d replicas each", masters, replicas), nil
}

func (l *Local) volumesDir() string {
	if l.VolumesDir != "" {
		return l.VolumesDir
	}
	return filepath.Join(filepath.Dir(l.Root), "volumes")
}

// attachVolume claims the volume of s for the configuration directory dir
// and links dir/data to its data, waiting while another configuration uses
// it. It returns the volume as sut.ready reports it.
func (l *Local) attachVolume(ctx context.Context, s backend.Spec, entry catalog.Entry, dir string) (*contracts.VolumeState, error) {
	if !slices.Contains(volumeKinds, entry.Kind) {
		return nil, fmt.Errorf("%w: the local backend keeps volumes (-rst) for %s only, not for %s (%s): run it without -rst, or on the kubernetes backend",
			backend.ErrBadSpec, strings.Join(volumeKinds, ", "), entry.Name, entry.Kind)
	}
	useCase := backend.UseCaseOf(s)
	owner := entry.DataOwner()
	name, err := backend.VolumeName(owner.Name, useCase)
	if err != nil {
		return nil, err
	}
	shape, err := volumeShape(s, entry)
	if err != nil {
		return nil, err
	}
	link := volumeLink(entry.Kind)
	vdir := filepath.Join(l.volumesDir(), name)
	claim := filepath.Join(dir, volumeClaimFile)
	if b, err := os.ReadFile(claim); err == nil {
		if string(b) != name {
			return nil, fmt.Errorf("%s already uses volume %s, not %s: tear it down first", dir, b, name)
		}
		// A redelivered deploy: this configuration holds the volume already.
		meta, err := readVolumeMeta(vdir)
		if err != nil {
			return nil, err
		}
		return meta.state(false), l.linkVolume(dir, vdir, link)
	}
	l.volMu.Lock()
	defer l.volMu.Unlock()
	switch holder, err := l.volumeHolder(name, dir); {
	case err != nil:
		return nil, err
	case holder != "":
		return nil, backend.VolumeInUse(name, holder)
	}
	meta, err := readVolumeMeta(vdir)
	var emptiedFor string
	if s.SUT.Storage.Remove {
		emptiedFor = s.Code
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		meta = volumeMeta{Name: name, DBMS: owner.Name, UseCase: useCase, CreatedAt: time.Now().UTC(), EmptiedFor: emptiedFor}
	case err != nil:
		return nil, err
	case s.SUT.Storage.Remove && (meta.EmptiedFor != s.Code || meta.Shape != shape):
		// Once per experiment, and again for a configuration of another
		// cluster shape (a grid over -nw), which the data cannot serve.
		l.log().Info("emptying volume first (-rsr)", "volume", name, "loaded", meta.Loaded)
		meta = volumeMeta{Name: name, DBMS: owner.Name, UseCase: useCase, CreatedAt: time.Now().UTC(), EmptiedFor: emptiedFor}
	case !meta.Loaded:
		l.log().Info("emptying volume: it was never loaded to the end", "volume", name)
	case meta.Shape != shape:
		return nil, fmt.Errorf("%w: volume %s holds a %s of %s, this configuration asks for %s: use the same -nw and -nwr, or -rsr to start from a clean copy",
			backend.ErrBadSpec, name, entry.Name, meta.Shape, shape)
	}
	meta.Shape = shape
	data := filepath.Join(vdir, "data")
	if !meta.Loaded {
		if err := os.RemoveAll(data); err != nil {
			return nil, fmt.Errorf("empty volume %s: %w", name, err)
		}
	}
	_, statErr := os.Stat(data)
	isNew := errors.Is(statErr, fs.ErrNotExist)
	if err := os.MkdirAll(data, 0o755); err != nil {
		return nil, fmt.Errorf("volume %s: %w", name, err)
	}
	meta.Class = s.SUT.Storage.Class
	if err := writeVolumeMeta(vdir, meta); err != nil {
		return nil, err
	}
	if err := os.WriteFile(claim, []byte(name), 0o644); err != nil {
		return nil, fmt.Errorf("claim volume %s: %w", name, err)
	}
	return meta.state(isNew), l.linkVolume(dir, vdir, link)
}

// linkVolume makes dir/<name> the volume's data directory.
func (l *Local) linkVolume(dir, vdir, name string) error {
	link, target := filepath.Join(dir, name), filepath.Join(vdir, "data")
	if cur, err := os.Readlink(link); err == nil && cur == target {
		return nil
	}
	if err := os.Symlink(target, link); err != nil {
		return fmt.Errorf("link %s to its volume: %w", link, err)
	}
	return nil
}

// volumeHolder names the configuration (<code>/<configuration>) other than
// dir that uses volume name, or "".
func (l *Local) volumeHolder(name, dir string) (string, error) {
	claims, err := filepath.Glob(filepath.Join(l.Root, "*", "*", volumeClaimFile))
	if err != nil {
		return "", err
	}
	for _, c := range claims {
		holder := filepath.Dir(c)
		if holder == dir {
			continue
		}
		if b, err := os.ReadFile(c); err == nil && string(b) == name {
			return filepath.Base(filepath.Dir(holder)) + "/" + filepath.Base(holder), nil
		}
	}
	return "", nil
}

func (m volumeMeta) state(isNew bool) *contracts.VolumeState {
	st := &contracts.VolumeState{Name: m.Name, New: isNew, Loaded: m.Loaded}
	if m.Loaded {
		st.LoadingTimeS, st.LoadedBy = m.LoadingTimeS, m.LoadedBy
		if !m.LoadedAt.IsZero() {
			at := m.LoadedAt
			st.LoadedAt = &at
		}
	}
	return st
}

func readVolumeMeta(vdir string) (volumeMeta, error) {
	return atomicfile.Read[volumeMeta](filepath.Join(vdir, volumeMetaFile))
}

// writeVolumeMeta replaces volume.json atomically: a crash leaves the old
// or the new record, never half of one.
func writeVolumeMeta(vdir string, m volumeMeta) error {
	return atomicfile.WriteJSON(filepath.Join(vdir, volumeMetaFile), m, 0o644)
}

// MarkLoaded records that a loading phase filled the volume (teardown job's
// Loaded): the next deploy of its DBMS and use case skips loading.
func (l *Local) MarkLoaded(_ context.Context, volume string, loadingTime time.Duration, by string, at time.Time) error {
	vdir := filepath.Join(l.volumesDir(), volume)
	l.volMu.Lock()
	defer l.volMu.Unlock()
	m, err := readVolumeMeta(vdir)
	if err != nil {
		return fmt.Errorf("mark volume %s loaded: %w", volume, err)
	}
	m.Loaded, m.LoadedAt, m.LoadingTimeS, m.LoadedBy = true, at.UTC(), loadingTime.Seconds(), by
	return writeVolumeMeta(vdir, m)
}

// VolumeEntries lists the volumes for the volumes KV bucket (benchq
// status), with their size on disk.
func (l *Local) VolumeEntries(context.Context) ([]contracts.VolumeEntry, error) {
	metas, err := filepath.Glob(filepath.Join(l.volumesDir(), "*", volumeMetaFile))
	if err != nil {
		return nil, err
	}
	var out []contracts.VolumeEntry
	for _, f := range metas {
		m, err := readVolumeMeta(filepath.Dir(f))
		if err != nil {
			l.log().Warn("volume not listed", "err", err)
			continue
		}
		e := contracts.VolumeEntry{Name: m.Name, DBMS: m.DBMS, UseCase: m.UseCase, Loaded: m.Loaded, TimeLoadingS: m.LoadingTimeS, Class: m.Class}
		if used, err := diskUsage(filepath.Join(filepath.Dir(f), "data")); err == nil {
			e.Size = humanBytes(used) // else missing, not a partial count
		}
		out = append(out, e)
	}
	return out, nil
}

// diskUsage is the bytes of the files below dir; an error when a file or
// directory could not be read (the count would be short).
func diskUsage(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed while we walked (a recycled WAL segment): not there
		}
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			fi, err := d.Info()
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			if err != nil {
				return err
			}
			n += fi.Size()
		}
		return nil
	})
	return n, err
}

// humanBytes writes n as Kubernetes writes quantities (Ki, Mi, Gi).
func humanBytes(n int64) string {
	units := []string{"", "Ki", "Mi", "Gi", "Ti"}
	f, u := float64(n), 0
	for f >= 1024 && u < len(units)-1 {
		f /= 1024
		u++
	}
	if u == 0 {
		return fmt.Sprintf("%d", n)
	}
	return fmt.Sprintf("%.1f%s", f, units[u])
}

var _ backend.Volumes = (*Local)(nil) // the local backend keeps volumes too (-rst)
