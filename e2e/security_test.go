package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/attacks"
	"github.com/benchq/benchq/internal/bus"
	"github.com/benchq/benchq/internal/natsauth"
	"github.com/benchq/benchq/internal/resultsdb"
	"github.com/benchq/benchq/internal/testenv"
)

// security tries, on the stack as `benchq up` made it and after its
// experiments ran, the attacks docs/security.md says are refused, each with
// one role's own key: taking over another role's durable consumer in each
// subject form, updating, purging and sealing a stream, reading another
// role's inbox, the jobs, the requests and the state (internal/attacks).
// Every one must be refused. First the same attacks run against a
// nats-server that admits the same roles without permissions, where every
// one must succeed: proof that each check can see its hole.
func (s *stack) security(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	t.Run("control: no permissions", func(t *testing.T) {
		attacks.Control(t, ctx, func(conf string) string { _, url := testenv.NATSFromConfig(t, conf); return url })
	})
	if t.Failed() {
		t.Fatal("the attacks do not succeed where nothing stops them: they cannot show a hole")
	}
	attacks.Expect(t, ctx, s.info.NATSURL, func(r natsauth.Role) string { return natsauth.SeedFile(s.info.NATSKeys, r) }, nil, false)
	t.Run("a request injected through a push consumer", s.injectedRequest)
}

// injectedRequest: with the agent's key, a request put in the agents'
// bucket and delivered onto the request subject by a push consumer (the
// attack no permission stops, attacks.Inject). The requests stream stores
// it (read as admin: the hole is there), and the scheduler, which reads
// the stream's own subjects only, neither plans nor rejects it.
func (s *stack) injectedRequest(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	seed := func(r natsauth.Role) string { return natsauth.SeedFile(s.info.NATSKeys, r) }
	agent, err := bus.DialAs(s.info.NATSURL, natsauth.Agent, "e2e-injector", seed(natsauth.Agent), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	code := fmt.Sprintf("forged%d", time.Now().UnixNano()%1_000_000_000)
	body := fmt.Sprintf(`{"schema_version":1,"id":"%s","code":"%s","dbms":[{"name":"NoSuchDB"}]}`, code, code)
	if err := attacks.Inject(ctx, agent, contracts.KVAgents, code, contracts.SubjRequest, []byte(body)); err != nil {
		t.Fatalf("the injection itself: %v", err)
	}
	admin, err := bus.DialAs(s.info.NATSURL, natsauth.Admin, "e2e-injection-check", seed(natsauth.Admin), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	requests, err := admin.JS.Stream(ctx, contracts.StreamRequests)
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, func() error {
		_, err := requests.GetLastMsgForSubject(ctx, "$KV."+contracts.KVAgents+"."+code)
		return err
	})
	// The scheduler answers a request within milliseconds (planned or, for
	// this DBMS, rejected, on the code's subjects): 3 s of silence is none.
	events, err := admin.JS.OrderedConsumer(ctx, contracts.StreamEvents, jetstream.OrderedConsumerConfig{FilterSubjects: []string{contracts.ExperimentEvents(code)}})
	if err != nil {
		t.Fatal(err)
	}
	if m, err := events.Next(jetstream.FetchMaxWait(3 * time.Second)); err == nil {
		t.Errorf("the scheduler answered the injected request: %s %s", m.Subject(), m.Data())
	}
}

// databaseRoles tries, on the results database of the stack, what neither
// the collector's role nor the readers' (the reporter, the CLI) may do —
// run a program through COPY, read a server file, create a table, and for
// the readers write a row or make a temporary table — after showing that the owner can run the same
// statements (the access control test checks that each logs in with its
// own password file only).
func (s *stack) databaseRoles(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	owner, err := pgx.Connect(ctx, s.info.DBOwnerURL)
	if err != nil {
		t.Fatalf("the owner: %v", err)
	}
	defer owner.Close(ctx)
	for what, sql := range resultsdb.Forbidden {
		tx, err := owner.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, sql); err != nil {
			t.Fatalf("control: the owner cannot %s (%v), so the refusals below would prove nothing", what, err)
		}
		_ = tx.Rollback(ctx)
	}
	try := func(url, sql string) error {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatalf("log in with %s: %v", url, err)
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		return err
	}
	for role, url := range map[string]string{resultsdb.CollectorRole: s.info.CollectorURL, resultsdb.ReaderRole: s.info.DBURL} {
		if !strings.Contains(url, "user="+role) && !strings.Contains(url, role+"@") {
			t.Errorf("%s does not log in as %s", url, role)
		}
		for what, sql := range resultsdb.Forbidden {
			if err := try(url, sql); err == nil {
				t.Errorf("%s may %s", role, what)
			}
		}
	}
	if err := try(s.info.DBURL, `UPDATE experiments SET status = 'failed'`); err == nil {
		t.Error("the readers' role may write the results")
	}
	for what, sql := range resultsdb.ReaderForbidden {
		if err := try(s.info.DBOwnerURL, sql); err != nil {
			t.Fatalf("control: the owner cannot %s (%v)", what, err)
		}
		if err := try(s.info.DBURL, sql); err == nil {
			t.Errorf("the readers' role may %s", what)
		}
	}
}
