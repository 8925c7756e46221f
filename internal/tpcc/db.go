package tpcc

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/lib/pq"
	"github.com/pingcap/go-tpc/pkg/measurement"
	"github.com/pingcap/go-tpc/pkg/workload"
	gotpc "github.com/pingcap/go-tpc/tpcc"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/benchbase"
)

// driverName is go-tpc's name for PostgreSQL (lib/pq); it selects go-tpc's
// PostgreSQL DDL and placeholders.
const driverName = "postgres"

// DSN is the lib/pq connection URL of a PostgreSQL endpoint.
func DSN(ep contracts.Endpoint) string {
	return dsnAt(ep, net.JoinHostPort(ep.Host, strconv.Itoa(ep.Port)))
}

// dsnAt is ep's lib/pq connection URL on another address (host:port).
func dsnAt(ep contracts.Endpoint, addr string) string {
	u := url.URL{
		Scheme: "postgres",
		Host:   addr,
		Path:   "/" + ep.Database,
		// binary_parameters: a statement with parameters is parsed, bound
		// and executed in one round trip, which also keeps an unnamed
		// statement on one server connection behind a transaction pooler.
		// connect_timeout bounds each connect (seconds), as the engine's
		// first check did.
		RawQuery: "sslmode=disable&application_name=benchq-tpcc&binary_parameters=yes&connect_timeout=30",
	}
	if ep.Database == "" {
		u.Path = "/postgres"
	}
	switch {
	case ep.User != "" && ep.Password != "":
		u.User = url.UserPassword(ep.User, ep.Password)
	case ep.User != "":
		u.User = url.User(ep.User)
	}
	return u.String()
}

// Addresses are the host:port addresses a shard spreads its terminals
// over: every host of ep's JDBC URL when the URL asks pgJDBC to balance
// over them (loadBalanceHosts=true: the local backend's pool processes,
// standing in for a Service over the pool's pods), else ep's own.
func Addresses(ep contracts.Endpoint) []string {
	own := []string{net.JoinHostPort(ep.Host, strconv.Itoa(ep.Port))}
	const prefix = "jdbc:postgresql://"
	rest, ok := strings.CutPrefix(ep.JDBCURL, prefix)
	if !ok {
		return own
	}
	hosts, tail, ok := strings.Cut(rest, "/")
	_, query, _ := strings.Cut(tail, "?")
	v, err := url.ParseQuery(query)
	if !ok || err != nil || v.Get("loadBalanceHosts") != "true" || !strings.Contains(hosts, ",") {
		return own
	}
	return strings.Split(hosts, ",")
}

// openDB opens a pool on ep, connecting to nothing yet: a connection
// opened under a terminal's link (link.go) goes to the link's address of
// Addresses(ep), any other to the first. With oneShot, its connections
// prepare nothing (see oneShotConn). A released connection is closed, never
// kept idle (see link). The connector is returned for its count of
// retried connects.
func openDB(ep contracts.Endpoint, oneShot bool) (*sql.DB, *pqConnector, error) {
	c := &pqConnector{oneShot: oneShot}
	for _, addr := range Addresses(ep) {
		pqc, err := pq.NewConnector(dsnAt(ep, addr))
		if err != nil {
			return nil, nil, fmt.Errorf("postgres %s: %w", addr, err)
		}
		c.addrs = append(c.addrs, pqc)
	}
	db := sql.OpenDB(c)
	db.SetMaxIdleConns(0)
	return db, c, nil
}

// pqConnector opens lib/pq connections whose transactions report a
// rollback to the watch of the context they were begun with (rollback.go)
// and, with oneShot, on which preparing a statement costs nothing.
type pqConnector struct {
	addrs   []driver.Connector // one per address; not empty
	oneShot bool
	retried atomic.Int64 // connects the pool refused, then tried again
}

func (c *pqConnector) Connect(ctx context.Context) (driver.Conn, error) {
	if l := linkOf(ctx); l != nil {
		return l.open(ctx, func(ctx context.Context) (pqConn, error) { return c.connect(ctx, l.addr%len(c.addrs)) })
	}
	return c.connect(ctx, 0)
}

func (c *pqConnector) Driver() driver.Driver { return c.addrs[0].Driver() }

// poolRetries bounds the retries of a connect that PgBouncer refused for
// max_client_conn; the first waits poolRetryWait, each next twice as long
// (about 0.1 s in all). PgBouncer frees a client it
// has closed only after its event loop's turn, so a terminal that closes
// its connection and opens the next at once (a new connection per request,
// -xconn) can meet a refusal although the pool holds no more clients than
// it takes. On loopback 16-25 % of reconnects were refused (2 pool
// processes of 2 clients, with and without a spare). A pool that is really
// full refuses every retry: that connect fails.
const (
	poolRetries   = 10
	poolRetryWait = 100 * time.Microsecond
)

func (c *pqConnector) connect(ctx context.Context, addr int) (pqConn, error) {
	conn, err := c.addrs[addr].Connect(ctx)
	if err != nil && poolFull(err) {
		c.retried.Add(1)
		wait := poolRetryWait
		for try := 0; err != nil && try < poolRetries && poolFull(err); try++ {
			if sleepUntil(ctx, time.Now().Add(wait)) != nil {
				break
			}
			wait *= 2
			conn, err = c.addrs[addr].Connect(ctx)
		}
	}
	if err != nil {
		return nil, err
	}
	pc, ok := conn.(pqConn)
	if !ok {
		_ = conn.Close()
		return nil, fmt.Errorf("tpcc: %T lacks the context methods of lib/pq's connection", conn)
	}
	if c.oneShot {
		pc = oneShotConn{pc}
	}
	return rollbackConn{pc}, nil
}

