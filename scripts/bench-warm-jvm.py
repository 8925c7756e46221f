#!/usr/bin/env python3
"""What a warm driver JVM changes (docs/adr/0018): the same unthrottled YCSB
job (Redis, workload A, 8 threads) on a fresh JVM, and twice on one standby
JVM (Launcher --standby, as the agent runs it with -reuse-jvm): its first job
cold, its second on code the first JIT-compiled. Prints each round's
throughputs and the ratios, with the machine and the versions.

    make bench-warm-jvm                  # ROUNDS=3 OPS=400000, about a minute
    ROUNDS=5 OPS=1000000 make bench-warm-jvm

A throwaway redis-server on a free loopback port, stopped at the end.
"""

import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time

LIB = os.environ.get("BENCHQ_YCSB_LIB", "")  # set by make bench-warm-jvm (scripts/lib/cache.sh)
if not LIB:
    sys.exit("bench-warm-jvm: BENCHQ_YCSB_LIB is not set: run it as make bench-warm-jvm")
WORKLOADS = os.path.join(os.path.dirname(__file__), "..", "services", "driver-agent", "ycsb", "workloads")
ROUNDS = int(os.environ.get("ROUNDS", "3"))
OPS = int(os.environ.get("OPS", "400000"))
LAUNCHER = ["java", "-cp", os.path.join(LIB, "*"), "io.benchq.ycsb.Launcher"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def throughput(summary):
    m = re.search(r"\[OVERALL\], Throughput\(ops/sec\), ([0-9.]+)", summary)
    if not m:
        sys.exit("no [OVERALL] Throughput in the summary:\n" + summary)
    return float(m.group(1))


def await_line(stream, want):
    for line in stream:
        if line.strip() == want:
            return
    sys.exit(f"the launcher ended before {want}")


def fresh(job):
    """One job on a JVM started with it: READY, GO, its summary at exit."""
    p = subprocess.Popen(LAUNCHER + job, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    await_line(p.stderr, "BENCHQ READY")
    p.stdin.write("GO\n")
    p.stdin.close()
    out = p.stdout.read()
    p.stderr.read()
    p.wait()
    return throughput(out)


def standby(job, jobs):
    """jobs runs of job on one standby JVM, each ended by BENCHQ DONE."""
    p = subprocess.Popen(
        LAUNCHER + ["--standby"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    rates = []
    for _ in range(jobs):
        p.stdin.write("\0".join(job) + "\n")
        p.stdin.flush()
        await_line(p.stderr, "BENCHQ READY")
        p.stdin.write("GO\n")
        p.stdin.flush()
        out = ""
        for line in p.stdout:
            if line.strip() == "BENCHQ DONE":
                break
            out += line
        await_line(p.stderr, "BENCHQ DONE")
        rates.append(throughput(out))
    p.stdin.close()
    p.wait()
    return rates


def version(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    return (r.stdout + r.stderr).splitlines()[0].strip()


def main():
    port = free_port()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False).stdout.strip()
    print(
        f"== machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; {version(['java', '-version'])}; "
        f"{version(['redis-server', '--version'])}; commit {commit}"
    )
    print(
        f"== Redis workload A, {OPS} operations, 8 threads, unthrottled; {ROUNDS} rounds of: a fresh JVM, "
        "then one standby JVM running the job twice"
    )
    with tempfile.TemporaryDirectory() as d:
        subprocess.run(
            [
                "redis-server",
                "--port",
                str(port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--daemonize",
                "yes",
                "--dir",
                d,
                "--pidfile",
                os.path.join(d, "redis.pid"),
                "--logfile",
                os.path.join(d, "redis.log"),
            ],
            check=True,
        )
        try:
            for _ in range(100):
                if (
                    subprocess.run(
                        ["redis-cli", "-p", str(port), "ping"], capture_output=True, text=True, check=False
                    ).stdout.strip()
                    == "PONG"
                ):
                    break
                time.sleep(0.05)
            common = [
                "-db",
                "io.benchq.ycsb.RedisClient",
                "-p",
                "redis.host=127.0.0.1",
                "-p",
                f"redis.port={port}",
                "-P",
                os.path.join(WORKLOADS, "workloada"),
                "-p",
                "recordcount=10000",
            ]
            fresh(["-load"] + common + ["-threads", "4"])
            job = ["-t"] + common + ["-p", f"operationcount={OPS}", "-threads", "8"]
            warm_cold, warm_fresh = [], []
            for r in range(ROUNDS):
                f = fresh(job)
                cold, warm = standby(job, 2)
                warm_cold.append(warm / cold)
                warm_fresh.append(warm / f)
                print(
                    f"   round {r + 1}: fresh JVM {f:,.0f} ops/s; one standby JVM: job 1 {cold:,.0f}, "
                    f"job 2 (warm) {warm:,.0f} ops/s; warm/cold {warm / cold:.2f}, warm/fresh {warm / f:.2f}",
                    flush=True,
                )
            print(
                f"   warm against cold: x{statistics.mean(warm_cold):.2f} (from {min(warm_cold):.2f} to {max(warm_cold):.2f}); "
                f"against fresh: x{statistics.mean(warm_fresh):.2f} (from {min(warm_fresh):.2f} to {max(warm_fresh):.2f})"
            )
        finally:
            subprocess.run(["redis-cli", "-p", str(port), "shutdown", "nosave"], capture_output=True, check=False)


if __name__ == "__main__":
    main()
