// Command bench-tsdb is `make bench-tsdb`: time-series
// databases fed over carbon by our generator (internal/metricsload) in
// steps of doubling agents, as the DalmatinerDB benchmark adds haggar
// instances: a single-node VictoriaMetrics, then Graphite's carbon as one
// carbon-cache and as a carbon-relay in front of 1, 2 and 3 carbon-caches
// (-caches). Per step it prints what the generator offered and sent a
// second, what the database says it stored (its own counter:
// vm_rows_inserted_total{type="graphite"}, the points carbon's caches
// wrote, as benchq's carbon-cache.py counts them), the backlog, the read probe's latency (VictoriaMetrics;
// carbon has no query API), and the CPU of the generator (this process)
// per million points and of the database. A step keeps up when the
// generator sent 95 % of the offered load and the database stored 99 % of
// what was sent within its counter's lag of the step's end; the search
// stops at the first that does not, and names the last that did (the
// knee). Then the carbon scaling: knee per cache count, per cache, and its
// efficiency against linear (knee_n / (n × knee_1)). It prints figures and
// never fails on them; it exits 1 when it could not measure and 2 on bad
// flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/benchq/benchq/internal/benchmain"
	"github.com/benchq/benchq/internal/localdb"
	"github.com/benchq/benchq/internal/metricsload"
	"github.com/benchq/benchq/internal/procmetrics"
	"github.com/benchq/benchq/internal/version"
	"github.com/benchq/benchq/internal/whisper"
)

type config struct {
	metrics, firstAgents, maxAgents int
	step, flush                     time.Duration
	caches                          string // carbon-cache counts of the scaling, "1,2,3"
	only                            string // "", victoriametrics or graphite
}

func main() {
	var c config
	benchmain.Program{
		Name: "bench-tsdb",
		Flags: func(fs *flag.FlagSet) {
			fs.IntVar(&c.metrics, "metrics", 1000, "metrics per agent (haggar -metrics)")
			fs.IntVar(&c.firstAgents, "agents", 2, "agents of the first step; each step doubles them")
			fs.IntVar(&c.maxAgents, "max-agents", 4096, "agents of the last step at most")
			fs.DurationVar(&c.step, "step", 10*time.Second, "length of a step")
			fs.DurationVar(&c.flush, "flush-interval", time.Second, "haggar -flush-interval")
			fs.StringVar(&c.caches, "caches", "1,2,3", "carbon-caches behind the relay, per scaling run (comma separated)")
			fs.StringVar(&c.only, "only", "", "victoriametrics or graphite: that database alone")
		},
		Check: func() error {
			if c.metrics < 1 || c.firstAgents < 1 || c.maxAgents < c.firstAgents || c.step < 2*time.Second || c.flush <= 0 {
				return errors.New("want -metrics, -agents ≥ 1, -max-agents ≥ -agents, -step ≥ 2s, -flush-interval > 0")
			}
			if _, err := cacheCounts(c.caches); err != nil {
				return err
			}
			if c.only != "" && c.only != "victoriametrics" && c.only != "graphite" {
				return errors.New("-only: victoriametrics or graphite")
			}
			return nil
		},
		Measure: func(ctx context.Context, out io.Writer) error { return measure(ctx, c, out) },
	}.Main()
}

// sut is a database under test, as the steps see it.
type sut struct {
	name   string
	target string // carbon's host:port
	pids   func() []int
	stored func(context.Context) (int64, error) // its own count of stored points
	lag    time.Duration                        // how far that count stays behind
	query  string                               // its HTTP API for the probe; "": none
}

func cacheCounts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-caches: %q is not a count of carbon-caches ≥ 1", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func measure(ctx context.Context, c config, out io.Writer) error {
	dir, err := os.MkdirTemp("", "benchq-bench-tsdb-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	printMachine(out)
	fmt.Fprintf(out, "steps of %s, %d metrics per agent, flush every %s, jitter 1 flush; agents doubled each step\n", c.step, c.metrics, c.flush)
	if c.only != "graphite" {
		if err := benchVictoriaMetrics(ctx, c, filepath.Join(dir, "vm"), out); err != nil {
			return err
		}
	}
	if c.only == "victoriametrics" {
		return nil
	}
	counts, _ := cacheCounts(c.caches)
	knees := map[int]float64{}
	for _, n := range append([]int{0}, counts...) {
		knee, err := benchGraphite(ctx, c, filepath.Join(dir, fmt.Sprintf("graphite-%d", n)), n, out)
		if err != nil {
			return err
		}
		knees[n] = knee
	}
	fmt.Fprintln(out, "\ncarbon scaling (a relay in front of n carbon-caches; knee = points/s stored at the last step that kept up)")
	fmt.Fprintln(out, "caches  knee/s      per cache/s  efficiency vs linear")
	for _, n := range counts {
		eff := "-"
		if knees[counts[0]] > 0 {
			eff = fmt.Sprintf("%.2f", knees[n]/(float64(n)/float64(counts[0])*knees[counts[0]]))
		}
		fmt.Fprintf(out, "%6d  %-10.0f  %-11.0f  %s\n", n, knees[n], knees[n]/float64(n), eff)
	}
	return nil
}

