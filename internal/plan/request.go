package plan

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/benchq/benchq/catalog"
	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/nearest"
)

// FromRequest checks a raw request (schema, catalog, grid) and, when it is
// runnable, expands it. Every problem becomes a FieldError naming the field
// and what is allowed, so the user can fix the request without reading code.
// The scheduler uses it to accept requests; the CLI's --dry-run to show plans.
func FromRequest(raw []byte, code string) (contracts.Request, Plan, []contracts.FieldError) {
	var req contracts.Request
	if err := contracts.Validate(contracts.SchemaRequest, raw); err != nil {
		var ve *contracts.ValidationError
		if errors.As(err, &ve) {
			return req, Plan{}, ve.Errors
		}
		return req, Plan{}, []contracts.FieldError{{Field: "(request)", Message: err.Error()}}
	}
	if err := json.Unmarshal(raw, &req); err != nil {
		return req, Plan{}, []contracts.FieldError{{Field: "(request)", Message: "not a request: " + err.Error()}}
	}
	var errs []contracts.FieldError
	for i, name := range req.DBMS {
		e, err := catalog.Lookup(name)
		if err != nil {
			errs = append(errs, contracts.FieldError{Field: fmt.Sprintf("dbms[%d]", i), Message: unknownDBMS(name, req.Benchmark)})
			continue
		}
		req.DBMS[i] = e.Name // canonical spelling
	}
	if len(errs) > 0 {
		return req, Plan{}, errs
	}
	p, err := Expand(code, req)
	if err != nil {
		var ie *InvalidError
		if errors.As(err, &ie) {
			return req, Plan{}, []contracts.FieldError{{Field: ie.Field, Message: ie.Message}}
		}
		return req, Plan{}, []contracts.FieldError{{Field: "(request)", Message: err.Error()}}
	}
	return req, p, nil
}

// Reason joins field errors into one line for people.
func Reason(errs []contracts.FieldError) string {
	parts := make([]string, len(errs))
	for i, e := range errs {
		parts[i] = e.Field + ": " + e.Message
	}
	return strings.Join(parts, "; ")
}

// unknownDBMS says that name is no DBMS of the catalog, with the one it
// is nearest to, and the DBMSs the benchmark can run (BenchmarkDBMS).
func unknownDBMS(name, benchmark string) string {
	allowed := BenchmarkDBMS(benchmark)
	msg := fmt.Sprintf("unknown DBMS %q", name)
	if n := nearest.Name(name, allowed); n != "" {
		msg += fmt.Sprintf(" (did you mean %s?)", n)
	}
	return msg + "; allowed: " + strings.Join(allowed, ", ")
}

// BenchmarkDBMS names the catalog's DBMSs a benchmark can run: the
// time-series databases for tsdb, those with SQL for TPC-C, the others
// for YCSB.
func BenchmarkDBMS(benchmark string) []string {
	var out []string
	for _, n := range catalog.Names() {
		e, err := catalog.Lookup(n)
		switch {
		case err != nil:
		case benchmark == BenchmarkTSDB && e.IsTSDB(),
			benchmark == BenchmarkBenchbase && e.JDBCURL != "",
			benchmark != BenchmarkTSDB && benchmark != BenchmarkBenchbase && !e.IsTSDB():
			out = append(out, n)
		}
	}
	return out
}
