package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/localdb"
)

// YCSB on one embedded stack: the core workloads A–F on Redis and
// PostgreSQL, each loaded by 2 shards and benchmarked by 2 shards, and the
// local cluster and pool SUTs (RedisCluster -nw 3, PgBouncer -xnpp 2) with
// workload A. For every experiment:
//   - the CLI exits 0 and every result test passes;
//   - the summary (Execution: Per Phase, Latency per Phase) and the results
//     database show exactly the operation types of the workload, with the
//     same counts in both;
//   - no exception and no return code other than OK (BATCHED_OK, a queued
//     JDBC insert, is an OK status too), in the summary and in the database;
//   - the SUT holds sf × 1,000,000 rows after loading and, after the
//     benchmark, those plus the successful INSERTs (workloads D and E).
//
// The rows are counted in the SUT itself while the stack is held still: the
// scheduler is paused (SIGSTOP) from the loading phase's end until the rows
// are counted, so no benchmarker gets its GO before, and again from the
// benchmarking phase's GO until both shards' finals are stored and the rows
// counted, so the SUT is not yet torn down (the deployer, which serves the
// pool's exporters, is never paused). It is resumed (SIGCONT) at once.

// workloadOps are the operation types YCSB 0.17's CoreWorkload measures for
// each of our workload files (services/driver-agent/ycsb/workloads):
// READ-MODIFY-WRITE is the composite operation of F, whose read and update
// are measured as READ and UPDATE as well.
var workloadOps = map[string][]string{
	"a": {"READ", "UPDATE"},
	"b": {"READ", "UPDATE"},
	"c": {"READ"},
	"d": {"INSERT", "READ"},
	"e": {"INSERT", "SCAN"},
	"f": {"READ", "READ-MODIFY-WRITE", "UPDATE"},
}

// okStatuses are YCSB's statuses that are not errors (Status.isOk()).
var okStatuses = map[string]bool{"OK": true, "BATCHED_OK": true}

const (
	workloadSF  = 0.01 // 10,000 rows (-sf is million rows, as in bexhoma)
	workloadXOP = 0.02 // 20,000 operations per benchmarking phase
	// Workload E's operations are scans of up to 100 rows: 5,000 of them
	// (about 250 inserts) check as much as 20,000, which took Redis 46 s.
	workloadXOPScans = 0.005
)

// workloadXOPOf is the -xop of workload wl's benchmarking phase.
func workloadXOPOf(wl string) float64 {
	if wl == "e" {
		return workloadXOPScans
	}
	return workloadXOP
}

