package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
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
// new. The common case — none of them stored yet — is one COPY straight into
// metrics. When that meets a sample already there (a pull repeated after a
// crash, or overlapping windows: the unique index says so), it is rolled
// back to a savepoint and the samples go through a temporary table and one
// INSERT … ON CONFLICT DO NOTHING instead, which skips those already stored;
// that path costs about twice the COPY (make bench-monitoring). The daily
// partitions the samples fall into are created first when the table is
// natively partitioned.
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
	rows := func() pgx.CopyFromSource {
		return pgx.CopyFromSlice(len(samples), func(i int) ([]any, error) { return rowOf(samples[i]), nil })
	}
	var stored int64
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT metrics_ensure_partitions($1, $2)`, lo, hi); err != nil {
			return fmt.Errorf("partitions: %w", err)
		}
		fast, err := tx.Begin(ctx) // a savepoint
		if err != nil {
			return err
		}
		n, err := fast.CopyFrom(ctx, pgx.Identifier{"metrics"}, metricColumns, rows())
		var pgErr *pgconn.PgError
		switch {
		case err == nil:
			stored = n
			return fast.Commit(ctx)
		case errors.As(err, &pgErr) && pgErr.Code == uniqueViolation:
			if err := fast.Rollback(ctx); err != nil {
				return err
			}
		default:
			return fmt.Errorf("copy: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TEMP TABLE metrics_in (
			time timestamptz, code text, phase text, configuration text,
			component text, metric text, labels jsonb, value double precision
		) ON COMMIT DROP`); err != nil {
			return err
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"metrics_in"}, metricColumns, rows()); err != nil {
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

// uniqueViolation is PostgreSQL's SQLSTATE for a duplicate key.
const uniqueViolation = "23505"

// rowOf is a sample as a row of metricColumns.
func rowOf(s metricSample) []any {
	labels := s.Labels
	if labels == nil {
		labels = map[string]string{}
	}
	return []any{s.Time, s.Code, s.Phase, s.Configuration, s.Component, s.Metric, labels, s.Value}
}
