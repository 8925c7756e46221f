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
	for name, want := range map[string]int64{
		"READ": 1, "READ-FAILED": 1, "READ-MODIFY-WRITE": -1, "Intended-READ-MODIFY-WRITE": 0, "CLEANUP": 0, "QUERY": 0,
	} {
		if got := OperationWeight(name); got != want {
			t.Errorf("OperationWeight(%q) = %d, want %d", name, got, want)
		}
	}
	if !FailedOperation("READ-FAILED") || FailedOperation("READ") || !IntendedOperation("Intended-UPDATE") {
		t.Error("FailedOperation / IntendedOperation")
	}
}
