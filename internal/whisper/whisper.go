// Package whisper reads Graphite's whisper files, the round-robin database
// carbon-cache writes one file per series to (graphite-project/whisper,
// "whisper.py"). benchq reads carbon's own counters (committedPoints,
// metricsReceived), which carbon keeps as whisper series under
// carbon.agents.*, and, beside them, the count of stored points that
// benchq's carbon-cache.py keeps (ReadWritten).
//
// The format, all big-endian: a header of aggregation type (uint32),
// maximum retention (uint32), x-files factor (float32) and archive count
// (uint32); then per archive its offset, seconds per point and number of
// points (uint32 each); then the archives, each a ring of points of a
// timestamp (uint32) and a value (float64). A point's slot is its
// timestamp's distance from the timestamp in the ring's first slot; a slot
// whose timestamp is not the one expected there is empty (a point of an
// earlier lap, or never written).
package whisper

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
)

const (
	metadataSize    = 16
	archiveInfoSize = 12
	pointSize       = 12
)

// Archive is one archive's place in the file.
type Archive struct {
	Offset          int64
	SecondsPerPoint int64
	Points          int64
}

// Retention is the time the archive covers.
func (a Archive) Retention() int64 { return a.SecondsPerPoint * a.Points }

// Header is a whisper file's header.
type Header struct {
	Aggregation  uint32
	MaxRetention uint32
	XFilesFactor float32
	Archives     []Archive
}

// Point is one stored value at a timestamp (Unix seconds).
type Point struct {
	Time  int64
	Value float64
}

// ReadHeader reads the header of a whisper file.
func ReadHeader(r io.ReaderAt) (Header, error) {
	var m [metadataSize]byte
	if _, err := r.ReadAt(m[:], 0); err != nil {
		return Header{}, fmt.Errorf("whisper header: %w", err)
	}
	h := Header{
		Aggregation:  binary.BigEndian.Uint32(m[0:]),
		MaxRetention: binary.BigEndian.Uint32(m[4:]),
		XFilesFactor: math.Float32frombits(binary.BigEndian.Uint32(m[8:])),
	}
	n := binary.BigEndian.Uint32(m[12:])
	if n == 0 || n > 64 {
		return Header{}, fmt.Errorf("whisper header: %d archives (not a whisper file?)", n)
	}
	info := make([]byte, int(n)*archiveInfoSize)
	if _, err := r.ReadAt(info, metadataSize); err != nil {
		return Header{}, fmt.Errorf("whisper archive info: %w", err)
	}
	for i := range int(n) {
		b := info[i*archiveInfoSize:]
		a := Archive{
			Offset:          int64(binary.BigEndian.Uint32(b[0:])),
			SecondsPerPoint: int64(binary.BigEndian.Uint32(b[4:])),
			Points:          int64(binary.BigEndian.Uint32(b[8:])),
		}
		if a.SecondsPerPoint == 0 || a.Points == 0 {
			return Header{}, fmt.Errorf("whisper archive %d: %d points of %d s", i, a.Points, a.SecondsPerPoint)
		}
		h.Archives = append(h.Archives, a)
	}
	return h, nil
}

// Points returns the points of archive a that are in their slot and in
// the ring's current lap (within one retention of the newest), oldest
// first. NaN values are left out, as whisper-fetch shows them as None.
func Points(r io.ReaderAt, a Archive) ([]Point, error) {
	pts, _, err := points(r, a)
	return pts, err
}

// points is Points, with the timestamp in the ring's first slot (0: never
// written), by which a timestamp's slot is known.
func points(r io.ReaderAt, a Archive) ([]Point, int64, error) {
	ring := make([]byte, a.Points*pointSize)
	if _, err := r.ReadAt(ring, a.Offset); err != nil {
		return nil, 0, fmt.Errorf("whisper archive at %d: %w", a.Offset, err)
	}
	base := int64(binary.BigEndian.Uint32(ring))
	if base == 0 {
		return nil, 0, nil // never written
	}
	var out []Point
	for i := range a.Points {
		if p, ok := slot(ring[i*pointSize:], a, base, i); ok {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b Point) int { return cmp.Compare(a.Time, b.Time) })
	return inLap(out, a), base, nil
}

// slot is the point in slot i (its 12 bytes at b) when it belongs there:
// a timestamp on the archive's step whose slot, counted from base's, is
// i, and a value that is not NaN (whisper-fetch shows those as None).
func slot(b []byte, a Archive, base, i int64) (Point, bool) {
	ts := int64(binary.BigEndian.Uint32(b))
	if ts == 0 || ts%a.SecondsPerPoint != 0 || mod((ts-base)/a.SecondsPerPoint, a.Points) != i {
		return Point{}, false
	}
	v := math.Float64frombits(binary.BigEndian.Uint64(b[4:]))
	if math.IsNaN(v) {
		return Point{}, false
	}
	return Point{Time: ts, Value: v}, true
}

// inLap drops from pts (in time order) what the ring's current lap no
// longer holds: a slot not written since the ring's last lap holds a
// point one retention (or more) older than the newest.
func inLap(pts []Point, a Archive) []Point {
	if len(pts) == 0 {
		return pts
	}
	newest := pts[len(pts)-1].Time
	return slices.DeleteFunc(pts, func(p Point) bool { return p.Time <= newest-a.Retention() })
}

// ReadFile returns the points of the file's first (finest) archive.
func ReadFile(path string) (Header, []Point, error) {
	f, err := os.Open(path)
	if err != nil {
		return Header{}, nil, err
	}
	defer func() { _ = f.Close() }()
	h, err := ReadHeader(f)
	if err != nil {
		return Header{}, nil, fmt.Errorf("%s: %w", path, err)
	}
	pts, err := Points(f, h.Archives[0])
	if err != nil {
		return Header{}, nil, fmt.Errorf("%s: %w", path, err)
	}
	return h, pts, nil
}

func mod(a, n int64) int64 { return ((a % n) + n) % n }
