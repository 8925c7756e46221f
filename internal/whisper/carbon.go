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
// their retention. They are carbon's view, recorded once a second and
// stamped to the second: two records in one second share one slot, and
// one of them is lost (docs/tsdb.md). The points stored are counted
// exactly elsewhere, as carbon writes them (ReadWritten).
type CarbonCounts struct {
	// Committed is the sum of its committedPoints: every point it wrote,
	// carbon's own series included.
	Committed int64
	// Received is the points its listeners took (metricsReceived).
	Received int64
	// Errors are its failed writes.
	Errors int64
	// CacheSize is its newest cache.size: the points received and not yet
	// written (-1: none recorded).
	CacheSize float64
}

// ReadCarbon reads the counts from a carbon-cache's whisper directory
// (LOCAL_DATA_DIR). A cache that has recorded nothing yet has zero counts.
func ReadCarbon(whisperDir string) (CarbonCounts, error) {
	return readCarbon(whisperDir, func(path string) ([]Point, error) {
		_, pts, err := ReadFile(path)
		return pts, err
	})
}

// readCarbon sums what read says each of the cache's own series holds (its
// points in time order).
func readCarbon(whisperDir string, read func(path string) ([]Point, error)) (CarbonCounts, error) {
	c := CarbonCounts{CacheSize: -1}
	root := filepath.Join(whisperDir, "carbon")
	sum := func(pts []Point) int64 {
		var n float64
		for _, p := range pts {
			n += p.Value
		}
		return int64(n + 0.5)
	}
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
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		var into *int64
		switch {
		case isAgent(rel, "committedPoints"):
			into = &c.Committed
		case isAgent(rel, "metricsReceived"):
			into = &c.Received
		case isAgent(rel, "errors"):
			into = &c.Errors
		case !isAgent(rel, "cache.size"):
			return nil // a series benchq does not serve
		}
		pts, err := read(path)
		if beingCreated(err) {
			return nil // no point in it yet: read it next time
		}
		if err != nil {
			return err
		}
		if into != nil {
			*into += sum(pts)
		} else if n := len(pts); n > 0 {
			c.CacheSize = pts[n-1].Value
		}
		return nil
	})
	return c, err
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
