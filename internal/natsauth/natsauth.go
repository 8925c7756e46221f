// Package natsauth is who may do what on benchq's NATS: one user per role
// (scheduler, deployer, collector, agent, client, and admin), each
// authenticated by an NKey and allowed to publish and subscribe exactly the
// subjects of its part of the protocol (contracts), plus the JetStream API
// calls on the streams, consumers and buckets it uses. nats-server refuses
// every other connection.
//
// Only admin declares, changes or removes streams and buckets: `benchq up`
// (and compose's and Kubernetes' one-shot `scheduler -declare`) uses it, no
// service holds it. Each role reads its replies on its own inbox prefix
// (InboxPrefix), creates consumers only in the form that names them in the
// subject (never under another role's durable name), and gets single
// messages only from the streams and buckets it reads.
//
// What each role may publish of benchq's own subjects:
//
//	scheduler  planned, rejected, phase.*, barrier.go, the experiment's end, every job;
//	           requests and stops its HTTP intake accepted; the question
//	           which driver pods run (benchq.deployer.pods, a core request)
//	deployer   sut.ready, sut.failed, sut.removed, driver.ended, driver.lost;
//	           the answer to a request it received (allow_responses)
//	collector  nothing (it reads)
//	agent      barrier.ready, results (interval, final), a shard job it hands back
//	client     a request, a stop
//
// A seed file (an NKey's private half) is written with mode 0600 and read
// by bus.Dial from BENCHQ_NATS_NKEY; the server's configuration holds only
// the public keys.
package natsauth

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/nats-io/nkeys"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/atomicfile"
)

// Role is a NATS user of benchq.
type Role string

// The roles; Roles lists them in a fixed order.
const (
	Scheduler Role = "scheduler"
	Deployer  Role = "deployer"
	Collector Role = "collector"
	Agent     Role = "agent"
	Client    Role = "client"
	Admin     Role = "admin"
)

// Roles are every role, in the order the server configuration lists them.
var Roles = []Role{Scheduler, Deployer, Collector, Agent, Client, Admin}

// InboxPrefix is where role's replies come (JetStream's acks and API
// answers, fetched messages): only role may subscribe under it, so no
// other role reads them. "" (anonymous) keeps nats.go's default.
func InboxPrefix(role Role) string {
	if role == "" {
		return ""
	}
	return "_INBOX_" + string(role)
}

// SeedEnv names the seed file a benchq process connects with;
// AgentSeedEnv the one the deployer gives the driver agents it starts.
// Where secrets come as environment variables (the compose stack's .env),
// SeedValueEnv and AgentSeedValueEnv hold the seeds themselves.
const (
	SeedEnv           = "BENCHQ_NATS_NKEY"
	AgentSeedEnv      = "BENCHQ_AGENT_NATS_NKEY"
	SeedValueEnv      = "BENCHQ_NATS_SEED"
	AgentSeedValueEnv = "BENCHQ_AGENT_NATS_SEED"
)

// Permissions are a role's allow and deny lists, as nats-server takes them.
type Permissions struct {
	Publish, PublishDeny, Subscribe []string
	// AllowResponses lets the role answer the requests it receives (one
	// reply each, to the request's reply subject only), never publish on
	// another role's inbox otherwise.
	AllowResponses bool
}

// durable is a durable consumer and the stream it reads.
type durable struct{ stream, name string }

var durables = map[Role][]durable{
	Scheduler: {{contracts.StreamRequests, contracts.DurableSchedulerRequests}, {contracts.StreamEvents, contracts.DurableSchedulerEvents}, {contracts.StreamResults, contracts.DurableSchedulerResults}},
	Deployer:  {{contracts.StreamJobs, contracts.DurableDeployer}, {contracts.StreamJobs, contracts.DurableDeployerDrivers}},
	Collector: {{contracts.StreamEvents, contracts.DurableCollectorEvents}, {contracts.StreamResults, contracts.DurableCollectorResults}},
	Agent:     {{contracts.StreamJobs, contracts.DurableAgents}},
}

