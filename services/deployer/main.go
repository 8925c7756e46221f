// Command deployer provisions systems under test (SUTs) for benchmark
// configurations and removes them, on the backend chosen by configuration:
// local processes (default) or Kubernetes objects (docs/kubernetes.md).
package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"

	"github.com/benchq/benchq/internal/natsauth"
	"github.com/benchq/benchq/internal/startup"
	"github.com/benchq/benchq/services/deployer/deployer"
	"github.com/benchq/benchq/services/deployer/kube"
	"github.com/benchq/benchq/services/deployer/local"
)

func main() {
	svc := startup.NewService("deployer")
	fs := svc.Flags
	var bc BackendConfig
	fs.StringVar(&bc.Kind, "backend", startup.Env("BENCHQ_BACKEND", local.BackendLocal), "where SUTs run: local or kubernetes (env BENCHQ_BACKEND)")
	fs.StringVar(&bc.Root, "root", startup.Env("BENCHQ_SUT_ROOT", filepath.Join(startup.Env("BENCHQ_HOME", ".benchq"), "suts")), "local backend: directory for SUT data (env BENCHQ_SUT_ROOT)")
	fs.StringVar(&bc.Kubeconfig, "kubeconfig", "", "kubernetes backend: kubeconfig file (default $KUBECONFIG, ~/.kube/config, or in-cluster)")
	fs.StringVar(&bc.Namespace, "namespace", startup.Env("BENCHQ_NAMESPACE", ""), "kubernetes backend: namespace (env BENCHQ_NAMESPACE; default the kubeconfig's or the pod's)")
	fs.StringVar(&bc.DriverImage, "driver-image", startup.Env("BENCHQ_DRIVER_IMAGE", DefaultDriverImage), "kubernetes backend: driver-agent image of the driver Jobs (env BENCHQ_DRIVER_IMAGE)")
	fs.Float64Var(&bc.KubeQPS, "kube-qps", kubeQPSDefault(), "kubernetes backend: requests a second to the API server, burst twice that (env BENCHQ_KUBE_QPS)")
	fs.StringVar(&bc.DriverSeedSecret, "driver-seed-secret", startup.Env("BENCHQ_DRIVER_SEED_SECRET", ""), "kubernetes backend: Secret whose key "+natsauth.SeedValueEnvOf(natsauth.Agent)+" the driver pods connect to NATS with (env BENCHQ_DRIVER_SEED_SECRET; empty: anonymously)")
	fs.StringVar(&bc.SUTImages, "sut-images", startup.Env("BENCHQ_SUT_IMAGES", ""), "kubernetes backend: SUT images replacing the catalog's, DBMS=image,... (env BENCHQ_SUT_IMAGES), e.g. Graphite=registry.example/benchq/graphite:1")
	fs.StringVar(&bc.DriverNATSURL, "driver-nats", startup.Env("BENCHQ_DRIVER_NATS_URL", ""), "kubernetes backend: NATS URL as the driver pods see it (env BENCHQ_DRIVER_NATS_URL; default: -nats)")
	svc.Main(func(ctx context.Context, rt startup.Runtime) error {
		if bc.DriverNATSURL == "" {
			bc.DriverNATSURL = rt.NATSURL
		}
		var err error
		if bc.SUT, err = startup.SUTAuthFromEnv(os.Getenv); err != nil {
			return err
		}
		be, err := NewBackend(bc, rt.Log)
		if err != nil {
			return err
		}
		return deployer.Run(ctx, deployer.Config{NATSURL: rt.NATSURL, Metrics: rt.Metrics}, be, rt.Log)
	})
}

// kubeQPSDefault is $BENCHQ_KUBE_QPS, else kube.DefaultKubeQPS.
func kubeQPSDefault() float64 {
	if q, err := strconv.ParseFloat(startup.Env("BENCHQ_KUBE_QPS", ""), 64); err == nil && q > 0 {
		return q
	}
	return kube.DefaultKubeQPS
}
