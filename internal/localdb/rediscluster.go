package localdb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/benchq/benchq/internal/procs"
)

// clusterSlots is the number of hash slots of a Redis Cluster.
const clusterSlots = 16384

// RedisClusterOptions tune StartRedisCluster.
type RedisClusterOptions struct {
	// Masters is the number of masters (at least 1; Redis Cluster tooling
	// wants 3 for failover, which the caller decides); Replicas the
	// replicas of each master.
	Masters, Replicas int
	// Settings are extra redis.conf directives for every node.
	Settings map[string]string
	// Timeout bounds the wait for cluster_state:ok on every node (default
	// 60s); each node's start has its own (RedisOptions.Timeout's default).
	Timeout time.Duration
	// OSUser is the OS account the nodes run as (RedisOptions.OSUser).
	OSUser string
	// Password is every node's (RedisOptions.Password): clients and
	// replicas authenticate with it.
	Password string
}

// RedisCluster is a running Redis Cluster of local redis-server processes.
type RedisCluster struct {
	Dir string // holds node-0, node-1, ...: one redis-server directory each
	// Nodes are the masters first (Nodes[:Masters]), then the replicas;
	// replica k (0-based, Nodes[Masters+k]) follows master k % Masters (as
	// formed; a failover may swap roles later).
	Nodes             []*Redis
	Masters, Replicas int
	Password          string // RedisClusterOptions.Password
}

// Addr is host:port of the first master: the endpoint clients bootstrap
// from (cluster clients learn the other nodes from it).
func (c *RedisCluster) Addr() string { return c.Nodes[0].Addr() }

// Addrs are host:port of every node, masters first.
func (c *RedisCluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.Addr()
	}
	return out
}

// ClusterWorker is one node of a cluster as formed: bexhoma's "worker N"
// of the summary's Connections section.
type ClusterWorker struct {
	Worker int    `json:"worker"` // 0-based, masters first
	Addr   string `json:"addr"`
	Pid    int    `json:"pid"`
	Role   string `json:"role"`             // master or replica
	Slots  string `json:"slots,omitempty"`  // a master's hash slots, lo-hi
	Master string `json:"master,omitempty"` // the master a replica follows
}

// Workers are the nodes as formed (a failover may swap roles later).
func (c *RedisCluster) Workers() []ClusterWorker {
	out := make([]ClusterWorker, len(c.Nodes))
	for i, n := range c.Nodes {
		w := ClusterWorker{Worker: i, Addr: n.Addr(), Pid: n.Pid, Role: "master"}
		if i < c.Masters {
			lo, hi := slotRange(i, c.Masters)
			w.Slots = fmt.Sprintf("%d-%d", lo, hi)
		} else {
			w.Role, w.Master = "replica", c.Nodes[(i-c.Masters)%c.Masters].Addr()
		}
		out[i] = w
	}
	return out
}

// Pids are the nodes' pids, masters first.
func (c *RedisCluster) Pids() []int {
	out := make([]int, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.Pid
	}
	return out
}

// StartRedisCluster runs Masters × (1 + Replicas) redis-server processes as
// cluster nodes in dir/node-<i> on free loopback ports (client and bus),
// gives the masters equal contiguous slot ranges, joins them (CLUSTER MEET),
// attaches the replicas and waits until every node reports cluster_state:ok
// and every replica's link to its master is up.
//
// It is idempotent, like StartRedis: live nodes are reused, dead ones are
// restarted on their previous ports when those are free (their nodes.conf
// keeps their identity and slots), and every forming step is skipped where
// it is done already. If it fails, no node of dir is left running, unless
// ctx ended: a caller that is stopping redoes its work later and must find
// a healthy cluster as it was.
func StartRedisCluster(ctx context.Context, dir string, opts RedisClusterOptions) (*RedisCluster, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("start redis cluster: %w", err)
	}
	if opts.Masters < 1 || opts.Replicas < 0 {
		return nil, fmt.Errorf("start redis cluster: %d masters with %d replicas each: want at least 1 master and no negative replicas", opts.Masters, opts.Replicas)
	}
	c := &RedisCluster{Dir: dir, Masters: opts.Masters, Replicas: opts.Replicas, Password: opts.Password}
	if err := c.start(ctx, opts); err != nil {
		err = fmt.Errorf("start redis cluster in %s: %w", dir, err)
		if ctx.Err() != nil {
			return nil, err
		}
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		return nil, errors.Join(err, c.Stop(stopCtx))
	}
	return c, nil
}

