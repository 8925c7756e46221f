package main

import (
	"context"
	"errors"
	"fmt"
	"time"

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

// agentTopics are what the driver agents publish, signed.
var agentTopics = map[contracts.Topic]bool{contracts.TopicBarrierReady: true, contracts.TopicInterval: true, contracts.TopicFinal: true}

// verifyAgent checks a driver agent's message's signature and returns its
// signer ("" for any other message). A bad or missing signature is
// permanent: no redelivery can mend it.
func verifyAgent(subject string, data []byte, header map[string][]string) (string, error) {
	p, err := contracts.ParseSubject(subject)
	if err != nil || !agentTopics[p.Topic] {
		return "", nil
	}
	signer, err := bus.VerifyMsg(subject, data, header)
	if err != nil {
		return "", bus.Permanent(fmt.Errorf("refused %s: %w", subject, err))
	}
	return signer, nil
}

// unboundAfter: a shard's message whose phase has no event stored yet waits
// (is redelivered) for the GO that names the shard's holder — the events
// and the results are read by two consumers, so the GO may come second —
// at most this long after it was stored; it is then taken as a message for
// a shard nobody held (its phase's events were lost), rather than lost.
const unboundAfter = 2 * time.Minute

// errHolderUnknown: the shard's GO may not be stored yet.
var errHolderUnknown = errors.New("the phase's GO, which names the shard's holder, is not stored yet; redelivering")

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

// checkHolder refuses a shard's interval or final that signer may not
// report: the shard is held by another run.
func checkHolder(ctx context.Context, tx pgx.Tx, r record, phase string, attempt, shard int) error {
	var agent, instance string
	err := tx.QueryRow(ctx, `SELECT agent, instance FROM shard_holders WHERE code = $1 AND phase = $2 AND attempt = $3 AND shard = $4`,
		r.head.Code, phase, attempt, shard).Scan(&agent, &instance)
	switch {
	case err == nil && (instance == "" || instance == r.signer):
		return nil
	case err == nil:
		return bus.Permanent(fmt.Errorf("refused %s: signed by run %s, but shard %d of %s attempt %d is held by agent %s (run %s)",
			r.subject, contracts.ShortKey(r.signer), shard, phase, attempt, agent, contracts.ShortKey(instance)))
	case !errors.Is(err, pgx.ErrNoRows):
		return err
	}
	var started bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM phases WHERE code = $1 AND phase = $2 AND attempt = $3)`,
		r.head.Code, phase, attempt).Scan(&started); err != nil {
		return err
	}
	if started || (!r.storedAt.IsZero() && time.Since(r.storedAt) > unboundAfter) {
		return nil // held by nobody: the phase has events, none of them a GO naming the shard
	}
	return errHolderUnknown
}