func TestWorkloads(t *testing.T) {
	t.Parallel() // its own stack (see the package comment)
	began := time.Now()
	s := startStack(t)
	t.Logf("stack up in %s", time.Since(began).Round(time.Millisecond))

	for _, dbms := range []string{"Redis", "PostgreSQL"} {
		t.Run(dbms, func(t *testing.T) {
			for _, wl := range []string{"a", "b", "c", "d", "e", "f"} {
				t.Run("workload "+wl, func(t *testing.T) {
					s.runWorkload(t, dbms, wl)
				})
			}
		})
	}

	// bexhoma's -dbms Redis -nw 3 -nwr 1 (bexhoma-redis.md, "Distributed
	// DBMS"): a Redis Cluster of 3 masters with a replica each, 6
	// redis-servers, named Redis-…; the summary lists every worker.
	t.Run("Redis -nw 3 -nwr 1", func(t *testing.T) {
		res := s.runWorkload(t, "Redis", "a", "-nw", "3", "-nwr", "1")
		if res.ready.DBMS != "RedisCluster" || !strings.HasPrefix(res.ready.Configuration, "Redis-") {
			t.Errorf("sut.ready: %s deploys %s, want Redis-… deploying RedisCluster", res.ready.Configuration, res.ready.DBMS)
		}
		if nodes := strings.Split(fmt.Sprint(res.ready.Info["nodes"]), ","); len(nodes) != 6 {
			t.Errorf("%d redis-servers (%v), want 6: 3 masters and a replica each", len(nodes), nodes)
		}
		for _, want := range []string{"  * workers:3", "  * worker_replicas:1", "  * worker 5\n    * addr:", "    * role:replica"} {
			if !strings.Contains(res.out, want) {
				t.Errorf("the summary's Connections lacks %q", want)
			}
		}
		if len(res.nodeRows) != 3 {
			t.Errorf("%d cluster masters hold keys (%v), want 3 (-nw 3)", len(res.nodeRows), res.nodeRows)
		}
		for node, n := range res.nodeRows {
			if n <= 0 {
				t.Errorf("master %s holds %d keys: the keys are not spread over the cluster", node, n)
			}
		}
		t.Logf("data keys per master after the benchmark: %v", res.nodeRows)
		if w := fmt.Sprint(res.ready.Info["workers"]); w != "3" {
			t.Errorf("sut.ready info workers = %s, want 3", w)
		}
	})

	t.Run("PgBouncer -xnpp 2 -ma", func(t *testing.T) {
		res := s.runWorkload(t, "PgBouncer", "a", "-xnpp", "2", "-ma")
		t.Logf("server connections to ycsb per pgbouncer: %v", res.poolServers)
		if len(res.poolServers) != 2 {
			t.Errorf("%d pgbouncer processes (%v), want 2 (-xnpp 2)", len(res.poolServers), res.poolServers)
		}
		for pool, n := range res.poolServers {
			if n <= 0 {
				t.Errorf("pgbouncer %s holds no server connection to ycsb: no shard thread came to it", pool)
			}
		}
		if !strings.Contains(res.ready.Endpoint.JDBCURL, "loadBalanceHosts=true") {
			t.Errorf("JDBC URL %q does not name every pool process", res.ready.Endpoint.JDBCURL)
		}
		// -ma: the pool metrics of each pgbouncer (its own exporter, its own
		// scrape target, so its own instance label), every query counted.
		defer func() {
			if t.Failed() { // what the collector had: the phases' windows and the counter's samples
				s.logRows(t, `SELECT phase, kind, to_char(min(first_op_at), 'HH24:MI:SS.MS'), to_char(max(last_op_at), 'HH24:MI:SS.MS')
					FROM shard_results WHERE code = $1 GROUP BY 1, 2 ORDER BY 3`, res.code)
				s.logRows(t, `SELECT phase, labels->>'instance', to_char(time, 'HH24:MI:SS.MS'), value::text FROM metrics
					WHERE code = $1 AND component = 'pool' AND metric = 'pgb_queries' ORDER BY 1, 2, 3`, res.code)
			}
		}()
		s.waitCount(t, 2, `SELECT count(*) FROM metric_summaries WHERE code = $1 AND component = 'pool' AND metric = 'pgb_queries' AND value > 0`, res.code)
		perPool := map[string]float64{}
		rows, err := s.results(t).Query(context.Background(), `SELECT labels->>'instance', max(value) FROM metrics
			WHERE code = $1 AND component = 'pool' AND metric = 'pgb_queries' GROUP BY 1`, res.code)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var instance string
			var queries float64
			if err := rows.Scan(&instance, &queries); err != nil {
				t.Fatal(err)
			}
			perPool[instance] = queries
		}
		t.Logf("queries counted per pgbouncer exporter: %v", perPool)
		if len(perPool) != 2 {
			t.Errorf("pool metrics of %d pgbouncers (%v), want 2", len(perPool), perPool)
		}
		for instance, n := range perPool {
			if !(n > 0) {
				t.Errorf("pgbouncer exporter %s counted %v queries", instance, n)
			}
		}
	})

	t.Logf("TestWorkloads wall time %s", time.Since(began).Round(time.Millisecond))
}

// workloadResult is what one experiment showed while it ran.
type workloadResult struct {
	code, out   string
	ready       contracts.SUTReady
	loaded      int64            // rows (Redis: data keys) in the SUT after loading; -1 if not counted
	after       int64            // the same after the benchmarking phase; -1 if not counted
	nodeRows    map[string]int64 // RedisCluster: data keys per master after the benchmark
	poolServers map[string]int64 // PgBouncer: server connections to ycsb per pool process
}

