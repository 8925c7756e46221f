package backend

// The deployer's backends (local processes: ../local; Kubernetes: ../kube)
// and every capability a backend may offer beyond Backend, in one place.
// The deployer finds out what a backend can do by asserting these
// interfaces; the scheduler never knows which backend runs.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/benchq/benchq/catalog"
	"github.com/benchq/benchq/contracts"
)

// Spec names one SUT configuration to provision.
type Spec struct {
	Code, Configuration, DBMS, Benchmark string
	// SUT is the configuration's shape (workers, pool, resources, storage,
	// node); nil means the catalog's defaults.
	SUT *contracts.SUTSpec
	// DeployID is the deploy job's id: a redelivered deploy has the same,
	// the configuration's SUT deployed again (a loading run again on a new
	// SUT, contracts.DeployIDAt) another ("": unknown).
	DeployID string
}

// Deployed is a provisioned, probed SUT.
type Deployed struct {
	Endpoint contracts.Endpoint
	Info     map[string]any // bexhoma's connection facts, "version"
	Backend  string
	Volume   *contracts.VolumeState // its persistent volume, if any
}

// Backend provisions and removes SUTs. Both methods are idempotent: a
// redelivered job must find the SUT it already made (same endpoint) or the
// nothing it already left.
type Backend interface {
	Deploy(ctx context.Context, s Spec) (Deployed, error)
	Teardown(ctx context.Context, code, configuration string) error
}

// DeployEntry is what both backends' Deploy share: it finds s's DBMS in the
// catalog, runs deploy with its entry and names the configuration in the
// error.
func DeployEntry(ctx context.Context, s Spec, deploy func(context.Context, Spec, catalog.Entry) (Deployed, error)) (Deployed, error) {
	entry, err := catalog.Lookup(s.DBMS)
	if err == nil {
		var d Deployed
		if d, err = deploy(ctx, s, entry); err == nil {
			return d, nil
		}
	}
	return Deployed{}, fmt.Errorf("deploy %s: %w", s.Configuration, err)
}

// Volumes is implemented by backends with persistent volumes (Kubernetes):
// MarkLoaded records that a loading phase filled a volume, List reads them
// for the volumes KV bucket (benchq status).
type Volumes interface {
	MarkLoaded(ctx context.Context, volume string, loadingTime time.Duration, by string, at time.Time) error
	VolumeEntries(ctx context.Context) ([]contracts.VolumeEntry, error)
}

// DeadSUT is a SUT that was ready and whose process has gone.
type DeadSUT struct {
	Code, Configuration, DBMS string
	Reason                    string // which process, and how it ended
}

// SUTWatcher is a backend that notices its ready SUTs dying.
type SUTWatcher interface {
	// DeadSUTs lists the SUTs found dead whose "code/configuration" key is
	// not in reported.
	DeadSUTs(ctx context.Context, reported map[string]bool) ([]DeadSUT, error)
	// DeadSUT says how one configuration's SUT died ("" when it did not).
	DeadSUT(ctx context.Context, code, configuration string) (string, error)
}

// MetricsCollectors is implemented by backends that export series of their
// own (the local backend: its SUTs' process trees), served with the
// deployer's.
type MetricsCollectors interface {
	Collectors() []prometheus.Collector
}

// SUTReader is implemented by backends that read their SUTs themselves
// (the local backend): the deployer reads them at a phase's edges
// (contracts.SUTEdge), as samples of the series Prometheus scrapes.
// ReadCPU returns the CPU counters of configuration's trees summed per
// component (sut, pool); ReadExporters each of its exporters' application
// metrics (-ma). Either is false when the SUT has none (not monitored, or
// not this backend's).
type SUTReader interface {
	ReadCPU(code, configuration string) (map[string]float64, bool)
	ReadExporters(ctx context.Context, code, configuration string) ([]contracts.ExporterRead, bool)
}

// DriverBackend is implemented by backends that run the driver agents of a
// phase themselves (Kubernetes: a Job per phase attempt, docs/kubernetes.md).
// The local backend runs a pool of long-running agents instead and only
// tops it up when a phase has more shards than it has agents
// (../deployer/pool.go).
type DriverBackend interface {
	// StartDrivers starts the phase's driver agents and names them; an error
	// wrapping ErrRefused is one that retrying cannot fix.
	StartDrivers(ctx context.Context, d DriverSpec) (string, error)
	// EndedDrivers lists the driver Jobs that completed or failed, except
	// those named in skip.
	EndedDrivers(ctx context.Context, skip map[string]bool) ([]contracts.DriverEnded, error)
}

// DriverPodWatcher is implemented by backends whose driver agents run in
// pods (Kubernetes): a pod can be lost mid-phase (deleted, failed), and a
// Running pod vouches for an agent whose heartbeats are late.
type DriverPodWatcher interface {
	// WatchDriverPods calls lost for every driver pod deleted or failed
	// before it completed, once per pod, until ctx ends.
	WatchDriverPods(ctx context.Context, lost func(contracts.DriverLost))
	// RunningDriverPods returns the pods among names that are Running.
	RunningDriverPods(names []string) []string
}

// PhaseAgents is implemented by backends that top up the stack's agent
// pool for a phase (local): a phase's shards run at once, one per agent.
type PhaseAgents interface {
	// PoolAgents counts the pool's live agents among beats.
	PoolAgents(beats map[string]contracts.Heartbeat, now time.Time) int
	// StartPhaseAgents starts n agents bound to d's phase attempt.
	StartPhaseAgents(ctx context.Context, d DriverSpec, n int) ([]string, error)
}

// ErrRefused matches (errors.Is) a backend's errors that retrying cannot
// fix: the request itself is wrong or not allowed.
var ErrRefused = errors.New("refused")

// VolumeInUse is a deploy's refusal of a volume another configuration's
// SUT holds. A volume serves one SUT at a time (docs/volumes.md); the
// scheduler deploys one experiment's configurations on a volume in turn,
// so the holder is another experiment's, and waiting for it is futile: the
// deployer handles one job at a time, the holder's teardown among them.
func VolumeInUse(volume, holder string) error {
	return Refused(fmt.Errorf("volume %s is in use by %s (a volume serves one SUT at a time; it is released at that one's teardown): "+
		"run the experiments one after another, or without -rst", volume, holder))
}

// Refused marks err as one that retrying cannot fix (ErrRefused), its text
// unchanged: it reaches the user as the reason a phase failed.
func Refused(err error) error { return refused{err} }

type refused struct{ error }

func (r refused) Unwrap() error        { return r.error }
func (r refused) Is(target error) bool { return target == ErrRefused }
