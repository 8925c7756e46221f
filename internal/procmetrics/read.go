package procmetrics

import (
	"errors"
	"io/fs"

	"github.com/prometheus/procfs"
)

// userHZ is the kernel's clock tick for /proc/<pid>/stat times (procfs
// assumes the same constant).
const userHZ = 100

// snapshot is every process's stat at one moment.
type snapshot struct {
	ppid map[int]int
	cpu  map[int]procCPU
}

// readSnapshot reads /proc/<pid>/stat of every process. A process that exits
// between the listing and its read is skipped.
func readSnapshot(pfs procfs.FS) (snapshot, error) {
	all, err := pfs.AllProcs()
	if err != nil {
		return snapshot{}, err
	}
	s := snapshot{ppid: make(map[int]int, len(all)), cpu: make(map[int]procCPU, len(all))}
	for _, p := range all {
		st, err := p.Stat()
		if err != nil {
			continue
		}
		s.ppid[st.PID] = st.PPID
		s.cpu[st.PID] = procCPU{
			ppid:     st.PPID,
			own:      float64(st.UTime+st.STime) / userHZ,
			children: float64(st.CUTime+st.CSTime) / userHZ,
		}
	}
	return s, nil
}

// memory is one process's (or a tree's) memory in bytes.
type memory struct {
	workingSet, cache float64
}

// readMemory reads pid's memory: proportional from smaps_rollup when it can
// be read, from status otherwise (see the package comment). ok is false when
// the process is gone.
func readMemory(pfs procfs.FS, pid int) (m memory, ok bool) {
	p, err := pfs.Proc(pid)
	if err != nil {
		return memory{}, false
	}
	if r, err := p.ProcSMapsRollup(); err == nil {
		return memoryFromRollup(r), true
	} else if !errors.Is(err, fs.ErrPermission) {
		return memory{}, false
	}
	st, err := p.NewStatus()
	if err != nil {
		return memory{}, false
	}
	return memoryFromStatus(st), true
}

func memoryFromRollup(r procfs.ProcSMapsRollup) memory {
	cache := 0.0
	if r.Pss > r.Anonymous {
		cache = float64(r.Pss - r.Anonymous)
	}
	return memory{workingSet: float64(r.Pss), cache: cache}
}

func memoryFromStatus(s procfs.ProcStatus) memory {
	return memory{workingSet: float64(s.VmRSS), cache: float64(s.RssFile + s.RssShmem)}
}
