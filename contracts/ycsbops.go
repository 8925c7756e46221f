package contracts

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"
)

// YCSBOperations is the one rule for which of YCSB's operation blocks count
// executed operations (names.json, "ycsb_operations"): every block except
// NotOperations and the IntendedPrefix twins; the FailedSuffix blocks are
// the failed ones, counted. Go, the reporter and the results database's
// views all read it from there.
type YCSBOperations struct {
	NotOperations  []string `json:"not_operations"`
	IntendedPrefix string   `json:"intended_prefix"`
	FailedSuffix   string   `json:"failed_suffix"`
}

var ycsbOperations = sync.OnceValue(func() YCSBOperations {
	var n struct {
		Ops YCSBOperations `json:"ycsb_operations"`
	}
	if err := json.Unmarshal(Names(), &n); err != nil || n.Ops.IntendedPrefix == "" || n.Ops.FailedSuffix == "" {
		panic("contracts/names.json: ycsb_operations is missing or malformed") // embedded: a build that passed its tests has it
	}
	return n.Ops
})

// YCSBOperationRule is the rule as names.json holds it.
func YCSBOperationRule() YCSBOperations { return ycsbOperations() }

// CountsOperation reports whether YCSB's operation block name counts
// executed operations, failed ones included (as YCSB's throughput does).
func CountsOperation(name string) bool {
	r := ycsbOperations()
	return !slices.Contains(r.NotOperations, name) && !strings.HasPrefix(name, r.IntendedPrefix)
}

// FailedOperation reports whether the block name counts failed operations
// (<OP>-FAILED).
func FailedOperation(name string) bool { return strings.HasSuffix(name, ycsbOperations().FailedSuffix) }

// IntendedOperation reports whether the block name holds the latencies of
// an operation from its intended start (Intended-<OP>).
func IntendedOperation(name string) bool {
	return strings.HasPrefix(name, ycsbOperations().IntendedPrefix)
}