func benchVictoriaMetrics(ctx context.Context, c config, dir string, out io.Writer) error {
	vm, err := localdb.StartVictoriaMetrics(ctx, dir, 0, localdb.VictoriaMetricsOptions{})
	if err != nil {
		return err
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
		defer cancel()
		_ = vm.Stop(stopCtx)
	}()
	_, err = steps(ctx, c, sut{
		name: "VictoriaMetrics " + localdb.VictoriaMetricsVersion, target: vm.GraphiteAddr(), pids: func() []int { return []int{vm.Pid} },
		stored: func(ctx context.Context) (int64, error) { return inserted(ctx, vm) },
		// Carbon has no acknowledgement: what arrives within a second of
		// the step's end counts for it; anything later is its backlog.
		lag: time.Second, query: vm.URL(),
	}, out)
	return err
}

// benchGraphite runs the steps against one carbon-cache (caches 0) or a
// relay in front of caches carbon-caches, and returns its knee.
func benchGraphite(ctx context.Context, c config, dir string, caches int, out io.Writer) (float64, error) {
	g, err := localdb.StartGraphite(ctx, dir, localdb.GraphiteOptions{Caches: caches})
	if err != nil {
		return 0, err
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		_ = g.Stop(stopCtx)
	}()
	name := "Graphite carbon " + localdb.CarbonVersion + ", one carbon-cache"
	if caches > 0 {
		name = fmt.Sprintf("Graphite carbon %s, a carbon-relay in front of %d carbon-caches", localdb.CarbonVersion, caches)
	}
	return steps(ctx, c, sut{
		name: name, target: g.Front().Addr(), pids: g.Pids,
		stored: func(context.Context) (int64, error) {
			var n int64
			for _, d := range g.WhisperDirs() {
				w, err := whisper.ReadWritten(d)
				if err != nil {
					return 0, err
				}
				n += w.Points
			}
			return n, nil
		},
		// The caches' count moves within a tenth of a second of a write.
		lag: time.Second,
	}, out)
}

// steps doubles the agents from -agents until a step does not keep up,
// all writing the series bench.agent<i>.metric<j>, so a step adds only its
// new agents' series, as the seed's added haggar instances did,
// then bisects between the last step that did and that one (down to an
// eighth of the former, three steps at most), printing each step, and
// returns the knee in points/s stored (0: none kept up).
func steps(ctx context.Context, c config, db sut, out io.Writer) (float64, error) {
	fmt.Fprintf(out, "\n%s\n", db.name)
	fmt.Fprintln(out, "agents  offered/s   sent/s      stored/s    stored/sent  backlog   probe p50/max ms  generator CPU s per M points  database cores")
	kept, failed := 0, 0
	var keptRate float64
	base, err := db.stored(ctx)
	if err != nil {
		return 0, err
	}
	var sent int64 // by every step so far
	try := func(agents int) error {
		ok, rate, err := step(ctx, c, db, agents, base, &sent, out)
		if err == nil && ok {
			kept, keptRate = agents, rate
		} else if err == nil {
			failed = agents
		}
		return err
	}
	for agents := c.firstAgents; agents <= c.maxAgents && failed == 0; agents *= 2 {
		if err := try(agents); err != nil {
			return 0, err
		}
	}
	for i := 0; i < 3 && kept > 0 && failed > 0 && failed-kept > max(1, kept/8); i++ {
		if err := try((kept + failed) / 2); err != nil {
			return 0, err
		}
	}
	if kept == 0 {
		fmt.Fprintln(out, "knee: not reached at the first step")
	} else {
		fmt.Fprintf(out, "knee: %d agents × %d metrics, %.0f points/s stored (the last step that kept up)\n", kept, c.metrics, keptRate)
	}
	return keptRate, nil
}

