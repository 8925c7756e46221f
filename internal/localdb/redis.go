package localdb

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/benchq/benchq/internal/procs"
)

// RedisOptions tune StartRedis.
type RedisOptions struct {
	// OSUser is the OS account redis-server runs as when we are root
	// (default: ourselves; the local backend's SUTs: SUTUser).
	OSUser string
	// Settings are extra redis.conf directives (name → value).
	Settings map[string]string
	// Timeout bounds the wait for the first PONG (default 30s).
	Timeout time.Duration
	// Cluster runs the server as a Redis Cluster node (cluster-enabled,
	// nodes.conf in its dir) with its cluster bus on BusPort (0: a free
	// port). StartRedisCluster forms the cluster.
	Cluster bool
	BusPort int
	// Password, when set, is required of every client (requirepass) and
	// given by replicas to their masters (masterauth). It is written into
	// redis.conf, which lies in the server's own directory (mode 0700),
	// never on a command line.
	Password string
}

// Redis is a running redis-server.
type Redis struct {
	Dir      string // holds redis.conf, redis.pid, redis.log
	Port     int
	Pid      int
	Password string // RedisOptions.Password
}

// Command sends one command to the server (RedisCommandAs, with its
// password).
func (r *Redis) Command(ctx context.Context, args ...string) (string, error) {
	return RedisCommandAs(ctx, r.Addr(), r.Password, args...)
}

// Addr is host:port of the server.
func (r *Redis) Addr() string { return fmt.Sprintf("127.0.0.1:%d", r.Port) }

// StartRedis runs redis-server on 127.0.0.1:port without persistence (no RDB
// snapshots, no AOF) from a redis.conf written into dir, and waits until it
// answers PING. Port 0 picks a free port. If dir's server (redis.pid) is
// alive it is reused as it is, on its own port.
func StartRedis(ctx context.Context, dir string, port int, opts RedisOptions) (*Redis, error) {
	return startInDir("redis-server", dir, RedisBinary, func(dir, bin string) (*Redis, error) {
		return startRedis(ctx, dir, bin, port, opts)
	})
}

func startRedis(ctx context.Context, dir, bin string, port int, opts RedisOptions) (*Redis, error) {
	osUser, err := runAs("redis-server", opts.OSUser, "")
	if err != nil {
		return nil, err
	}
	if err := prepareDataDir(dir, osUser); err != nil {
		return nil, err
	}
	r := &Redis{Dir: dir, Password: opts.Password}
	if pid, ok := r.daemon().live(); ok {
		var err error
		if r.Port, err = readRedisPort(r.confFile()); err != nil {
			return nil, err
		}
		r.Pid = pid
		return r, r.waitReady(ctx, opts.Timeout)
	}
	// A cluster node's bus port is picked too when opts.BusPort is 0.
	picked := port == 0 || (opts.Cluster && opts.BusPort == 0)
	err = listen(port, picked, func(port int) (err error) {
		r.Port = port
		settings := opts.Settings
		if opts.Cluster {
			if settings, err = clusterSettings(r.Port, opts); err != nil {
				return err
			}
		}
		if opts.Password != "" {
			settings = maps.Clone(settings)
			if settings == nil {
				settings = map[string]string{}
			}
			settings["requirepass"] = opts.Password
			settings["masterauth"] = opts.Password
		}
		return r.daemon().launch(ctx, bin, osUser, r.confFile(), redisConf(dir, r.Port, settings), func(pid int) error {
			r.Pid = pid
			return r.waitReady(ctx, opts.Timeout)
		})
	})
	if err != nil {
		return nil, err
	}
	return r, nil
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

func (r *Redis) daemon() daemon   { return daemon{name: "redis-server", dir: r.Dir, file: "redis"} }
func (r *Redis) confFile() string { return filepath.Join(r.Dir, "redis.conf") }
func (r *Redis) logFile() string  { return r.daemon().logFile() }

// redisConf renders the configuration: loopback only, no persistence, logs
// to stdout (which procs appends to redis.log), settings last so they win.
func redisConf(dir string, port int, settings map[string]string) string {
	var b strings.Builder
	b.WriteString("# written by benchq (internal/localdb); rewritten on every start\n")
	line := func(k, v string) { fmt.Fprintf(&b, "%s %s\n", k, v) }
	line("bind", Loopback)
	line("port", strconv.Itoa(port))
	line("save", `""`)
	line("appendonly", "no")
	line("dir", redisQuote(dir))
	line("daemonize", "no")
	line("protected-mode", "no")
	line("logfile", `""`)
	for _, k := range slices.Sorted(maps.Keys(settings)) {
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
	v, err := readRedisDirective(conf, name)
	if err != nil {
		return 0, err
	}
	p, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %s: %w", conf, name, err)
	}
	return p, nil
}

// readRedisDirective reads the value of a directive of a redis.conf we
// wrote, unquoted (redisQuote's inverse).
func readRedisDirective(conf, name string) (string, error) {
	values, err := readRedisDirectives(conf, name)
	if err != nil {
		return "", err
	}
	v, ok := values[name]
	if !ok {
		return "", fmt.Errorf("no %s directive in %s", name, conf)
	}
	return v, nil
}

// readRedisDirectives reads the values of the directives names of a
// redis.conf we wrote, unquoted, in one pass; a directive the file lacks is
// not in the map.
func readRedisDirectives(conf string, names ...string) (map[string]string, error) {
	f, err := os.Open(conf)
	if err != nil {
		return nil, err
	}
	defer f.Close() //nolint:errcheck // read only
	values := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, v, ok := strings.Cut(sc.Text(), " ")
		if _, seen := values[name]; ok && !seen && slices.Contains(names, name) {
			values[name] = redisUnquote(strings.TrimSpace(v))
		}
	}
	return values, sc.Err()
}

