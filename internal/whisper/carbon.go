package whisper

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// CarbonCounts are what one carbon-cache's own series (CARBON_METRIC_PREFIX
// "carbon", one point per CARBON_METRIC_INTERVAL) say it did, summed over
// their retention.
type CarbonCounts struct {
	// Stored is the points the cache wrote to whisper that are not its
	// own: Committed up to a cut S, its newest committedPoints point, less
	// Own before S (docs/tsdb.md explains the accounting).
	Stored int64
	// Committed is the sum of its committedPoints up to S, every point it
	// wrote, carbon's own series included.
	Committed int64
	// Own is the points of carbon's own series (carbon.*) in its whisper
	// files, stamped before S.
	Own int64
	// Received is the points its listeners took (metricsReceived).
	Received int64
	// Errors are its failed writes.
	Errors int64
	// CacheSize is its newest cache.size: the points received and not yet
	// written (-1: none recorded).
	CacheSize float64
}

// The cut S is the cache's newest committedPoints point: committedPoints
// at S counts the points written in the second before S, and the cache's
// own points stamped before S were recorded a second or more earlier and
// written by then, if the cache writes within a second. So the count at S
// is exact once carbon keeps up, and stays behind by the points not yet
// written while it does not (ReadCarbon: it may then also miss one second
// of its own points, and is held at 0 at the least). (A relay's
// own points would reach the cache over the network at a time nothing
// records: benchq turns them off.)

// ReadCarbon reads the counts from a carbon-cache's whisper directory
// (LOCAL_DATA_DIR). A cache that has recorded nothing yet has zero counts.
func ReadCarbon(whisperDir string) (CarbonCounts, error) {
	return readCarbon(whisperDir, func(path string) ([]Point, error) {
		_, pts, err := ReadFile(path)
		return pts, err
	})
}

// readCarbon counts what read says each of the cache's own series holds
// (its points in time order).
func readCarbon(whisperDir string, read func(path string) ([]Point, error)) (CarbonCounts, error) {
	c := CarbonCounts{CacheSize: -1}
	type file struct {
		rel string
		pts []Point
	}
	var files []file
	root := filepath.Join(whisperDir, "carbon")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) && path == root {
				return fs.SkipAll
			}
			return err
		}
		if d.IsDir() || !strings.HasSuffix(path, ".wsp") {
			return nil
		}
		pts, err := read(path)
		if beingCreated(err) {
			return nil // no point in it yet: read it next time
		}
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		files = append(files, file{filepath.ToSlash(rel), pts})
		return nil
	})
	if err != nil {
		return c, err
	}
	var s int64 // the cut
	for _, f := range files {
		if isAgent(f.rel, "committedPoints") {
			for _, p := range f.pts {
				s = max(s, p.Time)
			}
		}
	}
	sum := func(pts []Point, upTo int64) int64 {
		var n float64
		for _, p := range pts {
			if p.Time <= upTo {
				n += p.Value
			}
		}
		return int64(n + 0.5)
	}
	const always = int64(1) << 62
	for _, f := range files {
		for _, p := range f.pts {
			if p.Time < s {
				c.Own++
			}
		}
		switch {
		case isAgent(f.rel, "committedPoints"):
			c.Committed += sum(f.pts, s)
		case isAgent(f.rel, "metricsReceived"):
			c.Received += sum(f.pts, always)
		case isAgent(f.rel, "errors"):
			c.Errors += sum(f.pts, always)
		case isAgent(f.rel, "cache.size"):
			if n := len(f.pts); n > 0 {
				c.CacheSize = f.pts[n-1].Value
			}
		}
	}
	// Under load the cache may write its own newest points more than a
	// second after recording them: they are then in Own but not yet in
	// Committed, and the difference falls short by them (about 16 points)
	// until it catches up. Fresh from its start that is below zero: no
	// count of points is.
	c.Stored = max(0, c.Committed-c.Own)
	return c, nil
}

// beingCreated reports whether err is the end of a file met before its
// header or its archive ends: carbon is creating that series file (it
// writes the header, then extends the file), and nothing is in it yet.
func beingCreated(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// isAgent reports whether rel (below carbon/) is a cache's own series
// agents/<host>-<instance>/<name>.wsp.
func isAgent(rel, name string) bool {
	parts := strings.Split(rel, "/")
	return len(parts) >= 3 && parts[0] == "agents" && strings.Join(parts[2:], "/") == strings.ReplaceAll(name, ".", "/")+".wsp"
}
