package local

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/benchq/benchq/internal/procs"
	"github.com/benchq/benchq/services/deployer/backend"
)

// DeadSUT checks the one configuration's SUT only: a teardown must not wait
// for the lock of another configuration's deploy (which may be waiting for
// the volume this teardown releases).
func (l *Local) DeadSUT(_ context.Context, code, configuration string) (string, error) {
	dir, err := l.dir(code, configuration)
	if err != nil {
		return "", err
	}
	if d, dead := l.deadSUT(dir, code, configuration); dead {
		return d.Reason, nil
	}
	return "", nil
}

// DeadSUTs looks at every SUT this backend has made ready (an endpoint.json
// under Root) and reports those with a process gone: the server, a node of
// a cluster, a pool process or its backend. A SUT being torn down is not
// dead: Teardown holds the same lock and removes endpoint.json's directory.
func (l *Local) DeadSUTs(ctx context.Context, reported map[string]bool) ([]backend.DeadSUT, error) {
	root, err := filepath.Abs(l.Root)
	if err != nil {
		return nil, err
	}
	states, err := filepath.Glob(filepath.Join(root, "*", "*", stateFile))
	if err != nil {
		return nil, err
	}
	var dead []backend.DeadSUT
	for _, path := range states {
		dir := filepath.Dir(path)
		code, configuration := filepath.Base(filepath.Dir(dir)), filepath.Base(dir)
		if reported[code+"/"+configuration] || ctx.Err() != nil {
			continue
		}
		if d, ok := l.deadSUT(dir, code, configuration); ok {
			dead = append(dead, d)
		}
	}
	return dead, ctx.Err()
}

func (l *Local) deadSUT(dir, code, configuration string) (backend.DeadSUT, bool) {
	defer l.lock(dir)()
	st, err := readState(dir)
	if err != nil {
		return backend.DeadSUT{}, false // torn down meanwhile, or never ready
	}
	pids := st.Pids
	if len(pids) == 0 {
		pids = []int{st.Pid}
	}
	for _, pid := range pids {
		if pid <= 0 || procs.Alive(pid) {
			continue
		}
		how, ok := exitStatus(pid)
		if !ok {
			how = "exited (started by an earlier deployer process: exit status unknown)"
		}
		return backend.DeadSUT{Code: code, Configuration: configuration, DBMS: st.DBMS,
			Reason: fmt.Sprintf("%s process %d %s", st.DBMS, pid, how)}, true
	}
	return backend.DeadSUT{}, false
}

// exitStatus waits briefly for procs to have reaped a process it started:
// a killed child is seen gone (a zombie) just before its starter's wait
// records how it ended.
func exitStatus(pid int) (string, bool) {
	for end := time.Now().Add(time.Second); ; time.Sleep(10 * time.Millisecond) {
		if how, ok := procs.ExitStatus(pid); ok || time.Now().After(end) {
			return how, ok
		}
	}
}
