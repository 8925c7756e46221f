// Package procmetrics exports the CPU and memory of local process trees under
// cAdvisor's metric names, so that the PromQL that reads a Kubernetes pod's
// container through the kubelet reads a local SUT or driver the same way.
//
// A component is a root pid; every process descending from it (by parent
// pid, read afresh at every scrape) belongs to it: PostgreSQL's backends
// under the postmaster, the YCSB JVM under the driver agent's shell.
//
// What each metric holds, as closely as /proc allows to what cAdvisor reads
// from the component's cgroup:
//
//   - container_cpu_usage_seconds_total: user+system time of every live
//     process of the tree (utime+stime) plus the time of the children they
//     have waited for (cutime+cstime), which is where the kernel keeps the
//     CPU of processes that already exited. A process that leaves the tree
//     without being reaped by a member of it (the root itself, a daemon that
//     re-parents to init) keeps the CPU it had at the last scrape: the
//     counter never goes down while the component is registered. CPU spent
//     between the last scrape and such an exit is not seen (nor, when both
//     happen under one parent in one scrape interval, that of a child reaped
//     at the same time).
//   - container_memory_working_set_bytes: the sum of the tree's proportional
//     set sizes (Pss, /proc/<pid>/smaps_rollup). Pss counts a page shared by
//     n processes 1/n in each, so PostgreSQL's shared buffers count once for
//     the tree rather than once per backend, as in a cgroup. Where
//     smaps_rollup cannot be read (another user's process, not root), VmRSS
//     of /proc/<pid>/status is used instead and shared pages count in every
//     process. Unlike cgroup memory, page cache filled by read() is not
//     charged to a process and is not included.
//   - container_memory_cache: the file-backed and shared-memory part of the
//     working set, Pss minus anonymous memory (clamped at 0); with the status
//     fallback RssFile+RssShmem. Anonymous memory shared copy-on-write after
//     fork makes this an underestimate.
package procmetrics
