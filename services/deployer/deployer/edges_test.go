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
// burns a CPU: its counter is the seconds since t0.
type cpuBackend struct {
	volumeBackend
	t0 time.Time
}

func (c *cpuBackend) SUTCPU(_, configuration string) (map[string]float64, bool) {
	if configuration != "mon" {
		return nil, false
	}
	return map[string]float64{"sut": time.Since(c.t0).Seconds()}, true
}

var _ backend.SUTCPUReader = (*cpuBackend)(nil)

var errNotYet = errors.New("no read yet")

// The deployer reads a monitored SUT's CPU at each edge of a phase: just
// before and after the GO instant phase.started names, and at phase.done
// and endSpacing later; an unmonitored SUT is not read.
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
	got := map[string]*contracts.SUTCPU{}
	sub, err := b.NC.Subscribe(contracts.TopicSUTCPU.All(), func(m *nats.Msg) {
		msg, err := bus.DecodeSubject(m.Subject, m.Data)
		if err != nil {
			t.Errorf("sut.cpu: %v", err)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		c := msg.(*contracts.SUTCPU)
		got[c.Configuration+"/"+c.Edge] = c
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	// The deployer subscribes once it runs: publish until it answers.
	var goAt time.Time
	testenv.Eventually(t, 20*time.Second, func() error {
		for _, cfg := range []string{"mon", "plain"} {
			goAt = time.Now().Add(300 * time.Millisecond).UTC()
			if err := b.Publish(ctx, contracts.TopicPhaseStarted.For("7"), &contracts.PhaseEvent{
				Envelope:      contracts.NewEnvelope("7", contracts.PhaseEventID("7", cfg+"-0", 1, contracts.PhaseStarted)+time.Now().Format(".150405.000000"), time.Now()),
				Configuration: cfg, Phase: cfg + "-0", Kind: contracts.KindLoad, Status: contracts.PhaseStarted, Attempt: 1, StartedAt: &goAt,
			}); err != nil {
				return err
			}
		}
		time.Sleep(500 * time.Millisecond)
		mu.Lock()
		defer mu.Unlock()
		if got["mon/start"] == nil {
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
	if len(start.Samples) != 2 || len(end.Samples) != 2 || start.ID != contracts.SUTCPUID("7", "mon-0", 1, contracts.EdgeStart) {
		t.Fatalf("start %+v, end %+v: want two reads each", start, end)
	}
	// The GO instant is bracketed by reads a few ms apart (a timer may fire
	// late on a loaded machine: then both are after it).
	s0, s1 := start.Samples[0], start.Samples[1]
	if s0.At.After(s1.At) || s1.At.Before(goAt) || s1.At.Sub(s0.At) > 100*time.Millisecond || s0.At.Sub(goAt) > 100*time.Millisecond {
		t.Errorf("start reads at %v and %v, GO at %v", s0.At, s1.At, goAt)
	}
	e0, e1 := end.Samples[0], end.Samples[1]
	if e0.At.Before(done) || e1.At.Sub(e0.At) < endSpacing || e1.CPU["sut"] <= e0.CPU["sut"] {
		t.Errorf("end reads %+v and %+v: want the first after phase.done (%v), the second %v later and higher", e0, e1, done, endSpacing)
	}
	for k := range got {
		if k == "plain/start" || k == "plain/end" {
			t.Errorf("an unmonitored SUT was read: %s", k)
		}
	}
}
