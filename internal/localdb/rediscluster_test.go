package localdb

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchq/benchq/internal/procs"
)

func startTestCluster(t *testing.T, ctx context.Context, dir string, opts RedisClusterOptions) *RedisCluster {
	t.Helper()
	if _, err := RedisBinary(); err != nil {
		skipIfNotInstalled(t, err)
		t.Fatal(err)
	}
	// Registered before the start: a failed start stops its nodes itself,
	// a test that fails later must not leave them running either.
	t.Cleanup(func() {
		if err := (&RedisCluster{Dir: dir}).Stop(context.Background()); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	c, err := StartRedisCluster(ctx, dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRedisClusterStartStop(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 2*time.Minute)
	dir := serverDir(t, "cluster")
	c := startTestCluster(t, ctx, dir, RedisClusterOptions{Masters: 3, Replicas: 1})
	if len(c.Nodes) != 6 {
		t.Fatalf("%d nodes, want 6", len(c.Nodes))
	}
	for i, addr := range c.Addrs() {
		info, err := RedisCommand(ctx, addr, "CLUSTER", "INFO")
		if err != nil || !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_known_nodes:6") {
			t.Errorf("node %d CLUSTER INFO = %q, %v", i, info, err)
		}
	}
	masters, err := MasterAddrs(ctx, c.Addr(), c.Password)
	want := slices.Sorted(slices.Values(c.Addrs()[:3]))
	if err != nil || !slices.Equal(masters, want) {
		t.Errorf("MasterAddrs = %v, %v; want %v", masters, err, want)
	}
	// Every master owns its third of the slots, and every replica follows
	// its master.
	for i := range 3 {
		v, err := viewOf(ctx, c.Nodes[i].Addr(), c.Password)
		if err != nil {
			t.Fatal(err)
		}
		lo, hi := slotRange(i, 3)
		if me := v.myself(); !slices.Equal(me.slots, []string{strconv.Itoa(lo) + "-" + strconv.Itoa(hi)}) {
			t.Errorf("master %d slots %v, want %d-%d", i, me.slots, lo, hi)
		}
	}
	for k := range 3 {
		repl, err := RedisCommand(ctx, c.Nodes[3+k].Addr(), "INFO", "replication")
		f := infoFields(repl)
		if err != nil || f["role"] != "slave" || f["master_port"] != strconv.Itoa(c.Nodes[k].Port) || f["master_link_status"] != "up" {
			t.Errorf("replica %d: role %s, master_port %s (want %d), link %s, %v", k, f["role"], f["master_port"], c.Nodes[k].Port, f["master_link_status"], err)
		}
	}
	// A key is served by the master of its slot; the others redirect.
	slot, err := RedisCommand(ctx, c.Addr(), "CLUSTER", "KEYSLOT", "somekey")
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(slot)
	for i := range 3 {
		lo, hi := slotRange(i, 3)
		_, err := RedisCommand(ctx, c.Nodes[i].Addr(), "SET", "somekey", "v")
		if owner := n >= lo && n <= hi; owner != (err == nil) || (!owner && !strings.Contains(err.Error(), "MOVED")) {
			t.Errorf("SET on master %d (slots %d-%d) of a key in slot %d: %v", i, lo, hi, n, err)
		}
	}

	// Idempotent: a second start reuses every node.
	again, err := StartRedisCluster(ctx, dir, RedisClusterOptions{Masters: 3, Replicas: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(again.Pids(), c.Pids()) || !slices.Equal(again.Addrs(), c.Addrs()) {
		t.Errorf("second start: pids %v addrs %v, want %v %v", again.Pids(), again.Addrs(), c.Pids(), c.Addrs())
	}

	if err := (&RedisCluster{Dir: dir}).Stop(ctx); err != nil {
		t.Fatal(err)
	}
	for i, pid := range c.Pids() {
		if procs.Alive(pid) {
			t.Errorf("node %d (pid %d) alive after Stop", i, pid)
		}
	}
}

func TestRedisClusterRestartsDeadNodeOnItsPorts(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, 2*time.Minute)
	dir := serverDir(t, "cluster")
	c := startTestCluster(t, ctx, dir, RedisClusterOptions{Masters: 3})
	dead := c.Nodes[1]
	if err := syscall.Kill(dead.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := procs.WaitFor(ctx, "killed node gone", 20*time.Millisecond, func(context.Context) error {
		if procs.Alive(dead.Pid) {
			return context.DeadlineExceeded
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	again, err := StartRedisCluster(ctx, dir, RedisClusterOptions{Masters: 3})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(again.Addrs(), c.Addrs()) {
		t.Errorf("addrs after restart %v, want %v", again.Addrs(), c.Addrs())
	}
	if again.Nodes[1].Pid == dead.Pid || again.Nodes[0].Pid != c.Nodes[0].Pid {
		t.Errorf("pids after restart %v (were %v): want only node 1 new", again.Pids(), c.Pids())
	}
}

func TestRedisClusterRejectsShape(t *testing.T) {
	t.Parallel()
	dir := serverDir(t, "cluster")
	for _, o := range []RedisClusterOptions{{Masters: 0}, {Masters: 3, Replicas: -1}} {
		if _, err := StartRedisCluster(t.Context(), dir, o); err == nil || !strings.Contains(err.Error(), "want at least 1 master") {
			t.Errorf("%+v: %v", o, err)
		}
	}
}

func TestSlotRange(t *testing.T) {
	t.Parallel()
	next := 0
	for i := range 5 {
		lo, hi := slotRange(i, 5)
		if lo != next || hi < lo {
			t.Errorf("master %d: %d-%d, want from %d", i, lo, hi, next)
		}
		next = hi + 1
	}
	if next != clusterSlots {
		t.Errorf("ranges end at %d, want %d", next, clusterSlots)
	}
}

func TestParseClusterNodes(t *testing.T) {
	t.Parallel()
	out := "07c3 127.0.0.1:30004@31004,host-a slave e7d1 0 1426238317239 4 connected\n" +
		"e7d1 127.0.0.1:30001@31001 myself,master - 0 0 1 connected 0-5460 5462\n"
	v, err := parseClusterNodes(out)
	if err != nil {
		t.Fatal(err)
	}
	me := v.myself()
	if me.id != "e7d1" || me.addr != "127.0.0.1:30001" || !slices.Equal(me.slots, []string{"0-5460", "5462"}) || !me.has("master") {
		t.Errorf("myself = %+v", me)
	}
	if r := v.nodes[0]; r.addr != "127.0.0.1:30004" || r.master != "e7d1" || !r.has("slave") || len(r.slots) != 0 {
		t.Errorf("replica = %+v", r)
	}
	if _, err := parseClusterNodes("garbage line"); err == nil {
		t.Error("malformed line accepted")
	}
}
