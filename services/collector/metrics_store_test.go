package main

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/benchq/benchq/internal/resultsdb"
)

func TestStoreMetricsOnceAcrossDays(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	pool := resultsDB(t, ctx)
	var kind string
	if err := pool.QueryRow(ctx, `SELECT relkind::text FROM pg_class WHERE relname = 'metrics'`).Scan(&kind); err != nil || kind != "p" {
		t.Fatalf("metrics is of relkind %q (%v), want a partitioned table (no TimescaleDB here)", kind, err)
	}

	// Two series (CPU user and system of one SUT) at 1 s for 20 s across
	// midnight UTC: two days' partitions.
	midnight := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	var samples []metricSample
	for i := -10; i < 10; i++ {
		for _, mode := range []string{"user", "system"} {
			samples = append(samples, metricSample{
				Time: midnight.Add(time.Duration(i) * time.Second), Code: "1234", Phase: "run-1", Configuration: "PostgreSQL-1",
				Component: "sut", Metric: "cpu", Labels: map[string]string{"mode": mode, "pod": "pg-0"}, Value: float64(i + 10),
			})
		}
	}
	samples[3].Value = math.NaN() // a failed scrape's NaN is a value too
	count := func() (n int) {
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM metrics WHERE code = '1234'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n, err := storeMetrics(ctx, pool, samples); err != nil || n != 40 {
		t.Fatalf("first store: %d, %v; want 40", n, err)
	}
	if n, err := storeMetrics(ctx, pool, samples); err != nil || n != 0 {
		t.Errorf("second store of the same samples: %d new, %v; want 0", n, err)
	}
	// An overlapping re-pull: the last 10 s again plus 5 s more, and a
	// duplicate within the batch itself.
	next := append([]metricSample(nil), samples[20:]...)
	for i := 10; i < 15; i++ {
		next = append(next, metricSample{Time: midnight.Add(time.Duration(i) * time.Second), Code: "1234", Phase: "run-1", Configuration: "PostgreSQL-1", Component: "sut", Metric: "cpu", Labels: map[string]string{"pod": "pg-0", "mode": "user"}, Value: float64(i + 10)})
	}
	next = append(next, next[len(next)-1])
	if n, err := storeMetrics(ctx, pool, next); err != nil || n != 5 {
		t.Errorf("overlapping store: %d new, %v; want 5", n, err)
	}
	if n := count(); n != 45 {
		t.Errorf("%d rows, want 45", n)
	}

	rows, err := pool.Query(ctx, `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'metrics'::regclass ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			t.Fatal(err)
		}
		parts = append(parts, p)
	}
	if len(parts) != 2 || parts[0] != "metrics_p20261121" || parts[1] != "metrics_p20261122" {
		t.Errorf("partitions %v, want metrics_p20261121 and metrics_p20261122", parts)
	}
	var before, after, nan int
	if err := pool.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM metrics_p20261121), (SELECT count(*) FROM metrics_p20261122),
			(SELECT count(*) FROM metrics WHERE value = 'NaN')`).Scan(&before, &after, &nan); err != nil {
		t.Fatal(err)
	}
	if before != 20 || after != 25 || nan != 1 {
		t.Errorf("rows per day %d and %d, NaN %d; want 20, 25, 1", before, after, nan)
	}
	var labels string
	if err := pool.QueryRow(ctx, `SELECT labels::text FROM metrics WHERE time = $1 AND labels->>'mode' = 'system'`, midnight).Scan(&labels); err != nil || labels != `{"pod": "pg-0", "mode": "system"}` {
		t.Errorf("labels %s, %v", labels, err)
	}
	// The migration is idempotent with the table in place.
	if _, err := pool.Exec(ctx, `DELETE FROM schema_migrations WHERE version = '0003_metrics'`); err != nil {
		t.Fatal(err)
	}
	if err := resultsdb.Migrate(ctx, pool); err != nil {
		t.Errorf("0003 applied again: %v", err)
	}
}
