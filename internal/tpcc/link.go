package tpcc

import (
	"context"
	"database/sql/driver"
	"errors"
	"sync"

	"github.com/benchq/benchq/contracts"
)

// A Benchbase terminal holds one connection. go-tpc's per-thread state
// holds one too, but a terminal of this engine keeps five states, one per
// transaction type (doc.go), which would open five. So a terminal's states
// share one server connection, its link: the terminal runs one request at
// a time, so its states never use the connection at once. The connector
// opens the link's connection for the first state and hands it to the
// others; the last state to let go closes it. A link also fixes which of
// the endpoint's addresses (the pool's pods) the terminal connects to.
//
// database/sql must not keep a released connection idle for another
// state (SetMaxIdleConns(0)): that one would bypass the terminal's link.
type link struct {
	addr int // index into the connector's addresses
	mu   sync.Mutex
	cur  *shared // the connection new states get; nil: connect anew
}

// shared is one server connection and how many states hold it.
type shared struct {
	conn pqConn
	refs int
}

// terminalLinks are the links of a shard's n terminals (or loader
// threads), on ep's Addresses as contracts.ShardPoolAddresses spreads them
// (terminal i on PoolAddress(shard, n, i, ·)), so that a phase's terminals
// spread evenly over the pool; with loadProgress, one more after them for
// a load's progress query.
func terminalLinks(ep contracts.Endpoint, shard, n int, loadProgress bool) []*link {
	addrs := contracts.ShardPoolAddresses(shard, n, len(Addresses(ep)), loadProgress)
	links := make([]*link, len(addrs))
	for i, a := range addrs {
		links[i] = &link{addr: a}
	}
	return links
}

type linkKey struct{}

// withLink is ctx whose connections (database/sql passes a connect's ctx
// to the connector) are l's.
func withLink(ctx context.Context, l *link) context.Context {
	return context.WithValue(ctx, linkKey{}, l)
}

func linkOf(ctx context.Context) *link {
	l, _ := ctx.Value(linkKey{}).(*link)
	return l
}

// open returns a handle on l's connection, connecting if there is none.
func (l *link) open(ctx context.Context, connect func(context.Context) (pqConn, error)) (driver.Conn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cur == nil {
		conn, err := connect(ctx)
		if err != nil {
			return nil, err
		}
		l.cur = &shared{conn: conn}
	}
	l.cur.refs++
	return &linkedConn{pqConn: l.cur.conn, link: l, sh: l.cur}, nil
}

// retire stops handing sh out: the next state to connect gets a new one.
func (l *link) retire(sh *shared) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cur == sh {
		l.cur = nil
	}
}

// linkedConn is one state's handle on its terminal's connection.
type linkedConn struct {
	pqConn
	link   *link
	sh     *shared
	closed bool
}

// Close lets go of the connection; the last handle closes it.
func (c *linkedConn) Close() error {
	l := c.link
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	c.sh.refs--
	if c.sh.refs > 0 {
		return nil
	}
	if l.cur == c.sh {
		l.cur = nil
	}
	return c.sh.conn.Close()
}

// Ping retires a connection that fails it. go-tpc pings before each
// transaction and connects anew when the ping fails; that state then gets
// a new connection, as do the terminal's other states when their pings
// fail on the old one.
func (c *linkedConn) Ping(ctx context.Context) error {
	err := c.pqConn.Ping(ctx)
	if err != nil {
		c.link.retire(c.sh)
	}
	return err
}

// The calls below retire a connection the driver found broken
// (driver.ErrBadConn): database/sql then connects again, and must get a
// new connection, not the broken one (the loader's inserts go through
// ExecContext, with no ping before them).

func (c *linkedConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	r, err := c.pqConn.ExecContext(ctx, query, args)
	c.retireIfBad(err)
	return r, err
}

func (c *linkedConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	r, err := c.pqConn.QueryContext(ctx, query, args)
	c.retireIfBad(err)
	return r, err
}

func (c *linkedConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	tx, err := c.pqConn.BeginTx(ctx, opts)
	c.retireIfBad(err)
	return tx, err
}

func (c *linkedConn) Prepare(query string) (driver.Stmt, error) {
	st, err := c.pqConn.Prepare(query)
	c.retireIfBad(err)
	return st, err
}

func (c *linkedConn) retireIfBad(err error) {
	if errors.Is(err, driver.ErrBadConn) {
		c.link.retire(c.sh)
	}
}
