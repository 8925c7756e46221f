package main

import (
	"context"
	"fmt"
	"time"

	"github.com/benchq/benchq/catalog"
	"github.com/benchq/benchq/contracts"
)

// Spec names one SUT configuration to provision.
type Spec struct {
	Code, Configuration, DBMS, Benchmark string
	// SUT is the configuration's shape (workers, pool, resources, storage,
	// node); nil means the catalog's defaults.
	SUT *contracts.SUTSpec
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

// deployEntry is what both backends' Deploy share: it finds s's DBMS in the
// catalog, runs deploy with its entry and names the configuration in the
// error.
func deployEntry(ctx context.Context, s Spec, deploy func(context.Context, Spec, catalog.Entry) (Deployed, error)) (Deployed, error) {
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
