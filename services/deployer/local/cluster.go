package local

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/benchq/benchq/catalog"
	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/localdb"
	"github.com/benchq/benchq/services/deployer/backend"
)

// clusterDir holds a Redis Cluster's node directories (node-0, node-1, ...)
// inside a configuration's directory.
const clusterDir = "cluster"

// startRedisCluster starts (or finds) -nw masters with -nwr replicas each as
// local redis-server processes and forms them into one cluster. The
// endpoint is the first master; cluster clients learn the other nodes from
// it.
func (l *Local) startRedisCluster(ctx context.Context, dir string, entry catalog.Entry, sut *contracts.SUTSpec, password string) (localState, string, error) {
	bin, err := localdb.RedisBinary()
	if err != nil {
		return localState{}, "", err
	}
	masters, replicas, err := clusterShape(entry, sut)
	if err != nil {
		return localState{}, "", err
	}
	c, err := localdb.StartRedisCluster(ctx, filepath.Join(dir, clusterDir), localdb.RedisClusterOptions{
		Masters: masters, Replicas: replicas, Settings: entry.Settings, OSUser: localdb.SUTUser, Password: password,
	})
	if err != nil {
		return localState{}, "", err
	}
	return localState{
		DBMS: entry.Name, Kind: entry.Kind,
		Endpoint: entry.Endpoint(localdb.Loopback, c.Nodes[0].Port),
		Pid:      c.Nodes[0].Pid, Pids: c.Pids(),
		Info: map[string]any{
			"workers": masters, "worker_replicas": replicas,
			"nodes": strings.Join(c.Addrs(), ","), "worker_nodes": c.Workers(),
		},
	}, bin, nil
}

// clusterShape is the number of masters (-nw, else the catalog's default)
// and of replicas per master (-nwr), checked against the catalog's minimum.
func clusterShape(entry catalog.Entry, sut *contracts.SUTSpec) (masters, replicas int, err error) {
	minMasters, defaultMasters := 1, 3
	if k := entry.Kubernetes; k != nil && k.Cluster != nil {
		minMasters, defaultMasters = k.Cluster.MinMasters, k.Cluster.DefaultWorkers
	}
	masters = defaultMasters
	if sut != nil {
		if sut.Workers > 0 {
			masters = sut.Workers
		}
		replicas = sut.WorkerReplicas
	}
	if masters < minMasters {
		return 0, 0, fmt.Errorf("%w: %s needs at least %d workers (-nw), got %d", backend.ErrBadSpec, entry.Name, minMasters, masters)
	}
	if replicas < 0 {
		return 0, 0, fmt.Errorf("%w: worker replicas (-nwr) must not be negative, got %d", backend.ErrBadSpec, replicas)
	}
	return masters, replicas, nil
}
