// Package attacks are the attacks on benchq's NATS permissions that
// docs/security.md says are refused, each tried with one role's own key:
// taking over another role's durable consumer (in every subject form),
// changing, purging or sealing a stream, and reading what another role
// reads (jobs, requests, state, replies on its inbox).
//
// Each attack reports whether the server admitted it. The e2e security
// test runs them against the running stack, where every one must be
// refused, and first against a nats-server that admits the same keys
// without permissions, where every one must succeed: a test that could not
// see the hole would pass there too.
package attacks

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/bus"
	"github.com/benchq/benchq/internal/natsauth"
)

// Conn is a role's connection that records what the server refused it.
type Conn struct {
	Role natsauth.Role
	B    *bus.Bus

	mu         sync.Mutex
	violations []string
}

// Dial connects as role with its seed file.
func Dial(url string, role natsauth.Role, seedFile string) (*Conn, error) {
	b, err := bus.DialAs(url, role, "attacker-"+string(role), seedFile, nil)
	if err != nil {
		return nil, err
	}
	c := &Conn{Role: role, B: b}
	b.NC.SetErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.violations = append(c.violations, err.Error())
	})
	return c, nil
}

// refused reports whether the server said it refused subject (a publish
// or a subscription), waiting up to wait for it to say so.
func (c *Conn) refused(subject string, wait time.Duration) bool {
	for end := time.Now().Add(wait); ; time.Sleep(5 * time.Millisecond) {
		c.mu.Lock()
		for _, v := range c.violations {
			if strings.Contains(strings.ToLower(v), "permissions violation") && strings.Contains(v, `"`+subject+`"`) {
				c.mu.Unlock()
				return true
			}
		}
		c.mu.Unlock()
		if time.Now().After(end) {
			return false
		}
	}
}

// ask sends a JetStream API request: the answer, or nil when the server
// refused the publish (or nothing answered within 3 s).
func (c *Conn) ask(ctx context.Context, subject string, body []byte) *nats.Msg {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	answer := make(chan *nats.Msg, 1)
	go func() {
		m, _ := c.B.NC.RequestWithContext(ctx, subject, body)
		answer <- m
	}()
	for {
		select {
		case m := <-answer:
			return m
		case <-time.After(10 * time.Millisecond):
			if c.refused(subject, 0) {
				cancel()
				return nil
			}
		}
	}
}

// subscribe reports whether the server let c subscribe to subject.
func (c *Conn) subscribe(subject string) bool {
	sub, err := c.B.NC.SubscribeSync(subject)
	if err != nil {
		return false
	}
	defer func() { _ = sub.Unsubscribe() }()
	_ = c.B.NC.Flush()
	return !c.refused(subject, 250*time.Millisecond)
}

// apiError is the error a JetStream API answer carries, "" when none.
func apiError(m *nats.Msg) string {
	var r struct {
		Error *struct {
			Description string `json:"description"`
		} `json:"error"`
	}
	if json.Unmarshal(m.Data, &r) != nil {
		return "an answer that is not JSON"
	}
	if r.Error != nil {
		return r.Error.Description
	}
	return ""
}

// verdict: a change the server refused (nil: no answer), one JetStream
// refused (an error answer), or one it made (what it did).
func verdict(m *nats.Msg, did string) (bool, string) {
	if m == nil {
		return false, "refused"
	}
	if e := apiError(m); e != "" {
		return false, "JetStream refused: " + e
	}
	return true, did
}

// An Attack is one try by one role.
type Attack struct {
	Name string
	As   natsauth.Role
	// Try reports whether the server admitted it, and what happened.
	Try func(ctx context.Context, c *Conn) (admitted bool, what string)
}

// victims: the durable consumer of another role that each role tries to
// take over (on the events and results streams, whose limits retention
// lets a copy of it exist beside the original on a permissive server).
var victims = map[natsauth.Role]struct{ stream, durable string }{
	natsauth.Scheduler: {contracts.StreamEvents, contracts.DurableCollectorEvents},
	natsauth.Deployer:  {contracts.StreamEvents, contracts.DurableSchedulerEvents},
	natsauth.Collector: {contracts.StreamResults, contracts.DurableSchedulerResults},
	natsauth.Agent:     {contracts.StreamEvents, contracts.DurableCollectorEvents},
	natsauth.Client:    {contracts.StreamResults, contracts.DurableCollectorResults},
}

