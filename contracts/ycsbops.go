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
// the failed ones, counted. A Composite operation's parts are measured in
// their own blocks too, so its block takes them out of the count
// (OperationWeight). Go, the reporter and the results database's views all
// read it from there.
type YCSBOperations struct {
	NotOperations  []string            `json:"not_operations"`
	IntendedPrefix string              `json:"intended_prefix"`
	FailedSuffix   string              `json:"failed_suffix"`
	Composite      map[string][]string `json:"composite_operations"`
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

// CountsOperation reports whether YCSB's operation block name holds
// executed operations (failed ones and composite ones included): the blocks
// whose latencies are the operations'.
func CountsOperation(name string) bool {
	r := ycsbOperations()
	return !slices.Contains(r.NotOperations, name) && !strings.HasPrefix(name, r.IntendedPrefix)
}

// OperationWeight is what each operation of block name adds to YCSB's count
// of executed operations (the count its throughput divides): 0 for a block
// that does not count, 1 for an operation, and 1 minus its number of parts
// for a composite one, whose parts are counted in their own blocks as well
// (workload F: 100 reads and 50 read-modify-writes give READ 150, UPDATE 50
// and READ-MODIFY-WRITE 50, which weigh 150 + 50 - 50 = 150 operations).
func OperationWeight(name string) int64 {
	if !CountsOperation(name) {
		return 0
	}
	return 1 - int64(len(ycsbOperations().Composite[name]))
}

// FailedOperation reports whether the block name counts failed operations
// (<OP>-FAILED).
func FailedOperation(name string) bool { return strings.HasSuffix(name, ycsbOperations().FailedSuffix) }

// IntendedOperation reports whether the block name holds the latencies of
// an operation from its intended start (Intended-<OP>).
func IntendedOperation(name string) bool {
	return strings.HasPrefix(name, ycsbOperations().IntendedPrefix)
}
