package local

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/benchq/benchq/catalog"
	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/obs"
	"github.com/benchq/benchq/internal/obs/obstest"
	"github.com/benchq/benchq/internal/testenv"
	"github.com/benchq/benchq/services/deployer/deployer"
)

// The deployer's /metrics: a Redis SUT deployed through a deploy job is
// timed and counted alive until its teardown.
func TestDeployerServesItsMetrics(t *testing.T) {
	t.Parallel()
	requireServer(t, catalog.KindRedis)
	url := testenv.NATS(t)
	ctx := localTestCtx(t)
	l := newLocal(t)
	const code, conf = "1700000077", "Redis-1"
	teardownAtEnd(t, l, code, conf)
	reg := obs.NewRegistry()
	addr := obstest.Serve(t, reg)
	testenv.Go(t, func(ctx context.Context) error {
		return deployer.Run(ctx, deployer.Config{NATSURL: url, Metrics: reg}, l, testenv.Logger(t, "deployer"))
	})
	b := testenv.Bus(t, ctx, url)
	now := time.Now()
	if err := b.Publish(ctx, contracts.SubjDeploy, &contracts.Deploy{
		Envelope: contracts.NewEnvelope(code, code+"."+conf+".deploy", now), Configuration: conf, DBMS: "redis", Benchmark: "ycsb",
	}); err != nil {
		t.Fatal(err)
	}
	want := func(lines ...string) {
		t.Helper()
		testenv.Eventually(t, time.Minute, func() error {
			if missing := obstest.Lacks(obstest.Get(t, addr), lines...); len(missing) > 0 {
				return fmt.Errorf("/metrics lacks %q", missing)
			}
			return nil
		})
	}
	want(`benchq_deployer_sut_start_seconds_count{dbms="redis"} 1`, `benchq_deployer_suts_alive 1`, `process_cpu_seconds_total`)
	if err := b.Publish(ctx, contracts.SubjTeardown, &contracts.Teardown{
		Envelope: contracts.NewEnvelope(code, code+"."+conf+".teardown", now), Configuration: conf, DBMS: "redis",
	}); err != nil {
		t.Fatal(err)
	}
	want(`benchq_deployer_suts_alive 0`)
}