// runWorkload runs `benchq ycsb -xwl wl ... run` against dbms with 2 loader
// and 2 benchmarker shards, counts the SUT's rows after each phase, and
// checks the summary and the results database.
func (s *stack) runWorkload(t *testing.T, dbms, wl string, extra ...string) workloadResult {
	t.Helper()
	began := time.Now()
	res := workloadResult{
		code:   fmt.Sprintf("e2e-wl-%s-%s-%d", strings.ToLower(dbms), wl, time.Now().UnixNano()/1e6%1e9),
		loaded: -1, after: -1,
	}
	args := append([]string{"ycsb", "-e", res.code, "-dbms", dbms, "-sf", fmt.Sprint(workloadSF), "-xop", fmt.Sprint(workloadXOPOf(wl)),
		"-xwl", wl, "-nlp", "2", "-nbp", "2", "-nlt", "4", "-nbt", "4", "-xli", "1", "-tr",
		// The default experiments check the report a run writes; here it
		// would only cost 7 s a run (matplotlib).
		"-no-report"}, extra...)
	args = append(args, "run")

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ev := s.events(ctx, res.code)
	var out bytes.Buffer
	cmd := s.command(ctx, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	// Paused services, resumed whatever happens.
	paused := map[string]int{}
	resume := func(name string) {
		if pid, ok := paused[name]; ok {
			if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
				t.Errorf("resume %s: %v", name, err)
			}
			delete(paused, name)
		}
	}
	pause := func(name string) {
		pid := s.pid(name)
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Errorf("pause %s: %v", name, err)
			return
		}
		paused[name] = pid
	}
	defer func() {
		for name := range paused {
			resume(name)
		}
	}()

	var cliErr error
	for finished := false; !finished; {
		select {
		case cliErr = <-done:
			finished = true
			continue
		default:
		}
		m, err := ev.Next(jetstream.FetchMaxWait(time.Second))
		if err != nil {
			continue
		}
		subj := m.Subject()
		var pe contracts.PhaseEvent
		if strings.Contains(subj, ".phase.") {
			_ = json.Unmarshal(m.Data(), &pe)
		}
		switch {
		case strings.HasSuffix(subj, ".sut.ready"):
			_ = json.Unmarshal(m.Data(), &res.ready)
		case strings.HasSuffix(subj, ".phase.started") && pe.Kind == contracts.KindLoad:
			// Hold the scheduler from the loading's GO on, as for the
			// benchmarking below: the loaders run to their end and the
			// collector stores their finals, but no benchmarker gets its
			// GO until the rows are counted. (Held at the loading's done
			// instead, the scheduler was once quicker: a phase switch takes
			// about 200 ms, and the benchmark's GO was out first.)
			pause("scheduler")
			s.waitCountWithin(t, 2*time.Minute, 2, `SELECT count(*) FROM shard_results WHERE code = $1 AND phase = $2`, res.code, pe.Phase)
			s.checkNoGo(t, res.code, pe.Phase)
			res.loaded, _ = s.sutRows(t, res.ready)
			resume("scheduler")
		case strings.HasSuffix(subj, ".phase.started") && pe.Kind == contracts.KindRun:
			// Hold the scheduler from GO on: it cannot end the phase nor
			// tear the SUT down, while the shards run to their end and the
			// collector stores their finals; the deployer, which serves the
			// pool's exporters, keeps running. Count, then let it go on.
			pause("scheduler")
			// The shards run their whole phase meanwhile: 30 s was too
			// short for workload e's scans on a loaded CI machine (38 s).
			s.waitCountWithin(t, 2*time.Minute, 2, `SELECT count(*) FROM shard_results WHERE code = $1 AND phase = $2`, res.code, pe.Phase)
			res.after, res.nodeRows = s.sutRows(t, res.ready)
			if dbms == "PgBouncer" {
				res.poolServers = s.poolServers(t, res.ready)
			}
			resume("scheduler")
		case strings.HasSuffix(subj, ".phase.failed") || isEnd(subj):
			resume("scheduler")
		}
	}
	res.out = out.String()
	t.Logf("benchq %s (%s):\n%s", strings.Join(args, " "), time.Since(began).Round(time.Millisecond), res.out)
	if cliErr != nil {
		t.Fatalf("benchq ycsb run: %v", cliErr)
	}
	s.checkWorkload(t, res, wl)
	return res
}

