package plan

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/benchq/benchq/catalog"
	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/version"
)

// Expand builds the plan of a validated request (defaults are applied here).
//
// Loop order follows bexhoma: loading variants (threads × pods × factor) ×
// DBMS (× pool variants, for a DBMS with a connection pool) give one
// configuration each, repeated -nc times on a fresh SUT; inside a
// configuration the benchmarking variants (factor × threads × pods ×
// clients) run one after another.
func Expand(code string, req contracts.Request) (Plan, error) {
	r := WithDefaults(req)
	p := Plan{
		Code:           code,
		Version:        version.String(),
		Settings:       r,
		RecordCount:    millions(r.SF),
		OperationCount: millions(r.Operations),
	}
	if err := checkSettings(r); err != nil {
		return Plan{}, err
	}
	switch r.Benchmark {
	case BenchmarkBenchbase:
		p.RecordCount, p.OperationCount = int64(r.SF), 0 // warehouses; Benchbase runs for a duration
	case BenchmarkTSDB:
		p.RecordCount, p.OperationCount = int64(r.TSDB.Metrics), 0 // series per agent; generators run for a duration
	}
	if p.RecordCount < 1 {
		return Plan{}, invalid("sf", "%g million rows is less than one row; use at least 0.000001", r.SF)
	}
	pools, err := poolGrid(r)
	if err != nil {
		return Plan{}, err
	}
	for _, lt := range r.LoadingThreads {
		for _, lp := range r.LoadingPods {
			if err := checkLoaders(r, p.RecordCount, lt, lp); err != nil {
				return Plan{}, err
			}
			for _, lf := range r.LoadingFactors {
				loading := phaseSpec{kind: contracts.KindLoad, pods: lp, threads: lt, factor: lf, target: target(*r.TargetBase, lf)}
				for i, dbms := range r.DBMS {
					for _, workers := range workerGrid(r) {
						if err := addConfigurations(&p, r, i, dbms, workers, loading, pools); err != nil {
							return Plan{}, err
						}
					}
				}
			}
		}
	}
	// checkRepeats refuses the lists that would repeat a name; this is the
	// net under it: two configurations of one name share their messages'
	// ids, and the second would never run. Lower-cased: Kubernetes' names
	// of their objects are.
	names := map[string]bool{}
	for _, c := range p.Configurations {
		name := strings.ToLower(c.Name)
		if names[name] {
			return Plan{}, invalid("configurations", "two configurations would both be named %s; -nc repeats a configuration", c.Name)
		}
		names[name] = true
	}
	p.Timeouts = timeouts(r, p)
	if e := EstimateOf(p, MeasuredCosts); e.Bounded {
		p.EstimatedS = math.Round(e.TotalS*10) / 10
	}
	return p, nil
}

// workerGrid is the numbers of workers (-nw) the grid loops over: the
// request's list, or its one number (0: not a cluster).
func workerGrid(r contracts.Request) []int {
	if len(r.WorkersList) > 0 {
		return r.WorkersList
	}
	return []int{r.Workers}
}

// addConfigurations adds to p the configurations of DBMS dbms (the
// request's i-th) with workers and the loading variant: one per pool
// variant and repetition.
func addConfigurations(p *Plan, r contracts.Request, i int, dbms string, workers int, loading phaseSpec, pools []*contracts.Pool) error {
	entry, err := catalog.Lookup(dbms)
	if err == nil {
		entry, err = entry.ForWorkers(workers)
	}
	if err != nil {
		return invalid(fmt.Sprintf("dbms[%d]", i), "%v", err)
	}
	dbmsPools := []*contracts.Pool{nil}
	if HasPool(dbms) {
		dbmsPools = pools
	}
	for _, pool := range dbmsPools {
		cfgBase := configBase(r, dbms, loading, pool)
		if len(r.WorkersList) > 0 {
			cfgBase += fmt.Sprintf("-nw%d", workers)
		}
		for run := 1; run <= r.Repetitions; run++ {
			c := Configuration{
				Name:          fmt.Sprintf("%s-%d", cfgBase, run),
				Base:          cfgBase,
				DBMS:          entry.Name,
				ExperimentRun: run,
				SUT:           sutSpec(r, entry, pool, workers),
			}
			if c.Phases, err = phases(r, *p, c.Name, loading); err != nil {
				return err
			}
			if err := checkPoolInbound(c.Phases, pool); err != nil {
				return err
			}
			p.Configurations = append(p.Configurations, c)
			if r.Action == contracts.ActionRun && len(p.Configurations) > MaxConfigurations {
				return invalid("(grid)", "more than %d configurations; shorten the lists of -nlp, -nlt, -xnlf, -dbms, -nw, -xnpp/-xnpi/-xnpo or -nc", MaxConfigurations)
			}
		}
	}
	return nil
}

