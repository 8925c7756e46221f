package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchq/benchq/internal/catalog"
	"github.com/benchq/benchq/internal/localdb"
)

// TestRedisClusterBootstrapScript runs RedisCluster's bootstrap command from
// the catalog, as the bootstrap Job would, against six real redis-server
// processes in cluster mode on loopback (-nw 3 -nwr 1): kwok runs no
// container, so this is where the script itself is tested. A second run
// finds the cluster formed and changes nothing.
func TestRedisClusterBootstrapScript(t *testing.T) {
	t.Parallel()
	if _, err := localdb.RedisBinary(); errors.Is(err, localdb.ErrNotInstalled) {
		t.Skipf("skipping: %v", err)
	}
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Skip("skipping: redis-cli not installed")
	}
	e, err := catalog.Lookup("RedisCluster")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var nodes []string
	for i := range 6 {
		dir := filepath.Join(t.TempDir(), fmt.Sprint(i))
		r, err := localdb.StartRedis(ctx, dir, 0, localdb.RedisOptions{Settings: map[string]string{
			"cluster-enabled": "yes", "cluster-config-file": "nodes.conf", "cluster-node-timeout": "5000",
		}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = r.Stop(context.Background()) })
		nodes = append(nodes, r.Addr())
	}
	run := func() string {
		t.Helper()
		cmd := exec.CommandContext(ctx, e.Kubernetes.Cluster.Bootstrap.Command[0], e.Kubernetes.Cluster.Bootstrap.Command[1:]...)
		cmd.Env = append(cmd.Environ(), "BENCHQ_NODES="+strings.Join(nodes, " "), "BENCHQ_MASTERS=3", "BENCHQ_REPLICAS=1", "BENCHQ_PORT=6379")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("bootstrap: %v\n%s", err, out)
		}
		return string(out)
	}
	if out := run(); !strings.Contains(out, "cluster formed") {
		t.Fatalf("bootstrap output:\n%s", out)
	}
	first := strings.Split(nodes[0], ":")
	info, err := exec.CommandContext(ctx, "redis-cli", "-h", first[0], "-p", first[1], "cluster", "info").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"cluster_state:ok", "cluster_slots_assigned:16384", "cluster_known_nodes:6", "cluster_size:3"} {
		if !strings.Contains(string(info), want) {
			t.Errorf("cluster info lacks %s:\n%s", want, info)
		}
	}
	if out := run(); !strings.Contains(out, "cluster already formed") {
		t.Errorf("second bootstrap:\n%s", out)
	}
}
