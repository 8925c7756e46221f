package natsauth_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/attacks"
	"github.com/benchq/benchq/internal/bus"
	"github.com/benchq/benchq/internal/natsauth"
	"github.com/benchq/benchq/internal/testenv"
)

// authServer starts an embedded nats-server on the configuration the
// stack generates (parsed by the server itself) and returns its URL and
// the directory of the seeds.
func authServer(t *testing.T) (url, keys string) {
	t.Helper()
	dir := t.TempDir()
	keys = filepath.Join(dir, "keys")
	pubs, err := natsauth.Generate(keys)
	if err != nil {
		t.Fatal(err)
	}
	conf, err := natsauth.ServerConfig(pubs)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "nats-server.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	_, url = testenv.NATSFromConfig(t, path)
	return url, keys
}

// as connects as role and records the permission violations the server
// reports to it.
type conn struct {
	b    *bus.Bus
	mu   sync.Mutex
	errs []string
}

func as(t *testing.T, url, keys string, role natsauth.Role) *conn {
	t.Helper()
	c := &conn{}
	b, err := bus.DialAs(url, role, "test-"+string(role), natsauth.SeedFile(keys, role), testenv.Logger(t, string(role)))
	if err != nil {
		t.Fatalf("connect as %s: %v", role, err)
	}
	b.NC.SetErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.errs = append(c.errs, err.Error())
	})
	t.Cleanup(b.Close)
	c.b = b
	return c
}

// denied reports whether the server said it refused subject.
func (c *conn) denied(t *testing.T, subject string) bool {
	t.Helper()
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		_ = c.b.NC.Flush()
		c.mu.Lock()
		for _, e := range c.errs {
			if strings.Contains(e, "ermissions") && strings.Contains(e, subject) {
				c.mu.Unlock()
				return true
			}
		}
		c.mu.Unlock()
	}
	return false
}