// configBase is bexhoma's name of a configuration (ycsb.py's name_format),
// without its repetition: DBMS-threads-pods-target of the loading variant,
// e.g. Redis-64-8-196608, named after the DBMS as the user wrote it (a
// Redis Cluster from -dbms Redis -nw 3 is Redis-…). A DBMS behind a pool
// is prefix-threads-poolpods-inbound-outbound, e.g. pgb-64-4-128-64;
// bexhoma then keeps only the first loading variant, benchq runs them all,
// so with several loading pods or factors their pods and target are named
// too (pgb-64-8-16384-4-128-64).
func configBase(r contracts.Request, dbms string, loading phaseSpec, pool *contracts.Pool) string {
	name := dbms
	if e, err := catalog.Lookup(dbms); err == nil && e.ConfigPrefix != "" {
		name = e.ConfigPrefix
	}
	if pool == nil {
		return fmt.Sprintf("%s-%d-%d-%d", name, loading.threads, loading.pods, loading.target)
	}
	if len(r.LoadingPods) > 1 || len(r.LoadingFactors) > 1 {
		return fmt.Sprintf("%s-%d-%d-%d-%d-%d-%d", name, loading.threads, loading.pods, loading.target, pool.Pods, pool.Inbound, pool.Outbound)
	}
	return fmt.Sprintf("%s-%d-%d-%d-%d", name, loading.threads, pool.Pods, pool.Inbound, pool.Outbound)
}

// phases of one configuration: its loading phase, then the benchmarking
// variants (factor × threads × pods × clients); as many as the action asks.
func phases(r contracts.Request, p Plan, cfg string, loading phaseSpec) ([]Phase, error) {
	if len(cfg) > maxNameLen-len("-999") {
		return nil, invalid("dbms", "configuration name %s is too long to name its phases and Kubernetes objects (at most %d characters)", cfg, maxNameLen-len("-999"))
	}
	out := []Phase{} // [] rather than null for action start: the schema wants a list
	if r.Action == contracts.ActionStart {
		return out, nil
	}
	out = append(out, newPhase(r, p, cfg, loading))
	if r.Action == contracts.ActionLoad {
		return out, nil
	}
	if r.Saturation != nil {
		// The search's first step; the scheduler adds the others
		// (internal/saturation).
		pods, threads := r.BenchmarkingPods[0], r.BenchmarkingThreads[0]
		if err := checkBenchmarkers(r, p.OperationCount, threads, pods, pods); err != nil {
			return nil, err
		}
		offered := target(*r.TargetBase, r.BenchmarkingFactors[0])
		if r.Benchmark == BenchmarkTSDB {
			offered = threads * r.Saturation.Quantum // the first variant's agents
		}
		return append(out, SaturationPhase(r, p, cfg, 1, offered, pods, max(1, threads/pods), r.Saturation.StepS)), nil
	}
	client := 0
	for _, bf := range r.BenchmarkingFactors {
		for _, bt := range r.BenchmarkingThreads {
			for _, bp := range r.BenchmarkingPods {
				for _, ne := range r.Clients {
					if err := checkBenchmarkers(r, p.OperationCount, bt, bp, bp*ne); err != nil {
						return nil, err
					}
					client++
					out = append(out, newPhase(r, p, cfg, phaseSpec{kind: contracts.KindRun, client: client,
						pods: bp * ne, threads: bt * ne, factor: bf, target: target(*r.TargetBase, bf)}))
				}
			}
		}
	}
	return out, nil
}

