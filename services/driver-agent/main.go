// Command driver-agent runs benchmark driver shards (YCSB) pulled from the
// JetStream work queue, starts them together at the scheduler's barrier, and
// streams interval and final results.
package main

import (
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/benchq/benchq/internal/cachedir"
	"github.com/benchq/benchq/internal/obs"
	"github.com/benchq/benchq/internal/startup"
)

func main() {
	host, _ := os.Hostname()
	fs := flag.NewFlagSet("driver-agent", flag.ExitOnError)
	var cfg Config
	natsURL := startup.NATSFlag(fs)
	fs.StringVar(&cfg.Name, "name", startup.Env("BENCHQ_AGENT_NAME", defaultName(host)), "agent name, unique (env BENCHQ_AGENT_NAME)")
	fs.StringVar(&cfg.Java, "java", startup.Env("BENCHQ_JAVA", "java"), "java binary")
	fs.StringVar(&cfg.YCSBLib, "ycsb-lib", cachedir.YCSBLib(), "YCSB jars (built by scripts/build-ycsb.sh; env BENCHQ_YCSB_LIB)")
	fs.StringVar(&cfg.Workloads, "workloads", cachedir.YCSBWorkloads(), "YCSB workload files (installed by scripts/build-ycsb.sh; env BENCHQ_YCSB_WORKLOADS)")
	fs.StringVar(&cfg.Limits.Experiment, "experiment", startup.Env("BENCHQ_AGENT_EXPERIMENT", ""), "take only shard jobs of this experiment (env BENCHQ_AGENT_EXPERIMENT; driver Jobs)")
	fs.StringVar(&cfg.Limits.Phase, "phase", startup.Env("BENCHQ_AGENT_PHASE", ""), "take only shard jobs of this phase, hand others back (env BENCHQ_AGENT_PHASE; driver Jobs)")
	bbHome := fs.String("benchbase", startup.Env("BENCHQ_BENCHBASE_HOME", ""), "Benchbase install (benchbase.jar or its directory; JAVA_HOME picks the JVM) that runs TPC-C shards; unset = the embedded engine (env BENCHQ_BENCHBASE_HOME)")
	noStandby, _ := strconv.ParseBool(startup.Env("BENCHQ_AGENT_NO_STANDBY", "false"))
	fs.BoolVar(&cfg.NoStandby, "no-standby", noStandby, "start each shard's JVM when its job arrives, keeping no standby JVM ready (env BENCHQ_AGENT_NO_STANDBY=true)")
	standbys, err := strconv.Atoi(startup.Env("BENCHQ_AGENT_STANDBYS", strconv.Itoa(DefaultStandbys)))
	if err != nil || standbys < 1 {
		fmt.Fprintf(os.Stderr, "BENCHQ_AGENT_STANDBYS: want a whole number >= 1\n")
		os.Exit(2)
	}
	fs.IntVar(&cfg.Standbys, "standbys", standbys, "standby JVMs kept ready while no experiment runs, each for one shard (env BENCHQ_AGENT_STANDBYS)")
	reuse, _ := strconv.ParseBool(startup.Env("BENCHQ_AGENT_REUSE_JVM", "false"))
	fs.BoolVar(&cfg.ReuseJVM, "reuse-jvm", reuse, "run the next shard on the JVM of the last one when it ended well: no JVM start between phases, but a warm JVM (its code compiled by earlier shards: faster than a fresh one; docs/adr/0018) (env BENCHQ_AGENT_REUSE_JVM=true)")
	sutHosts := fs.String("sut-hosts", startup.Env(startup.SUTHostsEnv, ""), "hosts, comma-separated, the agent may send a SUT's password to; a shard job naming another is dropped (env "+startup.SUTHostsEnv+"; empty: any)")
	maxShards := fs.Int("max-shards", 0, "exit 0 after this many shards ended; 0 = serve until stopped (env BENCHQ_AGENT_MAX_SHARDS; driver Jobs)")
	_ = fs.Parse(os.Args[1:])
	if cfg.Standbys < 1 {
		fmt.Fprintf(os.Stderr, "-standbys %d: want at least 1 (-no-standby keeps none)\n", cfg.Standbys)
		os.Exit(2)
	}
	cfg.NATSURL = *natsURL
	cfg.SUTHosts = parseHosts(*sutHosts)
	cfg.Limits.MaxShards = *maxShards
	if v := os.Getenv("BENCHQ_AGENT_MAX_SHARDS"); v != "" && !flagGiven(fs, "max-shards") {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			fmt.Fprintf(os.Stderr, "BENCHQ_AGENT_MAX_SHARDS=%q: want a whole number >= 0\n", v)
			os.Exit(2)
		}
		cfg.Limits.MaxShards = n
	}
	if cfg.Benchbase, err = findBenchbase(*bbHome, os.Getenv); err != nil {
		fmt.Fprintf(os.Stderr, "-benchbase: %v\n", err)
		os.Exit(2)
	}
	if cfg.SUT, err = startup.SUTAuthFromEnv(os.Getenv); err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		os.Exit(2)
	}
	log := startup.Logger("driver-agent").With("agent", cfg.Name)
	logTPCCEngine(log, cfg.Benchbase)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg.Metrics = obs.FromEnv(ctx, log)
	if err := Run(ctx, cfg, log); err != nil {
		log.Error("agent failed", "err", err)
		os.Exit(1)
	}
}

// flagGiven reports whether the command line set flag name.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// defaultName is host-pid-random: replicas of a compose service share the
// host name (the deployer's network namespace) and all run as pid 1, so
// host and pid alone would name them all alike.
func defaultName(host string) string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s-%d-%x", host, os.Getpid(), b)
}
