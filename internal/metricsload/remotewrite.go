package metricsload

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/klauspost/compress/snappy"
	"google.golang.org/protobuf/encoding/protowire"
)

// remoteWriter sends Prometheus remote write 1.0: a WriteRequest protobuf
// (prometheus/prompb: WriteRequest{1: TimeSeries}, TimeSeries{1: Label,
// 2: Sample}, Label{1: name, 2: value}, Sample{1: double value, 2: int64
// milliseconds}), compressed with snappy's block format, POSTed.
type remoteWriter struct {
	url    string
	client *http.Client
	// labels are each series' encoded labels (sorted by name, as the
	// protocol requires: __name__, agent, metric).
	labels [][]byte
	body   []byte
}

func newRemoteWriter(url, name string, agent, metrics int) *remoteWriter {
	w := &remoteWriter{url: url, client: &http.Client{Timeout: 30 * time.Second}, labels: make([][]byte, metrics)}
	for j := range w.labels {
		var b []byte
		for _, l := range [][2]string{{"__name__", name}, {"agent", strconv.Itoa(agent)}, {"metric", strconv.Itoa(j + 1)}} {
			var lb []byte
			lb = protowire.AppendTag(lb, 1, protowire.BytesType)
			lb = protowire.AppendString(lb, l[0])
			lb = protowire.AppendTag(lb, 2, protowire.BytesType)
			lb = protowire.AppendString(lb, l[1])
			b = protowire.AppendTag(b, 1, protowire.BytesType)
			b = protowire.AppendBytes(b, lb)
		}
		w.labels[j] = b
	}
	return w
}

// encode is the WriteRequest of one flush: value v at t for every series.
func (w *remoteWriter) encode(t time.Time, v int64) []byte {
	var sample []byte
	sample = protowire.AppendTag(sample, 1, protowire.Fixed64Type)
	sample = protowire.AppendFixed64(sample, math.Float64bits(float64(v)))
	sample = protowire.AppendTag(sample, 2, protowire.VarintType)
	sample = protowire.AppendVarint(sample, uint64(t.UnixMilli()))
	b := w.body[:0]
	for _, labels := range w.labels {
		series := len(labels) + protowire.SizeTag(2) + protowire.SizeBytes(len(sample))
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(series))
		b = append(b, labels...)
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b = protowire.AppendBytes(b, sample)
	}
	w.body = b
	return b
}

func (w *remoteWriter) write(ctx context.Context, t time.Time, v int64) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(snappy.Encode(nil, w.encode(t, v))))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	resp, err := w.client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("remote write: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return 0, fmt.Errorf("remote write: %s: %s", resp.Status, bytes.TrimSpace(msg))
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return len(w.labels), nil // a WriteRequest is stored whole or refused
}

func (w *remoteWriter) close() { w.client.CloseIdleConnections() }
