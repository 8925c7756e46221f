package procs

import (
	"fmt"
	"net"
	"sync"
)

// handedOut are the ports FreePort returned in this process: the kernel
// may give a port again as soon as its probe closed, and two picks for one
// process (the stack's HTTP intake and the scheduler's /metrics) once got
// the same port.
var (
	handedMu  sync.Mutex
	handedOut = map[int]bool{}
)

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago and
// that it has not returned before in this process. Another process may
// take it before the caller binds it; callers that start a server on it
// must treat "address in use" as retryable.
func FreePort() (int, error) {
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		handedMu.Lock()
		again := handedOut[port]
		handedOut[port] = true
		handedMu.Unlock()
		if !again {
			return port, nil
		}
	}
	return 0, fmt.Errorf("free port: the kernel kept offering ports already handed out")
}
