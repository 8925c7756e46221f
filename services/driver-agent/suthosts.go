package main

import (
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/startup"
)

// parseHosts reads startup.SUTHostsEnv's value.
func parseHosts(v string) []string {
	var hosts []string
	for h := range strings.SplitSeq(v, ",") {
		if h = strings.TrimSpace(h); h != "" {
			hosts = append(hosts, h)
		}
	}
	return hosts
}

// mayConnect: every host ep sends the password to (its host and its JDBC
// URL's) is one of hosts, or hosts is empty.
func mayConnect(hosts []string, ep contracts.Endpoint) error {
	if len(hosts) == 0 {
		return nil
	}
	for _, h := range endpointHosts(ep) {
		if !slices.Contains(hosts, h) {
			return fmt.Errorf("the job's SUT endpoint names host %q, and this agent sends a SUT's password only to %s (%s)", h, strings.Join(hosts, ", "), startup.SUTHostsEnv)
		}
	}
	return nil
}

// endpointHosts are the hosts of ep: Host, and those of the JDBC URL
// ("jdbc:postgresql://h1:p1,h2:p2/db?…").
func endpointHosts(ep contracts.Endpoint) []string {
	hosts := []string{ep.Host}
	rest, ok := strings.CutPrefix(ep.JDBCURL, "jdbc:")
	if !ok {
		return hosts
	}
	_, rest, ok = strings.Cut(rest, "://")
	if !ok {
		return append(hosts, ep.JDBCURL) // no host part to read: matches no host
	}
	if i := strings.IndexAny(rest, "/?;"); i >= 0 {
		rest = rest[:i]
	}
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		rest = rest[at+1:]
	}
	for hp := range strings.SplitSeq(rest, ",") {
		h, _, err := net.SplitHostPort(hp)
		if err != nil {
			h = strings.Trim(hp, "[]") // no port
		}
		hosts = append(hosts, h)
	}
	return hosts
}
