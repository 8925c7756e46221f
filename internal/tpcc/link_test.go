package tpcc

import (
	"context"
	"database/sql/driver"
	"errors"
	"testing"

	"github.com/benchq/benchq/contracts"
)

// fakeConn is a server connection that fails as told and counts its
// closes.
type fakeConn struct {
	pqConn // nil: only the methods below are called
	id     int
	bad    bool
	closed int
}

func (c *fakeConn) ExecContext(context.Context, string, []driver.NamedValue) (driver.Result, error) {
	if c.bad {
		return nil, driver.ErrBadConn
	}
	return driver.RowsAffected(1), nil
}

func (c *fakeConn) Ping(context.Context) error {
	if c.bad {
		return driver.ErrBadConn
	}
	return nil
}

func (c *fakeConn) Close() error { c.closed++; return nil }

// A terminal's states share one connection until the last lets go; a
// connection the driver finds broken (in a ping or a statement) is not
// handed out again, and is closed once, by its last holder.
func TestLinkSharesOneConnectionAndRetiresABrokenOne(t *testing.T) {
	ctx := context.Background()
	var made []*fakeConn
	connect := func(context.Context) (pqConn, error) {
		c := &fakeConn{id: len(made)}
		made = append(made, c)
		return c, nil
	}
	l := &link{}
	a, _ := l.open(ctx, connect)
	b, _ := l.open(ctx, connect)
	if len(made) != 1 {
		t.Fatalf("two states made %d connections, want 1", len(made))
	}
	if err := a.Close(); err != nil || made[0].closed != 0 {
		t.Fatalf("first of two let go: closed %d times (%v), want open", made[0].closed, err)
	}
	made[0].bad = true
	if _, err := b.(driver.ExecerContext).ExecContext(ctx, "INSERT", nil); !errors.Is(err, driver.ErrBadConn) {
		t.Fatalf("exec on a broken connection: %v", err)
	}
	c, _ := l.open(ctx, connect)
	if len(made) != 2 {
		t.Errorf("after ErrBadConn from an exec: %d connections made, want a new one", len(made))
	}
	_ = b.Close()
	if made[0].closed != 1 {
		t.Errorf("the broken connection closed %d times, want once by its last holder", made[0].closed)
	}
	made[1].bad = true
	if err := c.(driver.Pinger).Ping(ctx); err == nil {
		t.Fatal("ping on a broken connection passed")
	}
	if d, _ := l.open(ctx, connect); len(made) != 3 || d.(*linkedConn).sh.conn != made[2] {
		t.Errorf("after a failed ping: %d connections made, want a new one", len(made))
	}
}

// A link's connection is shared by its terminal's states only while
// database/sql connects whenever a state asks: with a bound on open
// connections, a state could wait for one held by another terminal's
// link. openDB sets no limit on open connections. (That it keeps none
// idle, SetMaxIdleConns(0), database/sql's Stats cannot show; without it
// TestLoadThenRun, against PostgreSQL, hangs until go test's timeout.)
func TestOpenDBSetsNoLimitOnOpenConnections(t *testing.T) {
	db, _, err := openDB(contracts.Endpoint{Host: "127.0.0.1", Port: 1, Database: "tpcc"}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if n := db.Stats().MaxOpenConnections; n != 0 {
		t.Errorf("openDB: at most %d open connections, want no limit", n)
	}
}