// Roles are the roles that attack: every one but admin.
var Roles = []natsauth.Role{natsauth.Scheduler, natsauth.Deployer, natsauth.Collector, natsauth.Agent, natsauth.Client}

// All are the attacks, each role's in turn.
func All() []Attack {
	var all []Attack
	for _, r := range Roles {
		v := victims[r]
		for _, form := range []struct{ name, subject string }{
			{"bare", "$JS.API.CONSUMER.CREATE." + v.stream},
			{"named", "$JS.API.CONSUMER.CREATE." + v.stream + "." + v.durable},
			{"durable", "$JS.API.CONSUMER.DURABLE.CREATE." + v.stream + "." + v.durable},
		} {
			all = append(all, Attack{Name: fmt.Sprintf("take over %s's consumer %s (%s form)", owner(v.durable), v.durable, form.name), As: r,
				Try: takeOver(v.stream, v.durable, form.subject, form.name == "bare")})
		}
		all = append(all,
			Attack{Name: "update the events stream", As: r, Try: changeStream(func(c *jetstream.StreamConfig) { c.Description = "changed by an attacker" })},
			Attack{Name: "purge the events stream", As: r, Try: purge},
			Attack{Name: "seal the events stream", As: r, Try: changeStream(func(c *jetstream.StreamConfig) { c.Sealed = true })},
		)
		for _, other := range natsauth.Roles {
			if other != r {
				all = append(all, Attack{Name: "read " + string(other) + "'s replies", As: r, Try: listen(natsauth.InboxPrefix(other) + ".>")})
			}
		}
		all = append(all, Attack{Name: "read every reply (_INBOX.>)", As: r, Try: listen("_INBOX.>")})
	}
	// What a role does not read: the jobs (the client, the collector), the
	// requests (an agent), the experiments' state (the collector).
	for _, r := range []natsauth.Role{natsauth.Client, natsauth.Collector} {
		all = append(all,
			Attack{Name: "get a job", As: r, Try: get("$JS.API.STREAM.MSG.GET."+contracts.StreamJobs, `{"last_by_subj":"`+contracts.SubjShard+`"}`)},
			Attack{Name: "read the jobs through a consumer of its own", As: r, Try: consume(contracts.StreamJobs)},
			Attack{Name: "subscribe to the jobs", As: r, Try: listen(contracts.StreamJobsSubjects[0])},
		)
	}
	all = append(all,
		Attack{Name: "get a request", As: natsauth.Agent, Try: get("$JS.API.STREAM.MSG.GET."+contracts.StreamRequests, `{"seq":1}`)},
		Attack{Name: "read the requests through a consumer of its own", As: natsauth.Agent, Try: consume(contracts.StreamRequests)},
		Attack{Name: "get an experiment's state", As: natsauth.Collector, Try: get("$JS.API.DIRECT.GET.KV_"+contracts.KVExperiments, `{"seq":1}`)},
		Attack{Name: "get another agent's stored result", As: natsauth.Agent, Try: get("$JS.API.STREAM.MSG.GET."+contracts.StreamResults, `{"seq":1}`)},
	)
	return all
}

// owner names the role a durable consumer belongs to.
func owner(durable string) string {
	for _, r := range Roles {
		if strings.HasPrefix(durable, string(r)) {
			return string(r)
		}
	}
	return "another role"
}

