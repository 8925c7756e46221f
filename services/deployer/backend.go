package main

import (
	"context"

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
	Info     map[string]any // bexhoma's connection facts, "version", "backend"
	Backend  string
}

// Backend provisions and removes SUTs. Both methods are idempotent: a
// redelivered job must find the SUT it already made (same endpoint) or the
// nothing it already left.
type Backend interface {
	Deploy(ctx context.Context, s Spec) (Deployed, error)
	Teardown(ctx context.Context, code, configuration string) error
}
