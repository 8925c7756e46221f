package localdb

import (
	"bufio"
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

// RedisOptions tune StartRedis.
type RedisOptions struct {
	// Settings are extra redis.conf directives (name → value).
	Settings map[string]string
	// Timeout bounds the wait for the first PONG (default 30s).
	Timeout time.Duration
	// Cluster runs the server as a Redis Cluster node (cluster-enabled,
	// nodes.conf in its dir) with its cluster bus on BusPort (0: a free
	// port). StartRedisCluster forms the cluster.
	Cluster bool
	BusPort int
}

// Redis is a running redis-server.
type Redis struct {
	Dir  string // holds redis.conf, redis.pid, redis.log
	Port int
	Pid  int
}

// Addr is host:port of the server.
func (r *Redis) Addr() string { return fmt.Sprintf("127.0.0.1:%d", r.Port) }

// StartRedis runs redis-server on 127.0.0.1:port without persistence (no RDB
// snapshots, no AOF) from a redis.conf written into dir, and waits until it
// answers PING. Port 0 picks a free port. If dir's server (redis.pid) is
// alive it is reused as it is, on its own port.
func StartRedis(ctx context.Context, dir string, port int, opts RedisOptions) (*Redis, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("start redis-server: %w", err)
	}
	r, err := startRedis(ctx, dir, port, opts)
	if err != nil {
		return nil, fmt.Errorf("start redis-server in %s: %w", dir, err)
	}
	return r, nil
}

func startRedis(ctx context.Context, dir string, port int, opts RedisOptions) (*Redis, error) {
	bin, err := RedisBinary()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create dir: %w", err)
	}
	r := &Redis{Dir: dir}
	if pid, ok := liveRedis(dir); ok {
		if r.Port, err = readRedisPort(r.confFile()); err != nil {
			return nil, err
		}
		r.Pid = pid
		return r, r.waitReady(ctx, opts.Timeout)
	}
	for attempt := 1; ; attempt++ {
		r.Port = port
		if r.Port == 0 {
			if r.Port, err = procs.FreePort(); err != nil {
				return nil, err
			}
		}
		settings := opts.Settings
		if opts.Cluster {
			if settings, err = clusterSettings(r.Port, opts); err != nil {
				return nil, err
			}
		}
		if err := os.WriteFile(r.confFile(), []byte(redisConf(dir, r.Port, settings)), 0o644); err != nil {
			return nil, fmt.Errorf("write redis.conf: %w", err)
		}
		if r.Pid, err = procs.Start(procs.Spec{
			Name:    "redis-server",
			Path:    bin,
			Args:    []string{r.confFile()},
			Dir:     dir,
			LogFile: r.logFile(),
			PidFile: r.pidFile(),
		}); err != nil {
			return nil, err
		}
		err = r.waitReady(ctx, opts.Timeout)
		if err == nil {
			return r, nil
		}
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		_ = r.Stop(stopCtx)
		cancel()
		picked := port == 0 || (opts.Cluster && opts.BusPort == 0)
		if !picked || attempt == 3 || !errors.Is(err, ErrAddrInUse) {
			return nil, err
		}
	}
}

// clusterSettings adds the cluster directives to opts.Settings (which win,
// but for the bus port): a bus port other than port, picked when
// opts.BusPort is 0.
func clusterSettings(port int, opts RedisOptions) (map[string]string, error) {
	bus := opts.BusPort
	for bus == 0 || bus == port {
		var err error
		if bus, err = procs.FreePort(); err != nil {
			return nil, err
		}
	}
	s := map[string]string{
		"cluster-enabled":      "yes",
		"cluster-config-file":  "nodes.conf",
		"cluster-node-timeout": "5000",
	}
	for k, v := range opts.Settings {
		s[k] = v
	}
	s["cluster-port"] = strconv.Itoa(bus)
	return s, nil
}

func (r *Redis) confFile() string { return filepath.Join(r.Dir, "redis.conf") }
func (r *Redis) pidFile() string  { return filepath.Join(r.Dir, "redis.pid") }
func (r *Redis) logFile() string  { return filepath.Join(r.Dir, "redis.log") }

// redisConf renders the configuration: loopback only, no persistence, logs
// to stdout (which procs appends to redis.log), settings last so they win.
func redisConf(dir string, port int, settings map[string]string) string {
	var b strings.Builder
	b.WriteString("# written by benchq (internal/localdb); rewritten on every start\n")
	line := func(k, v string) { fmt.Fprintf(&b, "%s %s\n", k, v) }
	line("bind", "127.0.0.1")
	line("port", strconv.Itoa(port))
	line("save", `""`)
	line("appendonly", "no")
	line("dir", redisQuote(dir))
	line("daemonize", "no")
	line("protected-mode", "no")
	line("logfile", `""`)
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		line(k, redisQuote(settings[k]))
	}
	return b.String()
}

// redisQuote quotes v the way redis.conf's parser (sdssplitargs) unquotes it.
func redisQuote(v string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '\\' || c == '"':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// readRedisPort finds the port directive of a redis.conf we wrote.
func readRedisPort(conf string) (int, error) {
	p, err := readRedisPortDirective(conf, "port")
	if err != nil {
		return 0, fmt.Errorf("port of running redis-server: %w", err)
	}
	return p, nil
}

// readRedisPortDirective reads a numeric directive (port, cluster-port,
// quoted or not) of a redis.conf we wrote.
func readRedisPortDirective(conf, name string) (int, error) {
	f, err := os.Open(conf)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			p, err := strconv.Atoi(strings.Trim(strings.TrimSpace(v), `"`))
			if err != nil {
				return 0, fmt.Errorf("%s: %s: %w", conf, name, err)
			}
			return p, nil
		}
	}
	return 0, fmt.Errorf("no %s directive in %s", name, conf)
}

// liveRedis reports the pid in dir/redis.pid if it is a live redis-server.
func liveRedis(dir string) (int, bool) {
	pid, err := procs.ReadPidFile(filepath.Join(dir, "redis.pid"))
	if err != nil || !procs.Alive(pid) {
		return 0, false
	}
	if comm, _ := procs.Comm(pid); !strings.HasPrefix(comm, "redis-server") {
		return 0, false // the pid was reused by another program
	}
	return pid, true
}

func (r *Redis) waitReady(ctx context.Context, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := procs.WaitFor(ctx, "redis-server PING on "+r.Addr(), 50*time.Millisecond, func(ctx context.Context) error {
		if !procs.Alive(r.Pid) {
			return procs.Permanent(exited("redis-server", r.Pid, r.logFile()))
		}
		// Bound each PING: whatever holds the port may accept and never answer.
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		reply, err := RedisCommand(ctx, r.Addr(), "PING")
		if err != nil {
			return err
		}
		if reply != "PONG" {
			return fmt.Errorf("PING answered %q", reply)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%w (log: %s)", err, r.logFile())
	}
	return nil
}

// Stop stops the server (SIGTERM; SIGKILL after 10s) and removes its pid
// file. It is a no-op when no server runs; a zero Pid is looked up in Dir's
// redis.pid.
func (r *Redis) Stop(ctx context.Context) error {
	pid := r.Pid
	if pid == 0 {
		var ok bool
		if pid, ok = liveRedis(r.Dir); !ok {
			return nil
		}
	}
	if err := procs.Stop(ctx, pid, 10*time.Second); err != nil {
		return fmt.Errorf("stop redis-server in %s: %w", r.Dir, err)
	}
	if err := os.Remove(r.pidFile()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("stop redis-server: %w", err)
	}
	return nil
}
