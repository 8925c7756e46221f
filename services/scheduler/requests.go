package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/bus"
	"github.com/benchq/benchq/internal/plan"
)

// requestBatch is how many waiting requests the scheduler takes at once.
// A batch is planned, published and stored together (commit), so a queue
// of requests costs a few round trips to NATS per batch instead of several
// per request (docs/bench.md, bench-intake).
const requestBatch = 256

// intaken is one request of a batch on its way: what it publishes (its
// planned event and what the plan starts with, or its rejection) and, when
// accepted, the state to store.
type intaken struct {
	msg   int // its index in the batch
	code  string
	out   []Out
	enc   [][]byte // enc[k] is out[k].Msg's JSON when oversize encoded it
	state *State   // nil: a rejection
	data  []byte
	log   *slog.Logger
}

// handleRequests handles a batch of the requests stream: experiment
// requests and stops, in their order. A request whose outputs or state
// could not be written gets an error (redelivered); the others are acked.
func (s *Scheduler) handleRequests(ctx context.Context, msgs []jetstream.Msg) []error {
	stop := bus.KeepAliveAll(msgs, time.Second)
	defer stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	errs := make([]error, len(msgs))
	var batch []*intaken
	for i, m := range msgs {
		s.metrics.handled(m.Subject())
		switch m.Subject() {
		case contracts.SubjStop:
			// A stop may name an experiment planned earlier in this
			// batch: those are stored first.
			s.commit(ctx, batch, errs)
			batch = nil
			errs[i] = s.handleStop(ctx, m)
			continue
		case contracts.SubjRequest:
		default:
			// The consumer reads the stream's two subjects only
			// (bus.Consume); a message under another one was stored by
			// a push consumer's delivery, not published as a request
			// (contracts.StreamSubjects). It is dropped, never planned.
			s.log.Warn("message on the requests stream dropped: not a request nor a stop", "subject", m.Subject())
			continue
		}
		in, err := s.intake(ctx, m)
		if err != nil {
			errs[i] = err
			continue
		}
		if in != nil {
			in.msg = i
			batch = append(batch, in)
		}
	}
	s.commit(ctx, batch, errs)
	return errs
}

// intake validates a request and plans its experiment, or rejects it. It
// never fails permanently: whatever arrives gets an answer. nil: a
// redelivery of a request already planned. Whether a code is taken is
// answered from memory (states.requestOf), or from the bucket for a code in
// doubt (recheck), before anything is published; commit's write to the
// bucket still refuses a code that exists.
func (s *Scheduler) intake(ctx context.Context, m jetstream.Msg) (*intaken, error) {
	meta, err := m.Metadata()
	if err != nil {
		return nil, err
	}
	var head struct {
		ID   string `json:"id"`
		Code string `json:"code"`
	}
	_ = json.Unmarshal(m.Data(), &head)
	if head.ID == "" {
		head.ID = contracts.RequestIDFallback(meta.Sequence.Stream)
	}
	code := head.Code
	if head.Code == "" || !codePattern.MatchString(head.Code) {
		// Derived from the stream's timestamp and sequence, so a redelivered
		// request gets the same code (bexhoma's codes are unix seconds too).
		code = contracts.Code(meta.Timestamp, "")
		if err := s.recheck(ctx, code); err != nil {
			return nil, err
		}
		if request, known := s.states.requestOf(code); known && request != head.ID {
			code = contracts.Code(meta.Timestamp, strconv.FormatUint(meta.Sequence.Stream, 10))
		}
	}
	if err := s.recheck(ctx, code); err != nil {
		return nil, err
	}
	in := &intaken{code: code, log: s.log.With("code", code, "request", head.ID)}
	if request, known := s.states.requestOf(code); known {
		if request == head.ID {
			return nil, nil // already planned: a redelivery
		}
		in.out = s.rejection(code, head.ID, []contracts.FieldError{{Field: "code", Message: fmt.Sprintf("experiment %s already exists; choose another code or leave it out", code)}}, in.log)
		return in, nil
	}
	_, p, errs := plan.FromRequest(m.Data(), code)
	if len(errs) > 0 {
		in.out = s.rejection(code, head.ID, errs, in.log)
		return in, nil
	}
	state, out, err := Start(p, m.Data(), s.now(), s.busyExcept(code))
	if err != nil {
		return nil, err
	}
	state.RequestID, state.SeedGoDelayMS = head.ID, s.goDelayMS
	data, err := json.Marshal(state)
	if err != nil {
		return nil, err
	}
	enc, tooBig := s.oversize(data, out)
	if tooBig != "" {
		// No publish of it could ever succeed: retrying would loop on it.
		in.out = s.rejection(code, head.ID, []contracts.FieldError{{Field: "(request)", Message: tooBig}}, in.log)
		return in, nil
	}
	in.state, in.out, in.enc, in.data = state, out, enc, data
	// Known at once, so that the batch's next requests count its SUTs and
	// do not take its code; commit forgets it if it is not stored.
	s.states.remember(state, data, 0)
	return in, nil
}

// headroom is what a message's headers and envelope may add to its body.
const headroom = 4 << 10

