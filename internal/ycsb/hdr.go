package ycsb

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Latency histograms: YCSB's hdrhistogram measurement records microseconds
// as Java ints, with 3 significant digits (Recorder(3)). A histogram covering
// 1 µs … 2^31 µs at the same precision holds every value YCSB can record, so
// merging never drops one.
const (
	histLowest  = 1
	histHighest = math.MaxInt32
	histDigits  = 3
)

// NewHistogram returns an empty latency histogram with the range and
// precision of YCSB's.
func NewHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(histLowest, histHighest, histDigits)
}

// ReadHistogramLog merges every interval histogram of an HdrHistogram log —
// what YCSB writes per operation with hdrhistogram.fileoutput=true, one
// interval per status line plus the rest at exit — into one histogram: the
// operation's whole run.
func ReadHistogramLog(r io.Reader) (*hdrhistogram.Histogram, error) {
	total := NewHistogram()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for lineNo := 1; sc.Scan(); lineNo++ {
		line := strings.TrimSpace(sc.Text())
		// Comments, the legend ("StartTimestamp",...) and blank lines.
		if line == "" || line[0] == '#' || line[0] == '"' {
			continue
		}
		if strings.HasPrefix(line, "Tag=") {
			_, line, _ = strings.Cut(line, ",")
		}
		// StartTimestamp,Interval_Length,Interval_Max,Interval_Compressed_Histogram
		fields := strings.SplitN(line, ",", 4)
		if len(fields) != 4 {
			return nil, fmt.Errorf("histogram log line %d: want 4 comma-separated fields, got %q", lineNo, line)
		}
		// Only the histogram is read, but a line whose figures are not
		// numbers is not one the writer wrote whole: a second writer that
		// opened the log with truncation leaves NUL bytes where the lines
		// it cut were, and the log would silently add up to less.
		for _, f := range fields[:3] {
			if _, err := strconv.ParseFloat(f, 64); err != nil {
				return nil, fmt.Errorf("histogram log line %d: %q is not a number: the log was cut while it was written (NUL bytes mark the lost lines)",
					lineNo, f)
			}
		}
		h, err := DecodeHistogram(fields[3])
		if err != nil {
			return nil, fmt.Errorf("histogram log line %d: %w", lineNo, err)
		}
		if err := Merge(total, h); err != nil {
			return nil, fmt.Errorf("histogram log line %d: %w", lineNo, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read histogram log: %w", err)
	}
	return total, nil
}

// Merge adds every value of from to into; it fails rather than drop one.
func Merge(into, from *hdrhistogram.Histogram) error {
	if dropped := into.Merge(from); dropped > 0 {
		return fmt.Errorf("%d values out of the histogram's range (max %d)", dropped, into.HighestTrackableValue())
	}
	return nil
}

// EncodeHistogram returns h in HdrHistogram's V2 compressed encoding, base64:
// the form HdrHistogram's Java, Go and Python implementations all decode.
func EncodeHistogram(h *hdrhistogram.Histogram) (string, error) {
	b, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return "", fmt.Errorf("encode histogram: %w", err)
	}
	return string(b), nil
}

// DecodeHistogram decodes a base64 V2 compressed histogram (Java's
// HistogramLogWriter and EncodeHistogram write it).
func DecodeHistogram(s string) (h *hdrhistogram.Histogram, err error) {
	if len(s) < 12 {
		return nil, errors.New("decode histogram: too short")
	}
	h, err = decodeLib(s)
	if errors.Is(err, errBeyondHeader) {
		// YCSB's auto-resizing histograms now and then log counts beyond
		// the highest value their own header names (a histogram recycled
		// at another size); Java's reader resizes to take them, and so do
		// we: the counts' layout depends on the lowest value and the
		// digits only, so a wider histogram reads them as they were meant.
		return decodeWide(s)
	}
	return h, err
}

// errBeyondHeader: the payload holds counts beyond its header's range.
var errBeyondHeader = errors.New("counts beyond the header's highest value")

// decodeLib decodes s with hdrhistogram-go, which indexes the payload
// without checking it against the header's range: its panic is the
// payload's error.
func decodeLib(s string) (h *hdrhistogram.Histogram, err error) {
	defer func() {
		if r := recover(); r != nil {
			h, err = nil, fmt.Errorf("decode histogram: %w (%v)", errBeyondHeader, r)
		}
	}()
	h, err = hdrhistogram.Decode([]byte(s))
	if err != nil {
		return nil, fmt.Errorf("decode histogram: %w", err)
	}
	return h, nil
}

// decodeWide decodes a V2 compressed histogram (base64; a 40-byte header,
// then ZigZag LEB128 counts, negative runs of zeros) into a histogram of
// the header's lowest value and digits that reaches up to histHighest, or
// fails naming what is wrong — never a panic.
func decodeWide(s string) (*hdrhistogram.Histogram, error) {
	fail := func(what string, args ...any) (*hdrhistogram.Histogram, error) {
		return nil, fmt.Errorf("decode histogram: corrupt encoding: "+what, args...)
	}
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(raw) < 8 {
		return fail("not base64 of a compressed histogram (%v)", err)
	}
	n := int(binary.BigEndian.Uint32(raw[4:8]))
	if n < 0 || 8+n > len(raw) {
		return fail("compressed length %d beyond its %d bytes", n, len(raw)-8)
	}
	z, err := zlib.NewReader(bytes.NewReader(raw[8 : 8+n]))
	if err != nil {
		return fail("%v", err)
	}
	body, err := io.ReadAll(io.LimitReader(z, 64<<20))
	if err != nil || len(body) < 40 {
		return fail("header (%v)", err)
	}
	digits := int(int32(binary.BigEndian.Uint32(body[12:16])))
	lowest := int64(binary.BigEndian.Uint64(body[16:24]))
	highest := int64(binary.BigEndian.Uint64(body[24:32]))
	if digits < 1 || digits > 5 || lowest < 1 || highest < 2*lowest || highest > 1<<40 {
		return fail("header: %d digits, range %d..%d", digits, lowest, highest)
	}
	counts := hdrhistogram.New(lowest, max(highest, histHighest), digits).Export().Counts
	payload, index := body[40:], 0
	for len(payload) > 0 {
		v, size := zigZag(payload)
		if size == 0 {
			return fail("truncated count at index %d", index)
		}
		payload = payload[size:]
		if v < 0 {
			if v == math.MinInt64 || -v > int64(len(counts)-index) {
				return fail("a run of %d zeros at index %d beyond %d", -v, index, len(counts))
			}
			index += int(-v)
			continue
		}
		if index >= len(counts) {
			return fail("count at index %d beyond %d", index, len(counts))
		}
		counts[index] = v
		index++
	}
	return hdrhistogram.Import(&hdrhistogram.Snapshot{LowestTrackableValue: lowest, HighestTrackableValue: max(highest, histHighest),
		SignificantFigures: int64(digits), Counts: counts}), nil
}

// zigZag reads one ZigZag LEB128-64b9B value (HdrHistogram's: seven bits a
// byte, the ninth byte all eight); size 0 when b ends first.
func zigZag(b []byte) (v int64, size int) {
	var u uint64
	for i := 0; i < 9; i++ {
		if i >= len(b) {
			return 0, 0
		}
		if i == 8 {
			u |= uint64(b[i]) << 56
			return int64(u>>1) ^ -int64(u&1), 9
		}
		u |= uint64(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			return int64(u>>1) ^ -int64(u&1), i + 1
		}
	}
	return 0, 0
}

// ValueAtPercentile is the value at percentile p (0 < p ≤ 100) as
// HdrHistogram's Java implementation — and so YCSB — computes it: the
// highest value equivalent to the smallest recorded value that at least p %
// of all values are less than or equal to (nearest rank). hdrhistogram-go
// rounds the rank to the nearest integer instead, which can pick the bucket
// below YCSB's.
func ValueAtPercentile(h *hdrhistogram.Histogram, p float64) int64 {
	total := h.TotalCount()
	if total == 0 {
		return 0
	}
	// Java steps just below p so that float error cannot push an exact rank up.
	q := math.Min(math.Max(math.Nextafter(p, math.Inf(-1)), 0), 100)
	rank := max(int64(math.Ceil(q/100*float64(total))), 1)
	var seen int64
	for _, b := range h.Distribution() {
		seen += b.Count
		if seen >= rank {
			return b.To
		}
	}
	return h.Max()
}
