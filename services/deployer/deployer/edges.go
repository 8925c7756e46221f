package deployer

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/bus"
	"github.com/benchq/benchq/services/deployer/backend"
)

// A phase's CPU seconds are the increase of its SUT's CPU counter between
// the phase's start and end instants. Prometheus scrapes the counter only
// every scrape interval (1 s), so the collector would have to estimate its
// value at each edge from the scrapes around it — on a 2 s phase, a
// quarter of the figure. The deployer, which owns the counters, reads them
// at the edges instead and publishes the reads (contracts.SUTCPU); the
// collector adds them to the series it pulls (services/collector,
// edgeSamples).
//
// At the start the instant is known ahead: phase.started names the GO
// instant, GoLead before it. The counters are read just before and just
// after it (the SUT is idle then: the drivers wait for GO). At the end the
// instant (the phase's last operation) is past when phase.done arrives, so
// the counters are read at once and again after endSpacing: the rate
// between the two, the SUT's idle rate, carries the first read back to the
// end instant (reduce.Increase's estimate from the interval after an edge).
const (
	startSpacing = 2 * time.Millisecond
	endSpacing   = 200 * time.Millisecond
)

// watchEdges reads r's SUTs' CPU at every phase edge until ctx ends.
func (d *Deployer) watchEdges(ctx context.Context, r backend.SUTCPUReader) error {
	events := make(chan *contracts.PhaseEvent, 64)
	var subs []*nats.Subscription
	defer func() {
		for _, s := range subs {
			_ = s.Unsubscribe()
		}
	}()
	for _, t := range []contracts.Topic{contracts.TopicPhaseStarted, contracts.TopicPhaseDone, contracts.TopicPhaseFailed} {
		s, err := d.bus.NC.Subscribe(t.All(), func(m *nats.Msg) {
			msg, err := bus.DecodeSubject(m.Subject, m.Data)
			if e, ok := msg.(*contracts.PhaseEvent); ok && err == nil {
				select {
				case events <- e:
				default: // a burst of phases: this edge is estimated from the scrapes
				}
			}
		})
		if err != nil {
			return fmt.Errorf("subscribe %s: %w", t.All(), err)
		}
		subs = append(subs, s)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case e := <-events:
			go d.readEdge(ctx, r, e)
		}
	}
}

// readEdge reads the counters of e's SUT at e's edge and publishes them;
// a SUT the backend does not monitor is skipped.
func (d *Deployer) readEdge(ctx context.Context, r backend.SUTCPUReader, e *contracts.PhaseEvent) {
	edge, at := contracts.EdgeEnd, e.EndedAt
	if e.Status == contracts.PhaseStarted {
		edge, at = contracts.EdgeStart, e.StartedAt
	}
	if at == nil {
		return
	}
	read := func() (contracts.CPUSample, bool) {
		cpu, ok := r.SUTCPU(e.Code, e.Configuration)
		return contracts.CPUSample{At: time.Now().UTC(), CPU: cpu}, ok
	}
	wait := func(until time.Time) bool {
		t := time.NewTimer(time.Until(until))
		defer t.Stop()
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			return true
		}
	}
	var samples []contracts.CPUSample
	if edge == contracts.EdgeStart {
		if !wait(at.Add(-startSpacing)) {
			return
		}
	}
	first, ok := read()
	if !ok {
		return
	}
	next := first.At.Add(endSpacing)
	if edge == contracts.EdgeStart {
		next = at.Add(startSpacing)
	}
	samples = append(samples, first)
	if !wait(next) {
		return
	}
	if second, ok := read(); ok {
		samples = append(samples, second)
	}
	msg := &contracts.SUTCPU{
		Envelope:      contracts.NewEnvelope(e.Code, contracts.SUTCPUID(e.Code, e.Phase, max(e.Attempt, 1), edge), samples[0].At),
		Configuration: e.Configuration, Phase: e.Phase, Attempt: max(e.Attempt, 1), Edge: edge, Samples: samples,
	}
	if err := d.bus.Publish(ctx, contracts.TopicSUTCPU.For(e.Code), msg); err != nil {
		d.log.Warn("the SUT's CPU at a phase edge not published: the collector estimates it from the scrapes", "code", e.Code, "phase", e.Phase, "edge", edge, "err", err)
	}
}
