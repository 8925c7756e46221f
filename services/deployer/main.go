// Command deployer provisions systems under test (SUTs) for benchmark
// configurations and removes them, on the backend chosen by configuration:
// local processes (default) or Kubernetes objects (docs/kubernetes.md).
package main

import (
	"context"
	"flag"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/benchq/benchq/internal/config"
)

func main() {
	fs := flag.NewFlagSet("deployer", flag.ExitOnError)
	natsURL := fs.String("nats", config.Env("BENCHQ_NATS_URL", "nats://127.0.0.1:4222"), "NATS server URL (env BENCHQ_NATS_URL)")
	var bc BackendConfig
	fs.StringVar(&bc.Kind, "backend", config.Env("BENCHQ_BACKEND", BackendLocal), "where SUTs run: local or kubernetes (env BENCHQ_BACKEND)")
	fs.StringVar(&bc.Root, "root", config.Env("BENCHQ_SUT_ROOT", filepath.Join(config.Env("BENCHQ_HOME", ".benchq"), "suts")), "local backend: directory for SUT data (env BENCHQ_SUT_ROOT)")
	fs.StringVar(&bc.Kubeconfig, "kubeconfig", "", "kubernetes backend: kubeconfig file (default $KUBECONFIG, ~/.kube/config, or in-cluster)")
	fs.StringVar(&bc.Namespace, "namespace", config.Env("BENCHQ_NAMESPACE", ""), "kubernetes backend: namespace (env BENCHQ_NAMESPACE; default the kubeconfig's or the pod's)")
	fs.StringVar(&bc.DriverImage, "driver-image", config.Env("BENCHQ_DRIVER_IMAGE", DefaultDriverImage), "kubernetes backend: driver-agent image of the driver Jobs (env BENCHQ_DRIVER_IMAGE)")
	fs.StringVar(&bc.DriverNATSURL, "driver-nats", config.Env("BENCHQ_DRIVER_NATS_URL", ""), "kubernetes backend: NATS URL as the driver pods see it (env BENCHQ_DRIVER_NATS_URL; default: -nats)")
	_ = fs.Parse(os.Args[1:])
	if bc.DriverNATSURL == "" {
		bc.DriverNATSURL = *natsURL
	}
	log := config.Logger("deployer")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	backend, err := NewBackend(bc, log)
	if err != nil {
		log.Error("deployer failed", "err", err)
		os.Exit(2)
	}
	if err := Run(ctx, Config{NATSURL: *natsURL}, backend, log); err != nil {
		log.Error("deployer failed", "err", err)
		os.Exit(1)
	}
}
