package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/bus"
	"github.com/benchq/benchq/internal/plan"
)

// record is one decoded message, ready to be written.
type record struct {
	subject string
	head    contracts.Envelope
	raw     []byte
	msg     any
	// signer is the driver agent run that signed the message (holders.go);
	// "" for every other message.
	signer string
	// eventsCaughtUp reports whether the collector's events consumer has
	// stored every event so far (holders.go); nil: it has.
	eventsCaughtUp func(context.Context) bool
	// delivered is how often JetStream delivered the message.
	delivered uint64
}

// decode validates a message against the schema its subject implies.
// PostgreSQL text and jsonb cannot hold NUL characters, which a driver's
// output may contain: they are replaced by U+FFFD before anything is stored.
func decode(subject string, data []byte) (record, error) {
	data = replaceNULEscapes(data)
	msg, err := bus.DecodeSubject(subject, data)
	if err != nil {
		return record{subject: subject, raw: data}, err
	}
	return record{subject: subject, raw: data, msg: msg, head: msg.Head()}, nil
}

// replaceNULEscapes rewrites every JSON escape \u0000 as \ufffd. It walks
// the escapes pair by pair, so text that spells out a backslash followed by
// "u0000" (escaped as \\u0000) is left as it is.
func replaceNULEscapes(data []byte) []byte {
	if !bytes.Contains(data, []byte(`\u0000`)) {
		return data
	}
	out := make([]byte, 0, len(data))
	for i := 0; i < len(data); i++ {
		if data[i] != '\\' || i+1 >= len(data) {
			out = append(out, data[i])
			continue
		}
		if bytes.HasPrefix(data[i:], []byte(`\u0000`)) {
			out = append(out, `\ufffd`...)
			i += len(`\u0000`) - 1
			continue
		}
		out = append(out, data[i], data[i+1]) // any other escape, \\ included
		i++
	}
	return out
}

// write stores one message idempotently: the raw message keyed by its id,
// then its projection. A message already stored is skipped entirely, so a
// redelivery never changes or duplicates a row.
func write(ctx context.Context, tx pgx.Tx, r record) error {
	if r.signer != "" {
		// A shard's interval or final counts only from the run holding it.
		var err error
		switch m := r.msg.(type) {
		case *contracts.Final:
			err = checkHolder(ctx, tx, r, m.Phase, m.Attempt, m.Shard)
		case *contracts.Interval:
			err = checkHolder(ctx, tx, r, m.Phase, m.Attempt, m.Shard)
		}
		if err != nil {
			return err
		}
	}
	tag, err := tx.Exec(ctx, `INSERT INTO messages (id, code, subject, ts, payload) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (id) DO NOTHING`,
		r.head.ID, r.head.Code, r.subject, r.head.TS, r.raw)
	if err != nil {
		return fmt.Errorf("store message %s: %w", r.head.ID, err)
	}
	if tag.RowsAffected() == 0 {
		return nil
	}
	switch m := r.msg.(type) {
	case *contracts.BarrierGo:
		err = writeHolders(ctx, tx, m)
	case *contracts.Planned:
		return writePlanned(ctx, tx, m)
	case *contracts.SUTReady:
		info, _ := json.Marshal(connectionFacts(m))
		redacted := m.Endpoint
		redacted.Password = "" // results are shared; credentials are not
		ep, _ := json.Marshal(redacted)
		_, err = tx.Exec(ctx, `UPDATE configurations SET endpoint = $3, info = $4, backend = $5, ready_at = $6, ready_after_ms = $7 WHERE code = $1 AND name = $2`,
			m.Code, m.Configuration, ep, info, m.Backend, m.TS, m.ReadyAfterMS)
	case *contracts.SUTFailed:
		_, err = tx.Exec(ctx, `UPDATE configurations SET failure = $3 WHERE code = $1 AND name = $2`, m.Code, m.Configuration, m.Reason)
	case *contracts.SUTRemoved:
		_, err = tx.Exec(ctx, `UPDATE configurations SET removed_at = $3 WHERE code = $1 AND name = $2`, m.Code, m.Configuration, m.TS)
	case *contracts.PhaseEvent:
		// A phase only moves forward: a late "started" never undoes "done".
		_, err = tx.Exec(ctx, `INSERT INTO phases (code, phase, attempt, configuration, kind, status, shards, started_at, ended_at, reason)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, NULLIF($10, ''))
			ON CONFLICT (code, phase, attempt) DO UPDATE SET
			  status = CASE WHEN phases.status = $11 THEN EXCLUDED.status ELSE phases.status END,
			  started_at = COALESCE(phases.started_at, EXCLUDED.started_at),
			  ended_at = COALESCE(EXCLUDED.ended_at, phases.ended_at),
			  reason = COALESCE(EXCLUDED.reason, phases.reason)`,
			m.Code, m.Phase, m.Attempt, m.Configuration, m.Kind, m.Status, m.Shards, m.StartedAt, m.EndedAt, m.Reason, contracts.PhaseStarted)
		if err == nil && m.Saturation != nil {
			err = writeStep(ctx, tx, m)
		}
	case *contracts.Final:
		err = writeFinal(ctx, tx, m)
	case *contracts.Interval:
		perOp, _ := json.Marshal(m.PerOp)
		_, err = tx.Exec(ctx, `INSERT INTO intervals (code, phase, shard, attempt, elapsed_s, at, operations, ops_per_sec, per_op)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING`,
			m.Code, m.Phase, m.Shard, m.Attempt, m.ElapsedS, m.At, m.Operations, m.OpsPerSec, perOp)
	case *contracts.ExperimentEnd:
		_, err = tx.Exec(ctx, `UPDATE experiments SET status = $2, reason = NULLIF($3, ''), ended_at = $4 WHERE code = $1`,
			m.Code, m.Status, m.Reason, m.EndedAt)
	}
	if err != nil {
		return fmt.Errorf("project %s: %w", r.subject, err)
	}
	return nil
}