// oversize says why an accepted request cannot be carried out: its state
// or one of its first messages (the planned event holds the plan) is
// larger than NATS carries; "" when all fit. enc[k] is out[k].Msg's JSON
// (nil where it could not be encoded), which the publish sends as it is.
func (s *Scheduler) oversize(state []byte, out []Out) (enc [][]byte, tooBig string) {
	largest := s.bus.NC.MaxPayload() - headroom
	size := int64(len(state))
	enc = make([][]byte, len(out))
	for k, o := range out {
		if b, err := json.Marshal(o.Msg); err == nil {
			enc[k] = b
			size = max(size, int64(len(b)))
		}
	}
	if size <= largest {
		return enc, ""
	}
	return nil, fmt.Sprintf("its plan takes %d bytes, more than the %d NATS carries in one message (max_payload): make the grid smaller (fewer values per list, clients or repetitions) or split it into several experiments", size, largest)
}

// Bounds of a rejection: it is one message, and its reason is logged.
const (
	maxRejectionErrors = 20
	maxErrorMessage    = 500 // bytes of one error's message
)

func (s *Scheduler) rejection(code, reqID string, errs []contracts.FieldError, log *slog.Logger) []Out {
	errs = boundErrors(errs)
	msg := &contracts.Rejected{Envelope: contracts.NewEnvelope(code, contracts.RejectedID(reqID), s.now()), RequestID: reqID, Reason: plan.Reason(errs), Errors: errs}
	log.Info("request rejected", "reason", msg.Reason)
	return []Out{{Subject: contracts.TopicRejected.For(code), Msg: msg}}
}

// commit does for a batch what step does for one event, in its order:
// publish the outputs, then store the states; the caller acks. Outputs go
// out in waves (every request's first, then every request's second, ...),
// so each request's own outputs keep their order, and a batch costs a round
// trip per wave and one for all its states.
func (s *Scheduler) commit(ctx context.Context, batch []*intaken, errs []error) {
	for k := 0; ; k++ {
		var pubs []bus.Pub
		var who []*intaken
		for _, in := range batch {
			if errs[in.msg] == nil && k < len(in.out) {
				p := bus.Pub{Subject: in.out[k].Subject, Msg: in.out[k].Msg}
				if k < len(in.enc) {
					p.Data = in.enc[k]
				}
				pubs = append(pubs, p)
				who = append(who, in)
			}
		}
		if len(pubs) == 0 {
			break
		}
		for i, err := range s.bus.PublishAll(ctx, pubs) {
			if err != nil {
				errs[who[i].msg] = err
			}
		}
	}
	var keys []string
	var values [][]byte
	var who []*intaken
	for _, in := range batch {
		switch {
		case in.state == nil:
		case errs[in.msg] != nil:
			s.states.forget(in.code)
		default:
			keys, values, who = append(keys, in.code), append(values, in.data), append(who, in)
		}
	}
	if len(keys) == 0 {
		return
	}
	revs, cerrs := s.bus.CreateAll(ctx, contracts.KVExperiments, keys, values)
	for i, in := range who {
		rev, err := revs[i], cerrs[i]
		if err != nil {
			// Create tells a live key from a deleted one, and a write that
			// was stored from one refused (its acknowledgement lost).
			rev, err = s.kv.Create(ctx, in.code, in.data)
		}
		if err != nil {
			s.states.forget(in.code) // the redelivery asks the bucket (recheck)
			if !errors.Is(err, jetstream.ErrKeyExists) {
				errs[in.msg] = fmt.Errorf("store state of %s: %w", in.code, err)
				continue
			}
			// Stored already: by this request's first create, whose
			// acknowledgement came too late, or by someone else.
			e, gerr := s.kv.Get(ctx, in.code)
			var theirs State
			if gerr != nil || json.Unmarshal(e.Value(), &theirs) != nil || theirs.RequestID != in.state.RequestID {
				errs[in.msg] = fmt.Errorf("store state of %s: %w", in.code, err)
				continue
			}
			in.state, in.data, rev = &theirs, e.Value(), e.Revision()
		}
		s.track(in.state, in.data, rev)
		in.log.Info("experiment planned", "configurations", len(in.state.Plan.Configurations))
	}
}

// boundErrors keeps a rejection within one message whatever the request
// held: the first maxRejectionErrors errors, each message cut to
// maxErrorMessage bytes (a request of a megabyte of bad values made a
// rejection larger than NATS carries, retried forever).
func boundErrors(errs []contracts.FieldError) []contracts.FieldError {
	out := make([]contracts.FieldError, 0, min(len(errs), maxRejectionErrors+1))
	for i, e := range errs {
		if i == maxRejectionErrors {
			out = append(out, contracts.FieldError{Field: "(request)", Message: fmt.Sprintf("%d more problems not listed", len(errs)-i)})
			break
		}
		if len(e.Field) > maxErrorMessage {
			e.Field = strings.ToValidUTF8(e.Field[:maxErrorMessage], "") + "…"
		}
		if len(e.Message) > maxErrorMessage {
			e.Message = strings.ToValidUTF8(e.Message[:maxErrorMessage], "") + "… (cut)"
		}
		out = append(out, e)
	}
	return out
}
