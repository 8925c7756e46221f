package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/benchq/benchq/internal/stack"
)

var errNoExperiment = errors.New("no such experiment")

// experimentRow scans the one row query returns about experiment code
// (its $1) from the running stack's results database into dest, waiting at
// most timeout. It fails with errNoExperiment when there is no such row,
// with stack.Load's error when there is no stack to read (stack.ErrNotUp
// when none was started), and with one wrapping stack.ErrNotUp when its
// stack.json names no results database.
func experimentRow(ctx context.Context, st *State, timeout time.Duration, query, code string, dest ...any) error {
	s, err := stack.Load(st)
	if s == nil {
		return err
	}
	if s.DBURL == "" {
		return fmt.Errorf("%w: its stack.json names no results database", stack.ErrNotUp)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.DBURL)
	if err != nil {
		return fmt.Errorf("results database: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	err = conn.QueryRow(ctx, query, code).Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return errNoExperiment
	}
	if err != nil {
		return fmt.Errorf("results database: %w", err)
	}
	return nil
}