// takeOver sends the victim's own configuration, changed, to subject; with
// bare, the consumer's name goes in the body's name, not durable_name (the
// form whose subject names no consumer).
func takeOver(stream, durable, subject string, bare bool) func(context.Context, *Conn) (bool, string) {
	return func(ctx context.Context, c *Conn) (bool, string) {
		info := c.ask(ctx, "$JS.API.CONSUMER.INFO."+stream+"."+durable, nil)
		if info == nil {
			return false, "refused even the consumer's info"
		}
		var ci struct {
			Config map[string]any `json:"config"`
		}
		if err := json.Unmarshal(info.Data, &ci); err != nil || ci.Config == nil {
			return false, "no consumer to take over: " + apiError(info)
		}
		ci.Config["description"] = "taken over by " + string(c.Role)
		if bare {
			delete(ci.Config, "durable_name")
			ci.Config["name"] = durable
		}
		body, _ := json.Marshal(map[string]any{"stream_name": stream, "config": ci.Config, "action": ""})
		m := c.ask(ctx, subject, body)
		return verdict(m, "the consumer's configuration was replaced")
	}
}

func changeStream(change func(*jetstream.StreamConfig)) func(context.Context, *Conn) (bool, string) {
	return func(ctx context.Context, c *Conn) (bool, string) {
		info := c.ask(ctx, "$JS.API.STREAM.INFO."+contracts.StreamEvents, nil)
		if info == nil {
			return false, "refused even the stream's info"
		}
		var si struct {
			Config jetstream.StreamConfig `json:"config"`
		}
		if err := json.Unmarshal(info.Data, &si); err != nil {
			return false, "no stream info: " + apiError(info)
		}
		change(&si.Config)
		body, _ := json.Marshal(si.Config)
		m := c.ask(ctx, "$JS.API.STREAM.UPDATE."+contracts.StreamEvents, body)
		return verdict(m, "the stream's configuration was changed")
	}
}

func purge(ctx context.Context, c *Conn) (bool, string) {
	m := c.ask(ctx, "$JS.API.STREAM.PURGE."+contracts.StreamEvents, nil)
	return verdict(m, "the stream was purged")
}

// get asks for one stored message: any answer (even "no message found")
// means the server let the role read the stream.
func get(subject, body string) func(context.Context, *Conn) (bool, string) {
	return func(ctx context.Context, c *Conn) (bool, string) {
		m := c.ask(ctx, subject, []byte(body))
		if m == nil {
			return false, "refused"
		}
		return true, "answered (" + strings.TrimSpace(string(m.Data[:min(len(m.Data), 80)])) + ")"
	}
}

// consume creates a consumer of the role's own on stream, named in the
// subject as nats.go does: any answer (even JetStream refusing a second
// unfiltered consumer on a work queue) means the role reached the API.
func consume(stream string) func(context.Context, *Conn) (bool, string) {
	body := `{"stream_name":"` + stream + `","config":{"name":"attacker","deliver_policy":"all","ack_policy":"none","inactive_threshold":5000000000}}`
	return get("$JS.API.CONSUMER.CREATE."+stream+".attacker", body)
}

func listen(subject string) func(context.Context, *Conn) (bool, string) {
	return func(_ context.Context, c *Conn) (bool, string) {
		if c.subscribe(subject) {
			return true, "subscribed to " + subject
		}
		return false, "refused"
	}
}

// Outcome is what one attack did.
type Outcome struct {
	Attack
	Admitted bool
	What     string
}

// Run tries every attack, each with a fresh connection of its role
// (seedFile names the role's seed); before, when not nil, runs before each
// (a permissive server's streams and consumers restored).
func Run(ctx context.Context, url string, seedFile func(natsauth.Role) string, before func() error) ([]Outcome, error) {
	var out []Outcome
	for _, a := range All() {
		if before != nil {
			if err := before(); err != nil {
				return out, err
			}
		}
		c, err := Dial(url, a.As, seedFile(a.As))
		if err != nil {
			return out, fmt.Errorf("connect as %s: %w", a.As, err)
		}
		began := time.Now()
		admitted, what := a.Try(ctx, c)
		c.B.Close()
		what += fmt.Sprintf(" [%s]", time.Since(began).Round(time.Millisecond))
		out = append(out, Outcome{Attack: a, Admitted: admitted, What: what})
	}
	return out, nil
}

