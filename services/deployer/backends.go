package main

import (
	"fmt"
	"log/slog"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/benchq/benchq/internal/startup"
	"github.com/benchq/benchq/services/deployer/backend"
	"github.com/benchq/benchq/services/deployer/kube"
	"github.com/benchq/benchq/services/deployer/local"
)

// BackendConfig chooses and configures the backend (flags and env of main).
type BackendConfig struct {
	Kind string // BackendLocal or BackendKubernetes
	// Local: the directory of the SUTs' data.
	Root string
	// Kubernetes: a kubeconfig file ("" = $KUBECONFIG, ~/.kube/config, or
	// the in-cluster service account) and the namespace ("" = the
	// kubeconfig context's, or the service account's, or "default").
	Kubeconfig, Namespace string
	// Kubernetes: the driver agents' image and the NATS URL their pods use
	// (driver Jobs, docs/kubernetes.md).
	DriverImage, DriverNATSURL string
	// Kubernetes: the Secret whose key BENCHQ_NATS_SEED_AGENT the driver
	// pods connect with ("" = anonymously; deploy/k8s names benchq-credentials).
	DriverSeedSecret string
	// The stack's SUT key, from which each SUT's own password derives
	// (startup.SUTAuth; the zero value: none). Kubernetes writes it into a
	// Secret per SUT; there a SUT on a persistent volume needs the key.
	SUT startup.SUTAuth
	// Kubernetes: requests a second to the API server (burst twice that);
	// 0 = DefaultKubeQPS.
	KubeQPS float64
	// Kubernetes: SUT images that replace the catalog's, "DBMS=image,…"
	// (kube.ParseImages), e.g. benchq's Graphite image in your registry.
	SUTImages string
}

// DefaultDriverImage is the driver-agent image of deploy/k8s.
const DefaultDriverImage = "benchq/driver-agent:dev"

// NewBackend returns the backend cfg names; the scheduler never knows which.
func NewBackend(cfg BackendConfig, log *slog.Logger) (backend.Backend, error) {
	switch cfg.Kind {
	case local.BackendLocal, "":
		if !cfg.SUT.None() && !cfg.SUT.HasKey() {
			return nil, fmt.Errorf("local backend: %s is one SUT's password, and every SUT needs its own: give the stack's key instead (%s or %s; benchq up and benchq credentials write it)",
				startup.SUTPasswordEnv, startup.SUTKeyFileEnv, startup.SUTKeyEnv)
		}
		return &local.Local{Root: cfg.Root, Log: log, SUT: cfg.SUT}, nil
	case kube.BackendKubernetes:
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		rules.ExplicitPath = cfg.Kubeconfig
		cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
		rc, err := cc.ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("kubernetes backend: %w", err)
		}
		ns := cfg.Namespace
		if ns == "" {
			if ns, _, err = cc.Namespace(); err != nil {
				return nil, fmt.Errorf("kubernetes backend: namespace: %w", err)
			}
		}
		kube.ConfigureClient(rc, float32(cfg.KubeQPS), log)
		client, err := kubernetes.NewForConfig(rc)
		if err != nil {
			return nil, fmt.Errorf("kubernetes backend: %w", err)
		}
		log.Info("kubernetes backend", "server", rc.Host, "namespace", ns, "qps", rc.QPS)
		image := cfg.DriverImage
		if image == "" {
			image = DefaultDriverImage
		}
		images, err := kube.ParseImages(cfg.SUTImages)
		if err != nil {
			return nil, fmt.Errorf("kubernetes backend: -sut-images: %w", err)
		}
		log.Info("kubernetes backend", "driver_image", image, "driver_nats", cfg.DriverNATSURL, "sut_images", images)
		return &kube.Kube{Client: client, Namespace: ns, Log: log, DriverImage: image, DriverNATSURL: cfg.DriverNATSURL, DriverSeedSecret: cfg.DriverSeedSecret, SUT: cfg.SUT, Images: images}, nil
	}
	return nil, fmt.Errorf("unknown backend %q: use %s or %s", cfg.Kind, local.BackendLocal, kube.BackendKubernetes)
}
