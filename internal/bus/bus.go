// Package bus is benchq's only door to NATS JetStream: it connects, declares
// the streams and KV buckets named in contracts, publishes messages with
// de-duplication ids, and runs durable pull consumers with explicit acks.
package bus

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/natsauth"
)

// DupWindow is how long JetStream remembers message ids. It is long so that a
// service restarted minutes after a crash still re-publishes as a no-op.
const DupWindow = 30 * time.Minute

// Bus is a NATS connection with its JetStream context.
type Bus struct {
	NC  *nats.Conn
	JS  jetstream.JetStream
	Log *slog.Logger
	// Signer, when set (a driver agent's run), signs what Publish sends on
	// the topics agents sign (contracts.Signed) and every heartbeat
	// (contracts/sign.go).
	Signer *contracts.Signer
}

// Connect dials url and retries until ctx ends, so services may start before
// nats-server is up.
func Connect(ctx context.Context, url string, role natsauth.Role, name string, log *slog.Logger) (*Bus, error) {
	return retry(ctx, url, func() (*Bus, error) { return Dial(url, role, name, log) })
}

// ConnectAs is Connect with the seed file given (DialAs).
func ConnectAs(ctx context.Context, url string, role natsauth.Role, name, seedFile string, log *slog.Logger) (*Bus, error) {
	return retry(ctx, url, func() (*Bus, error) { return DialAs(url, role, name, seedFile, log) })
}

