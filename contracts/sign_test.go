package contracts

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nkeys"
)

func TestSignedMessagesVerifyOnlyAsSigned(t *testing.T) {
	a, err := NewSigner()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewSigner()
	subject, body := "benchq.results.17.c-1-2.1.final", []byte(`{"id":"17.c-1-2.1.a1.final","status":"ok"}`)
	signer, sig, err := a.Sign(subject, body)
	if err != nil || signer != a.Public() || !nkeys.IsValidPublicUserKey(signer) {
		t.Fatalf("sign: %q %v", signer, err)
	}
	if got, err := Verify(subject, body, signer, sig); err != nil || got != a.Public() {
		t.Fatalf("verify: %q %v", got, err)
	}
	// Deterministic: the same bytes are signed alike, so a re-publish keeps
	// its Nats-Msg-Id.
	if _, again, _ := a.Sign(subject, body); again != sig || SignedMsgID("x", again) != SignedMsgID("x", sig) {
		t.Error("signing the same bytes twice gave two signatures")
	}
	_, bsig, _ := b.Sign(subject, body)
	for name, c := range map[string]struct {
		subject     string
		body        []byte
		signer, sig string
		want        error
	}{
		"unsigned":                      {subject, body, "", "", ErrUnsigned},
		"another key, claiming a":       {subject, body, a.Public(), bsig, ErrBadSignature},
		"a changed body":                {subject, []byte(strings.Replace(string(body), "ok", "failed", 1)), signer, sig, ErrBadSignature},
		"replayed on another subject":   {"benchq.results.17.c-1-2.2.final", body, signer, sig, ErrBadSignature},
		"a signer that is no key":       {subject, body, "driver-agent-1", sig, ErrBadSignature},
		"a signature that is no base64": {subject, body, signer, "!!", ErrBadSignature},
	} {
		if _, err := Verify(c.subject, c.body, c.signer, c.sig); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	if SignedMsgID("17.r.1.a1.final", sig) == SignedMsgID("17.r.1.a1.final", bsig) {
		t.Error("two signers' messages share a Nats-Msg-Id")
	}
}

func TestHeartbeatsVerifyOnlyUnderTheirRunsKey(t *testing.T) {
	a, _ := NewSigner()
	b, _ := NewSigner()
	hb := Heartbeat{Name: "driver-agent-1", At: time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC), Host: "h", Pid: 42}
	if err := a.SignHeartbeat(&hb); err != nil || hb.Instance != a.Public() {
		t.Fatal(err)
	}
	key := HeartbeatKey(hb.Name, hb.Instance)
	if err := VerifyHeartbeat(key, hb); err != nil {
		t.Fatalf("a's own heartbeat: %v", err)
	}
	// b writes a's key: a's instance, b's signature.
	forged := hb
	forged.At = hb.At.Add(time.Hour)
	if err := b.SignHeartbeat(&forged); err != nil {
		t.Fatal(err)
	}
	forged.Instance = a.Public()
	if err := VerifyHeartbeat(key, forged); !errors.Is(err, ErrBadSignature) {
		t.Errorf("b's heartbeat as a's run: %v", err)
	}
	// b's own, valid heartbeat put under a's key.
	own := Heartbeat{Name: "driver-agent-1", At: hb.At}
	_ = b.SignHeartbeat(&own)
	if err := VerifyHeartbeat(key, own); !errors.Is(err, ErrBadSignature) {
		t.Errorf("b's heartbeat under a's key: %v", err)
	}
	if err := VerifyHeartbeat(HeartbeatKey(own.Name, own.Instance), own); err != nil {
		t.Errorf("b's heartbeat under its own key: %v", err)
	}
	changed := hb
	changed.Busy = "17.r.1.a1.job"
	if err := VerifyHeartbeat(key, changed); !errors.Is(err, ErrBadSignature) {
		t.Errorf("a changed heartbeat: %v", err)
	}
	unsigned := hb
	unsigned.Signature = ""
	if err := VerifyHeartbeat(key, unsigned); !errors.Is(err, ErrUnsigned) {
		t.Errorf("unsigned: %v", err)
	}
}
