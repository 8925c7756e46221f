package startup

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/benchq/benchq/internal/atomicfile"
)

// Every system under test requires a password of its clients, and each has
// its own: a password seen once (a driver's properties file, an exporter's
// environment, a SUT's own configuration) opens that SUT only, never
// another experiment's or another configuration's.
//
// Locally and in compose the stack holds one key (SUTKeyEnv, or
// SUTKeyFileEnv naming a file of mode 0600: benchq up writes
// $BENCHQ_HOME/auth/sut.key) from which the deployer, the exporters it
// starts and the driver agents derive each SUT's password (SUTPasswordOf).
// The key itself opens no SUT. On Kubernetes the deployer gives each SUT a
// Secret of its own with a random password, which the SUT's pods, its
// exporters and its driver pods read as SUTPasswordEnv. Neither a key nor
// a password travels in a message.
const (
	SUTKeyEnv      = "BENCHQ_SUT_KEY"
	SUTKeyFileEnv  = "BENCHQ_SUT_KEY_FILE"
	SUTPasswordEnv = "BENCHQ_SUT_PASSWORD"
	// SUTHostsEnv lists the hosts a driver agent may send a SUT's password
	// to, comma-separated: the stack's agents get localdb.Loopback (the
	// local backend's SUTs listen there), a driver Job's pods their SUT's
	// Service. Unset: any. A shard job's endpoint names where the agent
	// connects with the password it fills in, and the agents' NATS key may
	// publish shard jobs (one of another phase is handed back): a job
	// forged with that key could name a host of its own. An agent drops a
	// job whose endpoint is not among its hosts (docs/security.md).
	SUTHostsEnv = "BENCHQ_AGENT_SUT_HOSTS"
)

// SUTAuth is how a process learns a SUT's password: from the stack's key,
// or as the one SUT's password it was given. The zero value knows none
// (SUTs then take logins without one, trusting loopback: tests only).
type SUTAuth struct {
	key      string // the stack's key: every SUT's password derives from it
	password string // one SUT's password, as given (a Kubernetes driver pod)
}

// SUTKey is the SUTAuth of a process holding the stack's key.
func SUTKey(key string) SUTAuth { return SUTAuth{key: key} }

// SUTAuthFromEnv reads the SUTs' key or one SUT's password from the
// environment (getenv: os.Getenv): at most one of SUTKeyFileEnv, SUTKeyEnv
// and SUTPasswordEnv.
func SUTAuthFromEnv(getenv func(string) string) (SUTAuth, error) {
	file, key, password := getenv(SUTKeyFileEnv), strings.TrimSpace(getenv(SUTKeyEnv)), strings.TrimSpace(getenv(SUTPasswordEnv))
	given := 0
	for _, v := range []string{file, key, password} {
		if v != "" {
			given++
		}
	}
	if given > 1 {
		return SUTAuth{}, fmt.Errorf("the SUTs' credentials are given %d times (%s, %s, %s): keep one", given, SUTKeyFileEnv, SUTKeyEnv, SUTPasswordEnv)
	}
	if file != "" {
		b, err := atomicfile.ReadSecret(file, "SUT key")
		if err != nil {
			return SUTAuth{}, err
		}
		if len(b) == 0 {
			return SUTAuth{}, fmt.Errorf("SUT key file %s is empty", file)
		}
		key = string(b)
	}
	return SUTAuth{key: key, password: password}, nil
}

// HasKey reports whether a holds the stack's key (and can tell every SUT's
// password), not merely one SUT's password.
func (a SUTAuth) HasKey() bool { return a.key != "" }

// None reports whether a knows no password at all.
func (a SUTAuth) None() bool { return a.key == "" && a.password == "" }

// PasswordOf is the password of configuration's SUT in experiment code: the
// one derived from the key, or the one SUT's password a was given ("":
// none).
func (a SUTAuth) PasswordOf(code, configuration string) string {
	if a.key == "" {
		return a.password
	}
	return SUTPasswordOf(a.key, code, configuration)
}

// SUTPasswordOf derives the password of configuration's SUT in experiment
// code from the stack's key: HMAC-SHA256 over both names, 43 characters of
// unpadded base64url (no character a pgpass file, a URL's user info or a
// redis.conf has to quote). Whoever lacks the key cannot tell one SUT's
// password from another's.
func SUTPasswordOf(key, code, configuration string) string {
	mac := hmac.New(sha256.New, []byte(key))
	mac.Write([]byte("benchq sut password\x00" + code + "\x00" + configuration))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}
