package kube

import (
	"github.com/benchq/benchq/services/deployer/backend"

	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Object names of the kubernetes backend. Every object of a configuration
// is named from its base, bq-<code>-<configuration lower-cased>:
//
//	<base>            Service clients connect to (the endpoint), and the
//	                  Deployment of a single-host SUT or a cluster's master
//	<base>-w          a cluster's StatefulSet and its headless Service
//	<base>-db         a pool's backend (Deployment and Service)
//	<base>-pool       a pool's Deployment
//	<base>-bootstrap  the Job that forms a cluster
//	<base>-schema     the Job that creates the benchmark's schema
//
// Volumes reused across experiments are named per DBMS and use case:
// bq-<dbms>-<use case> (lower-cased, dots kept), e.g. bq-postgresql-ycsb-1.
const namePrefix = backend.NamePrefix

// Labels of every object. The values of dbms, experiment and configuration
// are the names as users write them (label values may hold capitals).
const (
	labelApp           = "app"
	labelComponent     = "component"
	labelDBMS          = "dbms"
	labelExperiment    = "experiment"
	labelConfiguration = "configuration"
	labelPhase         = "phase"
	labelUseCase       = "use-case"
	appName            = "benchq"
)

// Components (the label component).
const (
	componentSUT         = "sut"
	componentWorker      = "worker"
	componentPool        = "pool"
	componentLoader      = "loader"
	componentBenchmarker = "benchmarker"
	componentPassword    = "password" // the SUT's Secret (ensurePassword)
)

// Annotations of a volume (PVC): what it holds.
const (
	annotationLoaded      = "benchq.io/loaded"         // "true" once a loading phase filled it
	annotationLoadedAt    = "benchq.io/loaded-at"      // RFC 3339
	annotationLoadingTime = "benchq.io/loading-time-s" // seconds the loading phase took
	annotationDataSet     = "benchq.io/data-set"       // the use case, e.g. ycsb-1
	annotationLoadedBy    = "benchq.io/loaded-by"      // experiment code and configuration
)

// maxStatefulSetName keeps a StatefulSet's controller-revision-hash label
// (<name>-<10 character hash>) within the 63 characters of a label value.
const maxStatefulSetName = 52

// kubeNames are the names of one configuration's objects.
type kubeNames struct {
	Base, Workers, Backend, Pool, Bootstrap, Schema string
	Password                                        string // the SUT's own password (a Secret)
}

func namesFor(code, configuration string) (kubeNames, error) {
	for _, v := range []struct{ field, value string }{{"code", code}, {"configuration", configuration}} {
		if errs := validation.IsValidLabelValue(v.value); len(errs) > 0 || v.value == "" {
			return kubeNames{}, fmt.Errorf("%w: %s %q is not a label value: %s", backend.ErrInvalidName, v.field, v.value, strings.Join(append(errs, "not empty"), "; "))
		}
	}
	base := namePrefix + strings.ToLower(code) + "-" + strings.ToLower(configuration)
	n := kubeNames{
		Base: base, Workers: base + "-w", Backend: base + "-db", Pool: base + "-pool",
		Bootstrap: base + "-bootstrap", Schema: base + "-schema", Password: base + "-password",
	}
	// Services and the labels Jobs put on their pods must be DNS-1035
	// labels (63 characters, starting with a letter).
	for _, name := range []string{n.Base, n.Workers, n.Backend, n.Pool, n.Bootstrap, n.Schema, n.Password} {
		if errs := validation.IsDNS1035Label(name); len(errs) > 0 {
			return kubeNames{}, fmt.Errorf("%w: configuration %q of experiment %q gives object name %q: %s (shorten the configuration name)",
				backend.ErrInvalidName, configuration, code, name, strings.Join(errs, "; "))
		}
	}
	return n, nil
}

// checkStatefulSetName refuses names too long for a StatefulSet's pods.
func checkStatefulSetName(name string) error {
	if len(name) > maxStatefulSetName {
		return fmt.Errorf("%w: StatefulSet name %q has %d characters, at most %d are possible (its revision label adds 11)",
			backend.ErrInvalidName, name, len(name), maxStatefulSetName)
	}
	return nil
}

// labelsFor are the labels of one configuration's objects of a component;
// selectorFor the subset Deployments and StatefulSets select their pods by.
func labelsFor(s backend.Spec, dbms, component string) map[string]string {
	l := selectorFor(s, component)
	l[labelDBMS] = dbms
	l["app.kubernetes.io/name"] = strings.ToLower(dbms)
	l["app.kubernetes.io/instance"] = namePrefix + strings.ToLower(s.Code) + "-" + strings.ToLower(s.Configuration)
	l["app.kubernetes.io/component"] = component
	l["app.kubernetes.io/part-of"] = appName
	l["app.kubernetes.io/managed-by"] = "benchq-deployer"
	return l
}

func selectorFor(s backend.Spec, component string) map[string]string {
	return map[string]string{
		labelApp:           appName,
		labelComponent:     component,
		labelExperiment:    s.Code,
		labelConfiguration: s.Configuration,
	}
}

// selectorString is the label selector of a configuration's objects, or of
// all of an experiment's when configuration is "".
func selectorString(code, configuration string) string {
	sel := labelApp + "=" + appName + "," + labelExperiment + "=" + code
	if configuration != "" {
		sel += "," + labelConfiguration + "=" + configuration
	}
	return sel
}
