package pgbexporter

import (
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5/pgtype"
)

// column maps one column of a SHOW command to a metric.
type column struct {
	metric string
	help   string
	scale  float64 // multiplies the column's value (µs → s)
	gauge  bool
}

// statsColumns are SHOW STATS' cumulative columns in pgbouncer 1.18, per
// database. The avg_* columns are left out: rates over a window come from the
// totals, exactly, rather than from PgBouncer's own stats_period averages.
var statsColumns = map[string]column{
	"total_xact_count":  {"pgbouncer_stats_total_xact_count", "Transactions pooled (SQL transactions, or statements outside one).", 1, false},
	"total_query_count": {"pgbouncer_stats_total_query_count", "SQL queries pooled.", 1, false},
	"total_received":    {"pgbouncer_stats_total_received_bytes", "Bytes received from clients.", 1, false},
	"total_sent":        {"pgbouncer_stats_total_sent_bytes", "Bytes sent to clients.", 1, false},
	"total_xact_time":   {"pgbouncer_stats_total_xact_time_seconds", "Time spent in transactions, idle in transaction included.", 1e-6, false},
	"total_query_time":  {"pgbouncer_stats_total_query_time_seconds", "Time spent actively connected to a server running queries.", 1e-6, false},
	"total_wait_time":   {"pgbouncer_stats_total_wait_time_seconds", "Time clients spent waiting for a server.", 1e-6, false},
}

// poolsColumns are SHOW POOLS' columns, per database and user.
var poolsColumns = map[string]column{
	"cl_active":     {"pgbouncer_pools_client_active_connections", "Client connections linked to a server connection or idle.", 1, true},
	"cl_waiting":    {"pgbouncer_pools_client_waiting_connections", "Client connections waiting for a server connection.", 1, true},
	"cl_cancel_req": {"pgbouncer_pools_client_cancel_requests", "Client connections that have not forwarded their cancel request yet.", 1, true},
	"sv_active":     {"pgbouncer_pools_server_active_connections", "Server connections linked to a client.", 1, true},
	"sv_idle":       {"pgbouncer_pools_server_idle_connections", "Server connections unused and immediately usable.", 1, true},
	"sv_used":       {"pgbouncer_pools_server_used_connections", "Server connections idle for longer than server_check_delay.", 1, true},
	"sv_tested":     {"pgbouncer_pools_server_testing_connections", "Server connections running server_reset_query or server_check_query.", 1, true},
	"sv_login":      {"pgbouncer_pools_server_login_connections", "Server connections logging in.", 1, true},
}

// maxwaitMetric joins maxwait (s) and maxwait_us (µs) of SHOW POOLS.
var maxwaitMetric = column{"pgbouncer_pools_client_maxwait_seconds", "Age of the oldest waiting client.", 1, true}

// sample is one value read from the console.
type sample struct {
	col    column
	labels []string // database[, user]
	value  float64
}

// parseShow turns a SHOW command's result (column names, rows of values as
// pgx returns them) into samples: the columns in cols, labelled with the
// values of labelCols. Unknown columns are ignored, so a newer pgbouncer
// with more columns still works; a missing label column is an error.
func parseShow(names []string, rows [][]any, cols map[string]column, labelCols ...string) ([]sample, error) {
	idx := map[string]int{}
	for i, n := range names {
		idx[n] = i
	}
	for _, l := range labelCols {
		if _, ok := idx[l]; !ok {
			return nil, fmt.Errorf("no column %q in %v", l, names)
		}
	}
	var out []sample
	for _, row := range rows {
		labels := make([]string, len(labelCols))
		for i, l := range labelCols {
			labels[i] = fmt.Sprint(row[idx[l]])
		}
		for name, c := range cols {
			i, ok := idx[name]
			if !ok {
				continue
			}
			v, err := number(row[i])
			if err != nil {
				return nil, fmt.Errorf("column %s: %w", name, err)
			}
			out = append(out, sample{col: c, labels: labels, value: v * c.scale})
		}
		if i, ok := idx["maxwait"]; ok {
			s, err := number(row[i])
			if err != nil {
				return nil, fmt.Errorf("column maxwait: %w", err)
			}
			if j, ok := idx["maxwait_us"]; ok {
				us, err := number(row[j])
				if err != nil {
					return nil, fmt.Errorf("column maxwait_us: %w", err)
				}
				s += us / 1e6
			}
			out = append(out, sample{col: maxwaitMetric, labels: labels, value: s})
		}
	}
	return out, nil
}

// number converts a console value: pgx decodes PgBouncer's counters as
// numeric (pgbouncer 1.18 declares them so) and its gauges as integers;
// text is accepted too.
func number(v any) (float64, error) {
	switch x := v.(type) {
	case pgtype.Numeric:
		f, err := x.Float64Value()
		if err != nil || !f.Valid {
			return 0, fmt.Errorf("numeric %v: %v", x, err)
		}
		return f.Float64, nil
	case int64:
		return float64(x), nil
	case int32:
		return float64(x), nil
	case int16:
		return float64(x), nil
	case float64:
		return x, nil
	case string:
		return strconv.ParseFloat(x, 64)
	case nil:
		return 0, nil
	}
	return 0, fmt.Errorf("unexpected %T %v", v, v)
}