// step runs agents for -step, prints its line, and says whether the
// database kept up, with the points/s it stored.
func step(ctx context.Context, c config, db sut, agents int, base int64, sent *int64, out io.Writer) (bool, float64, error) {
	before, err := db.stored(ctx)
	if err != nil {
		return false, 0, err
	}
	selfCPU, dbCPU := procCPU(os.Getpid()), pidsCPU(db.pids())
	probeCtx, stopProbe := context.WithCancel(ctx)
	var latencies []float64
	probed := make(chan struct{})
	go func() {
		defer close(probed)
		if db.query == "" {
			return
		}
		metricsload.Probe{URL: db.query, Query: "bench.agent1.metric1"}.Run(probeCtx, func(r metricsload.Reading) {
			if r.Err == nil {
				latencies = append(latencies, float64(r.Latency.Microseconds())/1000)
			} else {
				latencies = append(latencies, -1)
			}
		})
	}()
	res, err := metricsload.Run(ctx, metricsload.Config{Protocol: metricsload.Carbon, Target: db.target, Agents: agents, Metrics: c.metrics,
		FlushInterval: c.flush, Jitter: c.flush, Prefix: "bench", Duration: c.step}, nil)
	stopProbe()
	<-probed
	if err != nil {
		return false, 0, err
	}
	*sent += res.Sent
	time.Sleep(db.lag)
	after, err := db.stored(ctx)
	if err != nil {
		return false, 0, err
	}
	secs := c.step.Seconds()
	selfCPU, dbCPU = procCPU(os.Getpid())-selfCPU, pidsCPU(db.pids())-dbCPU
	stored := after - before
	offered := float64(agents*c.metrics) / c.flush.Seconds()
	share := float64(stored) / float64(max(res.Sent, 1))
	probe := "none (no query API)"
	if db.query != "" {
		probe = probeFigures(latencies)
	}
	fmt.Fprintf(out, "%6d  %-10.0f  %-10.0f  %-10.0f  %-11.3f  %-8d  %-16s  %-28.2f  %.2f\n",
		agents, offered, float64(res.Sent)/secs, float64(stored)/secs, share, res.Sent-stored, probe,
		selfCPU/(float64(max(res.Sent, 1))/1e6), dbCPU/(secs+db.lag.Seconds()))
	if res.Failed > 0 {
		fmt.Fprintf(out, "        %d points failed to send: %v\n", res.Failed, res.Errors)
	}
	keptUp := float64(res.Sent)/secs >= 0.95*offered && share >= 0.99 && res.Failed == 0
	if float64(res.Sent)/secs < 0.95*offered {
		fmt.Fprintln(out, "        the generator sent less than 95 % of the offered load: the database pushed back")
	}
	if !keptUp {
		// A step that fell behind leaves a backlog the next step would
		// inherit: let the database store it first.
		if left := settle(ctx, db, base+*sent); left > 0 {
			fmt.Fprintf(out, "        %d points still not stored after waiting: the next step inherits them\n", left)
		}
		return false, 0, nil
	}
	return true, float64(stored) / secs, nil
}

// settle waits until the database's count reaches want (everything sent
// so far is stored), for 3 minutes at most, or 20 s in which it did not
// move. Carbon's count can stand still for seconds while it works off a
// backlog (its own counters wait for its busy reactor thread), so a still
// count alone does not say it is done. It returns the points left.
func settle(ctx context.Context, db sut, want int64) int64 {
	last, still := int64(-1), time.Now()
	for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline) && ctx.Err() == nil; time.Sleep(250 * time.Millisecond) {
		n, err := db.stored(ctx)
		if err != nil {
			continue
		}
		if n >= want {
			return 0
		}
		if n != last {
			last, still = n, time.Now()
		} else if time.Since(still) >= 20*time.Second {
			break
		}
	}
	n, _ := db.stored(ctx)
	return want - n
}

// inserted is VictoriaMetrics' own count of the points it took over Graphite.
func inserted(ctx context.Context, vm *localdb.VictoriaMetrics) (int64, error) {
	body, err := vm.Get(ctx, "/metrics")
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(body), "\n") {
		if rest, ok := strings.CutPrefix(l, `vm_rows_inserted_total{type="graphite"} `); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return int64(v), err
		}
	}
	return 0, errors.New(`victoria-metrics /metrics has no vm_rows_inserted_total{type="graphite"}`)
}

// probeFigures is the probe's median and maximum latency, with the failed
// readings counted apart.
func probeFigures(ms []float64) string {
	var ok []float64
	for _, v := range ms {
		if v >= 0 {
			ok = append(ok, v)
		}
	}
	if len(ok) == 0 {
		return fmt.Sprintf("none (%d failed)", len(ms))
	}
	sort.Float64s(ok)
	s := fmt.Sprintf("%.1f/%.1f", ok[len(ok)/2], ok[len(ok)-1])
	if failed := len(ms) - len(ok); failed > 0 {
		s += fmt.Sprintf(" (%d failed)", failed)
	}
	return s
}

// pidsCPU is the CPU time of pids in seconds.
func pidsCPU(pids []int) float64 {
	var s float64
	for _, p := range pids {
		s += procCPU(p)
	}
	return s
}

// procCPU is pid's CPU time in seconds; 0 when it cannot be read.
func procCPU(pid int) float64 {
	c, err := procmetrics.ReadCPU(pid)
	if err != nil {
		return 0
	}
	return c.Self().Seconds()
}

func printMachine(out io.Writer) {
	fmt.Fprintln(out, localdb.HostLine())
	fmt.Fprintf(out, "versions: benchq %s, VictoriaMetrics %s, carbon %s\n", version.String(), localdb.VictoriaMetricsVersion, localdb.CarbonVersion)
}