// checkPoolInbound refuses a phase that opens more client connections (one
// per driver thread or terminal) on a pool pod than the pod takes in (its
// share of -xnpi): PgBouncer would turn the rest away and the phase fail
// after its SUT was deployed.
func checkPoolInbound(phases []Phase, pool *contracts.Pool) error {
	for _, ph := range phases {
		if err := CheckPoolInbound(ph, pool); err != nil {
			return err
		}
	}
	return nil
}

// CheckPoolInbound is checkPoolInbound for one phase (nil: it fits, or
// there is no pool). A phase's connections reach the pods as the clients
// spread them (contracts.ShardPoolAddresses: round-robin over the phase,
// and a TPC-C loading shard's progress query on its first thread's pod).
func CheckPoolInbound(ph Phase, pool *contracts.Pool) error {
	if pool == nil {
		return nil
	}
	perPod := make([]int, max(pool.Pods, 1))
	conns := 0
	for i, sh := range ph.Shards {
		addrs := contracts.ShardPoolAddresses(i+1, sh.Threads(), len(perPod), sh.TPCC != nil && ph.Kind == contracts.KindLoad)
		for _, a := range addrs {
			perPod[a]++
		}
		conns += len(addrs)
	}
	busiest := slices.Max(perPod)
	if busiest <= pool.InboundPerPod() {
		return nil
	}
	threads, per := "-nbt", "one per thread"
	if ph.Kind == contracts.KindLoad {
		threads = "-nlt"
		if len(ph.Shards) > 0 && ph.Shards[0].TPCC != nil {
			per = "one per thread, and one for each shard's progress"
		}
	}
	if pool.Pods <= 1 {
		return invalid("pool_inbound", "%d inbound connections are fewer than the %d client connections of phase %s (%s): raise -xnpi to at least %d, or lower %s", pool.Inbound, conns, ph.Name, per, conns, threads)
	}
	return invalid("pool_inbound", "%d inbound connections over %d pool pods leave %d a pod, and phase %s opens %d client connections (%s), %d on one pod: raise -xnpi to at least %d, or lower %s",
		pool.Inbound, pool.Pods, pool.InboundPerPod(), ph.Name, conns, per, busiest, (busiest-1)*pool.Pods+1, threads)
}

// poolGrid is the pool loop: pods × inbound × outbound, bexhoma's order.
func poolGrid(r contracts.Request) ([]*contracts.Pool, error) {
	or := func(v []int, d int) []int {
		if len(v) == 0 {
			return []int{d}
		}
		return v
	}
	var out []*contracts.Pool
	for _, pods := range or(r.PoolPods, DefaultPool.Pods) {
		for _, in := range or(r.PoolInbound, DefaultPool.Inbound) {
			for _, outb := range or(r.PoolOutbound, DefaultPool.Outbound) {
				if in < pods || outb < pods {
					return nil, invalid("pool_inbound", "%d inbound / %d outbound connections cannot be split over %d pool pods; every pod needs at least one of each", in, outb, pods)
				}
				out = append(out, &contracts.Pool{Pods: pods, Inbound: in, Outbound: outb})
			}
		}
	}
	return out, nil
}

// sutSpec is the SUT shape of a configuration of the request with workers
// (-nw) and pool, on the catalog entry that deploys it. A master-copy
// cluster with replicas (-nwr) is one master and workers − 1 replicas
// (catalog.Entry.Shape), as bexhoma deploys it.
func sutSpec(r contracts.Request, entry catalog.Entry, pool *contracts.Pool, workers int) contracts.SUTSpec {
	s := contracts.SUTSpec{
		Workers: workers, WorkerReplicas: r.WorkerReplicas, Pool: pool,
		Resources: r.Resources, Storage: r.Storage, Monitoring: r.Monitoring,
		UseCase: fmt.Sprintf("%s-%s", r.Benchmark, strconv.FormatFloat(r.SF, 'f', -1, 64)),
	}
	if entry.MasterCopy() && r.WorkerReplicas > 0 {
		s.Workers, s.WorkerReplicas = entry.Shape(workers, r.WorkerReplicas)
	}
	if r.Nodes != nil {
		s.Node = r.Nodes.SUT
	}
	return s
}

func millions(x float64) int64 { return int64(math.Round(x * 1e6)) }

func target(base int, factor float64) int { return int(math.Round(float64(base) * factor)) }