func TestEachRoleDoesItsPartAndNoMore(t *testing.T) {
	url, keys := authServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// Anonymous connections and unknown keys are refused.
	if nc, err := nats.Connect(url); err == nil {
		nc.Close()
		t.Error("an anonymous connection was accepted")
	}
	other := t.TempDir()
	if _, err := natsauth.Generate(other); err != nil {
		t.Fatal(err)
	}
	if b, err := bus.DialAs(url, natsauth.Scheduler, "stranger", natsauth.SeedFile(other, natsauth.Scheduler), nil); err == nil {
		b.Close()
		t.Error("a key the server does not know was accepted")
	}

	// Only admin declares the streams and buckets.
	if err := as(t, url, keys, natsauth.Admin).b.Setup(ctx); err != nil {
		t.Fatalf("admin cannot declare the streams and buckets: %v", err)
	}
	sched := as(t, url, keys, natsauth.Scheduler)
	agent := as(t, url, keys, natsauth.Agent)
	client := as(t, url, keys, natsauth.Client)

	// What the client sees of an experiment's events, and its live
	// progress (benchq's CLI follows the intervals).
	seen := make(chan *nats.Msg, 16)
	stop, err := client.b.Listen(seen, "benchq.exp.>")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	intervals := make(chan *nats.Msg, 4)
	stopIntervals, err := client.b.Listen(intervals, contracts.TopicInterval.For("c1"))
	if err != nil {
		t.Fatal(err)
	}
	defer stopIntervals()

	// The agent publishes READY and results; the scheduler's events and a
	// request are refused to it.
	code := "c1"
	ready := contracts.TopicBarrierReady.For(code)
	if err := agent.b.NC.Publish(ready, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	for _, subject := range []string{contracts.TopicPhaseDone.For(code), contracts.TopicBarrierGo.For(code), contracts.TopicSUTReady.For(code), contracts.SubjRequest} {
		_ = agent.b.NC.Publish(subject, []byte("{}"))
		if !agent.denied(t, subject) {
			t.Errorf("the agent may publish %s", subject)
		}
	}
	select {
	case m := <-seen:
		if m.Subject != ready {
			t.Errorf("the client saw %s first, want %s", m.Subject, ready)
		}
	case <-time.After(5 * time.Second):
		t.Errorf("the client never saw the agent's %s", ready)
	}
	select {
	case m := <-seen:
		t.Errorf("a refused publish was delivered: %s", m.Subject)
	case <-time.After(200 * time.Millisecond):
	}
	if _, err := agent.b.JS.Publish(ctx, contracts.Subject(contracts.SubjFinal, code, "p1", "0"), []byte("{}")); err != nil {
		t.Errorf("the agent cannot store a final result: %v", err)
	}
	if _, err := agent.b.JS.Publish(ctx, contracts.Subject(contracts.SubjInterval, code, "p1", "0"), []byte("{}")); err != nil {
		t.Errorf("the agent cannot publish an interval: %v", err)
	}
	select {
	case <-intervals:
	case <-time.After(5 * time.Second):
		t.Error("the client does not see the intervals (benchq's live progress)")
	}
	if client.denied(t, "benchq.results") {
		t.Error("the client may not subscribe to the results")
	}
	signer, err := contracts.NewSigner()
	if err != nil {
		t.Fatal(err)
	}
	agent.b.Signer = signer
	if err := agent.b.PutHeartbeat(ctx, contracts.Heartbeat{Name: "a1", At: time.Now()}); err != nil {
		t.Errorf("the agent cannot beat: %v", err)
	}

	// The client: requests and stops, never events or state.
	if _, err := client.b.JS.Publish(ctx, contracts.SubjRequest, []byte("{}")); err != nil {
		t.Errorf("the client cannot publish a request: %v", err)
	}
	for _, subject := range []string{contracts.TopicPhaseDone.For(code), contracts.SubjShard, "$KV." + contracts.KVExperiments + "." + code} {
		_ = client.b.NC.Publish(subject, []byte("{}"))
		if !client.denied(t, subject) {
			t.Errorf("the client may publish %s", subject)
		}
	}
	beats, err := bus.Heartbeats(ctx, client.b.JS)
	if err != nil || len(beats) != 1 {
		t.Errorf("the client reads heartbeats %v, %v; want the agent's one", beats, err)
	}

	// The scheduler asks the deployer which driver pods run (a core NATS
	// request); the deployer answers it, and may not otherwise publish on
	// the scheduler's inbox; the agents may not ask.
	dep := as(t, url, keys, natsauth.Deployer)
	sub, err := dep.b.NC.Subscribe(contracts.SubjDriverPods, func(m *nats.Msg) { _ = m.Respond([]byte(`{"running": ["p1"]}`)) })
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	// The subscription must have reached the server before the request,
	// or the request finds no responder (it did once in CI).
	if err := dep.b.NC.Flush(); err != nil {
		t.Fatal(err)
	}
	if m, err := sched.b.NC.Request(contracts.SubjDriverPods, []byte(`{"pods": ["p1"]}`), 2*time.Second); err != nil || string(m.Data) != `{"running": ["p1"]}` {
		t.Errorf("the scheduler asked the deployer which pods run: %v", err)
	}
	spoof := natsauth.InboxPrefix(natsauth.Scheduler) + ".spoof"
	_ = dep.b.NC.Publish(spoof, []byte("{}"))
	if !dep.denied(t, spoof) {
		t.Error("the deployer may publish on the scheduler's inbox unasked")
	}
	_ = agent.b.NC.Publish(contracts.SubjDriverPods, []byte("{}"))
	if !agent.denied(t, contracts.SubjDriverPods) {
		t.Errorf("the agent may ask %s", contracts.SubjDriverPods)
	}

	// Nobody but its owner may take over a durable consumer, and only the
	// services may touch the streams' configuration; nobody may delete one.
	short, cancelShort := context.WithTimeout(ctx, 3*time.Second)
	defer cancelShort()
	if _, err := agent.b.JS.CreateOrUpdateConsumer(short, contracts.StreamEvents, jetstream.ConsumerConfig{Durable: contracts.DurableSchedulerEvents, AckPolicy: jetstream.AckExplicitPolicy}); err == nil {
		t.Error("the agent took over the scheduler's durable consumer")
	}
	if err := client.b.JS.DeleteStream(short, contracts.StreamEvents); err == nil {
		t.Error("the client deleted the events stream")
	}
	if err := sched.b.JS.DeleteStream(short, contracts.StreamEvents); err == nil {
		t.Error("the scheduler deleted the events stream")
	}
	if _, err := client.b.JS.Stream(ctx, contracts.StreamEvents); err != nil {
		t.Errorf("the events stream: %v", err)
	}
	for _, r := range attacks.Roles {
		short, cancel := context.WithTimeout(ctx, time.Second)
		if err := as(t, url, keys, r).b.Setup(short); err == nil {
			t.Errorf("%s may declare streams", r)
		}
		cancel()
	}
}

// TestAttacksAreRefused: every attack of internal/attacks is refused on
// the permissions the stack generates, and every one succeeds on a server
// that admits the same roles without permissions (so the check can fail).
// The e2e security test runs the same attacks on the real stack.
func TestAttacksAreRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	attacks.Control(t, ctx, func(conf string) string { _, url := testenv.NATSFromConfig(t, conf); return url })

	url, keys := authServer(t)
	if err := attacks.Prepare(ctx, as(t, url, keys, natsauth.Admin).b); err != nil {
		t.Fatal(err)
	}
	attacks.Expect(t, ctx, url, func(r natsauth.Role) string { return natsauth.SeedFile(keys, r) }, nil, false)
}