// For is what role may do.
func For(role Role) Permissions {
	var p Permissions
	all := func(ts ...contracts.Topic) {
		for _, t := range ts {
			p.Publish = append(p.Publish, t.All())
		}
	}
	// Every role: its replies on its own inbox; read-only JetStream API
	// calls that name no message (account, stream and consumer info).
	p.Subscribe = append(p.Subscribe, InboxPrefix(role)+".>")
	p.Publish = append(p.Publish, "$JS.API.INFO", "$JS.API.STREAM.INFO.*", "$JS.API.CONSUMER.INFO.*.*",
		"$JS.API.STREAM.NAMES", "$JS.API.CONSUMER.NAMES.*")
	switch role {
	case Admin:
		// Declares and migrates the streams and buckets (bus.Setup); it
		// publishes and reads no benchq message.
		p.Publish = append(p.Publish, "$JS.API.>")
		return p
	case Scheduler:
		all(contracts.TopicRejected, contracts.TopicPlanned, contracts.TopicDeploy, contracts.TopicTeardown,
			contracts.TopicShard, contracts.TopicDrivers, contracts.TopicBarrierGo, contracts.TopicShardEnded,
			contracts.TopicPhaseStarted, contracts.TopicPhaseDone, contracts.TopicPhaseFailed, contracts.TopicPhaseSkipped,
			contracts.TopicExperimentDone, contracts.TopicExperimentFailed, contracts.TopicExperimentCancelled,
			contracts.TopicRequest, contracts.TopicStop) // what its HTTP intake accepted (intake.go)
		p.writeKV(contracts.KVExperiments)
		p.readKV(contracts.KVAgents)
		p.readStream(contracts.StreamEvents)                    // a GO published before a restart (run.go, publishedGo)
		p.Publish = append(p.Publish, contracts.SubjDriverPods) // is a late agent's pod Running (vouch.go)
	case Deployer:
		all(contracts.TopicSUTReady, contracts.TopicSUTFailed, contracts.TopicSUTRemoved, contracts.TopicDriverEnded, contracts.TopicDriverLost,
			contracts.TopicSUTEdge)
		p.writeKV(contracts.KVVolumes)
		p.readKV(contracts.KVAgents)
		p.Subscribe = append(p.Subscribe, contracts.SubjDriverPods) // which driver pods run: answered
		// A phase's edges, at which it reads its SUTs (edges.go).
		p.Subscribe = append(p.Subscribe, contracts.TopicPhaseStarted.All(), contracts.TopicPhaseDone.All(), contracts.TopicPhaseFailed.All())
		p.AllowResponses = true
	case Collector:
	case Agent:
		all(contracts.TopicBarrierReady, contracts.TopicInterval, contracts.TopicFinal,
			contracts.TopicShard) // a shard job of another phase is handed back (driver-agent/phase.go)
		p.Subscribe = append(p.Subscribe, contracts.TopicBarrierGo.All(), contracts.TopicPhaseFailed.All())
		p.writeKV(contracts.KVAgents)
		p.readKV(contracts.KVExperiments) // is a shard still awaited (bus.ShardAwaited)
	case Client:
		all(contracts.TopicRequest, contracts.TopicStop)
		// Its live view: the events, and the intervals and finals as they come.
		p.Subscribe = append(p.Subscribe, contracts.StreamEventsSubjects...)
		p.Subscribe = append(p.Subscribe, contracts.StreamResultsSubjects...)
		// Follow an experiment (ordered consumers on the events and the
		// results), read the state, the agents and the volumes; remove a
		// volume (benchq volumes rm).
		p.readStream(contracts.StreamEvents)
		p.readStream(contracts.StreamResults)
		p.readKV(contracts.KVExperiments)
		p.readKV(contracts.KVAgents)
		p.writeKV(contracts.KVVolumes)
	}
	for _, d := range durables[role] {
		p.Publish = append(p.Publish, consumerAPI(d.stream, d.name)...)
		p.Publish = append(p.Publish, "$JS.ACK."+d.stream+"."+d.name+".>")
	}
	// Whatever its wildcards allow: no role may take over another's
	// durable consumer, create a consumer in a form whose subject does not
	// name it (the server would not check the name against the deny list),
	// or change a stream.
	for other, ds := range durables {
		if other == role {
			continue
		}
		for _, d := range ds {
			p.PublishDeny = append(p.PublishDeny, consumerAPI(d.stream, d.name)...)
		}
	}
	p.PublishDeny = append(p.PublishDeny, "$JS.API.CONSUMER.CREATE.*", "$JS.API.CONSUMER.DURABLE.CREATE.>",
		"$JS.API.STREAM.CREATE.>", "$JS.API.STREAM.UPDATE.>", "$JS.API.STREAM.DELETE.>", "$JS.API.STREAM.PURGE.>",
		"$JS.API.STREAM.MSG.DELETE.>", "$JS.API.STREAM.RESTORE.>", "$JS.API.STREAM.SNAPSHOT.>")
	slices.Sort(p.PublishDeny)
	return p
}

