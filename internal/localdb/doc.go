// Package localdb runs real PostgreSQL and Redis servers as local processes
// from the Debian packages: the local deployer's systems under test, the
// stack's results database, and the integration tests' stores.
//
// Servers are bound to 127.0.0.1 only, live in a directory of their own
// (data, log, pid file) and are started detached (internal/procs), so they
// survive a restart of their starter; Start* on a directory whose server is
// still alive reuses it.
package localdb

import "errors"

// Loopback is where every server of this package listens: the local
// backend's SUTs' endpoints name it, and the stack's driver agents send a
// SUT's password to it only (startup.SUTHostsEnv).
const Loopback = "127.0.0.1"

// ErrNotInstalled is wrapped when a server's binaries cannot be found.
var ErrNotInstalled = errors.New("not installed")