func writePlanned(ctx context.Context, tx pgx.Tx, m *contracts.Planned) error {
	var p plan.Plan
	if err := json.Unmarshal(m.Plan, &p); err != nil {
		return bus.Permanent(fmt.Errorf("plan of %s: %w", m.Code, err))
	}
	if _, err := tx.Exec(ctx, `INSERT INTO experiments (code, request, plan, planned_at, started_at) VALUES ($1, $2, $3, $4, $4) ON CONFLICT (code) DO NOTHING`,
		m.Code, []byte(m.Request), []byte(m.Plan), m.TS); err != nil {
		return fmt.Errorf("experiment %s: %w", m.Code, err)
	}
	for _, c := range p.Configurations {
		if _, err := tx.Exec(ctx, `INSERT INTO configurations (code, name, dbms, experiment_run) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`,
			m.Code, c.Name, c.DBMS, c.ExperimentRun); err != nil {
			return fmt.Errorf("configuration %s: %w", c.Name, err)
		}
	}
	return nil
}

func writeFinal(ctx context.Context, tx pgx.Tx, m *contracts.Final) error {
	runtime, throughput := figures(m)
	tag, err := tx.Exec(ctx, `INSERT INTO shard_results (code, phase, shard, attempt, configuration, kind, agent, status, error, threads, target,
			started_at, ended_at, runtime_ms, throughput, message_id, stdout, first_op_at, last_op_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, NULLIF($9, ''), $10, $11, $12, $13, $14, $15, $16, $17, $18, $19) ON CONFLICT DO NOTHING`,
		m.Code, m.Phase, m.Shard, m.Attempt, m.Configuration, m.Kind, m.Agent, m.Status, m.Error, m.Threads, m.Target,
		m.StartedAt, m.EndedAt, runtime, throughput, m.ID, m.Stdout, m.FirstOpAt, m.LastOpAt)
	if err != nil || tag.RowsAffected() == 0 {
		return err
	}
	for _, op := range m.Operations {
		rc, _ := json.Marshal(op.ReturnCodes)
		if op.ReturnCodes == nil {
			rc = []byte("{}")
		}
		if _, err := tx.Exec(ctx, `INSERT INTO shard_operations (code, phase, shard, attempt, operation, count, avg_us, min_us, max_us,
				p50_us, p95_us, p99_us, p999_us, return_codes, histogram)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, NULLIF($15, '')) ON CONFLICT DO NOTHING`,
			append(append([]any{m.Code, m.Phase, m.Shard, m.Attempt, op.Name, op.Count}, latencies(op)...), rc, op.Histogram)...); err != nil {
			return fmt.Errorf("operation %s of %s shard %d: %w", op.Name, m.Phase, m.Shard, err)
		}
	}
	return writeIngest(ctx, tx, m)
}