// consumerAPI are the JetStream API subjects that create, delete and read
// one durable consumer.
func consumerAPI(stream, name string) []string {
	s := stream + "." + name
	return []string{"$JS.API.CONSUMER.CREATE." + s, "$JS.API.CONSUMER.CREATE." + s + ".>",
		"$JS.API.CONSUMER.DURABLE.CREATE." + s, "$JS.API.CONSUMER.DELETE." + s, "$JS.API.CONSUMER.MSG.NEXT." + s}
}

// readStream: read stream — ordered consumers of one's own (created in the
// form that names them, CONSUMER.CREATE.<stream>.<name>[.<filter>]) and
// single messages (stored or direct get).
func (p *Permissions) readStream(stream string) {
	p.Publish = append(p.Publish, "$JS.API.CONSUMER.CREATE."+stream+".>",
		"$JS.API.CONSUMER.MSG.NEXT."+stream+".*", "$JS.API.CONSUMER.DELETE."+stream+".*", "$JS.FC."+stream+".>",
		"$JS.API.STREAM.MSG.GET."+stream, "$JS.API.DIRECT.GET."+stream, "$JS.API.DIRECT.GET."+stream+".>")
}

// readKV: get keys and list or watch the bucket.
func (p *Permissions) readKV(bucket string) { p.readStream("KV_" + bucket) }

// writeKV: readKV, and put, update and delete its keys.
func (p *Permissions) writeKV(bucket string) {
	p.readKV(bucket)
	p.Publish = append(p.Publish, "$KV."+bucket+".>")
}

// SeedFile is where role's seed lives in dir.
func SeedFile(dir string, role Role) string { return filepath.Join(dir, string(role)+".nk") }

// Generate writes a fresh seed per role into dir (mode 0600, dir 0700) and
// returns the public keys. Fresh at every start of a stack: a seed copied
// away earlier stops working.
func Generate(dir string) (map[Role]string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, err
	}
	pubs := map[Role]string{}
	for _, r := range Roles {
		kp, err := nkeys.CreateUser()
		if err != nil {
			return nil, fmt.Errorf("nkey for %s: %w", r, err)
		}
		seed, err := kp.Seed()
		if err != nil {
			return nil, err
		}
		if pubs[r], err = kp.PublicKey(); err != nil {
			return nil, err
		}
		if err := atomicfile.Write(SeedFile(dir, r), append(seed, '\n'), 0o600); err != nil {
			return nil, err
		}
	}
	return pubs, nil
}

// ServerConfig is the authorization block of nats-server's configuration:
// one NKey user per role with its permissions. No user means no access:
// nats-server refuses anonymous connections once users are configured.
func ServerConfig(pubs map[Role]string) (string, error) {
	return authorization(func(r Role) (string, error) {
		pub, ok := pubs[r]
		if !ok {
			return "", fmt.Errorf("no public key for role %s", r)
		}
		return strconv.Quote(pub), nil
	})
}

