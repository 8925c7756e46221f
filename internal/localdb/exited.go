package localdb

import (
	"errors"
	"fmt"
	"strings"

	"github.com/benchq/benchq/internal/procs"
)

// ErrAddrInUse is wrapped when a server exited because its port was taken;
// Start* retry by themselves only on ports they picked (port 0).
var ErrAddrInUse = errors.New("address already in use")

// exited describes a server process that died during startup, with the end
// of its log, which says why.
func exited(name string, pid int, logFile string) error {
	tail := procs.LogTail(logFile, 3)
	err := fmt.Errorf("%s (pid %d) exited: %s", name, pid, orNone(tail))
	if strings.Contains(strings.ToLower(tail), "address already in use") {
		return fmt.Errorf("%w (%w)", err, ErrAddrInUse)
	}
	return err
}

func orNone(s string) string {
	if s == "" {
		return "log is empty"
	}
	return s
}
