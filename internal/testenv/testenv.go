// Package testenv starts the real infrastructure that integration tests run
// against — an embedded NATS server with JetStream, a throwaway PostgreSQL —
// one per test, in the test's own temp directory, gone when the test ends.
// It also holds the polling helper every such test waits with.
package testenv

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/benchq/benchq/internal/bus"
	"github.com/benchq/benchq/internal/localdb"
)

// NATS starts an embedded nats-server with JetStream on a free loopback port,
// its store in a temp dir of t, and shuts it down when t ends. It returns the
// client URL.
func NATS(t testing.TB) string {
	t.Helper()
	return startNATS(t, &server.Options{JetStream: true})
}

// NATSFromConfig starts an embedded nats-server from a configuration file,
// parsed as nats-server parses it (`nats-server -t`; $VARS from the
// environment), on a free loopback port with JetStream in a temp dir of t,
// whatever address and store the file names. It returns the parsed options
// as the file had them, and the client URL.
func NATSFromConfig(t testing.TB, path string) (server.Options, string) {
	t.Helper()
	opts, err := server.ProcessConfigFile(path)
	if err != nil {
		t.Fatalf("nats-server refuses %s: %v", path, err)
	}
	parsed := *opts
	opts.HTTPPort, opts.JetStream = 0, true
	return parsed, startNATS(t, opts)
}

func startNATS(t testing.TB, opts *server.Options) string {
	t.Helper()
	opts.Host, opts.Port, opts.StoreDir, opts.NoLog, opts.NoSigs = "127.0.0.1", -1, t.TempDir(), true, true
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatalf("nats-server: %v", err)
	}
	// Registered after t.TempDir, so it runs before the store is removed.
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	go s.Start()
	if !s.ReadyForConnections(30 * time.Second) {
		t.Fatalf("nats-server not ready for connections within 30s")
	}
	return s.ClientURL()
}

// Postgres starts a PostgreSQL server (internal/localdb, unsafe settings:
// fast, disposable) with a database "benchq" in a temp dir of t, stops it when
// t ends (the temp dir goes with t), and returns its URL. The test is skipped
// when PostgreSQL is not installed.
func Postgres(t testing.TB) string {
	t.Helper()
	return StartPostgres(t, localdb.PGOptions{Database: "benchq", Unsafe: true}).URL()
}

// StartPostgres starts a PostgreSQL server with opts on a free port in a
// temporary directory and stops it when t ends; it skips the test when
// PostgreSQL is not installed.
func StartPostgres(t testing.TB, opts localdb.PGOptions) *localdb.Postgres {
	t.Helper()
	if _, err := localdb.PGBinDir(); err != nil {
		if errors.Is(err, localdb.ErrNotInstalled) {
			t.Skipf("skipping: %v", err)
		}
		t.Fatal(err)
	}
	// The server runs as the OS user postgres when we are root; t.TempDir's
	// parent is private, so open both for traversal.
	base := t.TempDir()
	for _, d := range []string{filepath.Dir(base), base} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(base, "pg")
	// Registered before the start so that a server left running by a start
	// that failed half-way is stopped too (Stop finds it by its data dir).
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := (&localdb.Postgres{Dir: dir}).Stop(ctx); err != nil {
			t.Errorf("stop postgres: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := localdb.StartPostgres(ctx, dir, 0, opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Eventually calls cond every 20ms until it returns nil, and fails the test
// with cond's last error when timeout passes first.
func Eventually(t testing.TB, timeout time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %v", timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Logger is a debug-level slog logger that writes to t's log (shown when the
// test fails or with -v). Lines logged after t ended are dropped instead of
// panicking, so a service goroutine that outlives t is harmless.
func Logger(t testing.TB, component string) *slog.Logger {
	return slog.New(slog.NewTextHandler(Writer(t), &slog.HandlerOptions{Level: slog.LevelDebug})).With("component", component)
}

// Writer writes into t's log (a child process' output, say), dropping what
// comes after t ended.
func Writer(t testing.TB) io.Writer {
	w := &testWriter{t: t}
	t.Cleanup(w.close)
	return w
}

type testWriter struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimSuffix(string(p), "\n"))
	}
	return len(p), nil
}

func (w *testWriter) close() {
	w.mu.Lock()
	w.done = true
	w.mu.Unlock()
}

// Go runs f (a service's Run) in a goroutine and returns its stop function:
// stop cancels f's context and waits for f to return, failing t if f returned
// an error or did not return within a minute. stop is also called when t
// ends; calling it again is a no-op.
func Go(t testing.TB, f func(ctx context.Context) error) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("service returned: %v", err)
				}
			case <-time.After(time.Minute):
				t.Errorf("service did not stop within a minute of its context ending")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// Bus is the test's own connection to the NATS at url, its streams and
// buckets declared, closed when t ends.
func Bus(t testing.TB, ctx context.Context, url string) *bus.Bus {
	t.Helper()
	b, err := bus.Connect(ctx, url, "", "test", Logger(t, "test"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	if err := b.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	return b
}

// HeldPort holds a free port on 127.0.0.1 until the test ends and returns
// it: a port another process took, for tests of what a server does then.
func HeldPort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l.Addr().(*net.TCPAddr).Port
}
