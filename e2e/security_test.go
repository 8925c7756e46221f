package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/benchq/benchq/internal/attacks"
	"github.com/benchq/benchq/internal/natsauth"
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
}
