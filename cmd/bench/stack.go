package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/benchq/benchq/internal/bus"
	"github.com/benchq/benchq/internal/localdb"
	"github.com/benchq/benchq/internal/procs"
)

// stack is what the runs need besides the driver: a Redis, a nats-server
// with JetStream, and the bench's own connection to it (the scheduler's
// seat). Everything listens on loopback only and lives in dir.
type stack struct {
	dir     string
	redis   *localdb.Redis
	nats    *child
	natsURL string
	bus     *bus.Bus
}

// startStack starts Redis and NATS; on error it stops what it started.
func startStack(ctx context.Context, cfg Config, dir string, log *slog.Logger) (_ *stack, err error) {
	s := &stack{dir: dir}
	defer func() {
		if err != nil {
			s.close(log)
		}
	}()
	if s.redis, err = localdb.StartRedis(ctx, filepath.Join(dir, "redis"), 0, localdb.RedisOptions{}); err != nil {
		return nil, err
	}
	if err = s.startNATS(ctx, cfg); err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if s.bus, err = bus.Connect(cctx, s.natsURL, "", "benchq-bench", log); err != nil {
		return nil, err
	}
	if err = s.bus.Setup(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// startNATS runs nats-server on a free port; a port taken between the
// look-up and the bind (the server exits) is retried on another.
func (s *stack) startNATS(ctx context.Context, cfg Config) error {
	logPath := filepath.Join(s.dir, "nats.log")
	var lastErr error
	for range 3 {
		port, err := procs.FreePort()
		if err != nil {
			return err
		}
		logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("nats-server log: %w", err)
		}
		c, err := startChild("nats-server", []string{cfg.natsBin(), "-a", "127.0.0.1", "-p", strconv.Itoa(port), "-js", "-sd", filepath.Join(s.dir, "nats")}, nil, logf, logf)
		_ = logf.Close() // the child holds its own descriptor
		if err != nil {
			return err
		}
		url := fmt.Sprintf("nats://127.0.0.1:%d", port)
		err = procs.WaitFor(ctx, "nats-server on "+url, 50*time.Millisecond, func(ctx context.Context) error {
			select {
			case <-c.Done():
				return procs.Permanent(fmt.Errorf("nats-server exited (%v): %s", c.Err(), procs.LogTail(logPath, 3)))
			default:
			}
			return dialCheck(ctx, port)
		})
		if err == nil {
			s.nats, s.natsURL = c, url
			return nil
		}
		_ = c.Stop(5 * time.Second)
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	return lastErr
}

// dialCheck succeeds once something accepts connections on the port.
func dialCheck(ctx context.Context, port int) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return err
	}
	return conn.Close()
}

// close stops everything the stack started, each with its own bound, so
// that it also works after ctx ended (Ctrl-C, the deadline).
func (s *stack) close(log *slog.Logger) {
	if s.bus != nil {
		s.bus.Close()
	}
	if s.nats != nil {
		if err := s.nats.Stop(10 * time.Second); err != nil {
			log.Warn("stop nats-server", "err", err)
		}
	}
	if s.redis != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := s.redis.Stop(ctx); err != nil {
			log.Warn("stop redis-server", "err", err)
		}
	}
}