// checkNoGo fails the test if a benchmarking phase of code already got its
// GO when the loading phase ended (then the rows counted after loading could
// include the benchmark's inserts).
func (s *stack) checkNoGo(t *testing.T, code, loadPhase string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	stream, err := s.js.Stream(ctx, contracts.StreamEvents)
	if err != nil {
		t.Errorf("stream %s: %v", contracts.StreamEvents, err)
		return
	}
	m, err := stream.GetLastMsgForSubject(ctx, contracts.Subject(contracts.SubjBarrierGo, code, "", ""))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return // no GO at all yet
	}
	if err != nil {
		t.Errorf("the last GO of %s: %v", code, err)
		return
	}
	var g contracts.BarrierGo
	_ = json.Unmarshal(m.Data, &g)
	if g.Phase != loadPhase {
		t.Errorf("phase %s got its GO before the rows after loading were counted", g.Phase)
	}
}

// sutRows counts the YCSB rows in the SUT: usertable's rows for PostgreSQL
// (through the pool for PgBouncer); for Redis the keys of every master minus
// our binding's scan index (_indices, or its _indices{…} buckets on a
// cluster), with the count per master.
func (s *stack) sutRows(t *testing.T, ready contracts.SUTReady) (int64, map[string]int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ep := ready.Endpoint
	if ep.Host == "" {
		t.Error("no sut.ready endpoint before the rows were to be counted")
		return -1, nil
	}
	addr := fmt.Sprintf("%s:%d", ep.Host, ep.Port)
	password := s.sutPassword(t, ready.Code, ready.Configuration)
	switch ready.DBMS {
	case "Redis", "RedisCluster":
		masters := []string{addr}
		if nodes, err := localdb.RedisCommandAs(ctx, addr, password, "CLUSTER", "NODES"); err == nil {
			masters = clusterMasters(nodes)
		} else if ready.DBMS == "RedisCluster" {
			t.Errorf("CLUSTER NODES: %v", err)
			return -1, nil
		}
		var total int64
		per := map[string]int64{}
		for _, m := range masters {
			size, err := localdb.RedisCommandAs(ctx, m, password, "DBSIZE")
			if err != nil {
				t.Errorf("DBSIZE: %v", err)
				return -1, nil
			}
			var keys int64
			fmt.Sscan(size, &keys)
			index, err := localdb.RedisCommandAs(ctx, m, password, "KEYS", "_indices*")
			if err != nil {
				t.Errorf("KEYS: %v", err)
				return -1, nil
			}
			if index != "" {
				keys -= int64(len(strings.Split(index, "\n")))
			}
			per[m] = keys
			total += keys
		}
		return total, per
	default:
		conn, err := pgx.Connect(ctx, s.sutURL(t, ready.Code, ready.Configuration, addr, ep.User, ep.Database)+"&default_query_exec_mode=simple_protocol")
		if err != nil {
			t.Errorf("connect SUT: %v", err)
			return -1, nil
		}
		defer conn.Close(ctx)
		var rows int64
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM usertable`).Scan(&rows); err != nil {
			t.Errorf("count usertable: %v", err)
			return -1, nil
		}
		return rows, nil
	}
}

// clusterMasters are the host:port of the masters in CLUSTER NODES, e.g.
// "07c3… 127.0.0.1:30001@40001 myself,master - 0 0 1 connected 0-5460".
func clusterMasters(nodes string) []string {
	var masters []string
	for _, l := range strings.Split(nodes, "\n") {
		f := strings.Fields(l)
		if len(f) < 3 || !slices.Contains(strings.Split(f[2], ","), "master") {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		masters = append(masters, addr)
	}
	sort.Strings(masters)
	return masters
}

// poolServers asks every pgbouncer of a PgBouncer SUT (sut.ready's
// pool_endpoints) how many server connections it holds to the database:
// a pgbouncer opens them only for clients that came to it, and keeps them
// (server_idle_timeout) after they left. (SHOW STATS would be exacter, but
// PgBouncer refreshes its totals only every stats_period, 60 s.)
func (s *stack) poolServers(t *testing.T, ready contracts.SUTReady) map[string]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pools, _ := ready.Info["pool_endpoints"].(string)
	servers := map[string]int64{}
	for _, addr := range strings.Split(pools, ",") {
		if addr == "" {
			continue
		}
		// The pool takes no client without the SUT's password.
		if conn, err := pgx.Connect(ctx, fmt.Sprintf("postgresql://%s@%s/pgbouncer?sslmode=disable&default_query_exec_mode=simple_protocol", ready.Endpoint.User, addr)); err == nil {
			conn.Close(ctx)
			t.Errorf("pgbouncer %s let a client in without the SUT's password", addr)
		}
		conn, err := pgx.Connect(ctx, s.sutURL(t, ready.Code, ready.Configuration, addr, ready.Endpoint.User, "pgbouncer")+"&default_query_exec_mode=simple_protocol")
		if err != nil {
			t.Errorf("pgbouncer admin console %s: %v", addr, err)
			continue
		}
		rows, err := conn.Query(ctx, "SHOW SERVERS")
		if err != nil {
			t.Errorf("SHOW SERVERS on %s: %v", addr, err)
			conn.Close(ctx)
			continue
		}
		servers[addr] = 0
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				t.Errorf("SHOW SERVERS on %s: %v", addr, err)
				break
			}
			for i, fd := range rows.FieldDescriptions() {
				if fd.Name == "database" && fmt.Sprint(vals[i]) == ready.Endpoint.Database {
					servers[addr]++
				}
			}
		}
		rows.Close()
		conn.Close(ctx)
	}
	return servers
}

// opFigures are one operation type's figures of one kind of phase, summed
// over its shards, from the results database.
type opFigures struct {
	count int64
	codes map[string]int64 // YCSB's Return= codes
}

func (f opFigures) ok() (n int64) {
	for c, k := range f.codes {
		if okStatuses[c] {
			n += k
		}
	}
	return n
}

func (f opFigures) returned() (n int64) {
	for _, k := range f.codes {
		n += k
	}
	return n
}

// checkWorkload checks one workload experiment's summary, results and rows.
func (s *stack) checkWorkload(t *testing.T, res workloadResult, wl string) {
	t.Helper()
	out := res.out
	wantRows := int64(math.Round(workloadSF * 1e6))
	want := workloadOps[wl]

	// Result tests.
	checkSummary(t, out,
		"TEST passed: Loading Phase: [OVERALL].Throughput(ops/sec) contains no 0 or NaN",
		"TEST passed: Execution Phase: [OVERALL].Throughput(ops/sec) contains no 0 or NaN",
		"TEST passed: Workflow as planned",
		"TEST passed: Execution Phase: contains no FAILED column",
		"experiment done",
		fmt.Sprintf("Workload is '%s'.", strings.ToUpper(wl)),
		fmt.Sprintf("Number of rows to insert is %d.", wantRows),
	)

	// The results database: 2 loader and 2 benchmarker shards, each once and ok.
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.info.DBURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, kind := range []string{contracts.KindLoad, contracts.KindRun} {
		var n, distinct, ok int
		if err := conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT (phase, shard)), count(*) FILTER (WHERE status = 'ok') FROM shard_results WHERE code = $1 AND kind = $2`,
			res.code, kind).Scan(&n, &distinct, &ok); err != nil {
			t.Fatal(err)
		}
		if n != 2 || distinct != 2 || ok != 2 {
			t.Errorf("%s: %d shard results (%d distinct, %d ok), want 2 shards each once and ok", kind, n, distinct, ok)
		}
	}
	// The phase_figures view (Grafana's) counts every operation once, as
	// YCSB does: -xop operations in the benchmarking phase whatever the
	// workload (F's read-modify-writes too, whose reads and updates are in
	// READ and UPDATE as well), the rows in the loading.
	for kind, want := range map[string]int64{contracts.KindLoad: wantRows, contracts.KindRun: int64(math.Round(workloadXOPOf(wl) * 1e6))} {
		var got int64
		if err := conn.QueryRow(ctx, `SELECT operations FROM phase_figures WHERE code = $1 AND kind = $2`, res.code, kind).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s: phase_figures counts %d operations, want %d (YCSB's count)", kind, got, want)
		}
	}
	ops := map[string]map[string]*opFigures{contracts.KindLoad: {}, contracts.KindRun: {}}
	rows, err := conn.Query(ctx, `SELECT r.kind, o.operation, o.count, o.return_codes FROM shard_operations o
		JOIN shard_results r USING (code, phase, shard, attempt) WHERE o.code = $1`, res.code)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var kind, op string
		var count int64
		var codes map[string]int64
		if err := rows.Scan(&kind, &op, &count, &codes); err != nil {
			t.Fatal(err)
		}
		if op == "CLEANUP" || strings.HasPrefix(op, "Intended-") {
			continue
		}
		f := ops[kind][op]
		if f == nil {
			f = &opFigures{codes: map[string]int64{}}
			ops[kind][op] = f
		}
		f.count += count
		for c, n := range codes {
			f.codes[c] += n
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	for kind, wantOps := range map[string][]string{contracts.KindLoad: {"INSERT"}, contracts.KindRun: want} {
		if got := sortedKeys(ops[kind]); !slices.Equal(got, wantOps) {
			t.Errorf("%s: stored operation types %v, want %v", kind, got, wantOps)
		}
		for op, f := range ops[kind] {
			if f.count <= 0 {
				t.Errorf("%s %s: %d operations stored", kind, op, f.count)
			}
			for c, n := range f.codes {
				if !okStatuses[c] && n > 0 {
					t.Errorf("%s %s: %d operations returned %s", kind, op, n, c)
				}
			}
			// Every executed operation has a return code, except the
			// composite READ-MODIFY-WRITE, which YCSB reports none for.
			if r := f.returned(); r != f.count && !(op == "READ-MODIFY-WRITE" && r == 0) {
				t.Errorf("%s %s: %d operations but %d return codes %v", kind, op, f.count, r, f.codes)
			}
		}
	}
	if f := ops[contracts.KindLoad]["INSERT"]; f == nil || f.count != wantRows || f.ok() != wantRows {
		t.Errorf("loading stored INSERT %+v, want %d rows inserted, all OK", f, wantRows)
	}

	// The summary: Loading.
	for _, sub := range []string{"#### Per Connection", "#### Per Run"} {
		header, body := summaryTable(out, "### Loading", sub)
		checkNoExceptions(t, "Loading "+sub, header, body)
		if !slices.Contains(header, "[INSERT].Return=OK") {
			t.Errorf("Loading %s has no INSERT column: %v", sub, header)
		}
	}
	if header, body := summaryTable(out, "### Loading", "#### Per Connection"); len(body) != 2 {
		t.Errorf("Loading Per Connection: %d rows, want 2 (one per loader shard): %v %v", len(body), header, body)
	}
	lat := latencyOps(t, out, "### Loading", "#### Latency per Run")
	if got := sortedKeys(lat); !slices.Equal(got, []string{"INSERT"}) || lat["INSERT"] != wantRows {
		t.Errorf("Loading Latency per Run: operations %v, want INSERT %d", lat, wantRows)
	}

	// The summary: Execution.
	header, body := summaryTable(out, "### Execution", "#### Per Connection")
	checkNoExceptions(t, "Execution Per Connection", header, body)
	if len(body) != 2 {
		t.Errorf("Execution Per Connection: %d rows, want 2 (one per benchmarker shard)", len(body))
	}
	header, body = summaryTable(out, "### Execution", "#### Per Phase")
	checkNoExceptions(t, "Execution Per Phase", header, body)
	if len(body) != 1 {
		t.Fatalf("Execution Per Phase: %d rows, want 1:\n%v", len(body), body)
	}
	var shownOps []string
	for i, h := range header {
		op, ok := strings.CutSuffix(strings.TrimPrefix(h, "["), "].Return=OK")
		if !ok || !strings.HasPrefix(h, "[") {
			continue
		}
		shownOps = append(shownOps, op)
		var n int64
		if op == "READ-MODIFY-WRITE" {
			// YCSB reports no return codes for it: unknown, shown as NaN.
			if body[0][i] != "NaN" {
				t.Errorf("Execution Per Phase %s = %q, want NaN (YCSB reports no return codes)", h, body[0][i])
			}
			continue
		}
		fmt.Sscan(body[0][i], &n)
		if f := ops[contracts.KindRun][op]; f != nil && n != f.codes["OK"]+f.codes["BATCHED_OK"] {
			t.Errorf("Execution Per Phase %s = %d, the database has %d OK + %d BATCHED_OK", h, n, f.codes["OK"], f.codes["BATCHED_OK"])
		}
		if n <= 0 {
			t.Errorf("Execution Per Phase %s = %d", h, n)
		}
	}
	sort.Strings(shownOps)
	if !slices.Equal(shownOps, want) {
		t.Errorf("Execution Per Phase shows operations %v, want %v", shownOps, want)
	}
	lat = latencyOps(t, out, "### Execution", "#### Latency per Phase")
	if got := sortedKeys(lat); !slices.Equal(got, want) {
		t.Errorf("Execution Latency per Phase shows operations %v, want %v", got, want)
	}
	for op, n := range lat {
		if f := ops[contracts.KindRun][op]; f == nil || n != f.count || n <= 0 {
			t.Errorf("Execution Latency per Phase %s: %d operations, the database has %+v", op, n, f)
		}
	}

	// The rows in the SUT: all loaded, then the successful inserts added.
	if res.loaded != wantRows {
		t.Errorf("%s holds %d rows after loading, want sf × 1,000,000 = %d", res.ready.DBMS, res.loaded, wantRows)
	}
	var inserted int64
	if f := ops[contracts.KindRun]["INSERT"]; f != nil {
		inserted = f.ok()
	}
	if slices.Contains(want, "INSERT") && inserted <= 0 {
		t.Errorf("workload %s: no successful INSERT in the benchmark", wl)
	}
	if res.after != res.loaded+inserted {
		t.Errorf("%s holds %d rows after the benchmark, want %d loaded + %d inserted = %d", res.ready.DBMS, res.after, res.loaded, inserted, res.loaded+inserted)
	}
	t.Logf("%s workload %s: %d rows loaded, %d after the benchmark (%d inserted); operations %v", res.ready.DBMS, wl, res.loaded, res.after, inserted, lat)
}

