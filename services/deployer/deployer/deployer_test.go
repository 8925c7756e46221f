package deployer

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/testenv"
	"github.com/benchq/benchq/services/deployer/backend"
)

// volumeBackend records the calls a backend with persistent volumes gets.
// It stands in for the Kubernetes backend, whose own calls are tested
// against a real API server (../kube/integration_test.go); this test is about
// the deployer's order of calls and the volumes bucket.
type volumeBackend struct {
	mu    sync.Mutex
	calls []string
}

func (v *volumeBackend) record(c string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.calls = append(v.calls, c)
}

func (v *volumeBackend) Deploy(context.Context, backend.Spec) (backend.Deployed, error) {
	return backend.Deployed{}, nil
}
func (v *volumeBackend) Teardown(_ context.Context, code, cfg string) error {
	v.record("teardown " + code + "/" + cfg)
	return nil
}
func (v *volumeBackend) MarkLoaded(_ context.Context, volume string, d time.Duration, by string, _ time.Time) error {
	v.record(fmt.Sprintf("mark %s %s by %s", volume, d, by))
	return nil
}

// VolumeEntries: the volume, loaded once marked (the deployer lists them at
// start too).
func (v *volumeBackend) VolumeEntries(context.Context) ([]contracts.VolumeEntry, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	loaded := slices.ContainsFunc(v.calls, func(c string) bool { return strings.HasPrefix(c, "mark ") })
	e := contracts.VolumeEntry{Name: "bq-postgresql-ycsb-1", DBMS: "PostgreSQL", UseCase: "ycsb-1", Loaded: loaded, Size: "50Gi"}
	if loaded {
		e.TimeLoadingS = 12.5
	}
	return []contracts.VolumeEntry{e}, nil
}

// A teardown that says the loading filled the volume: the volume is marked
// before the SUT goes, and the volumes bucket mirrors the backend's volumes.
func TestTeardownMarksTheVolumeLoaded(t *testing.T) {
	t.Parallel()
	url := testenv.NATS(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	be := &volumeBackend{}
	testenv.Go(t, func(ctx context.Context) error {
		return Run(ctx, Config{NATSURL: url}, be, testenv.Logger(t, "deployer"))
	})
	b := testenv.Bus(t, ctx, url)
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	if err := b.Publish(ctx, contracts.SubjTeardown, &contracts.Teardown{
		Envelope: contracts.NewEnvelope("v1", "v1.PostgreSQL-1.teardown", at), Configuration: "PostgreSQL-1", DBMS: "PostgreSQL",
		Loaded: &contracts.VolumeLoaded{Volume: "bq-postgresql-ycsb-1", LoadingTimeS: 12.5, At: at, By: "v1"},
	}); err != nil {
		t.Fatal(err)
	}
	kv, err := b.JS.KeyValue(ctx, contracts.KVVolumes)
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, func() error {
		e, err := kv.Get(ctx, "bq-postgresql-ycsb-1")
		if err != nil {
			return err
		}
		var v contracts.VolumeEntry
		if err := json.Unmarshal(e.Value(), &v); err != nil || !v.Loaded || v.TimeLoadingS != 12.5 {
			return fmt.Errorf("entry %s (%v)", e.Value(), err)
		}
		return nil
	})
	be.mu.Lock()
	defer be.mu.Unlock()
	if want := []string{"mark bq-postgresql-ycsb-1 12.5s by v1", "teardown v1/PostgreSQL-1"}; !slices.Equal(be.calls, want) {
		t.Errorf("calls %q, want %q", be.calls, want)
	}
}