// redisUnquote undoes redisQuote; a value without quotes is returned as it
// is.
func redisUnquote(v string) string {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return v
	}
	v = v[1 : len(v)-1]
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		switch {
		case v[i] != '\\' || i+1 == len(v):
			b.WriteByte(v[i])
		case v[i+1] == 'x' && i+3 < len(v):
			if c, err := strconv.ParseUint(v[i+2:i+4], 16, 8); err == nil {
				b.WriteByte(byte(c))
				i += 3
				continue
			}
			b.WriteByte(v[i])
		default:
			b.WriteByte(v[i+1])
			i++
		}
	}
	return b.String()
}

func (r *Redis) waitReady(ctx context.Context, timeout time.Duration) error {
	return waitReady(ctx, "redis-server", r.Pid, r.logFile(), "redis-server PING on "+r.Addr(), orDefault(timeout, 30*time.Second), probeEvery, func(ctx context.Context) error {
		// Bound each PING: whatever holds the port may accept and never answer.
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		reply, err := r.Command(ctx, "PING")
		if err != nil {
			return err
		}
		if reply != "PONG" {
			return fmt.Errorf("PING answered %q", reply)
		}
		return nil
	})
}

// Stop stops the server and removes its pid file: a SHUTDOWN command first
// (the server acts on it at once, on SIGTERM only at its next tick, up to
// 100 ms later at the default hz 10), then SIGTERM, SIGKILL after 10s. It
// is a no-op when no server runs; a zero Pid is looked up in Dir's
// redis.pid.
func (r *Redis) Stop(ctx context.Context) error {
	d := r.daemon()
	if pid, ok := d.live(); ok && (r.Pid == 0 || pid == r.Pid) {
		r.shutdown(ctx)
		return d.stop(ctx, pid)
	}
	return d.stop(ctx, r.Pid)
}

// shutdown sends SHUTDOWN (saving as SIGTERM would, where save points are
// set) to the server, on the port and with the password of its redis.conf;
// Stop calls it only for the live redis-server of the pid file, so that a
// port reused by another server is left alone. Errors are the SIGTERM's to
// mend.
func (r *Redis) shutdown(ctx context.Context) {
	conf, err := readRedisDirectives(r.confFile(), "port", "requirepass")
	if err != nil {
		return
	}
	port, err := strconv.Atoi(conf["port"])
	if err != nil {
		return
	}
	password := r.Password
	if password == "" {
		password = conf["requirepass"]
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	// The server closes the connection instead of answering: an error here.
	_, _ = RedisCommandAs(ctx, fmt.Sprintf("127.0.0.1:%d", port), password, "SHUTDOWN")
}
