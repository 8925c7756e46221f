package catalog

import (
	"slices"
	"strconv"
	"strings"

	"github.com/benchq/benchq/contracts"
)

// Endpoint is how clients reach a SUT of this DBMS at host:port: the
// catalog's database and user, and its JDBC URL filled in.
func (e Entry) Endpoint(host string, port int) contracts.Endpoint {
	ep := contracts.Endpoint{Host: host, Port: port, Database: e.Database, User: e.User}
	ep.JDBCURL = e.placeholders(ep).Replace(e.JDBCURL)
	return ep
}

// YCSBProperties returns the YCSB properties to reach ep in a phase of kind
// (contracts.KindLoad or contracts.KindRun): the catalog's templates with
// {host}, {port}, {database}, {user}, {password} and {jdbc_url} filled in
// (ep's fields, else the catalog's defaults), the load properties added for
// loading. The binding class is not among them: it is YCSB.DB (YCSB's -db).
// Properties that come out empty (no password, say) are left out, so that
// the binding applies its own default.
func (e Entry) YCSBProperties(ep contracts.Endpoint, kind string) map[string]string {
	if ep.Database == "" {
		ep.Database = e.Database
	}
	if ep.User == "" {
		ep.User = e.User
	}
	r := e.placeholders(ep)
	out := map[string]string{}
	add := func(m map[string]string) {
		for k, v := range m {
			if v = r.Replace(v); v == "" {
				delete(out, k)
				continue
			}
			out[k] = v
		}
	}
	add(e.YCSB.Properties)
	if kind == contracts.KindLoad {
		add(e.YCSB.LoadProperties)
	}
	return out
}

// SecretYCSBProperties are the YCSB properties of the catalog that carry
// the SUT's password ({password}): a driver hands them to YCSB in a file
// of its own, never on the JVM's command line, which every local user may
// read.
func (e Entry) SecretYCSBProperties() []string {
	var out []string
	for _, m := range []map[string]string{e.YCSB.Properties, e.YCSB.LoadProperties} {
		for k, v := range m {
			if strings.Contains(v, "{password}") && !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	slices.Sort(out)
	return out
}

// Schema returns the statements that prepare a database for benchmark
// ("ycsb"; "" means ycsb). Other benchmarks (Benchbase) create their own
// schema, so they get none.
func (e Entry) Schema(benchmark string) []string {
	if benchmark == "" || strings.EqualFold(benchmark, "ycsb") {
		return e.YCSB.Schema
	}
	return nil
}

func (e Entry) placeholders(ep contracts.Endpoint) *strings.Replacer {
	vars := []string{
		"{host}", ep.Host,
		"{port}", strconv.Itoa(ep.Port),
		"{database}", ep.Database,
		"{user}", ep.User,
		"{password}", ep.Password,
	}
	jdbc := ep.JDBCURL
	if jdbc == "" {
		jdbc = strings.NewReplacer(vars...).Replace(e.JDBCURL)
	}
	return strings.NewReplacer(append(vars, "{jdbc_url}", jdbc)...)
}
