package main

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/obs"
)

// metrics are the scheduler's own series on /metrics.
type metrics struct {
	events      *prometheus.CounterVec
	phaseSwitch prometheus.Histogram

	// Gauges from the experiments' stored states, kept per code so that a
	// state written again replaces its own counts (phases only while some
	// are in flight: a queued experiment has none).
	mu          sync.Mutex
	status      map[string]string         // code → experiment status
	phases      map[string]map[string]int // code → phase state → configurations in it
	experiments *prometheus.GaugeVec
	inFlight    *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	series := obs.Series{Reg: reg}
	m := &metrics{
		events: series.CounterVec("benchq_scheduler_events_total",
			"Messages the scheduler handled, by topic (contracts' subject names).", "topic"),
		// Milliseconds when idle, seconds under load or after a restart.
		phaseSwitch: series.Histogram("benchq_scheduler_phase_switch_seconds",
			"From the event that ended a phase (its last shard's final, as stored in JetStream) to the next phase's shard jobs published.",
			prometheus.ExponentialBuckets(0.001, 2.5, 12)),
		status: map[string]string{},
		phases: map[string]map[string]int{},
		experiments: series.GaugeVec("benchq_scheduler_experiments",
			"Experiments in the scheduler's state bucket, by status.", "status"),
		inFlight: series.GaugeVec("benchq_scheduler_phases",
			"Phases of running experiments in flight, by state (preparing: shard jobs out, waiting for the barrier; running: after GO).", "state"),
	}
	m.zero()
	return m
}

// zero resets the gauges to every known label value at 0, so a dashboard
// sees 0 rather than nothing.
func (m *metrics) zero() {
	m.experiments.Reset()
	m.inFlight.Reset()
	for _, s := range []string{contracts.ExperimentRunning, contracts.ExperimentDone, contracts.ExperimentFailed, contracts.ExperimentCancelled} {
		m.experiments.WithLabelValues(s)
	}
	for _, s := range []string{contracts.PhasePreparing, contracts.PhaseRunning} {
		m.inFlight.WithLabelValues(s)
	}
}

// handled counts one message by its topic.
func (m *metrics) handled(subject string) {
	topic := "unknown"
	if p, err := contracts.ParseSubject(subject); err == nil {
		topic = string(p.Topic)
	}
	m.events.WithLabelValues(topic).Inc()
}

// track records st's status and phases in flight and moves the gauges by
// the difference from what was recorded for it before. Each call costs the
// same however many experiments there are (recounting all of them on every
// write made planning a queue of thousands quadratic).
func (m *metrics) track(st *State) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.status[st.Code]; ok {
		m.experiments.WithLabelValues(old).Dec()
	}
	m.status[st.Code] = st.Status
	m.experiments.WithLabelValues(st.Status).Inc()
	for state, n := range m.phases[st.Code] {
		m.inFlight.WithLabelValues(state).Sub(float64(n))
	}
	delete(m.phases, st.Code)
	if st.Status != contracts.ExperimentRunning {
		return
	}
	var phases map[string]int
	for _, c := range st.Configs {
		if c.Current != nil {
			if phases == nil {
				phases = map[string]int{}
			}
			phases[c.Current.Status]++
		}
	}
	for state, n := range phases {
		m.inFlight.WithLabelValues(state).Add(float64(n))
	}
	if phases != nil {
		m.phases[st.Code] = phases
	}
}

// switched observes the phase-switch latency when out (one step's outputs)
// ended a phase and sent the next one's shard jobs; endedAt is when the
// event that caused the step was stored (zero: a tick or a stop, not a
// phase's end).
func (m *metrics) switched(out []Out, endedAt, now time.Time) {
	if endedAt.IsZero() {
		return
	}
	done, next := false, false
	for _, o := range out {
		switch msg := o.Msg.(type) {
		case *contracts.PhaseEvent:
			done = done || msg.Status == contracts.PhaseDone
		case *contracts.ShardJob:
			next = next || done
		}
	}
	if next {
		m.phaseSwitch.Observe(now.Sub(endedAt).Seconds())
	}
}
