// Command bench-tsdb is the first part of `make bench-tsdb` (issue 30): a
// single-node VictoriaMetrics, fed over carbon by our generator
// (internal/metricsload) in steps of more agents, as the DalmatinerDB
// benchmark adds haggar instances. Per step it prints what the generator
// sent a second, what VictoriaMetrics says it ingested (its own
// vm_rows_inserted_total{type="graphite"}), the backlog, the read probe's
// latency, and the CPU of the generator (this process) per million points
// and of VictoriaMetrics. It stops after the first step whose ingest falls
// below 99 % of what was sent, and names the last step that kept up. It
// prints figures and never fails on them; it exits 1 when it could not
// measure and 2 on bad flags.
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
)

type config struct {
	metrics, firstAgents, maxAgents int
	step, flush                     time.Duration
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
		},
		Check: func() error {
			if c.metrics < 1 || c.firstAgents < 1 || c.maxAgents < c.firstAgents || c.step < 2*time.Second || c.flush <= 0 {
				return errors.New("want -metrics, -agents ≥ 1, -max-agents ≥ -agents, -step ≥ 2s, -flush-interval > 0")
			}
			return nil
		},
		Measure: func(ctx context.Context, out io.Writer) error { return measure(ctx, c, out) },
	}.Main()
}

func measure(ctx context.Context, c config, out io.Writer) error {
	dir, err := os.MkdirTemp("", "benchq-bench-tsdb-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	vm, err := localdb.StartVictoriaMetrics(ctx, filepath.Join(dir, "vm"), 0, localdb.VictoriaMetricsOptions{})
	if err != nil {
		return err
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
		defer cancel()
		_ = vm.Stop(stopCtx)
	}()
	printMachine(out)
	fmt.Fprintf(out, "steps of %s, %d metrics per agent, flush every %s, jitter 1 flush; agents doubled each step\n", c.step, c.metrics, c.flush)
	fmt.Fprintln(out, "agents  sent/s      ingested/s  ingest/sent  backlog   probe p50/max ms  generator CPU s per M points  VictoriaMetrics cores")

	kept := 0
	var keptRate float64
	for agents := c.firstAgents; agents <= c.maxAgents; agents *= 2 {
		before, err := inserted(ctx, vm)
		if err != nil {
			return err
		}
		selfCPU, vmCPU := procCPU(os.Getpid()), procCPU(vm.Pid)
		probeCtx, stopProbe := context.WithCancel(ctx)
		var latencies []float64
		probed := make(chan struct{})
		go func() {
			defer close(probed)
			metricsload.Probe{URL: vm.URL(), Query: fmt.Sprintf("step%d.agent1.metric1", agents)}.Run(probeCtx, func(r metricsload.Reading) {
				if r.Err == nil {
					latencies = append(latencies, float64(r.Latency.Microseconds())/1000)
				} else {
					latencies = append(latencies, -1)
				}
			})
		}()
		res, err := metricsload.Run(ctx, metricsload.Config{Protocol: metricsload.Carbon, Target: vm.GraphiteAddr(), Agents: agents, Metrics: c.metrics,
			FlushInterval: c.flush, Jitter: c.flush, Prefix: fmt.Sprintf("step%d", agents), Duration: c.step}, nil)
		stopProbe()
		<-probed
		if err != nil {
			return err
		}
		// Carbon has no acknowledgement: what arrives within a second of
		// the step's end counts for it; anything later is its backlog.
		time.Sleep(time.Second)
		after, err := inserted(ctx, vm)
		if err != nil {
			return err
		}
		secs := c.step.Seconds()
		selfCPU, vmCPU = procCPU(os.Getpid())-selfCPU, procCPU(vm.Pid)-vmCPU
		ingested := after - before
		share := float64(ingested) / float64(max(res.Sent, 1))
		fmt.Fprintf(out, "%6d  %-10.0f  %-10.0f  %-11.3f  %-8d  %-16s  %-28.2f  %.2f\n",
			agents, float64(res.Sent)/secs, float64(ingested)/secs, share, res.Sent-ingested, probeFigures(latencies),
			selfCPU/(float64(max(res.Sent, 1))/1e6), vmCPU/(secs+1))
		if res.Failed > 0 {
			fmt.Fprintf(out, "        %d points failed to send: %v\n", res.Failed, res.Errors)
		}
		if share < 0.99 || res.Failed > 0 {
			break
		}
		kept, keptRate = agents, float64(ingested)/secs
	}
	if kept == 0 {
		fmt.Fprintln(out, "knee: not reached at the first step (ingest below 99 % of sent)")
	} else {
		fmt.Fprintf(out, "knee: %d agents × %d metrics, %.0f points/s ingested (the last step whose ingest kept within 1 %% of sent)\n", kept, c.metrics, keptRate)
	}
	return nil
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
	fmt.Fprintf(out, "versions: benchq %s, VictoriaMetrics %s\n", version.String(), localdb.VictoriaMetricsVersion)
}
