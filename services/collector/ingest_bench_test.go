package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// BenchmarkIngest measures the collector's ingest rate: metric
// samples stored per second through storeMetrics, called per series as the
// puller calls it (one query answer at a time), against one raw COPY of the
// same rows into the same table, interleaved ABAB… in one run on a
// throwaway PostgreSQL. `make bench-monitoring` runs it once
// (-benchtime 1x); BENCHQ_INGEST_ROWS (default 500,000) and
// BENCHQ_INGEST_ROUNDS (default 3) size it. It reports the medians and
// their ratio (goal ≥ 0.8) and never fails on them.
func BenchmarkIngest(b *testing.B) {
	ctx := context.Background()
	db := resultsDB(b, ctx)
	rows, rounds := envInt("BENCHQ_INGEST_ROWS", 500_000), envInt("BENCHQ_INGEST_ROUNDS", 3)
	const perSeries = 3600 // one series of a 1-hour phase at a 1 s scrape
	var collector, raw []float64
	for i := 0; i < b.N; i++ {
		for r := 0; r < rounds; r++ {
			samples := syntheticSamples(fmt.Sprintf("ingest-%d-%d-c", i, r), rows, perSeries)
			collector = append(collector, timeRows(b, rows, func() error {
				for lo := 0; lo < len(samples); lo += perSeries {
					if _, err := storeMetrics(ctx, db, samples[lo:min(lo+perSeries, len(samples))]); err != nil {
						return err
					}
				}
				return nil
			}))
			samples = syntheticSamples(fmt.Sprintf("ingest-%d-%d-r", i, r), rows, perSeries)
			raw = append(raw, timeRows(b, rows, func() error { return rawCopy(ctx, db, samples) }))
		}
	}
	c, w := medianOf(collector), medianOf(raw)
	b.ReportMetric(c, "collector-rows/s")
	b.ReportMetric(w, "copy-rows/s")
	b.ReportMetric(c/w, "ratio")
	fmt.Printf("ingest of %d metric samples, %d rounds ABAB: collector (storeMetrics per %d-sample series) %.0f rows/s, raw COPY %.0f rows/s, ratio %.2f (goal >= 0.8)\n",
		rows, rounds, perSeries, c, w, c/w)
}

func timeRows(b *testing.B, rows int, store func() error) float64 {
	b.Helper()
	began := time.Now()
	if err := store(); err != nil {
		b.Fatal(err)
	}
	return float64(rows) / time.Since(began).Seconds()
}

// rawCopy is the floor storeMetrics is measured against: the same rows
// COPied straight into metrics, with no staging table and no duplicate check.
func rawCopy(ctx context.Context, db *pgxpool.Pool, samples []metricSample) error {
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT metrics_ensure_partitions($1, $2)`, samples[0].Time, samples[len(samples)-1].Time); err != nil {
			return err
		}
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"metrics"}, metricColumns, pgx.CopyFromSlice(len(samples), func(i int) ([]any, error) {
			return rowOf(samples[i]), nil
		}))
		return err
	})
}

// syntheticSamples are n samples of one experiment, perSeries a series
// (a metric of a component at a 1 s step), labelled as the puller labels them.
func syntheticSamples(code string, n, perSeries int) []metricSample {
	t0 := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	out := make([]metricSample, n)
	for i := range out {
		series := i / perSeries
		out[i] = metricSample{
			Time: t0.Add(time.Duration(i%perSeries) * time.Second), Code: code, Phase: "cfg-1-1", Configuration: "cfg-1",
			Component: []string{"sut", "loader", "benchmarker", "pool"}[series%4], Metric: "m" + strconv.Itoa(series),
			Labels: map[string]string{"instance": "127.0.0.1:9100"}, Value: float64(i),
		}
	}
	return out
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

func medianOf(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
