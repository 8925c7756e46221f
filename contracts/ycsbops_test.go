package contracts

import "testing"

func TestCountsOperation(t *testing.T) {
	for name, want := range map[string]bool{
		"READ": true, "UPDATE": true, "READ-FAILED": true, "INSERT-FAILED": true,
		"CLEANUP": false, "Intended-READ": false, "Intended-CLEANUP": false, "THREAD_COUNT": false, "GCS_TIME": false,
	} {
		if got := CountsOperation(name); got != want {
			t.Errorf("CountsOperation(%q) = %v", name, got)
		}
	}
	if !FailedOperation("READ-FAILED") || FailedOperation("READ") || !IntendedOperation("Intended-UPDATE") {
		t.Error("FailedOperation / IntendedOperation")
	}
}
