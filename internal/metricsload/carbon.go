package metricsload

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strconv"
	"time"
)

// carbonWriter writes carbon's plaintext protocol over one TCP connection:
// a line "path value unix-seconds" per point. A flush is one write of all
// its lines, so a write that fails part way tells how many lines the
// socket took before it failed (ends[i] is where line i ends).
type carbonWriter struct {
	conn  net.Conn
	paths []string
	buf   []byte
	ends  []int
}

func dialCarbon(ctx context.Context, addr, prefix string, agent, metrics int) (*carbonWriter, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("carbon %s: %w", addr, err)
	}
	w := &carbonWriter{conn: conn, paths: make([]string, metrics), ends: make([]int, metrics)}
	for j := range w.paths {
		w.paths[j] = fmt.Sprintf("%s.agent%d.metric%d", prefix, agent, j+1)
	}
	return w, nil
}

func (w *carbonWriter) write(ctx context.Context, t time.Time, v int64) (int, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(30 * time.Second)
	}
	_ = w.conn.SetWriteDeadline(deadline)
	ts := t.Unix()
	w.buf = w.buf[:0]
	for j, p := range w.paths {
		w.buf = append(w.buf, p...)
		w.buf = append(w.buf, ' ')
		w.buf = strconv.AppendInt(w.buf, v, 10)
		w.buf = append(w.buf, ' ')
		w.buf = strconv.AppendInt(w.buf, ts, 10)
		w.buf = append(w.buf, '\n')
		w.ends[j] = len(w.buf)
	}
	n, err := w.conn.Write(w.buf)
	if err != nil {
		return wholeLines(w.ends, n), fmt.Errorf("carbon write: %w", err)
	}
	return len(w.paths), nil
}

// wholeLines is how many lines ending at ends lie within the first n bytes:
// the points of a failed write that the socket took whole.
func wholeLines(ends []int, n int) int {
	return sort.SearchInts(ends, n+1)
}

func (w *carbonWriter) close() { _ = w.conn.Close() }
