package metricsload

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strconv"
	"time"
)

// carbonWriter writes carbon's plaintext protocol over one TCP connection:
// a line "path value unix-seconds" per point.
type carbonWriter struct {
	conn  net.Conn
	buf   *bufio.Writer
	paths []string
	line  []byte
}

func dialCarbon(ctx context.Context, addr, prefix string, agent, metrics int) (*carbonWriter, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("carbon %s: %w", addr, err)
	}
	w := &carbonWriter{conn: conn, buf: bufio.NewWriterSize(conn, 64<<10), paths: make([]string, metrics)}
	for j := range w.paths {
		w.paths[j] = fmt.Sprintf("%s.agent%d.metric%d", prefix, agent, j+1)
	}
	return w, nil
}

func (w *carbonWriter) write(ctx context.Context, t time.Time, v int64) error {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(30 * time.Second)
	}
	_ = w.conn.SetWriteDeadline(deadline)
	ts := t.Unix()
	for _, p := range w.paths {
		w.line = append(w.line[:0], p...)
		w.line = append(w.line, ' ')
		w.line = strconv.AppendInt(w.line, v, 10)
		w.line = append(w.line, ' ')
		w.line = strconv.AppendInt(w.line, ts, 10)
		w.line = append(w.line, '\n')
		if _, err := w.buf.Write(w.line); err != nil {
			return fmt.Errorf("carbon write: %w", err)
		}
	}
	if err := w.buf.Flush(); err != nil {
		return fmt.Errorf("carbon write: %w", err)
	}
	return nil
}

func (w *carbonWriter) close() { _ = w.conn.Close() }
