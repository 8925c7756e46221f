package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/bus"
)

// Who may report for a shard. The driver agents share one NATS key, so a
// message on a shard's subject may come from any agent; each run of an
// agent signs its own (contracts/sign.go), and the scheduler names the run
// holding each shard in the phase's GO. The collector stores a shard's
// intervals and final only when that run signed them: another agent's —
// forged in the holder's name, or its own for a shard it does not hold —
// is refused and kept out of every table. A final for a shard nobody held
// (it failed before its phase's barrier) counts whoever signed it.

// verifyAgent checks a driver agent's message's signature and returns its
// signer ("" for any other message). A bad or missing signature is
// permanent: no redelivery can mend it.
func verifyAgent(subject string, data []byte, header map[string][]string) (string, error) {
	p, err := contracts.ParseSubject(subject)
	if err != nil || !contracts.Signed(p.Topic) {
		return "", nil
	}
	signer, err := bus.VerifyMsg(subject, data, header)
	if err != nil {
		return "", bus.Permanent(fmt.Errorf("refused %s: %w", subject, err))
	}
	return signer, nil
}

// errHolderUnknown: the shard's GO may not be stored yet. The events and the
// results are read by two consumers, so a GO may be stored after the
// results it names the holder of. A shard's message with no holder stored
// waits (is redelivered) until the collector's events consumer has stored
// every event published so far; if no holder is stored then, no GO named
// one, and the message counts as one for a shard nobody held. A phase that
// ended before it started (no GO) needs no wait.
var errHolderUnknown = errors.New("the phase's GO, which names the shard's holder, is not stored yet; redelivering")

// maxHolderWaits bounds the wait (deliveries, about a second apart): an
// events consumer that cannot store the phase's events for that long is
// broken, and the message is refused — logged, kept in the stream — rather
// than counted without knowing who held the shard, or left to fill the
// results consumer's pending acks.
const maxHolderWaits = 120

// writeHolders stores who holds each shard of a phase's attempt (its GO).
func writeHolders(ctx context.Context, tx pgx.Tx, m *contracts.BarrierGo) error {
	for k, agent := range m.Agents {
		instance := ""
		if k < len(m.Instances) {
			instance = m.Instances[k]
		}
		if _, err := tx.Exec(ctx, `INSERT INTO shard_holders (code, phase, attempt, shard, agent, instance) VALUES ($1, $2, $3, $4, $5, $6)
			ON CONFLICT DO NOTHING`, m.Code, m.Phase, m.Attempt, k+1, agent, instance); err != nil {
			return fmt.Errorf("holder of shard %d of %s: %w", k+1, m.Phase, err)
		}
	}
	return nil
}

// holder is a shard's stored holder (agent and instance nil: none), and
// whether its phase attempt ended without starting (no GO).
func holder(ctx context.Context, tx pgx.Tx, code, phase string, attempt, shard int) (agent, instance *string, neverStarted bool, err error) {
	err = tx.QueryRow(ctx, `SELECT h.agent, h.instance,
			EXISTS (SELECT 1 FROM phases WHERE code = $1 AND phase = $2 AND attempt = $3 AND started_at IS NULL AND status <> $5)
		FROM (SELECT 1) one
		LEFT JOIN shard_holders h ON h.code = $1 AND h.phase = $2 AND h.attempt = $3 AND h.shard = $4`,
		code, phase, attempt, shard, contracts.PhaseStarted).Scan(&agent, &instance, &neverStarted)
	return agent, instance, neverStarted, err
}

// checkHolder refuses a shard's interval or final that signer may not
// report: the shard is held by another run.
func checkHolder(ctx context.Context, tx pgx.Tx, r record, phase string, attempt, shard int) error {
	agent, instance, neverStarted, err := holder(ctx, tx, r.head.Code, phase, attempt, shard)
	if err != nil {
		return err
	}
	if instance == nil && !neverStarted && r.eventsCaughtUp != nil {
		if !r.eventsCaughtUp(ctx) {
			if r.delivered >= maxHolderWaits {
				return bus.Permanent(fmt.Errorf("refused %s: no holder of shard %d of %s attempt %d is known after %d tries, and the events are not all stored (the message stays in the stream)",
					r.subject, shard, phase, attempt, r.delivered))
			}
			return errHolderUnknown
		}
		// Every event acked so far is committed, its GO too: read again.
		if agent, instance, _, err = holder(ctx, tx, r.head.Code, phase, attempt, shard); err != nil {
			return err
		}
	}
	switch {
	case instance == nil, *instance == "", *instance == r.signer:
		return nil // held by nobody (no GO named a holder), or by its signer
	}
	return bus.Permanent(fmt.Errorf("refused %s: signed by run %s, but shard %d of %s attempt %d is held by agent %s (run %s)",
		r.subject, contracts.ShortKey(r.signer), shard, phase, attempt, *agent, contracts.ShortKey(*instance)))
}
