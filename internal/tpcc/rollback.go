package tpcc

import (
	"context"
	"database/sql/driver"
)

// TPC-C's NewOrder rolls back 1 % of its transactions on purpose (an
// unused item number, clause 2.4.2.3); Benchbase counts them as aborted
// (USER_ABORTED), not completed. go-tpc rolls such a transaction back and
// returns no error, so the engine watches the driver: a request whose
// transaction ended in a rollback while the workload reported success is
// a user abort.

// rollbackWatch is carried by a request's context down to the driver.
type rollbackWatch struct{ rolledBack bool }

type rollbackKey struct{}

// watchRollback returns ctx carrying a fresh watch, and the watch.
func watchRollback(ctx context.Context) (context.Context, *rollbackWatch) {
	w := &rollbackWatch{}
	return context.WithValue(ctx, rollbackKey{}, w), w
}

type rollbackConn struct{ pqConn }

func (c rollbackConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	tx, err := c.pqConn.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	w, _ := ctx.Value(rollbackKey{}).(*rollbackWatch)
	return rollbackTx{Tx: tx, w: w}, nil
}

type rollbackTx struct {
	driver.Tx
	w *rollbackWatch
}

// Rollback is only reached for a transaction not committed: database/sql
// does not pass a Rollback after Commit on to the driver.
func (t rollbackTx) Rollback() error {
	if t.w != nil {
		t.w.rolledBack = true
	}
	return t.Tx.Rollback()
}
