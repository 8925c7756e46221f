// Command bench-tpcc measures benchq's embedded TPC-C engine (internal/tpcc)
// on this machine: it loads W warehouses into a PostgreSQL started with the
// catalog's settings (as the local deployer starts a SUT), runs S shards of
// the terminals for the given seconds, started together, and prints each
// shard's and the merged figures with the machine and the versions. It
// prints figures and never fails on them; it exits 1 when it could not
// measure and 2 on bad flags. `make bench-tpcc` runs it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/benchq/benchq/catalog"
	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/benchbase"
	"github.com/benchq/benchq/internal/benchmain"
	"github.com/benchq/benchq/internal/localdb"
	"github.com/benchq/benchq/internal/tpcc"
	"github.com/benchq/benchq/internal/version"
)

type config struct {
	warehouses, terminals, seconds, shards, target int
	newConnection                                  bool
}

func main() {
	var c config
	benchmain.Program{
		Name: "bench-tpcc",
		Flags: func(fs *flag.FlagSet) {
			fs.IntVar(&c.warehouses, "warehouses", 2, "warehouses to load")
			fs.IntVar(&c.terminals, "terminals", 4, "terminals (and loader threads), split over the shards")
			fs.IntVar(&c.seconds, "seconds", 30, "length of the benchmarking run")
			fs.IntVar(&c.shards, "shards", 1, "shards started together")
			fs.IntVar(&c.target, "target", 0, "target transactions per second, split over the shards (0: as fast as it goes)")
			fs.BoolVar(&c.newConnection, "new-connection", false, "a new connection per transaction")
		},
		Check: func() error {
			if c.warehouses < 1 || c.terminals < 1 || c.seconds < 1 || c.shards < 1 || c.shards > c.terminals || c.target < 0 {
				return errors.New("want -warehouses, -terminals, -seconds, -shards ≥ 1, -shards ≤ -terminals, -target ≥ 0")
			}
			return nil
		},
		Measure: func(ctx context.Context, out io.Writer) error { return measure(ctx, c, out) },
	}.Main()
}

func measure(ctx context.Context, c config, out io.Writer) error {
	ep, pgVersion, stopPG, err := startPostgres(ctx)
	if err != nil {
		return err
	}
	defer stopPG()
	printMachine(out, pgVersion)

	load, err := tpcc.Load(ctx, ep, contracts.TPCCShard{Warehouses: c.warehouses, Terminals: c.terminals}, 1, nil)
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	var rows int64
	for _, n := range load.Rows {
		rows += n
	}
	fmt.Fprintf(out, "load: %d warehouses, %d threads: %.1f s, %d rows (%.0f rows/s, %.1f SF/h)\n",
		c.warehouses, c.terminals, load.Elapsed.Seconds(), rows, float64(rows)/load.Elapsed.Seconds(),
		float64(c.warehouses)*3600/load.Elapsed.Seconds())

	benches := make([]*tpcc.Bench, c.shards)
	for i := range c.shards {
		sh := contracts.TPCCShard{Warehouses: c.warehouses, Terminals: c.terminals / c.shards, Target: c.target / c.shards,
			DurationS: c.seconds, NewConnection: c.newConnection}
		if i < c.terminals%c.shards {
			sh.Terminals++
		}
		if benches[i], err = tpcc.Prepare(ctx, ep, sh, i+1); err != nil {
			return fmt.Errorf("prepare shard %d: %w", i+1, err)
		}
		defer benches[i].Close() //nolint:errcheck // the connections are dropped; the figures are printed
	}
	start := time.Now().Add(500 * time.Millisecond)
	results := make([]benchbase.Result, c.shards)
	errs := make([]error, c.shards)
	var wg sync.WaitGroup
	for i, b := range benches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = b.Run(ctx, start, nil)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("run: %w", err)
	}

	all := benchbase.NewRecorder()
	var requests, ok, newOrders int64
	for i, r := range results {
		fmt.Fprintf(out, "shard %d: %d terminals, %d requests: throughput %.1f/s, goodput %.1f/s, tpmC %.0f, latency µs avg %.0f p50 %.0f p95 %.0f p99 %.0f max %.0f, errors %v\n",
			i+1, r.Terminals, r.MeasuredRequests, r.Throughput, r.Goodput, tpmC(r), r.Latency.AvgUS, r.Latency.P50US,
			r.Latency.P95US, r.Latency.P99US, r.Latency.MaxUS, r.ErrorMessages)
		rec, err := benchbase.DecodeRecorder(r.Histogram)
		if err != nil {
			return fmt.Errorf("shard %d's histogram: %w", i+1, err)
		}
		if err := all.Merge(rec); err != nil {
			return fmt.Errorf("merge shard %d's histogram: %w", i+1, err)
		}
		requests, ok, newOrders = requests+r.MeasuredRequests, ok+r.Successes, newOrders+r.Transactions[0].Outcomes[benchbase.CodeOK]
	}
	l := all.Latency()
	d := float64(c.seconds)
	fmt.Fprintf(out, "all %d shards (target %d, new connection %v): throughput %.1f/s, goodput %.1f/s, tpmC %.0f, merged latency µs p50 %.0f p95 %.0f p99 %.0f\n",
		c.shards, c.target, c.newConnection, float64(requests)/d, float64(ok)/d, float64(newOrders)*60/d, l.P50US, l.P95US, l.P99US)
	return nil
}

// startPostgres starts PostgreSQL as the local deployer starts the SUT (the
// catalog's settings), in a temporary directory, on a free loopback port.
func startPostgres(ctx context.Context) (contracts.Endpoint, string, func(), error) {
	entry, err := catalog.Lookup("PostgreSQL")
	if err != nil {
		return contracts.Endpoint{}, "", nil, err
	}
	base, err := os.MkdirTemp("", "bench-tpcc-")
	if err != nil {
		return contracts.Endpoint{}, "", nil, err
	}
	// The server runs as the OS user postgres when we are root.
	if err := os.Chmod(base, 0o755); err != nil {
		return contracts.Endpoint{}, "", nil, err
	}
	dir := filepath.Join(base, "pg")
	stop := func() {
		sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = (&localdb.Postgres{Dir: dir}).Stop(sctx)
		_ = os.RemoveAll(base)
	}
	p, err := localdb.StartPostgres(ctx, dir, 0, localdb.PGOptions{Database: entry.Database, Settings: entry.Settings})
	if err != nil {
		stop()
		return contracts.Endpoint{}, "", nil, fmt.Errorf("start postgres: %w", err)
	}
	v := "unknown"
	if bin, err := localdb.PGBinDir(); err == nil {
		if s, err := localdb.Version(ctx, filepath.Join(bin, "postgres")); err == nil {
			v = s
		}
	}
	return entry.Endpoint("127.0.0.1", p.Port), v, stop, nil
}

func printMachine(out io.Writer, pgVersion string) {
	fmt.Fprintln(out, localdb.HostLine())
	fmt.Fprintf(out, "versions: benchq %s, PostgreSQL %s\n", version.String(), pgVersion)
}

// tpmC is TPC-C's throughput: successful NewOrders per minute.
func tpmC(r benchbase.Result) float64 {
	return float64(r.Transactions[0].Outcomes[benchbase.CodeOK]) * 60 / r.Elapsed.Seconds()
}
