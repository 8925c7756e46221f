package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/benchq/benchq/catalog"
	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/localdb"
	"github.com/benchq/benchq/services/deployer/backend"
)

// poolDirPrefix names a pool process's directory inside a configuration's
// directory: pool-0, pool-1, ...
const poolDirPrefix = "pool-"

// startPgBouncer starts (or finds) the pool's backend (the catalog's
// PostgreSQL, in data/ as a plain PostgreSQL SUT, schema included) and
// -xnpp pgbouncer processes in front of it, each with its share of -xnpi
// inbound (max_client_conn: the share and one for the exporter's console
// connection, contracts.Pool.MaxClientConn) and -xnpo outbound connections
// (default_pool_size, max_db_connections), rounded up as on Kubernetes.
//
// The endpoint is the first pgbouncer. With several, the JDBC URL names
// them all with loadBalanceHosts=true, standing in for a Kubernetes Service
// over the pool's pods; benchq's clients (the YCSB binding, the TPC-C
// engine) then spread their connections evenly over the processes
// (contracts.PoolAddress), where a Service picks at random. Clients that
// use host and port only reach the first.
func (l *Local) startPgBouncer(ctx context.Context, dir string, entry catalog.Entry, s backend.Spec, password string) (st localState, binary string, err error) {
	bin, err := localdb.PgBouncerBinary()
	if err != nil {
		return localState{}, "", err
	}
	if entry.Kubernetes == nil || entry.Kubernetes.Pool == nil {
		return localState{}, "", fmt.Errorf("%w: catalog entry %s names no pool backend (kubernetes.pool.backend)", backend.ErrBadSpec, entry.Name)
	}
	server, err := catalog.Lookup(entry.Kubernetes.Pool.Backend)
	if err != nil {
		return localState{}, "", fmt.Errorf("pool %s: %w", entry.Name, err)
	}
	if server.Kind != catalog.KindPostgreSQL {
		return localState{}, "", fmt.Errorf("%w: the local backend runs %s only in front of PostgreSQL, not %s", backend.ErrBadSpec, entry.Name, server.Name)
	}
	size, err := poolSize(entry.Kubernetes.Pool, s.SUT)
	if err != nil {
		return localState{}, "", err
	}
	prev, _ := readState(dir)
	defer func() {
		// Leave nothing running: the SUT failed. Unless ctx ended: the
		// deployer is stopping and the redelivered job must find the SUT.
		if err != nil && ctx.Err() == nil {
			stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			err = errors.Join(err, stopPools(stopCtx, dir), (&localdb.Postgres{Dir: filepath.Join(dir, "data")}).Stop(stopCtx))
		}
	}()
	db, pgBin, err := l.startPostgres(ctx, dir, prev.BackendPort, server, s.Benchmark, password)
	if err != nil {
		return localState{}, "", err
	}
	opts := localdb.PgBouncerOptions{
		BackendPort: db.Endpoint.Port, User: entry.User, Database: entry.Database,
		MaxClientConn: size.MaxClientConn(), PoolSize: size.OutboundPerPod(),
		Settings: entry.Settings, OSUser: localdb.SUTUser, Password: password,
	}
	var (
		pools []*localdb.PgBouncer
		addrs []string
		pids  []int
	)
	for i := range size.Pods {
		pdir := filepath.Join(dir, poolDirPrefix+strconv.Itoa(i))
		port, _ := localdb.PgBouncerPort(pdir) // a restart keeps its port
		b, err := onPreviousPort(l.log(), "pool", pdir, port, func(port int) (*localdb.PgBouncer, error) {
			return localdb.StartPgBouncer(ctx, pdir, port, opts)
		})
		if err != nil {
			return localState{}, "", err
		}
		pools = append(pools, b)
		addrs = append(addrs, b.Addr())
		pids = append(pids, b.Pid)
	}
	ep := entry.Endpoint(localdb.Loopback, pools[0].Port)
	if len(pools) > 1 {
		ep.JDBCURL = loadBalancedURL(ep.JDBCURL, pools[0].Addr(), addrs)
	}
	backendVersion, err := localdb.Version(ctx, pgBin)
	if err != nil {
		return localState{}, "", err
	}
	return localState{
		DBMS: entry.Name, Kind: entry.Kind, Endpoint: ep,
		Pid: pools[0].Pid, Pids: append(pids, db.Pid), BackendPort: db.Endpoint.Port,
		Info: map[string]any{
			"pool_pods": size.Pods, "pool_inbound": size.Inbound, "pool_outbound": size.Outbound,
			"pool_max_client_conn": opts.MaxClientConn, "pool_default_pool_size": opts.PoolSize,
			"pool_mode": "transaction", "pool_endpoints": strings.Join(addrs, ","),
			"backend_dbms": server.Name, "backend_version": backendVersion,
		},
	}, bin, nil
}

// poolSize is the configuration's pool (-xnpp/-xnpi/-xnpo), else the
// catalog's defaults.
func poolSize(p *catalog.Pool, sut *contracts.SUTSpec) (contracts.Pool, error) {
	size := contracts.Pool{Pods: p.Pods, Inbound: p.Inbound, Outbound: p.Outbound}
	if sut != nil && sut.Pool != nil {
		size = *sut.Pool
	}
	if size.Pods < 1 || size.Inbound < 1 || size.Outbound < 1 {
		return contracts.Pool{}, fmt.Errorf("%w: pool pods, inbound and outbound connections (-xnpp, -xnpi, -xnpo) must be at least 1, got %d, %d, %d",
			backend.ErrBadSpec, size.Pods, size.Inbound, size.Outbound)
	}
	return size, nil
}

// loadBalancedURL turns a JDBC URL on first (host:port) into one on every
// address, for pgjdbc to pick one at random per connection.
func loadBalancedURL(url, first string, addrs []string) string {
	url = strings.Replace(url, "//"+first+"/", "//"+strings.Join(addrs, ",")+"/", 1)
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return url + sep + "loadBalanceHosts=true"
}

// stopPools stops the pgbouncer of every pool directory of dir.
func stopPools(ctx context.Context, dir string) error {
	dirs, err := filepath.Glob(filepath.Join(dir, poolDirPrefix+"*"))
	if err != nil {
		return fmt.Errorf("stop pools: %w", err)
	}
	var errs []error
	for _, d := range dirs {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			errs = append(errs, (&localdb.PgBouncer{Dir: d}).Stop(ctx))
		}
	}
	return errors.Join(errs...)
}