// poolFull reports whether err is PgBouncer refusing a client for
// max_client_conn.
func poolFull(err error) bool {
	return strings.Contains(err.Error(), "no more connections allowed (max_client_conn)")
}

// neverPrepares reports whether a JDBC URL forbids server-side prepared
// statements (prepareThreshold=0: the catalog's PgBouncer).
func neverPrepares(jdbcURL string) bool {
	_, query, ok := strings.Cut(jdbcURL, "?")
	if !ok {
		return false
	}
	v, err := url.ParseQuery(query)
	return err == nil && v.Get("prepareThreshold") == "0"
}

// pqConn is what lib/pq's connection implements and oneShotConn passes on.
type pqConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
}

// oneShotConn is a connection on which preparing a statement costs
// nothing: a statement is sent with its parameters when it runs, as the
// unnamed statement (one round trip with binary_parameters), as
// PostgreSQL's JDBC driver (Benchbase) sends a connection's first
// executions of a statement, or all of them with prepareThreshold=0. Used
// with a new connection per request, where go-tpc would prepare its ~40
// statements on every connection and close them with it (some 80 extra
// round trips and 40 parses each), and behind a transaction pooler, where
// a named statement does not survive its transaction.
type oneShotConn struct{ pqConn }

func (c oneShotConn) Prepare(query string) (driver.Stmt, error) {
	return oneShotStmt{c.pqConn, query}, nil
}

func (c oneShotConn) PrepareContext(_ context.Context, query string) (driver.Stmt, error) {
	return oneShotStmt{c.pqConn, query}, nil
}

type oneShotStmt struct {
	conn  pqConn
	query string
}

func (s oneShotStmt) Close() error  { return nil }
func (s oneShotStmt) NumInput() int { return -1 }

func (s oneShotStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	return s.conn.ExecContext(ctx, s.query, args)
}

func (s oneShotStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	return s.conn.QueryContext(ctx, s.query, args)
}

func (s oneShotStmt) Exec(args []driver.Value) (driver.Result, error) {
	return s.ExecContext(context.Background(), named(args))
}

func (s oneShotStmt) Query(args []driver.Value) (driver.Rows, error) {
	return s.QueryContext(context.Background(), named(args))
}

func named(args []driver.Value) []driver.NamedValue {
	nv := make([]driver.NamedValue, len(args))
	for i, v := range args {
		nv[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return nv
}

// workloader is go-tpc's TPC-C workload on db for warehouses and threads;
// weights are NewOrder, Payment, OrderStatus, Delivery, StockLevel in
// percent (nil: TPC-C's mix).
func workloader(db *sql.DB, database string, warehouses, threads int, weights []int) (workload.Workloader, error) {
	var wl workload.Workloader
	err := safely("go-tpc workload", func() error {
		var err error
		wl, err = gotpc.NewWorkloader(db, &gotpc.Config{
			Driver: driverName, DBName: database, Threads: threads, Warehouses: warehouses,
			Parts: 1, PartitionType: gotpc.PartitionTypeHash, Weight: weights,
			Isolation: int(sql.LevelReadCommitted),
			// Zero would make go-tpc's own histograms reject every value.
			MaxMeasureLatency: measurement.DefaultMaxLatency,
		})
		return err
	})
	return wl, err
}

// safely runs f and turns a panic into an error: go-tpc panics where it
// cannot connect or prepare a statement, and a lost connection must fail a
// request, not the agent.
func safely(what string, f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: %v", what, r)
		}
	}()
	return f()
}

// withState is ctx carrying go-tpc's per-thread state from state. go-tpc
// keeps a thread's state (its connection, prepared statements, random
// source) as a value of the context InitThread returns; a terminal opens
// its connections before READY and runs under the Run's context, so the
// state moves over as a value while cancellation stays ctx's.
func withState(ctx, state context.Context) context.Context {
	return stateContext{Context: ctx, state: state}
}

type stateContext struct {
	context.Context
	state context.Context
}

func (c stateContext) Value(key any) any {
	if v := c.state.Value(key); v != nil {
		return v
	}
	return c.Context.Value(key)
}

// ErrNotLoaded: the database does not hold the shard's warehouses.
var ErrNotLoaded = errors.New("tpc-c data not loaded")

// checkLoaded fails unless the warehouse table holds exactly warehouses rows.
func checkLoaded(ctx context.Context, db *sql.DB, warehouses int) error {
	var n int
	err := db.QueryRowContext(ctx, "SELECT count(*) FROM warehouse").Scan(&n)
	var pqErr *pq.Error
	if errors.As(err, &pqErr) && pqErr.Code == "42P01" { // undefined_table
		return fmt.Errorf("%w: no warehouse table", ErrNotLoaded)
	}
	if err != nil {
		return fmt.Errorf("count warehouses: %w", err)
	}
	if n != warehouses {
		return fmt.Errorf("%w: %d warehouses, the shard expects %d", ErrNotLoaded, n, warehouses)
	}
	return nil
}

// CountRows counts the rows of TPC-C's tables.
func CountRows(ctx context.Context, ep contracts.Endpoint) (map[string]int64, error) {
	db, _, err := openDB(ep, false)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	return countRows(ctx, db)
}

func countRows(ctx context.Context, db *sql.DB) (map[string]int64, error) {
	rows := make(map[string]int64, len(benchbase.TPCCTables))
	for _, t := range benchbase.TPCCTables {
		var n int64
		// Table names are constants of ours, not input.
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM "+t).Scan(&n); err != nil {
			return nil, fmt.Errorf("count %s: %w", t, err)
		}
		rows[t] = n
	}
	return rows, nil
}
