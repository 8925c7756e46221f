package localdb

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/benchq/benchq/internal/procs"
)

func startTestRedis(t *testing.T, ctx context.Context, dir string, port int, opts RedisOptions) (*Redis, error) {
	t.Helper()
	if _, err := RedisBinary(); err != nil {
		skipIfNotInstalled(t, err)
		t.Fatal(err)
	}
	r, err := StartRedis(ctx, dir, port, opts)
	if r != nil {
		t.Cleanup(func() {
			if err := r.Stop(context.Background()); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		})
	}
	return r, err
}

func TestRedisStartStop(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, time.Minute)
	dir := serverDir(t, "redis")
	r, err := startTestRedis(t, ctx, dir, 0, RedisOptions{Settings: map[string]string{"maxclients": "1000"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"PING"}, "PONG"},
		{[]string{"SET", "key with space", "value\r\nwith crlf"}, "OK"},
		{[]string{"GET", "key with space"}, "value\r\nwith crlf"},
		{[]string{"GET", "missing"}, ""},
		{[]string{"DBSIZE"}, "1"},
		{[]string{"CONFIG", "GET", "maxclients"}, "maxclients\n1000"},
		{[]string{"CONFIG", "GET", "save"}, "save\n"},
	} {
		got, err := RedisCommand(ctx, r.Addr(), c.args...)
		if err != nil || got != c.want {
			t.Errorf("%v = %q, %v; want %q", c.args, got, err, c.want)
		}
	}
	if info, err := RedisCommand(ctx, r.Addr(), "INFO", "server"); err != nil || !strings.Contains(info, "redis_version:") {
		t.Errorf("INFO server = %q, %v", info, err)
	}
	if _, err := RedisCommand(ctx, r.Addr(), "NOSUCHCOMMAND"); !errors.Is(err, ErrRedisReply) {
		t.Errorf("unknown command: %v, want ErrRedisReply", err)
	}

	again, err := StartRedis(ctx, dir, 0, RedisOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if again.Pid != r.Pid || again.Port != r.Port {
		t.Errorf("second start = pid %d port %d, want reuse of pid %d port %d", again.Pid, again.Port, r.Pid, r.Port)
	}

	if err := (&Redis{Dir: dir}).Stop(ctx); err != nil { // by pid file
		t.Fatal(err)
	}
	if procs.Alive(r.Pid) {
		t.Fatal("redis-server alive after Stop")
	}
	if err := r.Stop(ctx); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	if _, err := RedisCommand(ctx, r.Addr(), "PING"); err == nil {
		t.Error("PING answered after Stop")
	}
}

func TestRedisPortTaken(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, time.Minute)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	start := time.Now()
	_, err = startTestRedis(t, ctx, serverDir(t, "redis"), port, RedisOptions{})
	if err == nil {
		t.Fatal("started on a taken port")
	}
	for _, want := range []string{"redis-server (pid", "exited", "Address already in use", "log: "} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("took %s: an exited server should end the wait at once", d)
	}
}

func TestRedisQuote(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":             `""`,
		"/tmp/a b":     `"/tmp/a b"`,
		`say "hi"\now`: `"say \"hi\"\\now"`,
		"tab\there":    `"tab\x09here"`,
	} {
		if got := redisQuote(in); got != want {
			t.Errorf("redisQuote(%q) = %s, want %s", in, got, want)
		}
		if back := redisUnquote(want); back != in {
			t.Errorf("redisUnquote(%s) = %q, want %q", want, back, in)
		}
	}
}

// Stop says SHUTDOWN, with the password of the server's redis.conf when it
// is stopped by its pid file alone: the server acts on it at once, where
// it takes SIGTERM only at its next tick.
func TestRedisStopsBySHUTDOWN(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t, time.Minute)
	dir := serverDir(t, "redis")
	r, err := startTestRedis(t, ctx, dir, 0, RedisOptions{Password: `p "w"\d` + "\x01"})
	if err != nil {
		t.Fatal(err)
	}
	if err := (&Redis{Dir: dir}).Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if procs.Alive(r.Pid) {
		t.Fatal("redis-server alive after Stop")
	}
	log, err := os.ReadFile(r.logFile())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(log), "SIGTERM") || !strings.Contains(string(log), "User requested shutdown") {
		t.Errorf("not stopped by SHUTDOWN; its log:\n%s", log)
	}
}

func TestReadRESP(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"+PONG\r\n":                     "PONG",
		":42\r\n":                       "42",
		"$5\r\nhello\r\n":               "hello",
		"$-1\r\n":                       "",
		"*2\r\n$1\r\na\r\n:1\r\n":       "a\n1",
		"*0\r\n":                        "",
		"$7\r\na\r\nb\r\nc\r\n":         "a\r\nb\r\nc",
		"*1\r\n*2\r\n+x\r\n+y\r\n":      "x\ny",
		"$12\r\nhello\r\nworld\r\n\r\n": "hello\r\nworld",
	} {
		got, err := readRESP(bufioReader(in))
		if err != nil || got != want {
			t.Errorf("readRESP(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := readRESP(bufioReader("-ERR wrong\r\n")); !errors.Is(err, ErrRedisReply) || !strings.Contains(err.Error(), "ERR wrong") {
		t.Errorf("error reply: %v", err)
	}
	if _, err := readRESP(bufioReader("?\r\n")); err == nil {
		t.Error("garbage parsed")
	}
}
