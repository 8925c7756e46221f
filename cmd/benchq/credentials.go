package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/benchq/benchq/internal/atomicfile"
	"github.com/benchq/benchq/internal/credentials"
	"github.com/benchq/benchq/internal/natsauth"
)

// cmdCredentials writes the compose stack's credentials into DIR/.env
// (mode 0600): an NKey per role (the public key for nats-server's
// configuration, deploy/{compose,k8s}/nats-server.conf, and the seed for the
// service of that role) and credentials.Secrets: the results database's
// passwords, the HTTP intake's token, Grafana's admin password and the
// SUTs' key. docker compose reads .env
// from the project directory: `benchq credentials deploy/compose`.
//
// An existing .env is never replaced: the database's password is set when
// its volume is first initialised, so new credentials would lock the
// services out of the results already stored.
func cmdCredentials(_ context.Context, args []string, st *State) int {
	if len(args) != 1 {
		st.Errorf("usage: benchq credentials DIR")
		return ExitUsage
	}
	if err := os.MkdirAll(args[0], 0o700); err != nil {
		st.Errorf("credentials: %v", err)
		return ExitFailed
	}
	path := filepath.Join(args[0], ".env")
	if _, err := os.Stat(path); err == nil {
		st.Errorf("%s exists; the results database's volume was initialised with its password. To start over: docker compose down -v, remove %s, run this again", path, path)
		return ExitFailed
	} else if !errors.Is(err, os.ErrNotExist) {
		st.Errorf("%v", err)
		return ExitFailed
	}
	env, err := credentials.Env()
	if err != nil {
		st.Errorf("credentials: %v", err)
		return ExitFailed
	}
	if err := atomicfile.Write(path, []byte(env), 0o600); err != nil {
		st.Errorf("credentials: %v", err)
		return ExitFailed
	}
	fmt.Fprintf(st.Stdout, "wrote %s (mode 0600): NATS keys for %d roles, the results database's three passwords (owner, collector, readers), the intake's token, Grafana's admin password and the SUTs' key\n", path, len(natsauth.Roles))
	return ExitOK
}
