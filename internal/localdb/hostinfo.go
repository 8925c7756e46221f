package localdb

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// HostInfo returns the facts bexhoma reports per connection about the host
// a SUT runs on: RAM (bytes), CPU (model name), Cores, host (kernel
// release), node (hostname), disk (free MB of the filesystem holding /;
// callers with a data directory put DiskFreeMB of it instead) and cpu_list
// (the CPUs this process may run on, e.g. "0-1"). Facts that cannot be read
// are left out.
func HostInfo() map[string]any {
	info := map[string]any{"Cores": runtime.NumCPU()}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		if ram, ok := parseMemTotal(string(b)); ok {
			info["RAM"] = ram
		}
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		if cpu := parseCPUModel(string(b)); cpu != "" {
			info["CPU"] = cpu
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		info["host"] = strings.TrimSpace(string(b))
	}
	if h, err := os.Hostname(); err == nil {
		info["node"] = h
	}
	if mb, err := DiskFreeMB("/"); err == nil {
		info["disk"] = mb
	}
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		if l := parseCPUList(string(b)); l != "" {
			info["cpu_list"] = l
		}
	}
	return info
}

// DiskFreeMB is the space available to unprivileged users on the
// filesystem holding path, in MiB.
func DiskFreeMB(path string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * st.Bsize / (1 << 20), nil
}

// parseMemTotal reads MemTotal (kB) from /proc/meminfo, in bytes.
func parseMemTotal(meminfo string) (int64, bool) {
	sc := bufio.NewScanner(strings.NewReader(meminfo))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			f := strings.Fields(v)
			if len(f) == 0 {
				return 0, false
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return 0, false
			}
			return kb * 1024, true
		}
	}
	return 0, false
}

// parseCPUModel returns the first "model name" of /proc/cpuinfo.
func parseCPUModel(cpuinfo string) string {
	sc := bufio.NewScanner(strings.NewReader(cpuinfo))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// parseCPUList returns Cpus_allowed_list of /proc/<pid>/status.
func parseCPUList(status string) string {
	sc := bufio.NewScanner(strings.NewReader(status))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// HostLine is HostInfo as one line, its keys sorted: "machine: cores=2 ..."
// (what the bench programs print first).
func HostLine() string {
	info := HostInfo()
	keys := make([]string, 0, len(info))
	for k := range info {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("machine:")
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%v", k, info[k])
	}
	return b.String()
}
