package contracts

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nkeys"
)

// Agent signatures. The driver agents share one NATS key (internal/natsauth),
// so NATS cannot tell them apart: any agent may publish on any shard's
// subjects. What one agent says on behalf of a shard therefore carries its
// own signature: each run of an agent makes an Ed25519 key pair (an NKey)
// that never leaves its memory, names itself by the public half (its
// Instance, in READY and heartbeats), and signs its READY, intervals and
// finals (headers SignerHeader and SignatureHeader over the subject and the
// body) and its heartbeats (Heartbeat.Signature). The scheduler binds a
// shard to the instance whose READY it took (BarrierGo.Instances) and the
// scheduler and the collector count a shard's results only when that
// instance signed them: another agent cannot forge them, nor the READY or
// the heartbeat of an agent, without its private key (docs/security.md).

// Signed reports whether an agent signs its messages on topic t: what it
// says for a shard (READY, intervals, final). A shard job it hands back to
// the queue is not signed: its re-publish after a crash, by this run or
// another, must keep the id JetStream de-duplicates on.
func Signed(t Topic) bool {
	return t == TopicBarrierReady || t == TopicInterval || t == TopicFinal
}

// The headers of a signed message.
const (
	SignerHeader    = "Benchq-Signer"    // the signer's public key: its Instance
	SignatureHeader = "Benchq-Signature" // base64url (no padding) Ed25519 signature
)

// Signer is an agent run's key pair.
type Signer struct {
	kp  nkeys.KeyPair
	pub string
}

// NewSigner makes a fresh key pair, kept in memory only.
func NewSigner() (*Signer, error) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		return nil, fmt.Errorf("signing key: %w", err)
	}
	pub, err := kp.PublicKey()
	if err != nil {
		return nil, err
	}
	return &Signer{kp: kp, pub: pub}, nil
}

// Public is the public key: the agent run's Instance.
func (s *Signer) Public() string { return s.pub }

// messageBytes are what a message's signature covers: its subject (so a
// signed message cannot be replayed on another subject) and its body.
func messageBytes(subject string, body []byte) []byte {
	return append([]byte("benchq message\n"+subject+"\n"), body...)
}

// Sign signs a message about to be published on subject: the values of
// SignerHeader and SignatureHeader.
func (s *Signer) Sign(subject string, body []byte) (signer, signature string, err error) {
	sig, err := s.kp.Sign(messageBytes(subject, body))
	if err != nil {
		return "", "", err
	}
	return s.pub, base64.RawURLEncoding.EncodeToString(sig), nil
}

// Errors of Verify: a message without a signature, one whose signature
// does not match its signer.
var (
	ErrUnsigned     = errors.New("not signed (no " + SignerHeader + " and " + SignatureHeader + " headers)")
	ErrBadSignature = errors.New("signature does not match")
)

// Verify checks a message's signature headers against its subject and
// body and returns the signer: the public key that signed it.
func Verify(subject string, body []byte, signer, signature string) (string, error) {
	if signer == "" || signature == "" {
		return "", ErrUnsigned
	}
	if err := verify(signer, signature, messageBytes(subject, body)); err != nil {
		return "", err
	}
	return signer, nil
}

func verify(signer, signature string, data []byte) error {
	if !nkeys.IsValidPublicUserKey(signer) {
		return fmt.Errorf("%w: signer %q is not a public key", ErrBadSignature, ShortKey(signer))
	}
	sig, err := base64.RawURLEncoding.DecodeString(signature)
	if err != nil {
		return fmt.Errorf("%w: signature is not base64url", ErrBadSignature)
	}
	kp, err := nkeys.FromPublicKey(signer)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBadSignature, err)
	}
	if err := kp.Verify(data, sig); err != nil {
		return fmt.Errorf("%w (signer %s)", ErrBadSignature, ShortKey(signer))
	}
	return nil
}

// SignedMsgID is the Nats-Msg-Id of a signed message whose body id is id:
// the id and the signature's first characters. JetStream de-duplicates on
// it, so a forged message published first under a shard's id does not
// make the real one (signed otherwise) a duplicate; a re-publish of the
// same bytes is signed alike (Ed25519 signatures are deterministic) and is
// one.
func SignedMsgID(id, signature string) string {
	if len(signature) > 16 {
		signature = signature[:16]
	}
	return id + "~" + signature
}

// ShortKey is a public key's first characters: an instance in logs and
// errors.
func ShortKey(key string) string {
	if len(key) > 12 {
		return key[:12] + "…"
	}
	return key
}

// HeartbeatKey is an agent run's key in the agents KV bucket: its name and
// its instance. Each run writes its own key, which no other run can write
// validly (its value is signed), so a heartbeat under another's name does
// not hide or replace its beats.
func HeartbeatKey(name, instance string) string { return name + "." + instance }

func heartbeatBytes(h Heartbeat) ([]byte, error) {
	h.Signature = ""
	body, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	return append([]byte("benchq heartbeat\n"), body...), nil
}

// SignHeartbeat sets h's Instance to the signer and signs it.
func (s *Signer) SignHeartbeat(h *Heartbeat) error {
	h.Instance = s.pub
	data, err := heartbeatBytes(*h)
	if err != nil {
		return err
	}
	sig, err := s.kp.Sign(data)
	if err != nil {
		return err
	}
	h.Signature = base64.RawURLEncoding.EncodeToString(sig)
	return nil
}

// VerifyHeartbeat checks that h, stored under key, was signed by its
// Instance and is stored under that instance's own key.
func VerifyHeartbeat(key string, h Heartbeat) error {
	if h.Signature == "" {
		return ErrUnsigned
	}
	if key != HeartbeatKey(h.Name, h.Instance) {
		return fmt.Errorf("%w: stored under %q, not its own key", ErrBadSignature, key)
	}
	data, err := heartbeatBytes(h)
	if err != nil {
		return err
	}
	return verify(h.Instance, h.Signature, data)
}
