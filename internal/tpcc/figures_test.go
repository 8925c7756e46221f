package tpcc

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/benchbase"
	"github.com/benchq/benchq/internal/catalog"
	"github.com/benchq/benchq/internal/localdb"
	"github.com/benchq/benchq/internal/testenv"
)

// TestFigures measures the engine on this machine; it runs only when asked:
//
//	BENCHQ_TPCC_FIGURES=warehouses,terminals,seconds[,shards[,target[,newconn]]] go test ./internal/tpcc -run TestFigures -v
//
// e.g. BENCHQ_TPCC_FIGURES=2,4,60,2 loads 2 warehouses (4 loader threads),
// then runs 2 shards of 2 terminals for 60 s, started together, and prints
// each shard's and the merged figures. PostgreSQL runs with the catalog's
// settings, as the local deployer starts a SUT.
func TestFigures(t *testing.T) {
	spec := os.Getenv("BENCHQ_TPCC_FIGURES")
	if spec == "" {
		t.Skip("set BENCHQ_TPCC_FIGURES=warehouses,terminals,seconds[,shards[,target[,newconn]]] to measure")
	}
	var v [6]int
	v[3] = 1
	for i, f := range strings.Split(spec, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || i >= len(v) {
			t.Fatalf("BENCHQ_TPCC_FIGURES=%q: want up to 6 integers", spec)
		}
		v[i] = n
	}
	warehouses, terminals, seconds, shards, target, newConn := v[0], v[1], v[2], max(v[3], 1), v[4], v[5] != 0
	ep := sutPostgres(t)
	ctx := context.Background()

	load, err := Load(ctx, ep, contracts.TPCCShard{Warehouses: warehouses, Terminals: terminals}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var rows int64
	for _, n := range load.Rows {
		rows += n
	}
	fmt.Printf("load: %d warehouses, %d threads: %.1f s, %d rows (%.0f rows/s, %.1f SF/h)\n",
		warehouses, terminals, load.Elapsed.Seconds(), rows, float64(rows)/load.Elapsed.Seconds(),
		float64(warehouses)*3600/load.Elapsed.Seconds())

	results := make([]benchbase.Result, shards)
	benches := make([]*Bench, shards)
	for i := range shards {
		sh := contracts.TPCCShard{Warehouses: warehouses, Terminals: terminals / shards, Target: target / shards,
			DurationS: seconds, NewConnection: newConn}
		if i < terminals%shards {
			sh.Terminals++
		}
		if benches[i], err = Prepare(ctx, ep, sh); err != nil {
			t.Fatal(err)
		}
		defer benches[i].Close()
	}
	start := time.Now().Add(500 * time.Millisecond)
	var wg sync.WaitGroup
	for i, b := range benches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if results[i], err = b.Run(ctx, start, nil); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	all := benchbase.NewRecorder()
	var requests, ok, newOrders int64
	for i, r := range results {
		fmt.Printf("shard %d: %d terminals, %d requests: throughput %.1f/s, goodput %.1f/s, tpmC %.0f, latency µs avg %.0f p50 %.0f p95 %.0f p99 %.0f max %.0f, errors %v\n",
			i+1, r.Terminals, r.MeasuredRequests, r.Throughput, r.Goodput, tpmC(r), r.Latency.AvgUS, r.Latency.P50US,
			r.Latency.P95US, r.Latency.P99US, r.Latency.MaxUS, r.ErrorMessages)
		rec, err := benchbase.DecodeRecorder(r.Histogram)
		if err != nil {
			t.Fatal(err)
		}
		if err := all.Merge(rec); err != nil {
			t.Fatal(err)
		}
		requests, ok, newOrders = requests+r.MeasuredRequests, ok+r.Successes, newOrders+r.Transactions[0].Outcomes[benchbase.CodeOK]
	}
	l := all.Latency()
	d := float64(seconds)
	fmt.Printf("all %d shards (target %d, new connection %v): throughput %.1f/s, goodput %.1f/s, tpmC %.0f, merged latency µs p50 %.0f p95 %.0f p99 %.0f\n",
		shards, target, newConn, float64(requests)/d, float64(ok)/d, float64(newOrders)*60/d, l.P50US, l.P95US, l.P99US)
}

// sutPostgres starts PostgreSQL as the local deployer starts the SUT (the
// catalog's settings: durable, synchronous_commit off, shared_buffers 1GB),
// not testenv's throwaway settings, and stops it when t ends.
func sutPostgres(t *testing.T) contracts.Endpoint {
	t.Helper()
	entry, err := catalog.Lookup("PostgreSQL")
	if err != nil {
		t.Fatal(err)
	}
	p := testenv.StartPostgres(t, localdb.PGOptions{Database: entry.Database, Settings: entry.Settings})
	return entry.Endpoint("127.0.0.1", p.Port)
}

// tpmC is TPC-C's throughput: successful NewOrders per minute.
func tpmC(r benchbase.Result) float64 {
	return float64(r.Transactions[0].Outcomes[benchbase.CodeOK]) * 60 / r.Elapsed.Seconds()
}
