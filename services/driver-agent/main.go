// Command driver-agent runs benchmark driver shards (YCSB) pulled from the
// JetStream work queue, starts them together at the scheduler's barrier, and
// streams interval and final results.
package main

import (
	"context"
	"flag"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/benchq/benchq/internal/config"
)

func main() {
	host, _ := os.Hostname()
	cache := config.Env("BENCHQ_CACHE", filepath.Join(os.Getenv("HOME"), ".cache", "benchq"))
	fs := flag.NewFlagSet("driver-agent", flag.ExitOnError)
	var cfg Config
	fs.StringVar(&cfg.NATSURL, "nats", config.Env("BENCHQ_NATS_URL", "nats://127.0.0.1:4222"), "NATS server URL (env BENCHQ_NATS_URL)")
	fs.StringVar(&cfg.Name, "name", config.Env("BENCHQ_AGENT_NAME", host+"-"+strconv.Itoa(os.Getpid())), "agent name, unique (env BENCHQ_AGENT_NAME)")
	fs.StringVar(&cfg.Java, "java", config.Env("BENCHQ_JAVA", "java"), "java binary")
	fs.StringVar(&cfg.YCSBLib, "ycsb-lib", config.Env("BENCHQ_YCSB_LIB", filepath.Join(cache, "ycsb", "lib")), "YCSB jars (built by scripts/build-ycsb.sh)")
	fs.StringVar(&cfg.Workloads, "workloads", config.Env("BENCHQ_YCSB_WORKLOADS", "services/driver-agent/ycsb/workloads"), "YCSB workload files")
	_ = fs.Parse(os.Args[1:])
	log := config.Logger("driver-agent").With("agent", cfg.Name)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := Run(ctx, cfg, log); err != nil {
		log.Error("agent failed", "err", err)
		os.Exit(1)
	}
}
