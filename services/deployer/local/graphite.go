package local

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/benchq/benchq/catalog"
	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/carbonexporter"
	"github.com/benchq/benchq/internal/localdb"
)

// graphiteDir holds a Graphite SUT's daemons (cache-0, …, relay) inside a
// configuration's directory.
const graphiteDir = "graphite"

// carbonExporter names the in-process exporter of a Graphite SUT's counts.
const carbonExporter = "carbon"

// startGraphite runs Graphite: one carbon-cache, or with -nw N a
// carbon-relay in front of N carbon-caches, and graphite-web over them, as
// the SUTs' OS account, on loopback without a password (carbon's plaintext
// protocol and graphite-web's /render have none, docs/security.md). The
// endpoint's port is where clients write (the relay, or the cache); its
// "query" port is graphite-web's. Carbon
// has no /metrics: this deployer serves its counts, read from its whisper
// files (internal/carbonexporter), on the endpoint's "metrics" port, with
// or without -ma; benchq tsdb reads the stored points there.
func (l *Local) startGraphite(ctx context.Context, dir string, entry catalog.Entry, sut *contracts.SUTSpec, prev localState) (localState, string, error) {
	home, err := localdb.CarbonHome()
	if err != nil {
		return localState{}, "", err
	}
	caches := 0
	if sut != nil {
		caches = sut.Workers
	}
	if least, _ := entry.WorkerLimits(); caches != 0 && caches < least {
		return localState{}, "", fmt.Errorf("%s needs at least %d workers (-nw), got %d", entry.Name, least, caches)
	}
	g, err := localdb.StartGraphite(ctx, filepath.Join(dir, graphiteDir), localdb.GraphiteOptions{Caches: caches, OSUser: localdb.SUTUser})
	if err != nil {
		return localState{}, "", err
	}
	e := exporter{Name: carbonExporter, Component: "sut", Whisper: g.WhisperByCache()}
	var nodes []string
	for _, c := range g.Caches {
		nodes = append(nodes, c.Addr())
	}
	prevAddr := ""
	for _, p := range prev.Exporters {
		if p.Name == carbonExporter {
			prevAddr = p.Addr
		}
	}
	l.monitor()
	if e.Addr, err = l.serveCarbonExporter(dir, e, prevAddr); err != nil {
		return localState{}, "", err
	}
	front := g.Front()
	ep := entry.Endpoint(localdb.Loopback, front.Line)
	_, metricsPort, _ := net.SplitHostPort(e.Addr)
	mp, _ := strconv.Atoi(metricsPort)
	ep.Ports = map[string]int{entry.TSDB.CarbonPort: front.Line, entry.TSDB.MetricsPort: mp, entry.TSDB.QueryPort: g.Web.HTTP}
	// workers is -nw: 0 for a single carbon-cache without a relay.
	info := map[string]any{"workers": caches, "worker_nodes": nodes, "nodes": strings.Join(nodes, ",")}
	if g.Relay != nil {
		info["relay"] = g.Relay.Addr()
	}
	info["query"] = g.Web.URL()
	return localState{
		DBMS: entry.Name, Kind: entry.Kind, Endpoint: ep, Pid: front.Pid, Pids: g.Pids(),
		Info: info, Exporters: []exporter{e},
	}, filepath.Join(home, "bin", "carbon-cache.py"), nil
}

// serveCarbonExporter serves e's whisper counts from this process, on
// prevAddr when it is free (a restart keeps the endpoint's port), else on
// a free port.
func (l *Local) serveCarbonExporter(dir string, e exporter, prevAddr string) (string, error) {
	return l.serveInProcess(dir, e.Name, prevAddr, func() (http.Handler, error) {
		return carbonexporter.Handler(e.Whisper, l.log().With("exporter", e.Name, "dir", dir)), nil
	})
}

// stopGraphite stops the daemons of dir's Graphite SUT, if any.
func stopGraphite(ctx context.Context, dir string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return (&localdb.Graphite{Dir: filepath.Join(dir, graphiteDir)}).Stop(ctx)
}
