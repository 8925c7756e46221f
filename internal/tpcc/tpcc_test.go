package tpcc

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/benchbase"
	"github.com/benchq/benchq/internal/localdb"
	"github.com/benchq/benchq/internal/testenv"
)

// endpoint turns testenv's PostgreSQL URL into the SUT endpoint a shard gets.
func endpoint(t *testing.T, raw string) contracts.Endpoint {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatal(err)
	}
	return contracts.Endpoint{Host: u.Hostname(), Port: port, Database: u.Path[1:], User: u.User.Username()}
}

// intervals collects what a progress callback gets.
type intervals struct {
	mu  sync.Mutex
	ivs []contracts.Interval
}

func (c *intervals) add(iv contracts.Interval) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ivs = append(c.ivs, iv)
}

func (c *intervals) all() []contracts.Interval {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]contracts.Interval(nil), c.ivs...)
}

func TestLoadThenRun(t *testing.T) {
	if testing.Short() {
		t.Skip("loads a TPC-C warehouse into a real PostgreSQL")
	}
	ep := endpoint(t, testenv.Postgres(t))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	if _, err := Prepare(ctx, ep, contracts.TPCCShard{Warehouses: 1, Terminals: 1, DurationS: 1}, 1); !errors.Is(err, ErrNotLoaded) {
		t.Fatalf("Prepare before loading: %v, want ErrNotLoaded", err)
	}

	var loadProgress intervals
	load, err := Load(ctx, ep, contracts.TPCCShard{Warehouses: 1, Terminals: 2, StatusInterval: 1}, 1, loadProgress.add)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("loaded 1 warehouse with 2 threads in %s: %v", load.Elapsed, load.Rows)
	checkSpecRows(t, load.Rows, 1)
	if ivs := loadProgress.all(); len(ivs) == 0 || ivs[len(ivs)-1].Operations != sum(load.Rows) {
		t.Errorf("load progress %+v: want a last interval with all %d rows", ivs, sum(load.Rows))
	}
	// The progress reports' source: PostgreSQL's insert counters, which catch
	// up with the rows within a second or so.
	statsDB, _, err := openDB(ep, false)
	if err != nil {
		t.Fatal(err)
	}
	defer statsDB.Close()
	testenv.Eventually(t, 30*time.Second, func() error {
		n, err := insertedRows(ctx, statsDB)
		if err == nil && n != sum(load.Rows) {
			err = fmt.Errorf("pg_stat_user_tables counts %d inserted rows, the tables hold %d", n, sum(load.Rows))
		}
		return err
	})
	var f contracts.Final
	load.FillFinal(&f)
	if f.Threads != 2 || len(f.Operations) != len(benchbase.TPCCTables) || f.RuntimeMS <= 0 || f.Throughput <= 0 {
		t.Errorf("load Final: %+v", f)
	}
	// Payment inserts one history row: the ones counted OK committed (the
	// runs' last requests, not measured, may add one per terminal).
	var payments, newOrders, unmeasured int64

	t.Run("two terminals unthrottled", func(t *testing.T) {
		// 5 s (a status every 2 s) tries every transaction type: at least a
		// few hundred requests, of which 4 % are each of the rarest types.
		const seconds, every = 5, 2
		sh := contracts.TPCCShard{Warehouses: 1, Terminals: 2, DurationS: seconds, StatusInterval: every}
		b, err := Prepare(ctx, ep, sh, 1)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		// One server connection a terminal, as Benchbase holds, though a
		// terminal keeps a go-tpc state per transaction type.
		if n := backends(t, ctx, ep); n != sh.Terminals {
			t.Errorf("%d server connections for %d terminals", n, sh.Terminals)
		}
		var progress intervals
		start := time.Now().Add(200 * time.Millisecond)
		res, err := b.Run(ctx, start, progress.add)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%d requests, throughput %.1f/s, goodput %.1f/s, p95 %.0f µs, errors %v",
			res.MeasuredRequests, res.Throughput, res.Goodput, res.Latency.P95US, res.ErrorMessages)
		checkResult(t, res, sh, start, true)
		payments += res.Transactions[1].Outcomes[benchbase.CodeOK]
		newOrders += res.Transactions[0].Outcomes[benchbase.CodeOK]
		unmeasured += int64(sh.Terminals)

		// Intervals at 2 and 4 s and one at the end (5 s), adding up to the
		// total.
		ivs := progress.all()
		var n float64
		for _, iv := range ivs {
			for _, m := range iv.PerOp {
				n += m["Count"]
			}
		}
		if len(ivs) != 3 || ivs[2].ElapsedS != seconds || ivs[2].Operations != res.MeasuredRequests || int64(n) != res.MeasuredRequests {
			t.Errorf("intervals %+v: want 3, the last at %d s with all %d requests", ivs, seconds, res.MeasuredRequests)
		}
		for i, iv := range ivs[:2] {
			if iv.ElapsedS != int64(every*(i+1)) || !iv.At.Equal(start.Add(time.Duration(every*(i+1))*time.Second).UTC()) {
				t.Errorf("interval %d: elapsed %d at %v", i, iv.ElapsedS, iv.At)
			}
		}
	})

	t.Run("rate and a new connection per transaction", func(t *testing.T) {
		const rate, seconds = 40, 4
		sh := contracts.TPCCShard{Warehouses: 1, Terminals: 2, Target: rate, DurationS: seconds, NewConnection: true}
		db, _, err := openDB(ep, false)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		before := sessions(t, db, ep.Database)

		start := time.Now().Add(200 * time.Millisecond)
		res, err := Run(ctx, ep, sh, 1, start, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%d requests at target %d/s: throughput %.1f/s, p95 %.0f µs", res.MeasuredRequests, rate, res.Throughput, res.Latency.P95US)
		// 160 requests: a type of 4 % of the mix (Order-Status, Delivery,
		// Stock-Level) is missing from about 1 run in 200 (0.96^160 each).
		checkResult(t, res, sh, start, false)
		payments += res.Transactions[1].Outcomes[benchbase.CodeOK]
		newOrders += res.Transactions[0].Outcomes[benchbase.CodeOK]
		unmeasured += int64(sh.Terminals)
		// The schedule has rate × duration slots; none can be measured twice.
		if res.MeasuredRequests > rate*seconds {
			t.Errorf("%d requests measured, the rate allows %d", res.MeasuredRequests, rate*seconds)
		}
		ops := res.Operations()
		intended := 0
		for _, op := range ops {
			if len(op.Name) > len(benchbase.IntendedPrefix) && op.Name[:len(benchbase.IntendedPrefix)] == benchbase.IntendedPrefix {
				intended++
			}
		}
		if intended != len(benchbase.TxTypes) {
			t.Errorf("%d Intended-<Type> operations, want %d", intended, len(benchbase.TxTypes))
		}
		// Every request connected anew: at least as many sessions as requests.
		testenv.Eventually(t, 15*time.Second, func() error {
			if got := sessions(t, db, ep.Database) - before; got < res.MeasuredRequests {
				return fmt.Errorf("%d new sessions for %d requests", got, res.MeasuredRequests)
			}
			return nil
		})
	})

	// The local backend's pool: two PgBouncer processes, each taking just
	// its share of the phase's 4 terminals (2), named by the JDBC URL.
	// Two shards of 2 terminals connect only if they spread evenly, one
	// connection a terminal; a third connection to a pool is refused.
	t.Run("two pool processes, each taking its share exactly", func(t *testing.T) {
		if _, err := localdb.PgBouncerBinary(); errors.Is(err, localdb.ErrNotInstalled) {
			t.Skipf("skipping: %v", err)
		}
		pool := ep
		var addrs []string
		base := t.TempDir()
		// pgbouncer runs as the OS user postgres when we are root.
		for _, d := range []string{filepath.Dir(base), base} {
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 2 {
			b, err := localdb.StartPgBouncer(ctx, filepath.Join(base, fmt.Sprint("pool-", i)), 0, localdb.PgBouncerOptions{
				BackendPort: ep.Port, User: ep.User, Database: ep.Database, MaxClientConn: 2, PoolSize: 2})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = b.Stop(context.Background()) })
			addrs = append(addrs, b.Addr())
			if i == 0 {
				pool.Port = b.Port
			}
		}
		pool.Host = "127.0.0.1"
		pool.JDBCURL = "jdbc:postgresql://" + strings.Join(addrs, ",") + "/" + ep.Database + "?prepareThreshold=0&loadBalanceHosts=true"
		if got := Addresses(pool); !reflect.DeepEqual(got, addrs) {
			t.Fatalf("Addresses = %v, want %v", got, addrs)
		}
		// Then a new connection per request (-xconn): a pool refuses some
		// reconnects, as it frees a closed client late (poolRetries); they
		// are tried again.
		for _, newConn := range []bool{false, true} {
			sh := contracts.TPCCShard{Warehouses: 1, Terminals: 2, DurationS: 2, NewConnection: newConn}
			start := time.Now().Add(time.Second)
			results := make([]benchbase.Result, 2)
			retried := make([]int64, 2)
			errs := make([]error, 2)
			var wg sync.WaitGroup
			for i := range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					b, err := Prepare(ctx, pool, sh, i+1)
					if err != nil {
						errs[i] = err
						return
					}
					defer b.Close()
					results[i], errs[i] = b.Run(ctx, start, nil)
					retried[i] = b.Retried()
				}()
			}
			wg.Wait()
			for i, res := range results {
				t.Logf("new connection %v, shard %d: %d requests, %d connects retried", newConn, i+1, res.MeasuredRequests, retried[i])
				if errs[i] != nil || res.MeasuredRequests == 0 || len(res.ErrorMessages) > 0 {
					t.Errorf("shard %d through the pool (new connection per request: %v): %d requests, errors %v %v", i+1, newConn, res.MeasuredRequests, errs[i], res.ErrorMessages)
					continue
				}
				payments += res.Transactions[1].Outcomes[benchbase.CodeOK]
				newOrders += res.Transactions[0].Outcomes[benchbase.CodeOK]
				unmeasured += int64(sh.Terminals)
			}
		}
	})

	t.Run("stopped early: the rates are over the time it ran", func(t *testing.T) {
		sh := contracts.TPCCShard{Warehouses: 1, Terminals: 2, DurationS: 30}
		b, err := Prepare(ctx, ep, sh, 1)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		stopCtx, stop := context.WithCancel(ctx)
		start := time.Now().Add(200 * time.Millisecond)
		time.AfterFunc(2200*time.Millisecond, stop)
		res, err := b.Run(stopCtx, start, nil)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run stopped after 2 s: %v, want context.Canceled", err)
		}
		t.Logf("stopped: %d requests in %s, throughput %.1f/s", res.MeasuredRequests, res.Elapsed, res.Throughput)
		if res.Elapsed < time.Second || res.Elapsed >= 10*time.Second || res.MeasuredRequests == 0 ||
			math.Abs(res.Throughput-float64(res.MeasuredRequests)/res.Elapsed.Seconds()) > 1e-9 {
			t.Errorf("stopped after about 2 s of 30: elapsed %s, %d requests, throughput %.2f/s; want the requests over the time it ran",
				res.Elapsed, res.MeasuredRequests, res.Throughput)
		}
		payments += res.Transactions[1].Outcomes[benchbase.CodeOK]
		newOrders += res.Transactions[0].Outcomes[benchbase.CodeOK]
		unmeasured += int64(sh.Terminals)
	})

	rows, err := CountRows(ctx, ep)
	if err != nil {
		t.Fatal(err)
	}
	if added := rows["history"] - load.Rows["history"]; added < payments || added > payments+unmeasured {
		t.Errorf("%d history rows added by %d successful payments (+ up to %d unmeasured)", added, payments, unmeasured)
	}
	// NewOrder adds one orders row when it commits; its 1 % intended
	// rollbacks add none and are counted USER_ABORTED, not OK.
	if added := rows["orders"] - load.Rows["orders"]; added < newOrders || added > newOrders+unmeasured {
		t.Errorf("%d orders rows added by %d successful NewOrders (+ up to %d unmeasured)", added, newOrders, unmeasured)
	}
}