// checkNoExceptions: every row of a summary table has 0 exceptions.
func checkNoExceptions(t *testing.T, table string, header []string, body [][]string) {
	t.Helper()
	i := slices.Index(header, "exceptions")
	if i < 0 {
		t.Errorf("%s has no exceptions column: %v", table, header)
		return
	}
	if len(body) == 0 {
		t.Errorf("%s has no rows", table)
	}
	for _, row := range body {
		if i < len(row) && row[i] != "0" {
			t.Errorf("%s: %s exceptions in row %s (header %v)", table, row[i], row[0], header)
		}
	}
}

// latencyOps reads a latency table: Operations per operation type, from the
// rows of latency from 'start'.
func latencyOps(t *testing.T, out, section, sub string) map[string]int64 {
	t.Helper()
	header, body := summaryTable(out, section, sub)
	op, from, n := slices.Index(header, "operation"), slices.Index(header, "latency from"), slices.Index(header, "Operations")
	if op < 0 || from < 0 || n < 0 {
		t.Errorf("%s %s: no operation/latency from/Operations columns: %v", section, sub, header)
		return nil
	}
	ops := map[string]int64{}
	for _, row := range body {
		if row[from] != "start" {
			continue
		}
		var v float64
		fmt.Sscan(row[n], &v)
		ops[row[op]] += int64(v)
	}
	return ops
}