// ServerConfigFromEnv is ServerConfig with each public key a reference to
// the variable PubEnv names, which nats-server resolves from its
// environment: the compose stack's configuration, its keys in .env.
func ServerConfigFromEnv() (string, error) {
	return authorization(func(r Role) (string, error) { return "$" + PubEnv(r), nil })
}

// PubEnv and SeedValueEnvOf name the variables of role's public key and
// seed in a generated .env (benchq credentials).
func PubEnv(r Role) string         { return "BENCHQ_NATS_PUB_" + strings.ToUpper(string(r)) }
func SeedValueEnvOf(r Role) string { return "BENCHQ_NATS_SEED_" + strings.ToUpper(string(r)) }

func authorization(nkey func(Role) (string, error)) (string, error) {
	var b strings.Builder
	b.WriteString("# benchq: one user per role (internal/natsauth). Generated; do not edit.\nauthorization {\n  users = [\n")
	for _, r := range Roles {
		key, err := nkey(r)
		if err != nil {
			return "", err
		}
		p := For(r)
		fmt.Fprintf(&b, "    { # %s\n      nkey: %s\n      permissions: {\n", r, key)
		fmt.Fprintf(&b, "        publish: { allow: %s", list(p.Publish))
		if len(p.PublishDeny) > 0 {
			fmt.Fprintf(&b, ", deny: %s", list(p.PublishDeny))
		}
		fmt.Fprintf(&b, " }\n        subscribe: { allow: %s }\n", list(p.Subscribe))
		if p.AllowResponses {
			b.WriteString("        allow_responses: true\n")
		}
		b.WriteString("      }\n    }\n")
	}
	b.WriteString("  ]\n}\n")
	return b.String(), nil
}

func list(subjects []string) string {
	q := make([]string, len(subjects))
	for i, s := range subjects {
		q[i] = fmt.Sprintf("%q", s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// ErrSeed marks a seed file that cannot be used (missing, readable by
// others, not a seed): the fix is the file's, not the server's.
var ErrSeed = errors.New("NATS credentials unusable")

// ReadSeed reads a seed file, refusing one that others may read.
func ReadSeed(path string) ([]byte, error) {
	seed, err := atomicfile.ReadSecret(path, "NATS credentials")
	if err == nil {
		seed, err = checkSeed(seed, path)
	}
	if err != nil {
		return nil, seedError{err}
	}
	return seed, nil
}

// seedError is a ReadSeed error: its own message, and errors.Is(ErrSeed).
type seedError struct{ error }

func (seedError) Is(target error) bool { return target == ErrSeed }
func (e seedError) Unwrap() error      { return e.error }

func checkSeed(seed []byte, where string) ([]byte, error) {
	if _, err := nkeys.FromSeed(seed); err != nil {
		return nil, errors.Join(fmt.Errorf("NATS credentials %s: not an NKey seed", where), err)
	}
	return seed, nil
}

// SeedFromEnv is the seed a process connects with: from the file SeedEnv
// names, or the value of SeedValueEnv; nil (anonymous) when neither is set.
// Both set is refused: which one is meant would be a guess.
func SeedFromEnv(getenv func(string) string) ([]byte, error) {
	return seedFrom(getenv, SeedEnv, SeedValueEnv)
}

// AgentEnv is the environment that gives a driver agent the seed the
// deployer was handed for agents (AgentSeedEnv or AgentSeedValueEnv).
func AgentEnv(getenv func(string) string) []string {
	if v := getenv(AgentSeedValueEnv); v != "" {
		return []string{SeedValueEnv + "=" + v}
	}
	return []string{SeedEnv + "=" + getenv(AgentSeedEnv)}
}

func seedFrom(getenv func(string) string, fileEnv, valueEnv string) ([]byte, error) {
	file, value := getenv(fileEnv), strings.TrimSpace(getenv(valueEnv))
	switch {
	case file != "" && value != "":
		return nil, fmt.Errorf("NATS credentials: both %s and %s are set; keep one", fileEnv, valueEnv)
	case file != "":
		return ReadSeed(file)
	case value != "":
		return checkSeed([]byte(value), "in $"+valueEnv)
	}
	return nil, nil
}
