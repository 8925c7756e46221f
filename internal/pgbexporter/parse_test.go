package pgbexporter

import (
	"fmt"
	"math/big"
	"sort"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"
)

func TestParseShowPools(t *testing.T) {
	t.Parallel()
	// SHOW POOLS of pgbouncer 1.18, plus a column a later version may add.
	names := []string{"database", "user", "cl_active", "cl_waiting", "cl_cancel_req", "sv_active", "sv_idle", "sv_used", "sv_tested", "sv_login", "maxwait", "maxwait_us", "pool_mode", "sv_future"}
	rows := [][]any{
		{"bench", "postgres", int64(3), int64(2), int64(0), int64(1), int64(4), int64(0), int64(0), int64(0), int64(1), int64(250000), "transaction", int64(9)},
	}
	got, err := parseShow(names, rows, poolsColumns, "database", "user")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"pgbouncer_pools_client_active_connections{bench,postgres} 3",
		"pgbouncer_pools_client_cancel_requests{bench,postgres} 0",
		"pgbouncer_pools_client_maxwait_seconds{bench,postgres} 1.25",
		"pgbouncer_pools_client_waiting_connections{bench,postgres} 2",
		"pgbouncer_pools_server_active_connections{bench,postgres} 1",
		"pgbouncer_pools_server_idle_connections{bench,postgres} 4",
		"pgbouncer_pools_server_login_connections{bench,postgres} 0",
		"pgbouncer_pools_server_testing_connections{bench,postgres} 0",
		"pgbouncer_pools_server_used_connections{bench,postgres} 0",
	}
	if g := render(got); strings.Join(g, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(g, "\n"), strings.Join(want, "\n"))
	}
}

func TestParseShowStats(t *testing.T) {
	t.Parallel()
	names := []string{"database", "total_xact_count", "total_query_count", "total_received", "total_sent", "total_xact_time", "total_query_time", "total_wait_time", "avg_xact_count"}
	rows := [][]any{{"bench", numeric(7), numeric(9), int64(100), int64(200), int64(1500000), int64(500), "42", int64(1)}}
	got, err := parseShow(names, rows, statsColumns, "database")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"pgbouncer_stats_total_query_count{bench} 9",
		"pgbouncer_stats_total_query_time_seconds{bench} 0.0005",
		"pgbouncer_stats_total_received_bytes{bench} 100",
		"pgbouncer_stats_total_sent_bytes{bench} 200",
		"pgbouncer_stats_total_wait_time_seconds{bench} 4.2e-05",
		"pgbouncer_stats_total_xact_count{bench} 7",
		"pgbouncer_stats_total_xact_time_seconds{bench} 1.5",
	}
	if g := render(got); strings.Join(g, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(g, "\n"), strings.Join(want, "\n"))
	}
}

func TestParseShowErrors(t *testing.T) {
	t.Parallel()
	if _, err := parseShow([]string{"total_xact_count"}, [][]any{{int64(1)}}, statsColumns, "database"); err == nil {
		t.Error("no error without the label column")
	}
	if _, err := parseShow([]string{"database", "total_xact_count"}, [][]any{{"x", true}}, statsColumns, "database"); err == nil {
		t.Error("no error on a value that is no number")
	}
}

func numeric(n int64) pgtype.Numeric {
	return pgtype.Numeric{Int: big.NewInt(n), Valid: true}
}

func render(ss []sample) []string {
	var out []string
	for _, s := range ss {
		out = append(out, fmt.Sprintf("%s{%s} %v", s.col.metric, strings.Join(s.labels, ","), s.value))
	}
	sort.Strings(out)
	return out
}
