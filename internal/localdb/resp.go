package localdb

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// ErrRedisReply is wrapped when the server answers a command with an error.
var ErrRedisReply = errors.New("redis error reply")

// RedisCommand sends one command to the Redis server at addr over a fresh
// connection (RESP2) and returns the reply as text: simple strings and bulk
// strings as they are, integers in decimal, nil as "", arrays as their
// elements joined by newlines. An error reply becomes an error wrapping
// ErrRedisReply. It is meant for probes and tests (PING, DBSIZE, INFO), not
// for traffic.
func RedisCommand(ctx context.Context, addr string, args ...string) (string, error) {
	return RedisCommandAs(ctx, addr, "", args...)
}

// RedisCommandAs is RedisCommand on a server that wants a password
// (requirepass): the connection sends AUTH first ("": none).
func RedisCommandAs(ctx context.Context, addr, password string, args ...string) (string, error) {
	if len(args) == 0 {
		return "", errors.New("redis: empty command")
	}
	reply, err := redisCommand(ctx, addr, password, args)
	if err != nil {
		return "", fmt.Errorf("redis %s %s: %w", addr, args[0], err)
	}
	return reply, nil
}

func redisCommand(ctx context.Context, addr, password string, args []string) (string, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(10 * time.Second)
	}
	if err := conn.SetDeadline(deadline); err != nil {
		return "", err
	}
	r := bufio.NewReader(conn)
	if password != "" {
		if _, err := conn.Write(encodeRESP([]string{"AUTH", password})); err != nil {
			return "", err
		}
		if _, err := readRESP(r); err != nil {
			return "", fmt.Errorf("AUTH: %w", err)
		}
	}
	if _, err := conn.Write(encodeRESP(args)); err != nil {
		return "", err
	}
	return readRESP(r)
}

func encodeRESP(args []string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return []byte(b.String())
}

// readRESP reads one reply.
func readRESP(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return "", errors.New("empty reply line")
	}
	body := line[1:]
	switch line[0] {
	case '+', ':':
		return body, nil
	case '-':
		return "", fmt.Errorf("%w: %s", ErrRedisReply, body)
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil {
			return "", fmt.Errorf("bad bulk length %q", body)
		}
		if n < 0 {
			return "", nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil {
			return "", fmt.Errorf("bad array length %q", body)
		}
		elems := make([]string, 0, max(n, 0))
		for range n {
			e, err := readRESP(r)
			if err != nil {
				return "", err
			}
			elems = append(elems, e)
		}
		return strings.Join(elems, "\n"), nil
	default:
		return "", fmt.Errorf("unexpected reply %q", line)
	}
}
