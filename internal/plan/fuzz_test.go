package plan

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/benchq/benchq/contracts"
)

// FuzzFromRequest feeds the scheduler's intake arbitrary bytes: a request
// is either refused with field errors that name a field, or expanded into a
// plan that matches plan.schema.json, never a panic (the scheduler would
// crash on it) and never an empty plan.
func FuzzFromRequest(f *testing.F) {
	for _, r := range schemaRequests {
		f.Add([]byte(r))
	}
	for _, dir := range []string{"valid", "invalid"} {
		files, err := filepath.Glob(filepath.Join("..", "..", "contracts", "examples", dir, "request--*.json"))
		if err != nil {
			f.Fatal(err)
		}
		for _, name := range files {
			raw, err := os.ReadFile(name)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(raw)
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		_, p, errs := FromRequest(raw, "fuzz1")
		if errs != nil {
			for _, e := range errs {
				if e.Field == "" || e.Message == "" {
					t.Fatalf("a field error without its field or message: %+v", e)
				}
			}
			return
		}
		if len(p.Configurations) == 0 {
			t.Fatalf("accepted a request with nothing to run: %s", raw)
		}
		planned, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("plan does not encode: %v", err)
		}
		if err := contracts.Validate(contracts.SchemaPlan, planned); err != nil {
			t.Fatalf("accepted request %s gives a plan its schema refuses: %v", raw, err)
		}
	})
}