func (c *RedisCluster) start(ctx context.Context, opts RedisClusterOptions) error {
	n := opts.Masters * (1 + opts.Replicas)
	for i := range n {
		node, err := startClusterNode(ctx, filepath.Join(c.Dir, fmt.Sprintf("node-%d", i)), opts)
		if err != nil {
			return err
		}
		c.Nodes = append(c.Nodes, node)
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return c.form(ctx)
}

// startClusterNode starts (or finds) one node, on the ports of its previous
// run if its directory has a redis.conf and they are free.
func startClusterNode(ctx context.Context, dir string, cluster RedisClusterOptions) (*Redis, error) {
	conf := filepath.Join(dir, "redis.conf")
	port, _ := readRedisPortDirective(conf, "port")
	bus, _ := readRedisPortDirective(conf, "cluster-port")
	opts := RedisOptions{Settings: cluster.Settings, Cluster: true, BusPort: bus, OSUser: cluster.OSUser, Password: cluster.Password}
	r, err := StartRedis(ctx, dir, port, opts)
	if errors.Is(err, ErrAddrInUse) && (port != 0 || bus != 0) {
		opts.BusPort = 0
		r, err = StartRedis(ctx, dir, 0, opts)
	}
	return r, err
}

// form brings the started nodes into one healthy cluster, skipping what is
// done: slots, config epochs, MEET, replication.
func (c *RedisCluster) form(ctx context.Context) error {
	views := make([]clusterView, len(c.Nodes))
	for i, node := range c.Nodes {
		v, err := viewOf(ctx, node.Addr(), c.Password)
		if err != nil {
			return err
		}
		views[i] = v
	}
	// A fresh cluster: each master gets its slot range and a distinct
	// config epoch before it meets the others (what redis-cli --cluster
	// create does), so that no epoch collision has to be resolved.
	for i := range c.Masters {
		me := views[i].myself()
		if len(me.slots) > 0 || len(views[i].nodes) > 1 {
			continue
		}
		lo, hi := slotRange(i, c.Masters)
		if _, err := c.Nodes[i].Command(ctx, "CLUSTER", "ADDSLOTSRANGE", strconv.Itoa(lo), strconv.Itoa(hi)); err != nil {
			return fmt.Errorf("master %d: %w", i, err)
		}
		if _, err := c.Nodes[i].Command(ctx, "CLUSTER", "SET-CONFIG-EPOCH", strconv.Itoa(i+1)); err != nil {
			return fmt.Errorf("master %d: %w", i, err)
		}
	}
	// MEET is harmless between nodes that know each other already.
	for _, node := range c.Nodes[1:] {
		bus, err := readRedisPortDirective(node.confFile(), "cluster-port")
		if err != nil {
			return err
		}
		if _, err := c.Nodes[0].Command(ctx, "CLUSTER", "MEET", "127.0.0.1", strconv.Itoa(node.Port), strconv.Itoa(bus)); err != nil {
			return err
		}
	}
	if err := c.waitAll(ctx, "every node to know every other", func(ctx context.Context, i int, v clusterView) error {
		if len(v.nodes) != len(c.Nodes) {
			return fmt.Errorf("node %d knows %d of %d nodes", i, len(v.nodes), len(c.Nodes))
		}
		for _, n := range v.nodes {
			if n.has("handshake") || n.has("noaddr") || n.id == "" {
				return fmt.Errorf("node %d: %s is %s", i, n.addr, strings.Join(n.flags, ","))
			}
		}
		return nil
	}); err != nil {
		return err
	}
	ids := make([]string, c.Masters)
	for i := range c.Masters {
		v, err := viewOf(ctx, c.Nodes[i].Addr(), c.Password)
		if err != nil {
			return err
		}
		ids[i] = v.myself().id
	}
	for k := range c.Masters * c.Replicas {
		addr, master := c.Nodes[c.Masters+k].Addr(), ids[k%c.Masters]
		v, err := viewOf(ctx, addr, c.Password)
		if err != nil {
			return err
		}
		// A node that replicates already, or that took over its master's
		// slots in a failover, stays as it is.
		if me := v.myself(); me.has("slave") || len(me.slots) > 0 {
			continue
		}
		if _, err := c.Nodes[c.Masters+k].Command(ctx, "CLUSTER", "REPLICATE", master); err != nil {
			return fmt.Errorf("replica %d: %w", k, err)
		}
	}
	return c.waitAll(ctx, "cluster_state:ok on every node", func(ctx context.Context, i int, _ clusterView) error {
		info, err := c.Nodes[i].Command(ctx, "CLUSTER", "INFO")
		if err != nil {
			return err
		}
		f := infoFields(info)
		if f["cluster_state"] != "ok" || f["cluster_slots_assigned"] != strconv.Itoa(clusterSlots) || f["cluster_size"] != strconv.Itoa(c.Masters) {
			return fmt.Errorf("node %d: cluster_state:%s, cluster_slots_assigned:%s, cluster_size:%s", i, f["cluster_state"], f["cluster_slots_assigned"], f["cluster_size"])
		}
		repl, err := c.Nodes[i].Command(ctx, "INFO", "replication")
		if err != nil {
			return err
		}
		if r := infoFields(repl); r["role"] == "slave" && r["master_link_status"] != "up" {
			return fmt.Errorf("replica node %d: master_link_status:%s", i, r["master_link_status"])
		}
		return nil
	})
}

// waitAll polls check on every node (with its current CLUSTER NODES view)
// until it passes for all of them.
func (c *RedisCluster) waitAll(ctx context.Context, what string, check func(context.Context, int, clusterView) error) error {
	return procs.WaitFor(ctx, what, 100*time.Millisecond, func(ctx context.Context) error {
		for i, node := range c.Nodes {
			if !procs.Alive(node.Pid) {
				return procs.Permanent(Exited("redis-server", node.Pid, node.logFile()))
			}
			v, err := viewOf(ctx, node.Addr(), c.Password)
			if err != nil {
				return err
			}
			if err := check(ctx, i, v); err != nil {
				return err
			}
		}
		return nil
	})
}

// slotRange is master i's share of the slots (of masters): equal contiguous
// ranges, the remainder spread over the first masters.
func slotRange(i, masters int) (lo, hi int) {
	return i * clusterSlots / masters, (i+1)*clusterSlots/masters - 1
}

// Stop stops every node of dir (by their pid files). Nothing running is not
// an error.
func (c *RedisCluster) Stop(ctx context.Context) error {
	dirs, err := filepath.Glob(filepath.Join(c.Dir, "node-*"))
	if err != nil {
		return fmt.Errorf("stop redis cluster: %w", err)
	}
	var errs []error
	for _, d := range dirs {
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			continue
		}
		errs = append(errs, (&Redis{Dir: d}).Stop(ctx))
	}
	return errors.Join(errs...)
}

