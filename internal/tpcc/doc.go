// Package tpcc is the embedded TPC-C engine of the "benchbase" engine: it
// loads and runs TPC-C against PostgreSQL with go-tpc v1.0.9's schema,
// loader and transactions (github.com/pingcap/go-tpc/tpcc, used as a
// library) and reports what Benchbase reports (benchbase.Result), so a
// TPC-C experiment runs where Benchbase cannot be installed.
//
// go-tpc's library API is a workload.Workloader whose Run executes one
// transaction of a type it draws itself and measures it in histograms it
// does not export (1 ms resolution). To know each request's type and
// measure it in microseconds, a Bench holds five Workloaders, each weighted
// 100 % on one transaction type; a terminal draws the type (TPC-C's
// 45/43/4/4/4 mix), calls that Workloader's Run and times the call. What
// follows from that:
//   - go-tpc keeps a thread's connection and prepared statements in its
//     per-thread state, so a terminal has five states; they share one
//     server connection (link.go), as a Benchbase terminal holds one: a
//     shard of T terminals opens T connections, all before READY. Each
//     state prepares go-tpc's statements on it (five sets on one
//     connection).
//   - Behind several pool addresses (the endpoint's JDBC URL with
//     loadBalanceHosts=true) terminal i of shard s connects to address
//     contracts.PoolAddress(s, T, i, n): a phase's terminals spread evenly
//     over the pool's pods, which the plan checks against each pod's
//     share of -xnpi.
//   - A request's latency is the whole Run call: go-tpc's ping of the
//     connection before each transaction (one round trip) and, on a
//     terminal's first request of a type, preparing go-tpc's statements,
//     besides the transaction.
//   - With NewConnection, each request opens a connection, runs and closes
//     it: all of it is the request's latency, as Benchbase counts connecting
//     and closing in a request's latency. go-tpc would prepare its ~40
//     statements (all five types') on each new connection; there, preparing
//     is made free and each statement goes to the server with its
//     parameters when it runs (one round trip, the unnamed statement), as
//     PostgreSQL's JDBC driver sends a connection's first executions. This
//     took -xconn from 19 to 104 requests/s here (2 warehouses, 4
//     terminals, 2 cores). A new backend's cold caches remain, as they would
//     for Benchbase.
//   - Behind a transaction pooler (the endpoint's JDBC URL says
//     prepareThreshold=0, as the catalog's PgBouncer does) statements are
//     never prepared either: a named statement does not outlive its
//     transaction there.
//   - go-tpc rolls TPC-C's 1 % invalid NewOrders back and reports success:
//     they count as OK, not USER_ABORTED as in Benchbase.
//   - go-tpc does not retry: a failed request (a deadlock, say) is one
//     ERROR request. Transactions run at READ COMMITTED with go-tpc's
//     SELECT … FOR UPDATE (Benchbase's default is SERIALIZABLE with
//     retries).
//   - go-tpc prints progress lines ("load to stock in warehouse 1", …) to
//     the process's stdout while loading and checking.
//
// The measured window is Benchbase's: requests that start at or after the
// start instant and end before start + duration; a request still running
// at the end is finished but not counted. Throughput = measured requests /
// duration, Goodput = successful ones / duration. With a target rate,
// request start times are spread regularly over the window (Benchbase's
// regular arrivals) and shared by the shard's terminals; a request that
// starts late is also measured from its intended start ("Intended-<Type>").
package tpcc
