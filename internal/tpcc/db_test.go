package tpcc

import (
	"testing"

	"github.com/benchq/benchq/contracts"
)

func TestNeverPrepares(t *testing.T) {
	for url, want := range map[string]bool{
		"jdbc:postgresql://h:5432/db?reWriteBatchedInserts=true&prepareThreshold=0": true,
		"jdbc:postgresql://h:5432/db?prepareThreshold=5":                            false,
		"jdbc:postgresql://h:5432/db?reWriteBatchedInserts=true":                    false,
		"": false,
	} {
		if got := neverPrepares(url); got != want {
			t.Errorf("neverPrepares(%q) = %v, want %v", url, got, want)
		}
	}
}

func TestDSN(t *testing.T) {
	for _, tc := range []struct {
		ep   contracts.Endpoint
		want string
	}{
		{contracts.Endpoint{Host: "127.0.0.1", Port: 5432, Database: "ycsb", User: "postgres"},
			"postgres://postgres@127.0.0.1:5432/ycsb?sslmode=disable&application_name=benchq-tpcc&binary_parameters=yes&connect_timeout=30"},
		{contracts.Endpoint{Host: "::1", Port: 6432, User: "bench", Password: "p@ss/w:rd"},
			"postgres://bench:p%40ss%2Fw%3Ard@[::1]:6432/postgres?sslmode=disable&application_name=benchq-tpcc&binary_parameters=yes&connect_timeout=30"},
	} {
		if got := DSN(tc.ep); got != tc.want {
			t.Errorf("DSN(%+v) = %s, want %s", tc.ep, got, tc.want)
		}
	}
}
