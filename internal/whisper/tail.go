package whisper

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"slices"
	"time"
)

// A series file read again and again (carbon's own counters, read every
// second while a phase runs) costs its whole ring each time: a day of
// one-second slots is a megabyte, sixteen of them a cache. A tail reads
// the whole ring once and then only the slots from lookback before its
// newest point on, to as far as the time since its last read can have
// filled: carbon writes a series' points in time order, its own within
// seconds of their time (its cache holds them no longer than it holds
// ours, which a benchmark would see).
type tail struct {
	arch   Archive
	base   int64   // the timestamp in slot 0 at the full read (slots are counted from it)
	pts    []Point // the current lap, in time order
	readAt time.Time
	whole  int // whole-ring reads so far
}

// lookback is how far before its newest point a tail reads again: a point
// written later than that after its time is missed until a full read.
const lookback = 120

// refresh reads r's new slots (the whole ring the first time, or when the
// time since the last read could have filled a lap).
func (t *tail) refresh(r io.ReaderAt, now time.Time) error {
	// From lookback before the newest point to as far after it as the time
	// since the last read, and lookback more.
	step, n := t.arch.SecondsPerPoint, t.arch.Points
	slots := (2*lookback + int64(now.Sub(t.readAt).Seconds())) / step
	if t.base == 0 || len(t.pts) == 0 || slots >= n {
		pts, base, err := points(r, t.arch)
		if err != nil {
			return err
		}
		t.pts, t.base, t.readAt = pts, base, now
		t.whole++
		return nil
	}
	first := mod((t.pts[len(t.pts)-1].Time-lookback-t.base)/step, n)
	buf := make([]byte, slots*pointSize)
	// The slots from first on, around the ring's end to its start.
	head := min(slots, n-first)
	if _, err := r.ReadAt(buf[:head*pointSize], t.arch.Offset+first*pointSize); err != nil {
		return fmt.Errorf("whisper archive at %d: %w", t.arch.Offset, err)
	}
	if head < slots {
		if _, err := r.ReadAt(buf[head*pointSize:], t.arch.Offset); err != nil {
			return fmt.Errorf("whisper archive at %d: %w", t.arch.Offset, err)
		}
	}
	for k := range slots {
		if p, ok := slot(buf[k*pointSize:], t.arch, t.base, mod(first+k, n)); ok {
			t.put(p)
		}
	}
	t.pts, t.readAt = inLap(t.pts, t.arch), now
	return nil
}

// put adds p, or replaces the point of its time.
func (t *tail) put(p Point) {
	i, found := slices.BinarySearchFunc(t.pts, p.Time, func(q Point, ts int64) int { return cmp.Compare(q.Time, ts) })
	if found {
		t.pts[i] = p
		return
	}
	t.pts = slices.Insert(t.pts, i, p)
}

// CarbonReader reads a carbon-cache's counts (ReadCarbon) again and again,
// each series file from where its last read left off. It is not safe for
// concurrent use.
type CarbonReader struct {
	dir   string
	tails map[string]*tail // by path
	now   func() time.Time
}

// NewCarbonReader reads the cache whose LOCAL_DATA_DIR is whisperDir.
func NewCarbonReader(whisperDir string) *CarbonReader {
	return &CarbonReader{dir: whisperDir, tails: map[string]*tail{}, now: time.Now}
}

// Dir is the cache's whisper directory (LOCAL_DATA_DIR).
func (c *CarbonReader) Dir() string { return c.dir }

// Read returns the counts now, as ReadCarbon would.
func (c *CarbonReader) Read() (CarbonCounts, error) {
	now := c.now()
	return readCarbon(c.dir, func(path string) ([]Point, error) {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer func() { _ = f.Close() }()
		t, ok := c.tails[path]
		if !ok {
			h, err := ReadHeader(f)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			t = &tail{arch: h.Archives[0]}
			c.tails[path] = t
		}
		if err := t.refresh(f, now); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return t.pts, nil
	})
}