// PermissiveConfig is a nats-server authorization block that admits each
// role's key with no permissions at all: the control the attacks must
// succeed against.
func PermissiveConfig(pubs map[natsauth.Role]string) string {
	var b strings.Builder
	b.WriteString("authorization {\n  users = [\n")
	for _, r := range natsauth.Roles {
		fmt.Fprintf(&b, "    { nkey: %q }\n", pubs[r])
	}
	b.WriteString("  ]\n}\n")
	return b.String()
}

// Prepare declares the streams and the victims' durable consumers as
// admin, from scratch: on the permissive server, before each attack.
func Prepare(ctx context.Context, admin *bus.Bus) error {
	for _, s := range []string{contracts.StreamEvents, contracts.StreamResults} {
		_ = admin.JS.DeleteStream(ctx, s)
	}
	if err := admin.Setup(ctx); err != nil {
		return err
	}
	for _, v := range victims {
		if _, err := admin.JS.CreateOrUpdateConsumer(ctx, v.stream, jetstream.ConsumerConfig{Durable: v.durable, AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
			return fmt.Errorf("consumer %s: %w", v.durable, err)
		}
	}
	return nil
}

// Expect runs every attack against the server at url and fails t for each
// one whose outcome is not admitted (want true: the permissive control;
// false: benchq's permissions).
func Expect(t testing.TB, ctx context.Context, url string, seedFile func(natsauth.Role) string, before func() error, want bool) {
	t.Helper()
	out, err := Run(ctx, url, seedFile, before)
	if err != nil {
		t.Fatal(err)
	}
	wrong := 0
	for _, o := range out {
		if o.Admitted != want {
			wrong++
			t.Errorf("%s as %s: %s", o.Name, o.As, o.What)
		} else if testing.Verbose() {
			t.Logf("%s as %s: %s", o.Name, o.As, o.What)
		}
	}
	t.Logf("%d attacks, %d %s", len(out), len(out)-wrong, map[bool]string{true: "admitted", false: "refused"}[want])
}

// Control starts a nats-server (through start, on its configuration file)
// that admits fresh keys of every role with no permissions, declares the
// streams as admin, and checks that every attack succeeds there.
func Control(t testing.TB, ctx context.Context, start func(confPath string) (url string)) {
	t.Helper()
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys")
	pubs, err := natsauth.Generate(keys)
	if err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "permissive.conf")
	if err := os.WriteFile(conf, []byte(PermissiveConfig(pubs)), 0o600); err != nil {
		t.Fatal(err)
	}
	url := start(conf)
	admin, err := bus.DialAs(url, natsauth.Admin, "control-admin", natsauth.SeedFile(keys, natsauth.Admin), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	seed := func(r natsauth.Role) string { return natsauth.SeedFile(keys, r) }
	Expect(t, ctx, url, seed, func() error { return Prepare(ctx, admin) }, true)
}

// Inject is the attack no permission stops (nats-server#8274): it puts
// body in bucket (a bucket the role may write) under key, and creates a
// push consumer of the bucket's stream that delivers that entry to
// subject, which the role may not publish on. A stream listening on
// subject stores it, under its original subject ("$KV.<bucket>.<key>").
// What keeps it from a service is that every consumer of ours reads only
// its stream's own subjects (contracts.StreamSubjects, bus.Consume).
// It returns once the server accepted both steps.
func Inject(ctx context.Context, b *bus.Bus, bucket, key, subject string, body []byte) error {
	kv, err := b.JS.KeyValue(ctx, bucket)
	if err != nil {
		return fmt.Errorf("bucket %s: %w", bucket, err)
	}
	if _, err := kv.Put(ctx, key, body); err != nil {
		return fmt.Errorf("put %s in %s: %w", key, bucket, err)
	}
	_, err = b.JS.CreateOrUpdatePushConsumer(ctx, "KV_"+bucket, jetstream.ConsumerConfig{
		Name: "inject-" + key, DeliverSubject: subject, FilterSubject: "$KV." + bucket + "." + key,
		AckPolicy: jetstream.AckNonePolicy, InactiveThreshold: 10 * time.Second,
	})
	if err != nil {
		return fmt.Errorf("push consumer on KV_%s delivering to %s: %w", bucket, subject, err)
	}
	return nil
}
