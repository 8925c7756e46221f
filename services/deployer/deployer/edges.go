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

// A phase's figures come from counters Prometheus scrapes only every
// scrape interval (1 s): the collector would have to estimate each
// counter's value at the phase's start and end instants from the scrapes
// around them — on a 2 s phase, a quarter of the figure each side — and a
// new exporter's first seconds are not scraped at all (Prometheus reads new
// target files only every few seconds). The deployer, which owns the CPU
// counters and the exporters, reads them at the edges instead and
// publishes the reads (contracts.SUTEdge); the collector adds them to the
// series it pulls (services/collector, pull_edges.go).
//
// At the start the instant is known ahead: phase.started names the GO
// instant, the scheduler's GO lead before it (at least ExporterGoLead with
// application metrics), and the SUT is idle until then (the drivers wait
// for it). The exporters are read before it, at once and exporterRead
// ahead, each only while at least exporterRead is left (a read takes tens
// of milliseconds and must end before the instant; two reads give the idle
// rate that carries the later one to the instant); the
// CPU counters just before and just after it; then the exporters three
// times more in the phase's first seconds (inPhaseReads).
// At the end the instant (the phase's last operation) is past when
// phase.done arrives, so everything is read at once and again after
// endSpacing: the rate between the two, the SUT's idle rate, carries the
// first read back to the end instant (reduce.Increase's estimate from the
// interval after an edge).
const (
	exporterRead = 50 * time.Millisecond
	startSpacing = 2 * time.Millisecond
	endSpacing   = 200 * time.Millisecond
)

// inPhaseReads are the exporters' reads after GO, published with the
// start's (before the collector pulls any phase: it waits 5 s after the
// end).
var inPhaseReads = []time.Duration{500 * time.Millisecond, 1500 * time.Millisecond, 2500 * time.Millisecond}

// watchEdges reads r's SUTs at every phase edge until ctx ends.
func (d *Deployer) watchEdges(ctx context.Context, r backend.SUTReader) error {
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

// readEdge reads e's SUT at e's edge and publishes the reads; a SUT the
// backend does not monitor is skipped.
func (d *Deployer) readEdge(ctx context.Context, r backend.SUTReader, e *contracts.PhaseEvent) {
	edge, at := contracts.EdgeEnd, e.EndedAt
	if e.Status == contracts.PhaseStarted {
		edge, at = contracts.EdgeStart, e.StartedAt
	}
	if at == nil {
		return
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
	read := func(cpu, exporters bool) (contracts.EdgeRead, bool) {
		out := contracts.EdgeRead{At: time.Now().UTC()}
		if cpu {
			out.CPU, _ = r.ReadCPU(e.Code, e.Configuration)
		}
		if exporters {
			out.Exporters, _ = r.ReadExporters(ctx, e.Code, e.Configuration)
		}
		return out, len(out.CPU) > 0 || len(out.Exporters) > 0
	}
	var reads []contracts.EdgeRead
	add := func(cpu, exporters bool) {
		if rd, ok := read(cpu, exporters); ok {
			reads = append(reads, rd)
		}
	}
	if edge == contracts.EdgeStart {
		// Now, and again exporterRead before the instant when that is
		// later; a read is only started with most of exporterRead left, and
		// kept only when it ended before the instant (a slow exporter's
		// values could hold the phase's first operations).
		before := func() {
			if time.Until(*at) < exporterRead*9/10 {
				return
			}
			if rd, ok := read(false, true); ok && time.Now().Before(*at) {
				reads = append(reads, rd)
			}
		}
		before()
		if second := at.Add(-exporterRead); time.Until(second) > 0 {
			if !wait(second) {
				return
			}
			before()
		}
		if !wait(at.Add(-startSpacing)) {
			return
		}
		add(true, false)
		if !wait(at.Add(startSpacing)) {
			return
		}
		add(true, false)
		// A new exporter is not scraped for the first seconds: reads inside
		// the phase give its gauges (clients, connections, memory), which
		// only samples inside the window reduce, a value on a short phase.
		for _, after := range inPhaseReads {
			if !wait(at.Add(after)) {
				return
			}
			add(false, true)
		}
	} else {
		add(true, true)
		second := time.Now().Add(endSpacing)
		if len(reads) > 0 {
			second = reads[0].At.Add(endSpacing) // the spacing is between the reads' instants
		}
		if !wait(second) {
			return
		}
		add(true, true)
	}
	if len(reads) == 0 {
		return // not monitored here
	}
	attempt := max(e.Attempt, 1)
	msg := &contracts.SUTEdge{
		Envelope:      contracts.NewEnvelope(e.Code, contracts.SUTEdgeID(e.Code, e.Phase, attempt, edge), reads[0].At),
		Configuration: e.Configuration, Phase: e.Phase, Attempt: attempt, Edge: edge, Reads: reads,
	}
	if err := d.bus.Publish(ctx, contracts.TopicSUTEdge.For(e.Code), msg); err != nil {
		d.log.Warn("the SUT's reads at a phase edge not published: the collector estimates them from the scrapes", "code", e.Code, "phase", e.Phase, "edge", edge, "err", err)
	}
}
