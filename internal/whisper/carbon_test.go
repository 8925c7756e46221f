package whisper

import (
	"os"
	"path/filepath"
	"testing"
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

// A cache that recorded three seconds: 0 committed at 100, 110 at 101 (100
// of ours and its 10 own points of 100), 10 at 102 (its own of 101). Its
// own series hold 10 points at 100, 101 and 102 each, but those of 102 are
// not yet counted in a committedPoints: the cut at 102 leaves them out.
func TestReadCarbonCountsWhatIsNotItsOwn(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "carbon/agents/h-n0/committedPoints.wsp", Point{100, 0}, Point{101, 110}, Point{102, 10})
	write(t, dir, "carbon/agents/h-n0/metricsReceived.wsp", Point{100, 0}, Point{101, 100}, Point{102, 0})
	write(t, dir, "carbon/agents/h-n0/cache/size.wsp", Point{100, 0}, Point{101, 7}, Point{102, 3})
	write(t, dir, "carbon/agents/h-n0/errors.wsp", Point{100, 0}, Point{101, 1}, Point{102, 0})
	for i := range 6 { // six more own series, ten in all
		write(t, dir, "carbon/agents/h-n0/other"+string(rune('a'+i))+".wsp", Point{100, 1}, Point{101, 1}, Point{102, 1})
	}
	write(t, dir, "bq/s1.wsp", Point{100, 5}) // ours: never read
	c, err := ReadCarbon(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := CarbonCounts{Stored: 100, Committed: 120, Own: 20, Received: 100, Errors: 1, CacheSize: 3}
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

// Fresh from its start, under load: the cache recorded its own points at
// 100 and wrote them after its record at 101 (committedPoints 0 at both):
// the difference is below zero, and no count of points is.
func TestReadCarbonIsNeverNegative(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "carbon/agents/h-n0/committedPoints.wsp", Point{100, 0}, Point{101, 0})
	write(t, dir, "carbon/agents/h-n0/errors.wsp", Point{100, 0}, Point{101, 0})
	c, err := ReadCarbon(dir)
	if err != nil || c.Stored != 0 || c.Committed != 0 || c.Own != 2 {
		t.Errorf("ReadCarbon = %+v, %v; want 0 stored of 0 committed, 2 own", c, err)
	}
}
