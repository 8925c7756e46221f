package plan

import "github.com/benchq/benchq/contracts"

// ycsbShard is one YCSB shard of a phase. A loading shard inserts its part
// of the keyspace. A benchmarking shard covers the WHOLE keyspace
// (insertstart=0, insertcount=recordcount) so zipfian hot keys stay global,
// runs its part of the operations, and stops after -xsd if given
// (maxexecutiontime).
func ycsbShard(r contracts.Request, kind string, records int64, threads, target int, part Range) *contracts.YCSBShard {
	s := &contracts.YCSBShard{
		Workload:       r.Workload,
		Threads:        threads,
		Target:         target,
		RecordCount:    records,
		InsertStart:    0,
		InsertCount:    records,
		OperationCount: part.Count,
		InsertOrder:    r.InsertOrder,
		StatusInterval: r.StatusInterval,
		BatchSize:      r.BatchSize,
	}
	if kind == contracts.KindLoad {
		s.InsertStart, s.InsertCount = part.Start, part.Count
	} else {
		s.MaxExecutionS = r.DurationS
	}
	return s
}
