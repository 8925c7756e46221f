package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestEndedSaysWhy(t *testing.T) {
	t.Parallel()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	past, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	for _, c := range []struct {
		ctx  context.Context
		want string
	}{
		{context.Background(), "no final within 3m0s (-run-timeout)"},
		{cancelled, "interrupted"},
		{past, "the bench's deadline (-deadline) passed"},
	} {
		if got := ended(c.ctx, "no final", 3*time.Minute).Error(); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
}

func TestValidateNamesEveryBadFlag(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	err := Config{Bin: dir, Workloads: dir, Workload: "g"}.validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"-runs", "-operations", "-records", "-threads", "-status-interval", "-workload", "driver-agent missing", "nats-server missing", "-workloads"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}
