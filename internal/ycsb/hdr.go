package ycsb

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
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
	// hdrhistogram-go indexes the payload without checking its length.
	defer func() {
		if r := recover(); r != nil {
			h, err = nil, fmt.Errorf("decode histogram: corrupt encoding (%v)", r)
		}
	}()
	if len(s) < 12 {
		return nil, errors.New("decode histogram: too short")
	}
	h, err = hdrhistogram.Decode([]byte(s))
	if err != nil {
		return nil, fmt.Errorf("decode histogram: %w", err)
	}
	return h, nil
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
