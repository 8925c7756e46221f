package backend

import (
	"cmp"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// NamePrefix starts the name of every object benchq makes for a SUT: its
// Kubernetes objects and the volumes of both backends.
const NamePrefix = "bq-"

// DriverSpec describes the driver agents of one phase: Shards agent pods,
// run together, each taking one shard job of the phase from the JetStream
// work queue and exiting.
type DriverSpec struct {
	Code, Configuration, DBMS string
	Phase                     string // e.g. Redis-8-2-16384-1-0 (loading)
	Kind                      string // contracts.KindLoad or contracts.KindRun
	Attempt                   int    // the phase attempt (0 = 1); a re-run gets a Job of its own
	Shards                    int
	Node                      string // -rnl / -rnb: pin the agents
	Image                     string // the driver-agent image
	NATSURL                   string // as seen from inside the cluster
	SeedSecret                string // the Secret with the agents' NATS seed ("" = none)
}

// UseCaseOf names the data set of s's volume: the plan's use case (e.g.
// ycsb-0.1), else the benchmark.
func UseCaseOf(s Spec) string {
	if s.SUT != nil && s.SUT.UseCase != "" {
		return s.SUT.UseCase
	}
	return cmp.Or(strings.ToLower(s.Benchmark), "data")
}

// VolumeName is the volume of a DBMS and use case, shared by experiments:
// a PVC on Kubernetes, a directory under the stack's volumes/ locally.
func VolumeName(dbms, useCase string) (string, error) {
	name := NamePrefix + strings.ToLower(dbms) + "-" + strings.ToLower(useCase)
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 || len(name) > validation.DNS1123LabelMaxLength {
		return "", fmt.Errorf("%w: volume %q of DBMS %s and use case %q: %s", ErrInvalidName, name, dbms, useCase, strings.Join(append(errs, "at most 63 characters"), "; "))
	}
	return name, nil
}

// WantsVolume reports whether s asks for a persistent volume (-rst).
func WantsVolume(s Spec) bool {
	return s.SUT != nil && s.SUT.WantsVolume()
}

// ErrBadSpec is wrapped by errors in a configuration's shape (workers,
// resources, storage) that retrying cannot fix.
var ErrBadSpec = errors.New("invalid sut spec")

// ErrInvalidName is wrapped by naming errors: a configuration whose names
// Kubernetes cannot take. Retrying does not help.
var ErrInvalidName = errors.New("invalid kubernetes name")
