package localdb

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/benchq/benchq/internal/procs"
)

// TestSUTsRunAsAnAccountThatOwnsNothingOfTheStack: run as root, a SUT
// started with OSUser SUTUser (as the local backend starts them) runs as
// benchq-sut, and its superuser's COPY ... FROM PROGRAM — which runs as the
// server's OS user — reads neither a results database's data (postgres')
// nor a secret of root's. The same COPY on a server run as postgres (how
// the SUTs ran before) reads that database's data: the check can fail.
func TestSUTsRunAsAnAccountThatOwnsNothingOfTheStack(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the SUTs run as another account only when benchq runs as root")
	}
	if _, err := procs.LookupUser(SUTUser); err != nil {
		t.Fatalf("no %s account (make bootstrap creates it): %v", SUTUser, err)
	}
	ctx := testCtx(t, 3*time.Minute)
	results := startTestPostgres(t, ctx, serverDir(t, "results"), PGOptions{Unsafe: true})
	sut := startTestPostgres(t, ctx, serverDir(t, "sut"), PGOptions{Unsafe: true, OSUser: SUTUser})
	secretDir := filepath.Join(t.TempDir(), "auth")
	if err := os.Mkdir(secretDir, 0o700); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(secretDir, "key")
	if err := os.WriteFile(secret, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// program runs cmd through the server at url: its output, or the error.
	program := func(url, cmd string) (string, error) {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `CREATE TEMP TABLE out (line text)`); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, `COPY out FROM PROGRAM '`+strings.ReplaceAll(cmd, "'", "''")+`'`); err != nil {
			return "", err
		}
		var s string
		err = conn.QueryRow(ctx, `SELECT coalesce(string_agg(line, ' '), '') FROM out`).Scan(&s)
		return s, err
	}
	if who, err := program(sut.URL(), "id -un"); err != nil || who != SUTUser {
		t.Errorf("the SUT runs programs as %q (%v), want %s", who, err, SUTUser)
	}
	version := filepath.Join(results.Dir, "PG_VERSION")
	if v, err := program(results.URL(), "cat "+version); err != nil || v == "" {
		t.Fatalf("control: a server run as postgres cannot read its own data (%q, %v): the refusals below would prove nothing", v, err)
	}
	for what, cmd := range map[string]string{"the results database's data": "cat " + version, "a secret of root's": "cat " + secret} {
		if out, err := program(sut.URL(), cmd); err == nil {
			t.Errorf("a SUT superuser reads %s: %q", what, out)
		}
	}

	// Redis too runs as the SUTs' account.
	r, err := startTestRedis(t, ctx, serverDir(t, "redis-sut"), 0, RedisOptions{OSUser: SUTUser})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := procs.LookupUser(SUTUser)
	status, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(r.Pid), "status"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(line, "Uid:") && strings.Fields(line)[1] != strconv.Itoa(int(u.UID)) {
			t.Errorf("redis-server runs as uid %s, want %s's %d", strings.Fields(line)[1], SUTUser, u.UID)
		}
	}
}
