package main

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/benchq/benchq/contracts"
)

// fieldFlags names the CLI flag of each request field, so that a rejected
// request is explained in the user's terms: "-nlp: must be at least 1, got
// 0", not "loading_pods[0]: minimum: got 0, want 1".
var fieldFlags = map[string]string{
	"dbms": "dbms", "sf": "sf", "operations": "xop", "workload": "xwl", "insert_order": "xio",
	"target_base": "xtb", "loading_factors": "xnlf", "benchmarking_factors": "xnbf",
	"loading_pods": "nlp", "loading_threads": "nlt", "benchmarking_pods": "nbp", "benchmarking_threads": "nbt",
	"clients": "ne", "repetitions": "nc", "max_suts": "ms", "max_suts_experiment": "mse",
	"status_interval": "xli", "batch_size": "xbs", "error_share_limit": "max-errors",
	"monitoring": "m", "resources.request_cpu": "rc", "resources.request_memory": "rr",
	"resources.limit_memory": "lr", "resources.limit_cpu": "lc",
	"storage.class": "rst", "storage.size": "rss", "storage.remove": "rsr",
	"nodes.sut": "rnn", "nodes.loading": "rnl", "nodes.benchmarking": "rnb",
	"workers": "nw", "workers_list": "nw", "cost_per_hour": "cost-per-hour", "worker_replicas": "nwr", "pool_pods": "xnpp", "pool_inbound": "xnpi", "pool_outbound": "xnpo",
	"duration_s": "xsd", "new_connection": "xconn", "saturation": "xsat",
	"saturation.step_factor": "xsatf", "saturation.step_s": "xsats", "saturation.max_p99_ms": "xsatp99",
	"saturation.precision": "xsatprec", "saturation.max_steps": "xsatmax", "saturation.hold_s": "xsh",
	"thresholds": "threshold", "timeouts.sut_ready_s": "timeout-sut", "timeouts.barrier_s": "timeout-barrier", "timeouts.shard_s": "timeout-shard",
	"tsdb.protocol": "protocol", "tsdb.metrics": "metrics", "tsdb.flush_interval_ms": "flush-interval", "tsdb.jitter_ms": "jitter",
	"tsdb.spawn_interval_ms": "spawn-interval", "tsdb.prefix": "prefix",
}

var (
	indexRE   = regexp.MustCompile(`\[\d+\]`)
	boundRE   = regexp.MustCompile(`^(minimum|maximum|exclusiveMinimum|exclusiveMaximum): got (.+), want (.+)$`)
	patternRE = regexp.MustCompile(`^'(.*)' does not match pattern '.*'$`)
	bounds    = map[string]string{"minimum": "at least", "maximum": "at most", "exclusiveMinimum": "more than", "exclusiveMaximum": "less than"}
)

// flagError is one field error of a rejected request in flag terms: the
// flag as the user typed it (typed: benchq's name → typed name), the
// schema's wording made plain.
func flagError(e contracts.FieldError, typed map[string]string) string {
	field := indexRE.ReplaceAllString(e.Field, "")
	name, ok := fieldFlags[field]
	if !ok {
		return e.Field + ": " + e.Message
	}
	if _, xmet := typed["xmet"]; field == "duration_s" && xmet {
		name = "xmet"
	}
	flagName := "-" + name
	if t, ok := typed[name]; ok {
		flagName = t
	}
	msg := e.Message
	if m := boundRE.FindStringSubmatch(msg); m != nil {
		// The request's unit, where the flag's may differ (-flush-interval
		// 5ms is 5 in tsdb.flush_interval_ms; -xsd is in minutes).
		unit := ""
		switch {
		case strings.HasSuffix(field, "_ms"):
			unit = " ms"
		case strings.HasSuffix(field, "_s"):
			unit = " s"
		}
		msg = fmt.Sprintf("must be %s %s%s, got %s%s", bounds[m[1]], m[3], unit, m[2], unit)
	} else if m := patternRE.FindStringSubmatch(msg); m != nil {
		msg = fmt.Sprintf("%q is not %s", m[1], patternKind(field))
	}
	return flagName + ": " + msg
}

// patternKind is what a request field whose value broke the schema's
// pattern must be, in words.
func patternKind(field string) string {
	switch {
	case strings.HasPrefix(field, "nodes."):
		return "a Kubernetes node name (lower-case letters, digits, '-' and '.', as kubectl get nodes prints them)"
	case field == "storage.class":
		return "a Kubernetes storage class name (lower-case letters, digits, '-' and '.')"
	case field == "tsdb.prefix":
		return "a metric name prefix (a letter, then up to 31 letters, digits or '_')"
	}
	return "a Kubernetes quantity such as 4, 500m or 16Gi"
}

// flagReason joins a rejected request's errors in flag terms.
func flagReason(errs []contracts.FieldError, typed map[string]string) string {
	parts := make([]string, len(errs))
	for i, e := range errs {
		parts[i] = flagError(e, typed)
	}
	return strings.Join(parts, "; ")
}