func TestSeedFilesAreTheOwnersOnly(t *testing.T) {
	keys := t.TempDir()
	if _, err := natsauth.Generate(keys); err != nil {
		t.Fatal(err)
	}
	for _, r := range natsauth.Roles {
		fi, err := os.Stat(natsauth.SeedFile(keys, r))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", r, fi.Mode().Perm())
		}
	}
	path := natsauth.SeedFile(keys, natsauth.Agent)
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := natsauth.ReadSeed(path); err == nil || !strings.Contains(err.Error(), "chmod 600") || !errors.Is(err, natsauth.ErrSeed) {
		t.Errorf("a seed readable by others: %v, want it refused as ErrSeed naming the fix", err)
	}
	if err := os.WriteFile(path, []byte("not a seed\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := natsauth.ReadSeed(path); err == nil {
		t.Error("a file that is no seed was accepted")
	} else if errors.Is(err, os.ErrNotExist) || !errors.Is(err, natsauth.ErrSeed) {
		t.Error(err)
	}
}

// A seed comes from a file (the embedded stack) or the environment (the
// compose stack's .env), never both.
func TestSeedFromEnv(t *testing.T) {
	keys := t.TempDir()
	if _, err := natsauth.Generate(keys); err != nil {
		t.Fatal(err)
	}
	file := natsauth.SeedFile(keys, natsauth.Agent)
	fromFile, err := natsauth.ReadSeed(file)
	if err != nil {
		t.Fatal(err)
	}
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	if seed, err := natsauth.SeedFromEnv(env(nil)); seed != nil || err != nil {
		t.Errorf("nothing set: %q, %v; want anonymous", seed, err)
	}
	if seed, err := natsauth.SeedFromEnv(env(map[string]string{natsauth.SeedEnv: file})); err != nil || string(seed) != string(fromFile) {
		t.Errorf("from the file: %v", err)
	}
	if seed, err := natsauth.SeedFromEnv(env(map[string]string{natsauth.SeedValueEnv: string(fromFile) + "\n"})); err != nil || string(seed) != string(fromFile) {
		t.Errorf("from the value: %v", err)
	}
	if _, err := natsauth.SeedFromEnv(env(map[string]string{natsauth.SeedEnv: file, natsauth.SeedValueEnv: string(fromFile)})); err == nil || !strings.Contains(err.Error(), "keep one") {
		t.Errorf("both set: %v", err)
	}
	if _, err := natsauth.SeedFromEnv(env(map[string]string{natsauth.SeedValueEnv: "UABC"})); err == nil || !strings.Contains(err.Error(), "$"+natsauth.SeedValueEnv) {
		t.Errorf("a value that is no seed: %v", err)
	}
	// The deployer hands on what it was given for agents, as the agent's own.
	if got := natsauth.AgentEnv(env(map[string]string{natsauth.AgentSeedValueEnv: "SUX"})); len(got) != 1 || got[0] != natsauth.SeedValueEnv+"=SUX" {
		t.Errorf("agent env from a value: %v", got)
	}
	if got := natsauth.AgentEnv(env(map[string]string{natsauth.AgentSeedEnv: file})); len(got) != 1 || got[0] != natsauth.SeedEnv+"="+file {
		t.Errorf("agent env from a file: %v", got)
	}
}
