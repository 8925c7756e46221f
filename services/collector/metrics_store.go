package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// metricSample is one sample of one series, as the metrics table holds it.
type metricSample struct {
	Time          time.Time
	Code          string
	Phase         string
	Configuration string
	Component     string // sut | loader | benchmarker | service
	Metric        string
	Labels        map[string]string // the series' labels
	Value         float64
}

var metricColumns = []string{"time", "code", "phase", "configuration", "component", "metric", "labels", "value"}

// storeMetrics stores samples in one transaction and returns how many were
// new: COPY into a temporary table, then one INSERT … ON CONFLICT DO NOTHING
// into metrics, so samples already stored (a pull repeated after a crash, or
// overlapping windows) are skipped. The daily partitions the samples fall
// into are created first when the table is natively partitioned.
func storeMetrics(ctx context.Context, pool *pgxpool.Pool, samples []metricSample) (int64, error) {
	if len(samples) == 0 {
		return 0, nil
	}
	lo, hi := samples[0].Time, samples[0].Time
	for _, s := range samples {
		if s.Time.Before(lo) {
			lo = s.Time
		}
		if s.Time.After(hi) {
			hi = s.Time
		}
	}
	var stored int64
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT metrics_ensure_partitions($1, $2)`, lo, hi); err != nil {
			return fmt.Errorf("partitions: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TEMP TABLE metrics_in (
			time timestamptz, code text, phase text, configuration text,
			component text, metric text, labels jsonb, value double precision
		) ON COMMIT DROP`); err != nil {
			return err
		}
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"metrics_in"}, metricColumns, pgx.CopyFromSlice(len(samples), func(i int) ([]any, error) {
			s := samples[i]
			labels := s.Labels
			if labels == nil {
				labels = map[string]string{}
			}
			return []any{s.Time, s.Code, s.Phase, s.Configuration, s.Component, s.Metric, labels, s.Value}, nil
		}))
		if err != nil {
			return fmt.Errorf("copy: %w", err)
		}
		tag, err := tx.Exec(ctx, `INSERT INTO metrics (time, code, phase, configuration, component, metric, labels, value)
			SELECT time, code, phase, configuration, component, metric, labels, value FROM metrics_in
			ON CONFLICT DO NOTHING`)
		if err != nil {
			return err
		}
		stored = tag.RowsAffected()
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("store %d metric samples: %w", len(samples), err)
	}
	return stored, nil
}