// checkSpecRows compares row counts with TPC-C's initial database
// population (clause 4.3.3.1) for w warehouses.
func checkSpecRows(t *testing.T, rows map[string]int64, w int64) {
	t.Helper()
	want := map[string]int64{
		"warehouse": w, "district": 10 * w, "customer": 30000 * w, "history": 30000 * w,
		"orders": 30000 * w, "new_order": 9000 * w, "item": 100000, "stock": 100000 * w,
	}
	for table, n := range want {
		if rows[table] != n {
			t.Errorf("%s has %d rows, TPC-C wants %d", table, rows[table], n)
		}
	}
	// 5 to 15 lines per order.
	if ol := rows["order_line"]; ol < 5*30000*w || ol > 15*30000*w {
		t.Errorf("order_line has %d rows, want 5-15 per order", ol)
	}
}

// checkResult checks a run's result against its shard; everyType: every
// transaction type of the mix ran (a long enough run).
func checkResult(t *testing.T, res benchbase.Result, sh contracts.TPCCShard, start time.Time, everyType bool) {
	t.Helper()
	window := time.Duration(sh.DurationS) * time.Second
	if res.Elapsed != window || res.Terminals != sh.Terminals || res.Rate != sh.Target || res.FinalState != "EXIT" {
		t.Errorf("result settings %+v", res)
	}
	var requests, ok int64
	for _, tx := range res.Transactions {
		if tx.Requests == 0 && !everyType {
			continue
		}
		if tx.Requests == 0 || tx.Latency == nil || tx.Histogram == "" {
			t.Errorf("%s: %d requests, latency %v", tx.Name, tx.Requests, tx.Latency)
			continue
		}
		if got := tx.Outcomes[benchbase.CodeOK] + tx.Outcomes[benchbase.CodeError] + tx.Outcomes[benchbase.CodeAborted]; got != tx.Requests {
			t.Errorf("%s: outcomes %v do not add up to %d requests", tx.Name, tx.Outcomes, tx.Requests)
		}
		rec, err := benchbase.DecodeRecorder(tx.Histogram)
		if err != nil || rec.Count() != tx.Requests {
			t.Errorf("%s: histogram of %d values (%v), want %d", tx.Name, rec.Count(), err, tx.Requests)
		}
		requests += tx.Requests
		ok += tx.Outcomes[benchbase.CodeOK]
	}
	if len(res.Transactions) != len(benchbase.TxTypes) || requests != res.MeasuredRequests || ok != res.Successes {
		t.Errorf("%d types, %d requests (measured %d), %d ok (successes %d)", len(res.Transactions), requests, res.MeasuredRequests, ok, res.Successes)
	}
	if want := float64(res.MeasuredRequests) / window.Seconds(); res.Throughput != want {
		t.Errorf("throughput %v, want %v", res.Throughput, want)
	}
	if want := float64(res.Successes) / window.Seconds(); res.Goodput != want {
		t.Errorf("goodput %v, want %v", res.Goodput, want)
	}
	if res.FirstOpAt == nil || res.FirstOpAt.Before(start) || res.LastOpAt == nil || !res.LastOpAt.Before(start.Add(window)) {
		t.Errorf("window %v – %v outside %v + %v", res.FirstOpAt, res.LastOpAt, start, window)
	}
	var f contracts.Final
	res.FillFinal(&f)
	if f.Threads != sh.Terminals || f.RuntimeMS != float64(window.Milliseconds()) || f.Throughput != res.Throughput {
		t.Errorf("Final %+v", f)
	}
	f.Envelope = contracts.NewEnvelope("fx", "fx.p.1.a1.final", start)
	f.Configuration, f.Phase, f.Kind, f.Shard, f.Attempt = "PostgreSQL-1", "PostgreSQL-1-1", contracts.KindRun, 1, 1
	f.Agent, f.Status, f.StartedAt, f.EndedAt = "test", contracts.StatusOK, start, start.Add(window)
	if b, err := json.Marshal(f); err != nil {
		t.Error(err)
	} else if err := contracts.Validate(contracts.SchemaFinal, b); err != nil {
		t.Errorf("the Final does not pass the contract: %v", err)
	}
	all := f.Operations[len(f.Operations)-1]
	if all.Name != benchbase.All || all.Count != res.MeasuredRequests || all.ReturnCodes[benchbase.CodeOK] != res.Successes {
		t.Errorf("ALL operation %+v", all)
	}
}

func sessions(t *testing.T, db *sql.DB, database string) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRow("SELECT sessions FROM pg_stat_database WHERE datname = $1", database).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// backends counts the engine's server connections to ep's database.
func backends(t *testing.T, ctx context.Context, ep contracts.Endpoint) int {
	t.Helper()
	db, err := sql.Open(driverName, DSN(ep))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND application_name = 'benchq-tpcc' AND pid <> pg_backend_pid()", ep.Database).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func sum(m map[string]int64) (n int64) {
	for _, v := range m {
		n += v
	}
	return n
}
