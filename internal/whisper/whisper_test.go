package whisper

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"
)

// file builds a one-archive whisper file of n slots of step seconds whose
// slots hold points (a zero time leaves the slot empty).
func file(step, n uint32, slots []Point) []byte {
	var b bytes.Buffer
	put := func(v any) { _ = binary.Write(&b, binary.BigEndian, v) }
	put(uint32(1))       // aggregation: average
	put(step * n)        // max retention
	put(float32(0.5))    // x-files factor
	put(uint32(1))       // archives
	put(uint32(16 + 12)) // offset
	put(step)            // seconds per point
	put(n)               // points
	for i := range n {
		p := Point{}
		if int(i) < len(slots) {
			p = slots[i]
		}
		put(uint32(p.Time))
		put(p.Value)
	}
	return b.Bytes()
}

// A ring that wrapped: slot 0 holds the newest lap's first point, later
// slots the previous lap's (too old: left out), a NaN and an empty slot.
func TestPointsKeepsTheCurrentLapOnly(t *testing.T) {
	const step, n = 10, 5 // 50 s of retention
	b := file(step, n, []Point{
		{1050, 5}, // slot 0: the newest (base 1050)
		{1060, 6}, // slot 1: the newest lap too
		{1020, 2}, // slot 2: 1020 is 40 s before 1060, still retained
		{1030, math.NaN()},
		{990, 9}, // slot 4: the lap before (990 <= 1060-50)
	})
	h, err := ReadHeader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Archives) != 1 || h.Archives[0].Retention() != 50 {
		t.Fatalf("header %+v", h)
	}
	pts, err := Points(bytes.NewReader(b), h.Archives[0])
	if err != nil {
		t.Fatal(err)
	}
	want := []Point{{1020, 2}, {1050, 5}, {1060, 6}}
	if len(pts) != len(want) {
		t.Fatalf("points %v, want %v", pts, want)
	}
	for i := range want {
		if pts[i] != want[i] {
			t.Errorf("point %d: %v, want %v", i, pts[i], want[i])
		}
	}
}

// A point in a slot that is not its own (a torn or foreign write) is not
// read, and a file never written holds nothing.
func TestPointsSkipsMisplacedAndEmpty(t *testing.T) {
	b := file(1, 4, []Point{{100, 1}, {102, 2}})
	h, _ := ReadHeader(bytes.NewReader(b))
	pts, _ := Points(bytes.NewReader(b), h.Archives[0])
	if len(pts) != 1 || pts[0] != (Point{100, 1}) {
		t.Errorf("points %v, want only {100 1}", pts)
	}
	empty := file(1, 4, nil)
	if pts, err := Points(bytes.NewReader(empty), h.Archives[0]); err != nil || len(pts) != 0 {
		t.Errorf("never written: %v, %v", pts, err)
	}
	if _, err := ReadHeader(bytes.NewReader(make([]byte, 16))); err == nil {
		t.Error("a header of zero archives was read")
	}
}