func retry(ctx context.Context, url string, dial func() (*Bus, error)) (*Bus, error) {
	var lastErr error
	for {
		b, err := dial()
		if err == nil {
			return b, nil
		}
		lastErr = err
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("connect to nats at %s: %w", url, lastErr)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// Dial connects to url once: for a command that should say at once that
// nats-server is not reachable rather than wait for it. The process
// authenticates with the NKey seed file named by BENCHQ_NATS_NKEY, or the
// seed in BENCHQ_NATS_SEED (see internal/natsauth), or connects anonymously
// when neither is set. role is the role the seed is of: its replies come
// to the role's own inbox prefix (natsauth.InboxPrefix), the only one it
// may read.
func Dial(url string, role natsauth.Role, name string, log *slog.Logger) (*Bus, error) {
	seed, err := natsauth.SeedFromEnv(os.Getenv)
	if err != nil {
		return nil, err
	}
	return dialSeed(url, role, name, seed, log)
}

// DialAs is Dial with the seed file given ("": anonymous).
func DialAs(url string, role natsauth.Role, name, seedFile string, log *slog.Logger) (*Bus, error) {
	var seed []byte
	if seedFile != "" {
		var err error
		if seed, err = natsauth.ReadSeed(seedFile); err != nil {
			return nil, err
		}
	}
	return dialSeed(url, role, name, seed, log)
}

func dialSeed(url string, role natsauth.Role, name string, seed []byte, log *slog.Logger) (*Bus, error) {
	opts := []nats.Option{nats.Name(name), nats.Timeout(3 * time.Second), nats.MaxReconnects(-1), nats.ReconnectWait(250 * time.Millisecond)}
	if prefix := natsauth.InboxPrefix(role); prefix != "" {
		opts = append(opts, nats.CustomInboxPrefix(prefix))
	}
	if seed != nil {
		opt, err := nkeyOption(seed)
		if err != nil {
			return nil, err
		}
		opts = append(opts, opt)
	}
	if log != nil {
		// A denied publish or subscription is reported asynchronously:
		// say it, naming the subject, instead of timing out in silence.
		opts = append(opts, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			log.Error("nats", "err", err)
		}))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	return &Bus{NC: nc, JS: js, Log: log}, nil
}

// nkeyOption signs the server's challenge with seed.
func nkeyOption(seed []byte) (nats.Option, error) {
	kp, err := nkeys.FromSeed(seed)
	if err != nil {
		return nil, err
	}
	pub, err := kp.PublicKey()
	if err != nil {
		return nil, err
	}
	return nats.Nkey(pub, func(nonce []byte) ([]byte, error) { return kp.Sign(nonce) }), nil
}

// Open connects (see Connect) and waits until the streams and buckets are
// declared (WaitDeclared): how every service starts. No service declares
// them: only the admin role may (benchq up, scheduler -declare).
func Open(ctx context.Context, url string, role natsauth.Role, name string, log *slog.Logger) (*Bus, error) {
	b, err := Connect(ctx, url, role, name, log)
	if err != nil {
		return nil, err
	}
	if err := b.WaitDeclared(ctx); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// Close drains the connection.
func (b *Bus) Close() {
	if b != nil && b.NC != nil {
		_ = b.NC.Drain()
	}
}

// Setup declares every stream and KV bucket, and brings an older
// declaration up to date; it is idempotent. Only the admin role may
// (internal/natsauth): benchq up runs it before it starts the services,
// compose and Kubernetes run `scheduler -declare`.
func (b *Bus) Setup(ctx context.Context) error {
	streams := []jetstream.StreamConfig{
		{Name: contracts.StreamRequests, Subjects: contracts.StreamRequestsSubjects, Retention: jetstream.LimitsPolicy, Duplicates: DupWindow, Storage: jetstream.FileStorage},
		{Name: contracts.StreamEvents, Subjects: contracts.StreamEventsSubjects, Retention: jetstream.LimitsPolicy, Duplicates: DupWindow, Storage: jetstream.FileStorage},
		{Name: contracts.StreamJobs, Subjects: contracts.StreamJobsSubjects, Retention: jetstream.WorkQueuePolicy, Duplicates: DupWindow, Storage: jetstream.FileStorage},
		{Name: contracts.StreamResults, Subjects: contracts.StreamResultsSubjects, Retention: jetstream.LimitsPolicy, Duplicates: DupWindow, Storage: jetstream.FileStorage},
	}
	for _, sc := range streams {
		if _, err := b.JS.CreateOrUpdateStream(ctx, sc); err != nil {
			return fmt.Errorf("stream %s: %w", sc.Name, err)
		}
	}
	kvs := []jetstream.KeyValueConfig{
		{Bucket: contracts.KVExperiments, History: 5, Storage: jetstream.FileStorage},
		{Bucket: contracts.KVVolumes, History: 5, Storage: jetstream.FileStorage},
		{Bucket: contracts.KVAgents, TTL: contracts.AgentsTTL, Storage: jetstream.FileStorage},
	}
	for _, kc := range kvs {
		if _, err := b.JS.CreateOrUpdateKeyValue(ctx, kc); err != nil {
			return fmt.Errorf("kv %s: %w", kc.Bucket, err)
		}
	}
	return nil
}

// WaitDeclared waits until every stream and KV bucket exists: how every
// service starts, none of which may declare them (internal/natsauth).
func (b *Bus) WaitDeclared(ctx context.Context) error {
	names := []string{contracts.StreamRequests, contracts.StreamEvents, contracts.StreamJobs, contracts.StreamResults}
	for _, kv := range []string{contracts.KVExperiments, contracts.KVVolumes, contracts.KVAgents} {
		names = append(names, "KV_"+kv)
	}
	said := false
	for _, name := range names {
		for {
			_, err := b.JS.Stream(ctx, name)
			if err == nil {
				break
			}
			if !errors.Is(err, jetstream.ErrStreamNotFound) {
				return fmt.Errorf("stream %s: %w", name, err)
			}
			if !said {
				if b.Log != nil {
					b.Log.Info("waiting for the streams to be declared (benchq up, or scheduler -declare with the admin key)", "missing", name)
				}
				said = true
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("stream %s was never declared (benchq up declares it; in compose and on Kubernetes `scheduler -declare` with the admin key): %w", name, ctx.Err())
			case <-time.After(250 * time.Millisecond):
			}
		}
	}
	return nil
}

// Publish sends msg to subject through JetStream, with the message id as
// Nats-Msg-Id so that a re-publish (after a crash) is dropped as a duplicate.
func (b *Bus) Publish(ctx context.Context, subject string, msg contracts.Message) error {
	data, err := json.Marshal(msg)
	if err != nil {
		return fmt.Errorf("marshal %s: %w", subject, err)
	}
	return b.PublishRaw(ctx, subject, msg.Head().ID, data)
}

// PublishRaw publishes already-encoded JSON with an explicit id, signed
// when the bus has a Signer and the subject is one agents sign
// (contracts.Signed).
func (b *Bus) PublishRaw(ctx context.Context, subject, id string, data []byte) error {
	msg, id, err := b.message(subject, id, data)
	if err != nil {
		return err
	}
	if _, err := b.JS.PublishMsg(ctx, msg, jetstream.WithMsgID(id)); err != nil {
		return fmt.Errorf("publish %s (id %s): %w", subject, id, err)
	}
	return nil
}

// message builds what PublishRaw sends, and the id it is sent with (a
// signed message's id carries its signature).
func (b *Bus) message(subject, id string, data []byte) (*nats.Msg, string, error) {
	msg := &nats.Msg{Subject: subject, Data: data, Header: nats.Header{}}
	if p, err := contracts.ParseSubject(subject); b.Signer != nil && err == nil && contracts.Signed(p.Topic) {
		signer, sig, err := b.Signer.Sign(subject, data)
		if err != nil {
			return nil, "", fmt.Errorf("sign %s (id %s): %w", subject, id, err)
		}
		msg.Header.Set(contracts.SignerHeader, signer)
		msg.Header.Set(contracts.SignatureHeader, sig)
		id = contracts.SignedMsgID(id, sig)
	}
	return msg, id, nil
}

// Pub is one message of PublishAll.
type Pub struct {
	Subject string
	Msg     contracts.Message
	// Data is Msg's JSON when the caller has encoded it already (the
	// scheduler measures a request's first messages); nil: PublishAll
	// encodes Msg.
	Data []byte
}

// PublishAll is Publish for many messages at once: they are sent without
// waiting (JetStream's asynchronous publish, one connection, so a stream
// stores them in the order given), then every acknowledgement is awaited:
// one round trip for all of them instead of one each. errs[i] is pubs[i]'s.
func (b *Bus) PublishAll(ctx context.Context, pubs []Pub) (errs []error) {
	msgs := make([]*nats.Msg, len(pubs))
	opts := make([][]jetstream.PublishOpt, len(pubs))
	errs = make([]error, len(pubs))
	for i, p := range pubs {
		data := p.Data
		if data == nil {
			var err error
			if data, err = json.Marshal(p.Msg); err != nil {
				errs[i] = fmt.Errorf("marshal %s: %w", p.Subject, err)
				continue
			}
		}
		var id string
		if msgs[i], id, errs[i] = b.message(p.Subject, p.Msg.Head().ID, data); errs[i] == nil {
			opts[i] = []jetstream.PublishOpt{jetstream.WithMsgID(id)}
		}
	}
	_, errs = b.publishAsync(ctx, msgs, opts, errs)
	return errs
}

// CreateAll is KeyValue.Create for many keys of a bucket at once, as
// PublishAll is for messages: each write is refused if its key has a
// revision (JetStream's expected last sequence per subject, as Create
// sends it). A refusal does not tell a live key from a deleted one, as
// Create does: a caller tries Create on the keys refused here.
func (b *Bus) CreateAll(ctx context.Context, bucket string, keys []string, values [][]byte) (revs []uint64, errs []error) {
	msgs := make([]*nats.Msg, len(keys))
	opts := make([][]jetstream.PublishOpt, len(keys))
	for i, key := range keys {
		msgs[i] = &nats.Msg{Subject: "$KV." + bucket + "." + key, Data: values[i]}
		opts[i] = []jetstream.PublishOpt{jetstream.WithExpectLastSequencePerSubject(0)}
	}
	return b.publishAsync(ctx, msgs, opts, make([]error, len(keys)))
}

// publishAsync sends msgs[i] (those with no errs[i] yet) and waits for
// their acknowledgements: seqs[i] is where each was stored.
func (b *Bus) publishAsync(ctx context.Context, msgs []*nats.Msg, opts [][]jetstream.PublishOpt, errs []error) (seqs []uint64, _ []error) {
	if _, ok := ctx.Deadline(); !ok {
		// As long as a synchronous publish waits (nats.go's API timeout).
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
	}
	seqs = make([]uint64, len(msgs))
	futures := make([]jetstream.PubAckFuture, len(msgs))
	for i, m := range msgs {
		if errs[i] == nil {
			if futures[i], errs[i] = b.JS.PublishMsgAsync(m, opts[i]...); errs[i] != nil {
				errs[i] = fmt.Errorf("publish %s: %w", m.Subject, errs[i])
			}
		}
	}
	for i, f := range futures {
		if f == nil {
			continue
		}
		select {
		case ack := <-f.Ok():
			seqs[i] = ack.Sequence
		case err := <-f.Err():
			errs[i] = fmt.Errorf("publish %s: %w", msgs[i].Subject, err)
		case <-ctx.Done():
			errs[i] = fmt.Errorf("publish %s: %w", msgs[i].Subject, ctx.Err())
		}
	}
	return seqs, errs
}

// VerifyMsg checks a received message's signature (contracts.Verify) and
// returns its signer.
func VerifyMsg(subject string, data []byte, header nats.Header) (string, error) {
	return contracts.Verify(subject, data, header.Get(contracts.SignerHeader), header.Get(contracts.SignatureHeader))
}

// PublishNew is PublishRaw for a message that must be new: it reports
// whether JetStream dropped it as a duplicate of one stored earlier with the
// same id (within DupWindow), which a service's re-publish wants and an
// intake accepting a request must not take for success.
func (b *Bus) PublishNew(ctx context.Context, subject, id string, data []byte) (duplicate bool, err error) {
	ack, err := b.JS.Publish(ctx, subject, data, jetstream.WithMsgID(id))
	if err != nil {
		return false, fmt.Errorf("publish %s (id %s): %w", subject, id, err)
	}
	return ack.Duplicate, nil
}

// ErrPermanent marks a handler error that no redelivery can fix (a malformed
// message): the message is terminated instead of redelivered.
var ErrPermanent = errors.New("permanent")

// Permanent wraps err as permanent.
func Permanent(err error) error { return fmt.Errorf("%w: %w", ErrPermanent, err) }

// maxDeclareTries is how often Consume declares its consumer before it
// gives up: about a minute of JetStream not answering.
const maxDeclareTries = 15

// ConsumerSpec describes a durable pull consumer.
type ConsumerSpec struct {
	Stream  string
	Durable string
	// Filters are the subjects it reads; none: the stream's own
	// (contracts.StreamSubjects), never "all the stream holds".
	Filters    []string
	AckWait    time.Duration // default 30s
	MaxDeliver int           // default unlimited
	Batch      int           // messages per fetch, default 1
	// MaxWait is how long one pull request waits for a message (default
	// 1s); the consumer then asks again. A message published while a pull
	// request waits is sometimes not handed to it, only to the next one
	// (seen with nats-server 2.12.1 on the agents' consumer, 2 phase
	// switches in 42: docs/bench.md): a consumer whose latency
	// matters asks more often.
	MaxWait time.Duration
}

// Handler processes a batch of messages. It returns one error per message
// (nil = ack). Handlers must be idempotent: delivery is at least once.
type Handler func(ctx context.Context, msgs []jetstream.Msg) []error

// Consume runs a durable consumer until ctx ends. Messages are acked only
// after the handler succeeded; transient errors are redelivered after a delay.
func (b *Bus) Consume(ctx context.Context, spec ConsumerSpec, h Handler) error {
	if spec.AckWait == 0 {
		spec.AckWait = 30 * time.Second
	}
	if spec.Batch == 0 {
		spec.Batch = 1
	}
	if len(spec.Filters) == 0 {
		spec.Filters = contracts.StreamSubjects(spec.Stream)
	}
	if len(spec.Filters) == 0 {
		return fmt.Errorf("consumer %s on %s: no subjects to read (not a benchq stream; name its filters)", spec.Durable, spec.Stream)
	}
	cfg := jetstream.ConsumerConfig{
		Durable:        spec.Durable,
		AckPolicy:      jetstream.AckExplicitPolicy,
		AckWait:        spec.AckWait,
		MaxDeliver:     spec.MaxDeliver,
		FilterSubjects: spec.Filters,
		MaxAckPending:  1000,
	}
	if len(spec.Filters) == 1 {
		cfg.FilterSubject, cfg.FilterSubjects = spec.Filters[0], nil
	}
	log := b.Log.With("consumer", spec.Durable)
	// Declared again until it is: a service whose consumer failed once
	// (JetStream still starting, its API timing out) would otherwise run
	// on, ready by every other sign, reading nothing. Each failure is
	// logged; maxDeclareTries of them in a row end Consume with the last.
	var cons jetstream.Consumer
	for try, wait := 1, 250*time.Millisecond; ; try++ {
		var err error
		cons, err = b.JS.CreateOrUpdateConsumer(ctx, spec.Stream, cfg)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return nil // stopped while declaring: a stop, not a failure
		}
		err = fmt.Errorf("consumer %s on %s: %w", spec.Durable, spec.Stream, err)
		if try == maxDeclareTries {
			return err
		}
		log.Warn("declaring the consumer failed; trying again", "try", try, "in", wait, "err", err)
		sleep(ctx, wait)
		wait = min(2*wait, 5*time.Second)
	}
	for ctx.Err() == nil {
		asked := time.Now()
		msgs, err := fetch(cons, spec.Batch, cmp.Or(spec.MaxWait, time.Second))
		if len(msgs) > 0 {
			log.Debug("fetched", "messages", len(msgs), "waited", time.Since(asked))
		}
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			log.Warn("fetch failed", "err", err)
			sleep(ctx, 500*time.Millisecond)
			continue
		}
		if len(msgs) == 0 {
			continue
		}
		errs := h(ctx, msgs)
		stopping := ctx.Err() != nil
		var wg sync.WaitGroup
		for i, m := range msgs {
			var herr error
			if i < len(errs) {
				herr = errs[i]
			}
			// Together: an ack waits for the server's word.
			wg.Add(1)
			go func() {
				defer wg.Done()
				settle(ctx, log, m, herr, stopping)
			}()
		}
		wg.Wait()
	}
	return nil
}

