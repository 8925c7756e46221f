package localdb

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A server's log as it ends when it could not start, and whether Exited
// finds its port taken and names the line that says so.
func TestExitedFindsTheTakenPort(t *testing.T) {
	for _, c := range []struct {
		name, log string
		inUse     bool
	}{
		{"postgres, the bind five lines up", `LOG:  starting PostgreSQL 15.14
LOG:  could not bind IPv4 address "127.0.0.1": Address already in use
HINT:  Is another postmaster already running on port 5432? If not, wait a few seconds and retry.
WARNING:  could not create listen socket for "127.0.0.1"
FATAL:  could not create any TCP/IP sockets
LOG:  database system is shut down
`, true},
		{"nats-server, the bind last", `[1] [INF] Starting JetStream
[1] [FTL] Error listening on port: 127.0.0.1:4222, "listen tcp 127.0.0.1:4222: bind: address already in use"
`, true},
		{"another reason", `FATAL:  data directory "/x" has wrong ownership
`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "server.log")
			if err := os.WriteFile(log, []byte(c.log), 0o600); err != nil {
				t.Fatal(err)
			}
			err := Exited("server", 42, log)
			if errors.Is(err, ErrAddrInUse) != c.inUse {
				t.Fatalf("Exited: %v, want ErrAddrInUse %v", err, c.inUse)
			}
			if c.inUse && !strings.Contains(strings.ToLower(err.Error()), "bind") {
				t.Errorf("Exited: %v, want the failed bind named", err)
			}
			if !strings.Contains(err.Error(), "server (pid 42) exited") {
				t.Errorf("Exited: %v, want the process named", err)
			}
		})
	}
}