// summaryTable is the first Markdown table after the section heading and
// the sub-heading: its header and its data rows, cells trimmed.
func summaryTable(out, section, sub string) (header []string, body [][]string) {
	i := strings.Index(out, "\n"+section+"\n")
	if i < 0 {
		return nil, nil
	}
	j := strings.Index(out[i:], "\n"+sub+"\n")
	if j < 0 {
		return nil, nil
	}
	inTable := false
	for _, l := range strings.Split(out[i+j+len(sub)+2:], "\n") {
		if !strings.HasPrefix(l, "|") {
			if inTable {
				break
			}
			if strings.HasPrefix(l, "#") {
				break // the next heading: the table is missing
			}
			continue
		}
		inTable = true
		cells := strings.Split(strings.Trim(l, "|"), "|")
		for k := range cells {
			cells[k] = strings.TrimSpace(cells[k])
		}
		switch {
		case header == nil:
			header = cells
		case strings.HasPrefix(cells[0], ":--") || strings.HasPrefix(cells[0], "--"):
		default:
			body = append(body, cells)
		}
	}
	return header, body
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// logRows logs the rows of a diagnostic query, every column as text.
func (s *stack) logRows(t *testing.T, query string, args ...any) {
	t.Helper()
	rows, err := s.results(t).Query(context.Background(), query, args...)
	if err != nil {
		t.Logf("%s: %v", query, err)
		return
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			break
		}
		for i, v := range vals {
			if i > 0 {
				b.WriteString(" | ")
			}
			fmt.Fprint(&b, v)
		}
		b.WriteString("\n")
	}
	t.Logf("%s:\n%s", query, b.String())
}
