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

// Exited describes a server process that died during startup, with the end
// of its log, which says why (wrapping ErrAddrInUse when that was its port).
// PostgreSQL logs the failed bind a few lines before its last ones
// ("could not bind …: Address already in use", a hint, then "could not
// create any TCP/IP sockets" and its shutdown): the bind is looked for
// further back and named with them.
func Exited(name string, pid int, logFile string) error {
	tail := procs.LogTail(logFile, 3)
	var bind string
	for _, l := range strings.Split(procs.LogTail(logFile, 10), " | ") {
		if strings.Contains(strings.ToLower(l), "address already in use") {
			bind = l
		}
	}
	if bind != "" && !strings.Contains(tail, bind) {
		tail = bind + " … " + tail
	}
	err := fmt.Errorf("%s (pid %d) exited: %s", name, pid, orNone(tail))
	if bind != "" {
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
