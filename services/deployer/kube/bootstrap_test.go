package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchq/benchq/catalog"
	"github.com/benchq/benchq/internal/localdb"
)

// bootstrapPassword is the SUTs' password of the bootstrap tests.
const bootstrapPassword = "p@ss w\"rd"

// TestRedisClusterBootstrapScript runs RedisCluster's bootstrap command from
// the catalog, as the bootstrap Job would, against six real redis-server
// processes in cluster mode on loopback (-nw 3 -nwr 1): kwok runs no
// container, so this is where the script itself is tested. The nodes take
// the SUTs' password, as the catalog's args give it them; the script gets
// it in BENCHQ_SUT_PASSWORD, as the Job does. A second run finds the cluster
// formed and changes nothing.
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
		}, Password: bootstrapPassword})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = r.Stop(context.Background()) })
		nodes = append(nodes, r.Addr())
	}
	run := func() string {
		t.Helper()
		cmd := exec.CommandContext(ctx, e.Kubernetes.Cluster.Bootstrap.Command[0], e.Kubernetes.Cluster.Bootstrap.Command[1:]...)
		cmd.Env = append(cmd.Environ(), "BENCHQ_NODES="+strings.Join(nodes, " "), "BENCHQ_MASTERS=3", "BENCHQ_REPLICAS=1", "BENCHQ_PORT=6379",
			"BENCHQ_SUT_PASSWORD="+bootstrapPassword)
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
	cli := exec.CommandContext(ctx, "redis-cli", "-h", first[0], "-p", first[1], "cluster", "info")
	cli.Env = append(cli.Environ(), "REDISCLI_AUTH="+bootstrapPassword)
	info, err := cli.Output()
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

// TestDragonflyClusterBootstrapScript runs DragonflyCluster's bootstrap
// command with a stand-in redis-cli (no Dragonfly here): it checks the
// cluster configuration the script computes and pushes to every node —
// slots split evenly over -nw masters, -nwr replicas each, made replicas of
// their master — not Dragonfly's acceptance of it.
func TestDragonflyClusterBootstrapScript(t *testing.T) {
	t.Parallel()
	e, err := catalog.Lookup("DragonflyCluster")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	log := filepath.Join(dir, "calls")
	stub := `#!/bin/sh
# redis-cli stand-in: records its calls, answers like Dragonfly, and
# refuses a caller without the password (requirepass).
[ "$REDISCLI_AUTH" = '` + bootstrapPassword + `' ] || { echo "NOAUTH Authentication required." >&2; exit 1; }
echo "$*" >> "` + log + `"
while [ "$1" = -h ] || [ "$1" = -p ]; do
  if [ "$1" = -h ]; then host=$2; fi
  shift 2
done
case "$1 $2" in
  "ping "*) echo PONG ;;
  "dflycluster myid") echo "id-$host" ;;
  *) echo OK ;;
esac
`
	if err := os.WriteFile(filepath.Join(dir, "redis-cli"), []byte(stub), 0o755); err != nil {
		t.Fatal(err)
	}
	script := strings.ReplaceAll(e.Kubernetes.Cluster.Bootstrap.Command[2], "{port_admin}", "9999")
	// A script that cannot log in waits for its nodes for ever: bounded.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", script)
	cmd.Env = append(cmd.Environ(), "PATH="+dir+":"+os.Getenv("PATH"),
		"BENCHQ_NODES=n0:6379 n1:6379 n2:6379 n3:6379", "BENCHQ_MASTERS=2", "BENCHQ_REPLICAS=1", "BENCHQ_PORT=6379",
		"BENCHQ_SUT_PASSWORD="+bootstrapPassword)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bootstrap: %v\n%s", err, out)
	}
	calls, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	var configs []string
	for _, line := range strings.Split(strings.TrimSpace(string(calls)), "\n") {
		if i := strings.Index(line, "dflycluster config "); i >= 0 {
			configs = append(configs, strings.TrimPrefix(line[i:], "dflycluster config "))
		}
	}
	want := `[{"slot_ranges":[{"start":0,"end":8191}],"master":{"id":"id-n0","ip":"n0","port":6379},"replicas":[{"id":"id-n2","ip":"n2","port":6379}]},` +
		`{"slot_ranges":[{"start":8192,"end":16383}],"master":{"id":"id-n1","ip":"n1","port":6379},"replicas":[{"id":"id-n3","ip":"n3","port":6379}]}]`
	if len(configs) != 4 {
		t.Fatalf("config pushed to %d nodes, want 4; calls:\n%s", len(configs), calls)
	}
	for _, c := range configs {
		var v any
		if err := json.Unmarshal([]byte(c), &v); err != nil || c != want {
			t.Errorf("config %s (%v)\nwant   %s", c, err, want)
		}
	}
	for _, call := range []string{"-h n2 -p 6379 replicaof n0 6379", "-h n3 -p 6379 replicaof n1 6379"} {
		if !strings.Contains(string(calls), call) {
			t.Errorf("no %q in calls:\n%s", call, calls)
		}
	}
}

// TestCatalogShellScriptsParse checks the shell syntax of every catalog
// command run with sh -c (bootstrap, schema, readiness).
func TestCatalogShellScriptsParse(t *testing.T) {
	for _, n := range catalog.Names() {
		e, _ := catalog.Lookup(n)
		k := e.Kubernetes
		cmds := [][]string{k.Readiness.Exec}
		if k.Cluster != nil {
			cmds = append(cmds, k.Cluster.Bootstrap.Command)
		}
		if k.Schema != nil {
			cmds = append(cmds, k.Schema.Command)
		}
		for _, c := range cmds {
			if len(c) == 3 && c[0] == "sh" && c[1] == "-c" {
				if out, err := exec.Command("sh", "-n", "-c", c[2]).CombinedOutput(); err != nil {
					t.Errorf("%s: sh -n: %v\n%s\n%s", n, err, out, c[2])
				}
			}
		}
	}
}
