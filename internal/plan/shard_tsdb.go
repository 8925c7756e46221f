package plan

import (
	"strconv"

	"github.com/benchq/benchq/contracts"
)

// tsdbShard is one metrics generator (benchmark tsdb) of a phase: its part
// of the phase's agents, each with the request's metrics. Generator g
// writes the series <prefix><g>.agent<i>.metric<j>, as the seed numbered
// its haggar instances' prefixes; so a loading generator creates the
// series that the benchmarking generator of the same number writes, when
// their agents agree (-nlt/-nlp as -nbt/-nbp, the default). A loading
// generator writes one point of each of its series; a benchmarking one
// flushes for the request's duration.
func tsdbShard(r contracts.Request, kind string, generator, agents int) *contracts.TSDBShard {
	t := r.TSDB
	s := &contracts.TSDBShard{
		Protocol: t.Protocol, Agents: agents, Metrics: t.Metrics, FlushIntervalMS: t.FlushIntervalMS,
		JitterMS: *t.JitterMS, SpawnIntervalMS: *t.SpawnIntervalMS, Prefix: t.Prefix + strconv.Itoa(generator),
		StatusInterval: r.StatusInterval,
	}
	if kind == contracts.KindRun {
		s.DurationS = r.DurationS
	} else {
		s.JitterMS, s.SpawnIntervalMS = 0, 0 // one write each, at once
	}
	return s
}
