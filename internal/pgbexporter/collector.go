package pgbexporter

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

var upDesc = prometheus.NewDesc("pgbouncer_up", "1 when PgBouncer's admin console answered SHOW STATS and SHOW POOLS at this scrape, else 0.", nil, nil)

// Collector reads PgBouncer's admin console at every scrape, on one
// connection it keeps between scrapes: a login per scrape (TCP and SCRAM,
// to a single-threaded PgBouncer busy with the benchmark) is work the
// scrape need not wait for. A connection that fails is closed, and the
// scrape tries once more on a new one; one no scrape used for idleClose is
// closed (the exporter's server was closed). The console connection counts in
// the "pgbouncer" pool's client connections, as it did while it was open
// only during the scrape: SHOW POOLS runs on it either way.
type Collector struct {
	url     string
	timeout time.Duration
	log     *slog.Logger
	descs   map[string]*prometheus.Desc // metric name → desc

	mu   sync.Mutex
	conn *pgx.Conn   // nil until the first scrape, or after a failure
	idle *time.Timer // closes conn idleClose after the last scrape
}

// idleClose is how long the console connection outlives the last scrape.
const idleClose = 15 * time.Second

// New makes a Collector for the admin console at connString (a PostgreSQL
// URL whose database is "pgbouncer", user one of admin_users or
// stats_users); the simple protocol is forced. timeout bounds one scrape
// (0: 5s).
func New(connString string, timeout time.Duration, log *slog.Logger) (*Collector, error) {
	u, err := url.Parse(connString)
	if err != nil {
		return nil, fmt.Errorf("pgbexporter: console url: %w", err)
	}
	q := u.Query()
	q.Set("default_query_exec_mode", "simple_protocol")
	u.RawQuery = q.Encode()
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	c := &Collector{url: u.String(), timeout: timeout, log: log, descs: map[string]*prometheus.Desc{}}
	for _, cols := range []struct {
		m      map[string]column
		labels []string
	}{{statsColumns, []string{"database"}}, {poolsColumns, []string{"database", "user"}}} {
		for _, col := range cols.m {
			c.descs[col.metric] = prometheus.NewDesc(col.metric, col.help, cols.labels, nil)
		}
	}
	c.descs[maxwaitMetric.metric] = prometheus.NewDesc(maxwaitMetric.metric, maxwaitMetric.help, []string{"database", "user"}, nil)
	return c, nil
}

// Handler serves the metrics of the console at connString on a registry of
// its own.
func Handler(connString string, timeout time.Duration, log *slog.Logger) (http.Handler, error) {
	c, err := New(connString, timeout, log)
	if err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	if err := reg.Register(c); err != nil {
		return nil, err
	}
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelError)}), nil
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- upDesc
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect implements prometheus.Collector. A console that cannot be read
// yields pgbouncer_up 0 and no other series (not zeros).
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	samples, err := c.read(ctx)
	if err != nil {
		c.log.Warn("pgbouncer console unreadable", "err", err)
		ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, 1)
	for _, s := range samples {
		t := prometheus.CounterValue
		if s.col.gauge {
			t = prometheus.GaugeValue
		}
		ch <- prometheus.MustNewConstMetric(c.descs[s.col.metric], t, s.value, s.labels...)
	}
}

func (c *Collector) read(ctx context.Context) ([]sample, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	reused := c.conn != nil
	out, err := c.readOnce(ctx)
	if err != nil && reused && ctx.Err() == nil {
		out, err = c.readOnce(ctx) // the kept connection had gone stale
	}
	if c.idle == nil {
		c.idle = time.AfterFunc(idleClose, c.Close)
	} else {
		c.idle.Reset(idleClose)
	}
	return out, err
}

// readOnce reads both SHOW commands on the kept connection, made if there
// is none; on an error it closes the connection.
func (c *Collector) readOnce(ctx context.Context) ([]sample, error) {
	if c.conn == nil {
		conn, err := pgx.Connect(ctx, c.url)
		if err != nil {
			return nil, err
		}
		c.conn = conn
	}
	out, err := showAll(ctx, c.conn)
	if err != nil {
		_ = c.conn.Close(context.WithoutCancel(ctx))
		c.conn = nil
	}
	return out, err
}

// Close closes the kept console connection.
func (c *Collector) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != nil {
		_ = c.conn.Close(context.Background())
		c.conn = nil
	}
}

func showAll(ctx context.Context, conn *pgx.Conn) ([]sample, error) {
	stats, err := show(ctx, conn, "SHOW STATS", statsColumns, "database")
	if err != nil {
		return nil, err
	}
	pools, err := show(ctx, conn, "SHOW POOLS", poolsColumns, "database", "user")
	if err != nil {
		return nil, err
	}
	return append(stats, pools...), nil
}

func show(ctx context.Context, conn *pgx.Conn, cmd string, cols map[string]column, labelCols ...string) ([]sample, error) {
	rows, err := conn.Query(ctx, cmd)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cmd, err)
	}
	defer rows.Close()
	var names []string
	for _, f := range rows.FieldDescriptions() {
		names = append(names, f.Name)
	}
	var values [][]any
	for rows.Next() {
		v, err := rows.Values()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", cmd, err)
		}
		values = append(values, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", cmd, err)
	}
	s, err := parseShow(names, values, cols, labelCols...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cmd, err)
	}
	return s, nil
}