// fetch waits up to maxWait for one message, then takes up to batch-1
// more of those already waiting without waiting for more: a batch never
// holds back the message that started it.
func fetch(cons jetstream.Consumer, batch int, maxWait time.Duration) ([]jetstream.Msg, error) {
	var msgs []jetstream.Msg
	first, err := cons.Fetch(1, jetstream.FetchMaxWait(maxWait))
	if err != nil {
		return nil, err
	}
	for m := range first.Messages() {
		msgs = append(msgs, m)
	}
	if len(msgs) == 0 || batch <= 1 {
		return msgs, nil
	}
	more, err := cons.FetchNoWait(batch - 1)
	if err != nil {
		return msgs, nil // the first is in hand; the rest come next time
	}
	for m := range more.Messages() {
		msgs = append(msgs, m)
	}
	return msgs, nil
}

// slowAck is how long an ack may take before settle says so.
const slowAck = 250 * time.Millisecond

// settle acks, terminates or hands back one message. Acks use a context of
// their own: work finished while the service stops must still be acked, or it
// is redone after AckWait. A message not finished because the service stops
// is handed back at once (Nak) instead of waiting out AckWait.
func settle(ctx context.Context, log *slog.Logger, m jetstream.Msg, herr error, stopping bool) {
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	switch {
	case herr == nil:
		start := time.Now()
		if err := m.DoubleAck(actx); err != nil {
			log.Warn("ack failed", "subject", m.Subject(), "err", err)
		} else if took := time.Since(start); took > slowAck {
			// The consumer fetches its next message only after: a slow ack delays it.
			log.Warn("ack slow", "subject", m.Subject(), "took", took)
		}
	case errors.Is(herr, ErrPermanent):
		log.Error("message dropped", "subject", m.Subject(), "err", herr)
		_ = m.Term()
	case stopping:
		_ = m.Nak()
	default:
		log.Warn("message will be redelivered", "subject", m.Subject(), "err", herr)
		_ = m.NakWithDelay(time.Second)
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// DecodeSubject decodes a message by the type its subject carries
// (contracts.DecodeSubject). Unknown subjects and invalid messages are
// permanent: redelivering them cannot fix them.
func DecodeSubject(subject string, data []byte) (contracts.Message, error) {
	msg, err := contracts.DecodeSubject(subject, data)
	if err != nil {
		return nil, Permanent(err)
	}
	return msg, nil
}

// Decode unmarshals and validates a message against its schema
// (contracts.Decode). Failures are permanent, as DecodeSubject's.
func Decode(schema string, data []byte, v any) error {
	if err := contracts.Decode(schema, data, v); err != nil {
		return Permanent(err)
	}
	return nil
}