// figures are a shard's runtime and throughput as stored: both NULL, not
// 0, when its final has no runtime (omitted: the driver printed no summary,
// its shard stopped, killed or failed before it), for then it measured no
// rate either.
func figures(m *contracts.Final) (runtime, throughput any) {
	if m.RuntimeMS == 0 {
		return nil, nil
	}
	return m.RuntimeMS, m.Throughput
}

// latencies are an operation's avg, min, max, p50, p95, p99 and p999 (µs)
// as stored: NULL, not 0, when it was not timed. A final leaves them out
// (omitempty) for an operation without latencies, such as a TPC-C loader's
// rows per table; one timed by a driver ships its histogram.
func latencies(op contracts.OpResult) []any {
	l := []float64{op.AvgUS, op.MinUS, op.MaxUS, op.P50US, op.P95US, op.P99US, op.P999US}
	if op.Histogram == "" && !slices.ContainsFunc(l, func(v float64) bool { return v != 0 }) {
		return make([]any, len(l)) // 7 NULLs
	}
	return []any{l[0], l[1], l[2], l[3], l[4], l[5], l[6]}
}

// writeIngest stores a generator's readings of the time-series database's
// own counter (ingest_readings, ingest_drains).
func writeIngest(ctx context.Context, tx pgx.Tx, m *contracts.Final) error {
	in := m.Ingest
	if in == nil {
		return nil
	}
	for _, r := range in.Readings {
		if _, err := tx.Exec(ctx, `INSERT INTO ingest_readings (code, phase, attempt, shard, at, total, after_end, counter)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING`,
			m.Code, m.Phase, m.Attempt, m.Shard, r.At, r.Total, r.At.After(in.EndedAt), in.Counter); err != nil {
			return fmt.Errorf("ingest of %s shard %d: %w", m.Phase, m.Shard, err)
		}
	}
	_, err := tx.Exec(ctx, `INSERT INTO ingest_drains (code, phase, attempt, ended_at, drained) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`,
		m.Code, m.Phase, m.Attempt, in.EndedAt, in.Drained)
	return err
}

// connectionFacts are what the summary's Connections section lists: the
// info facts and, as before the backend travelled typed, the backend.
func connectionFacts(m *contracts.SUTReady) map[string]any {
	if m.Backend == "" {
		return m.Info
	}
	facts := maps.Clone(m.Info)
	if facts == nil {
		facts = map[string]any{}
	}
	facts["backend"] = m.Backend
	return facts
}

// writeStep stores the judgement of a saturation step (saturation_steps).
func writeStep(ctx context.Context, tx pgx.Tx, m *contracts.PhaseEvent) error {
	st := m.Saturation
	var knee []byte
	if st.Knee != nil {
		var err error
		if knee, err = json.Marshal(st.Knee); err != nil {
			return err
		}
	}
	_, err := tx.Exec(ctx, `INSERT INTO saturation_steps (code, phase, attempt, configuration, step, role, offered, shards, threads,
			steady_from, steady_to, seconds, achieved, goodput, error_share, p95_ms, p99_ms, cv, worst_second, busy, verdict, why, next, knee)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24)
		ON CONFLICT (code, phase, attempt) DO NOTHING`,
		m.Code, m.Phase, m.Attempt, m.Configuration, st.Step, st.Role, st.Offered, st.Shards, st.Threads,
		st.SteadyFrom, st.SteadyTo, st.Seconds, st.Achieved, st.Goodput, st.ErrorShare, st.P95MS, st.P99MS, st.CV, st.WorstSecond, st.Busy,
		st.Verdict, st.Why, st.Next, knee)
	return err
}
