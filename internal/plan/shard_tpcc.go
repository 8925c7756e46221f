package plan

import "github.com/benchq/benchq/contracts"

// tpccShard is one Benchbase (TPC-C) shard of a phase. The loading shard
// creates the schema and fills every warehouse; benchmarking shards all run
// the phase's duration against every warehouse, with their part of the
// terminals and of the target.
func tpccShard(r contracts.Request, kind string, warehouses int64, terminals, target int) *contracts.TPCCShard {
	s := &contracts.TPCCShard{Warehouses: int(warehouses), Terminals: terminals, StatusInterval: r.StatusInterval}
	if kind == contracts.KindRun {
		s.Target, s.DurationS, s.NewConnection = target, r.DurationS, r.NewConnection
	}
	return s
}
