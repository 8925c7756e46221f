package main

import (
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/benchq/benchq/catalog"
	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/bus"
)

func TestEndpointHosts(t *testing.T) {
	for _, c := range []struct {
		ep   contracts.Endpoint
		want []string
	}{
		{contracts.Endpoint{Host: "a.ns.svc", Port: 6379}, []string{"a.ns.svc"}},
		{contracts.Endpoint{Host: "h", JDBCURL: "jdbc:postgresql://h:5432/benchq?prepareThreshold=0"}, []string{"h", "h"}},
		{contracts.Endpoint{Host: "h", JDBCURL: "jdbc:postgresql://h:6432,evil:6432/benchq"}, []string{"h", "h", "evil"}},
		{contracts.Endpoint{Host: "h", JDBCURL: "jdbc:postgresql://u@[::1]:5432/db"}, []string{"h", "::1"}},
		{contracts.Endpoint{Host: "h", JDBCURL: "jdbc:postgresql://evil/db"}, []string{"h", "evil"}},
		{contracts.Endpoint{Host: "h", JDBCURL: "jdbc:odd"}, []string{"h", "jdbc:odd"}},
	} {
		if got := endpointHosts(c.ep); !slices.Equal(got, c.want) {
			t.Errorf("endpointHosts(%+v) = %q, want %q", c.ep, got, c.want)
		}
	}
	hosts := parseHosts(" 127.0.0.1 ,, a.ns.svc")
	if !slices.Equal(hosts, []string{"127.0.0.1", "a.ns.svc"}) {
		t.Fatalf("parseHosts = %q", hosts)
	}
	if err := mayConnect(hosts, contracts.Endpoint{Host: "a.ns.svc", JDBCURL: "jdbc:postgresql://a.ns.svc:5432/x"}); err != nil {
		t.Error(err)
	}
	if err := mayConnect(hosts, contracts.Endpoint{Host: "a.ns.svc", JDBCURL: "jdbc:postgresql://a.ns.svc:5432,evil:1/x"}); err == nil || !strings.Contains(err.Error(), `"evil"`) {
		t.Errorf("a JDBC URL with another host: %v", err)
	}
	if err := mayConnect(nil, contracts.Endpoint{Host: "anywhere"}); err != nil {
		t.Errorf("no hosts given: %v", err)
	}
}

// An agent that sends passwords to 127.0.0.1 only never runs a shard job
// whose endpoint is another host (one a holder of the agents' key could
// forge, 127.0.0.2 here, where the test listens): it hands it back, and
// nothing connects there, no READY, no final; the genuine job after it
// runs (it fails, its SUT being unreachable, which shows the agent took
// it).
func TestAJobNamingAnotherHostIsNotRun(t *testing.T) {
	t.Parallel()
	s := newStack(t, 1, noStandby, func(c *Config) { c.SUTHosts = []string{"127.0.0.1"} })
	trap, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("skipping: no listener on 127.0.0.2 (%v)", err)
	}
	defer trap.Close()
	connected := make(chan struct{}, 1)
	go func() {
		if c, err := trap.Accept(); err == nil {
			c.Close()
			connected <- struct{}{}
		}
	}()
	entry, _ := catalog.Lookup("Redis")
	req := contracts.Request{DBMS: []string{"Redis"}, SF: 0.001}
	forged := phaseJobs(t, "forgedhost", req, 0, entry.Endpoint("127.0.0.2", trap.Addr().(*net.TCPAddr).Port))[0]
	genuine := phaseJobs(t, "forgedhost", req, 0, entry.Endpoint("127.0.0.1", 1))[0]
	genuine.ID, genuine.Shard = genuine.ID+".genuine", 2
	ready, finals, unsubscribe := s.listen(forged.Code, forged.Phase)
	defer unsubscribe()
	for _, j := range []*contracts.ShardJob{&forged, &genuine} {
		if err := s.bus.Publish(s.ctx, contracts.SubjShard, j); err != nil {
			t.Fatal(err)
		}
	}
	for {
		select {
		case <-connected:
			t.Fatal("the agent connected to the host the forged job named")
		case m := <-ready:
			t.Fatalf("READY: %s", m.Data)
		case m := <-finals:
			var f contracts.Final
			if err := bus.Decode(contracts.SchemaFinal, m.Data, &f); err != nil {
				t.Fatal(err)
			}
			if f.Shard != genuine.Shard {
				t.Fatalf("a final of the forged job: %s %q", f.Status, f.Error)
			}
			select {
			case <-connected:
				t.Fatal("the agent connected to the host the forged job named")
			case <-time.After(100 * time.Millisecond):
			}
			return
		case <-time.After(phaseWait):
			t.Fatalf("no final of the genuine job within %s", phaseWait)
		}
	}
}