// MasterAddrs asks the node at addr for the cluster's masters (host:port,
// sorted); for counting keys, which live on the masters. password is the
// cluster's ("": none).
func MasterAddrs(ctx context.Context, addr, password string) ([]string, error) {
	v, err := viewOf(ctx, addr, password)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range v.nodes {
		if n.has("master") && !n.has("fail") {
			out = append(out, n.addr)
		}
	}
	sort.Strings(out)
	return out, nil
}

// clusterView is one node's CLUSTER NODES.
type clusterView struct{ nodes []clusterNode }

type clusterNode struct {
	id, addr, master string // addr is host:port; master is "-" for a master
	flags            []string
	slots            []string // "0-5460", "5461", ...
}

func (n clusterNode) has(flag string) bool {
	for _, f := range n.flags {
		if f == flag {
			return true
		}
	}
	return false
}

func (v clusterView) myself() clusterNode {
	for _, n := range v.nodes {
		if n.has("myself") {
			return n
		}
	}
	return clusterNode{}
}

func viewOf(ctx context.Context, addr, password string) (clusterView, error) {
	out, err := RedisCommandAs(ctx, addr, password, "CLUSTER", "NODES")
	if err != nil {
		return clusterView{}, err
	}
	return parseClusterNodes(out)
}

// parseClusterNodes parses CLUSTER NODES: per line
// "<id> <ip:port@cport[,hostname]> <flags> <master> <ping> <pong> <epoch> <link> <slot>...".
func parseClusterNodes(out string) (clusterView, error) {
	var v clusterView
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) < 8 {
			return clusterView{}, fmt.Errorf("CLUSTER NODES: malformed line %q", line)
		}
		addr, _, _ := strings.Cut(f[1], "@")
		v.nodes = append(v.nodes, clusterNode{id: f[0], addr: addr, flags: strings.Split(f[2], ","), master: f[3], slots: f[8:]})
	}
	return v, nil
}

// infoFields parses "name:value" lines (INFO, CLUSTER INFO).
func infoFields(s string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			out[k] = v
		}
	}
	return out
}
