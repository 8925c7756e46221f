package deployer

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/bus"
	"github.com/benchq/benchq/internal/testenv"
	"github.com/benchq/benchq/services/deployer/backend"
)

// cpuBackend is a backend whose one monitored SUT (configuration "mon")
// burns a CPU: its counter is the seconds since t0; its exporter counts
// milliseconds.
type cpuBackend struct {
	volumeBackend
	t0 time.Time
}

func (c *cpuBackend) ReadCPU(_, configuration string) (map[string]float64, bool) {
	if configuration != "mon" {
		return nil, false
	}
	return map[string]float64{"sut": time.Since(c.t0).Seconds()}, true
}

func (c *cpuBackend) ReadExporters(_ context.Context, _, configuration string) ([]contracts.ExporterRead, bool) {
	if configuration != "mon" {
		return nil, false
	}
	return []contracts.ExporterRead{{Instance: "127.0.0.1:9121", Component: "sut", Values: map[string]float64{"redis_commands": float64(time.Since(c.t0).Milliseconds())}}}, true
}

var _ backend.SUTReader = (*cpuBackend)(nil)

var errNotYet = errors.New("no read yet")

// The deployer reads a monitored SUT at each edge of a phase: its exporters
// twice ahead of the GO instant phase.started names and its CPU just
// before and after it; both at phase.done and endSpacing later. An
// unmonitored SUT is not read.
func TestDeployerReadsTheSUTsCPUAtAPhasesEdges(t *testing.T) {
	t.Parallel()
	url := testenv.NATS(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	be := &cpuBackend{t0: time.Now()}
	testenv.Go(t, func(ctx context.Context) error {
		return Run(ctx, Config{NATSURL: url}, be, testenv.Logger(t, "deployer"))
	})
	b := testenv.Bus(t, ctx, url)
	var mu sync.Mutex
	got := map[string]*contracts.SUTEdge{}
	sub, err := b.NC.Subscribe(contracts.TopicSUTEdge.All(), func(m *nats.Msg) {
		msg, err := bus.DecodeSubject(m.Subject, m.Data)
		if err != nil {
			t.Errorf("sut.edge: %v", err)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		c := msg.(*contracts.SUTEdge)
		got[c.Configuration+"/"+c.Edge] = c
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	started := func(cfg, phase string, goAt time.Time) error {
		return b.Publish(ctx, contracts.TopicPhaseStarted.For("7"), &contracts.PhaseEvent{
			Envelope:      contracts.NewEnvelope("7", contracts.PhaseEventID("7", phase, 1, contracts.PhaseStarted)+time.Now().Format(".150405.000000"), time.Now()),
			Configuration: cfg, Phase: phase, Kind: contracts.KindLoad, Status: contracts.PhaseStarted, Attempt: 1, StartedAt: &goAt,
		})
	}
	// The deployer subscribes once it runs: a warm-up phase until it answers.
	testenv.Eventually(t, 20*time.Second, func() error {
		if err := started("mon", "warm-0", time.Now().Add(300*time.Millisecond).UTC()); err != nil {
			return err
		}
		time.Sleep(500 * time.Millisecond)
		mu.Lock()
		defer mu.Unlock()
		if got["mon/start"] == nil {
			return errNotYet
		}
		return nil
	})
	goAt := time.Now().Add(400 * time.Millisecond).UTC()
	for _, cfg := range []string{"mon", "plain"} {
		if err := started(cfg, cfg+"-0", goAt); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, 10*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if s := got["mon/start"]; s == nil || s.Phase != "mon-0" {
			return errNotYet
		}
		return nil
	})
	endAt := time.Now().UTC()
	done := time.Now()
	for _, cfg := range []string{"mon", "plain"} {
		if err := b.Publish(ctx, contracts.TopicPhaseDone.For("7"), &contracts.PhaseEvent{
			Envelope:      contracts.NewEnvelope("7", contracts.PhaseEventID("7", cfg+"-0", 1, contracts.PhaseDone), time.Now()),
			Configuration: cfg, Phase: cfg + "-0", Kind: contracts.KindLoad, Status: contracts.PhaseDone, Attempt: 1, StartedAt: &goAt, EndedAt: &endAt,
		}); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, 10*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if got["mon/end"] == nil {
			return errNotYet
		}
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	start, end := got["mon/start"], got["mon/end"]
	// The exporter before GO: twice, or once when phase.started came too
	// late for the second (a loaded machine: readEdge starts a read only
	// with most of exporterRead left before the instant).
	before := 0
	for _, r := range start.Reads {
		if len(r.Exporters) == 1 && len(r.CPU) == 0 && r.At.Before(goAt) {
			before++
		}
	}
	if before < 1 || before > 2 || len(start.Reads) != before+2+len(inPhaseReads) || len(end.Reads) != 2 || start.ID != contracts.SUTEdgeID("7", "mon-0", 1, contracts.EdgeStart) {
		t.Fatalf("start %+v, end %+v: want one or two exporter reads before GO, %d reads more, and two at the end", start, end, 2+len(inPhaseReads))
	}
	// The exporter before GO (the first reads), the CPU around it (a timer
	// may fire late on a loaded machine: then after it), the exporter in
	// the phase.
	for i, r := range start.Reads {
		exp, cpu := len(r.Exporters) == 1, len(r.CPU) == 1
		if i < before && (!exp || cpu || !r.At.Before(goAt)) || i >= before && i < before+2 && (exp || !cpu || r.At.Sub(goAt) > 100*time.Millisecond) ||
			i >= before+2 && (!exp || cpu || r.At.Before(goAt.Add(inPhaseReads[i-before-2]))) {
			t.Errorf("start read %d at %v (GO at %v): %+v", i, r.At, goAt, r)
		}
	}
	if s0, s1 := start.Reads[before], start.Reads[before+1]; s1.At.Before(goAt) || s0.At.After(s1.At) {
		t.Errorf("CPU reads at %v and %v, GO at %v", s0.At, s1.At, goAt)
	}
	e0, e1 := end.Reads[0], end.Reads[1]
	if e0.At.Before(done) || e1.At.Sub(e0.At) < endSpacing || e1.CPU["sut"] <= e0.CPU["sut"] || len(e0.Exporters) != 1 || len(e1.Exporters) != 1 {
		t.Errorf("end reads %+v and %+v: want CPU and the exporter at phase.done (%v) and %v later", e0, e1, done, endSpacing)
	}
	for k := range got {
		if k == "plain/start" || k == "plain/end" {
			t.Errorf("an unmonitored SUT was read: %s", k)
		}
	}
}
