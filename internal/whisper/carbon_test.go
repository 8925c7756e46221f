package whisper

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// write puts a one-archive file of 1 s slots holding pts at rel below dir.
func write(t *testing.T, dir, rel string, pts ...Point) {
	t.Helper()
	slots := make([]Point, 60)
	for _, p := range pts {
		slots[(p.Time-pts[0].Time)%60] = p
	}
	path := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, file(1, 60, slots), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A cache that recorded three seconds: its counters are summed over them,
// its cache size is the newest, and the series benchq does not serve (its
// other own series, and ours) are not read.
func TestReadCarbonSumsItsCounters(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "carbon/agents/h-n0/committedPoints.wsp", Point{100, 0}, Point{101, 110}, Point{102, 10})
	write(t, dir, "carbon/agents/h-n0/metricsReceived.wsp", Point{100, 0}, Point{101, 100}, Point{102, 0})
	write(t, dir, "carbon/agents/h-n0/cache/size.wsp", Point{100, 0}, Point{101, 7}, Point{102, 3})
	write(t, dir, "carbon/agents/h-n0/errors.wsp", Point{100, 0}, Point{101, 1}, Point{102, 0})
	for _, rel := range []string{"carbon/agents/h-n0/cpuUsage.wsp", "bq/s1.wsp"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, rel), []byte("not whisper"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, err := ReadCarbon(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := CarbonCounts{Committed: 120, Received: 100, Errors: 1, CacheSize: 3}
	if c != want {
		t.Errorf("ReadCarbon = %+v, want %+v", c, want)
	}
}

// A cache that has recorded nothing has nothing, and no size.
func TestReadCarbonOfAnEmptyCache(t *testing.T) {
	c, err := ReadCarbon(t.TempDir())
	if err != nil || c != (CarbonCounts{CacheSize: -1}) {
		t.Errorf("ReadCarbon = %+v, %v", c, err)
	}
}

// The count carbon-cache.py keeps beside the whisper directory is read as
// it is; a cache without one, or with one that is not its JSON, has no
// count (an error naming the file), not a count of 0.
func TestReadWritten(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "whisper")
	if _, err := ReadWritten(dir); err == nil || !strings.Contains(err.Error(), WrittenFile(dir)) {
		t.Errorf("no file: %v, want an error naming %s", err, WrittenFile(dir))
	}
	if err := os.WriteFile(WrittenFile(dir), []byte(`{"points": 300, "own": 48}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if w, err := ReadWritten(dir); err != nil || w != (Written{Points: 300, Own: 48}) {
		t.Errorf("ReadWritten = %+v, %v", w, err)
	}
	if err := os.WriteFile(WrittenFile(dir), []byte(`300`), 0o644); err != nil {
		t.Fatal(err)
	}
	if w, err := ReadWritten(dir); err == nil {
		t.Errorf("a file of no JSON object read as %+v", w)
	}
}

// What one read of a cache's own series costs as benchq's Graphite runs
// them: carbon writes about sixteen series of its own, each a file of a
// day's one-second slots (storage-schemas' 1s:1d), ten minutes of them
// filled, of which the four served are read. The exporter reads them at
// every scrape, the first generator's every second (docs/tsdb.md):
// ReadCarbon reads every slot, a CarbonReader only the newest after its
// first read.
func BenchmarkReadCarbonOfADayOfSeconds(b *testing.B) {
	dir := dayOfSeconds(b)
	for b.Loop() {
		if c, err := ReadCarbon(dir); err != nil || c.Committed != filledSeconds {
			b.Fatalf("ReadCarbon = %+v, %v", c, err)
		}
	}
}

func BenchmarkCarbonReaderOfADayOfSeconds(b *testing.B) {
	r := NewCarbonReader(dayOfSeconds(b))
	clock := time.Unix(1_795_000_000+filledSeconds, 0)
	r.now = func() time.Time { return clock }
	for b.Loop() {
		clock = clock.Add(time.Second) // read once a second
		if c, err := r.Read(); err != nil || c.Committed != filledSeconds {
			b.Fatalf("Read = %+v, %v", c, err)
		}
	}
}

const filledSeconds = 600

// dayOfSeconds is a cache's whisper directory of sixteen own series of a
// day's one-second slots, the first filledSeconds of them written.
func dayOfSeconds(b *testing.B) string {
	dir := b.TempDir()
	slots := make([]Point, filledSeconds)
	for i := range slots {
		slots[i] = Point{Time: 1_795_000_000 + int64(i), Value: 1}
	}
	names := []string{"committedPoints", "metricsReceived", "errors", "cache/size", "cache/queues", "cache/overflow", "cache/bulk_queries",
		"cache/queries", "cpuUsage", "memUsage", "creates", "updateOperations", "pointsPerUpdate", "avgUpdateTime", "blacklistMatches", "whitelistRejects"}
	for _, n := range names {
		path := filepath.Join(dir, "carbon/agents/h-n0", n+".wsp")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(path, file(1, 86400, slots), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

// A CarbonReader, which reads each file's whole ring once and then only
// its newest slots, counts what ReadCarbon counts reading every slot,
// read after read, while the series grow past the end of their ring and
// around it, and while a series is added.
func TestCarbonReaderCountsAsAWholeRead(t *testing.T) {
	dir := t.TempDir()
	const n = 1000 // slots of one second: more than a tail reads at once
	base := int64(1_795_000_000)
	paths := map[string]string{}
	for _, name := range []string{"committedPoints", "metricsReceived", "errors", "cache/size"} {
		paths[name] = filepath.Join(dir, "carbon/agents/h-n0", name+".wsp")
	}
	create := func(path string) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, file(1, n, nil), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// As whisper writes: a file's first point in its first slot, every
	// later one in the slot its distance from that point gives.
	first := map[string]int64{}
	put := func(path string, ts int64, v float64) {
		if _, ok := first[path]; !ok {
			first[path] = ts
		}
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var b [12]byte
		binary.BigEndian.PutUint32(b[:], uint32(ts))
		binary.BigEndian.PutUint64(b[4:], math.Float64bits(v))
		if _, err := f.WriteAt(b[:], 28+mod(ts-first[path], n)*12); err != nil {
			t.Fatal(err)
		}
	}
	for name, path := range paths {
		if name != "errors" {
			create(path)
		}
	}
	clock := time.Unix(base, 0)
	r := NewCarbonReader(dir)
	r.now = func() time.Time { return clock }
	// 2,500 seconds in steps of 7: two and a half laps of the ring; a
	// series appears after 900 s.
	for ts := base; ts < base+2500; ts += 7 {
		clock = time.Unix(ts+7, 0)
		if ts == base+903 {
			create(paths["errors"])
		}
		for s := ts; s < ts+7; s++ {
			for name, path := range paths {
				if name == "errors" && s < base+903 {
					continue
				}
				put(path, s, float64(s%13))
			}
		}
		got, err := r.Read()
		if err != nil {
			t.Fatal(err)
		}
		want, err := ReadCarbon(dir)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("at %d s: CarbonReader %+v, ReadCarbon %+v", ts-base, got, want)
		}
	}
	// A whole read is made once per file, and not again.
	if len(r.tails) != len(paths) {
		t.Errorf("%d files followed, want %d", len(r.tails), len(paths))
	}
	for path, tl := range r.tails {
		if tl.whole != 1 {
			t.Errorf("%s: read whole %d times, want once", path, tl.whole)
		}
	}
}

// A series file carbon is creating — cut before its header ends, or before
// its archive does — holds no point yet: both readers count without it,
// and read it next time. A file that is no whisper file is still an error.
func TestReadCarbonSkipsAFileBeingCreated(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "carbon/agents/h-n0/committedPoints.wsp", Point{100, 0}, Point{101, 50}, Point{102, 0})
	whole := file(1, 60, make([]Point, 60))
	for name, n := range map[string]int{"metricsReceived.wsp": 10, "errors.wsp": 28 + 12} {
		if err := os.WriteFile(filepath.Join(dir, "carbon/agents/h-n0", name), whole[:n], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want := CarbonCounts{Committed: 50, CacheSize: -1}
	if c, err := ReadCarbon(dir); err != nil || c != want {
		t.Errorf("ReadCarbon = %+v, %v; want %+v", c, err, want)
	}
	if c, err := NewCarbonReader(dir).Read(); err != nil || c != want {
		t.Errorf("CarbonReader.Read = %+v, %v; want %+v", c, err, want)
	}
	if err := os.MkdirAll(filepath.Join(dir, "carbon/agents/h-n0/cache"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "carbon/agents/h-n0/cache/size.wsp"), make([]byte, 64), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadCarbon(dir); err == nil {
		t.Error("a file of 0 archives was read without an error")
	}
}
