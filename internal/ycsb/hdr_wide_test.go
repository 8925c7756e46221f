package ycsb

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// rewrite returns encoded (a base64 V2 compressed histogram) with its
// decompressed body changed by edit, the compressed length fixed.
func rewrite(t *testing.T, encoded string, edit func(body []byte) []byte) string {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		t.Fatal(err)
	}
	z, err := zlib.NewReader(bytes.NewReader(raw[8:]))
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(z)
	if err != nil {
		t.Fatal(err)
	}
	var comp bytes.Buffer
	w := zlib.NewWriter(&comp)
	_, _ = w.Write(edit(body))
	_ = w.Close()
	out := binary.BigEndian.AppendUint32(append([]byte{}, raw[:4]...), uint32(comp.Len()))
	return base64.StdEncoding.EncodeToString(append(out, comp.Bytes()...))
}

// withHeaderHighest rewrites the highest trackable value in the header of
// encoded, as YCSB's recycled auto-resizing histograms now and then log
// it: below their counts.
func withHeaderHighest(t *testing.T, encoded string, highest int64) string {
	return rewrite(t, encoded, func(body []byte) []byte {
		binary.BigEndian.PutUint64(body[24:32], uint64(highest))
		return body
	})
}

// withPayload replaces the counts of encoded with payload, the header's
// length fixed.
func withPayload(t *testing.T, encoded string, payload []byte) string {
	return rewrite(t, encoded, func(body []byte) []byte {
		body = append(body[:40:40], payload...)
		binary.BigEndian.PutUint32(body[4:8], uint32(len(payload)))
		return body
	})
}

// A histogram whose counts reach beyond its header's highest value (a SCAN
// of 50 ms logged with a header of 1 ms: CI ci11) is read whole, as Java's
// reader reads it, instead of failing the shard's histogram.
func TestDecodeHistogramBeyondItsHeader(t *testing.T) {
	orig := hdrhistogram.New(1, 100_000, 3)
	for _, v := range []int64{10, 500, 50_000, 50_000} {
		_ = orig.RecordValue(v)
	}
	enc, err := EncodeHistogram(orig)
	if err != nil {
		t.Fatal(err)
	}
	bad := withHeaderHighest(t, enc, 1_000)
	if _, err := decodeLib(bad); !errors.Is(err, errBeyondHeader) {
		t.Fatalf("hdrhistogram-go on counts beyond the header: %v, want errBeyondHeader", err)
	}
	h, err := DecodeHistogram(bad)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if h.TotalCount() != 4 || ValueAtPercentile(h, 100) != ValueAtPercentile(orig, 100) || ValueAtPercentile(h, 50) != ValueAtPercentile(orig, 50) {
		t.Errorf("decoded %d values, p50 %d p100 %d; want 4, %d, %d", h.TotalCount(), ValueAtPercentile(h, 50), ValueAtPercentile(h, 100),
			ValueAtPercentile(orig, 50), ValueAtPercentile(orig, 100))
	}
	total := NewHistogram()
	if err := Merge(total, h); err != nil || total.TotalCount() != 4 {
		t.Errorf("merge: %v, %d values", err, total.TotalCount())
	}
	// Garbage still fails, naming it, without a panic: a run of
	// MinInt64 zeros (nine 0xFF bytes) among them.
	hostile := withPayload(t, enc, bytes.Repeat([]byte{0xff}, 9))
	for _, s := range []string{bad[:len(bad)/2], strings.Repeat("A", 40), hostile} {
		if _, err := decodeWide(s); err == nil {
			t.Errorf("decodeWide(%.20q…) = nil error", s)
		}
	}
}
