package plan

import (
	"encoding/json"
	"errors"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/benchq/benchq/contracts"
)

// Requests whose plans cover what a plan can hold: the seed grids of
// plan_test.go, Benchbase, the pool loop, the actions, a placed and sized SUT.
var schemaRequests = map[string]string{
	"default experiment": `{"schema_version":1,"dbms":["Redis"],"sf":0.1,"operations":0.2,"loading_pods":[2],"loading_threads":[8],"benchmarking_threads":[8],"target_base":16384}`,
	"loading grid":       `{"schema_version":1,"dbms":["PostgreSQL"],"loading_pods":[1,8],"loading_threads":[64],"loading_factors":[1,4],"benchmarking_factors":[2]}`,
	"benchmarking grid":  `{"schema_version":1,"dbms":["PostgreSQL"],"loading_pods":[8],"benchmarking_pods":[1,8],"benchmarking_factors":[2,3],"repetitions":2,"clients":[1,2]}`,
	"benchbase":          `{"schema_version":1,"benchmark":"benchbase","dbms":["PostgreSQL"],"sf":16,"duration_s":600,"target_base":1024,"benchmarking_factors":[16],"benchmarking_pods":[1,2],"benchmarking_threads":[32],"new_connection":true}`,
	"benchbase defaults": `{"schema_version":1,"benchmark":"benchbase","dbms":["PgBouncer"]}`,
	"pool loop":          `{"schema_version":1,"dbms":["PgBouncer","PostgreSQL"],"sf":16,"loading_pods":[16],"loading_threads":[64],"loading_factors":[11],"pool_pods":[4,8],"pool_inbound":[128],"pool_outbound":[64]}`,
	"action load":        `{"schema_version":1,"action":"load","dbms":["Redis"],"sf":0.1,"storage":{"class":"shared","size":"50Gi","remove":true}}`,
	"action start":       `{"schema_version":1,"action":"start","dbms":["Redis"],"repetitions":2}`,
	"tsdb defaults":      `{"schema_version":1,"benchmark":"tsdb","dbms":["VictoriaMetrics"]}`,
	"tsdb grid":          `{"schema_version":1,"benchmark":"tsdb","dbms":["VictoriaMetrics"],"duration_s":30,"benchmarking_pods":[1,2],"benchmarking_threads":[4],"tsdb":{"protocol":"remote-write","metrics":50,"jitter_ms":0}}`,
	"placed sut": `{"schema_version":1,"dbms":["Redis"],"sf":0.1,"workers":3,"worker_replicas":1,"test_results":false,"duration_s":90,"batch_size":100,
		"resources":{"request_cpu":"4","request_memory":"16Gi","limit_memory":"64Gi"},"monitoring":{"sut":true},
		"nodes":{"sut":"n-sut","loading":"n-load","benchmarking":"n-bench"},"timeouts":{"shard_s":60}}`,
}

// resolvedSettings are the settings every plan carries whatever the request
// left out (docs/events.md, "The plan"): readers rely on them.
var resolvedSettings = []string{"schema_version", "benchmark", "action", "dbms", "sf", "operations", "workload", "target_base",
	"loading_factors", "benchmarking_factors", "loading_pods", "loading_threads", "benchmarking_pods", "benchmarking_threads",
	"clients", "repetitions", "max_suts", "status_interval", "test_results", "error_share_limit"}

// -max-errors is refused outside (0, 100], naming the field; the default is 1.
func TestErrorShareLimit(t *testing.T) {
	for _, v := range []string{"0", "150", "-1"} {
		_, _, errs := FromRequest([]byte(`{"schema_version":1,"dbms":["Redis"],"error_share_limit":`+v+`}`), "1")
		if len(errs) == 0 || errs[0].Field != "error_share_limit" {
			t.Errorf("error_share_limit %s: %v", v, errs)
		}
	}
	if s := planJSON(t, `{"schema_version":1,"dbms":["Redis"]}`)["settings"].(map[string]any); s["error_share_limit"] != 1.0 {
		t.Errorf("default %v", s["error_share_limit"])
	}
	if s := planJSON(t, `{"schema_version":1,"dbms":["Redis"],"error_share_limit":5}`)["settings"].(map[string]any); s["error_share_limit"] != 5.0 {
		t.Errorf("5: %v", s["error_share_limit"])
	}
}

func planJSON(t *testing.T, request string) map[string]any {
	t.Helper()
	_, p, errs := FromRequest([]byte(request), "1774020403")
	if errs != nil {
		t.Fatalf("request rejected: %s", Reason(errs))
	}
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func validate(t *testing.T, schema string, v any) error {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return contracts.Validate(schema, raw)
}

// Every plan FromRequest makes matches plan.schema.json, alone and inside
// the planned message, and carries its settings resolved.
func TestPlansMatchTheirSchema(t *testing.T) {
	for name, request := range schemaRequests {
		t.Run(name, func(t *testing.T) {
			p := planJSON(t, request)
			if err := validate(t, contracts.SchemaPlan, p); err != nil {
				t.Errorf("plan: %v", err)
			}
			var req map[string]any
			if err := json.Unmarshal([]byte(request), &req); err != nil {
				t.Fatal(err)
			}
			planned := map[string]any{"schema_version": 1, "id": "1774020403.planned", "code": "1774020403",
				"ts": time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC), "request": req, "plan": p}
			if err := validate(t, contracts.SchemaPlanned, planned); err != nil {
				t.Errorf("planned: %v", err)
			}
			settings := p["settings"].(map[string]any)
			for _, f := range resolvedSettings {
				if _, ok := settings[f]; !ok {
					t.Errorf("settings.%s missing", f)
				}
			}
		})
	}
}

// The schema holds plans to what a reader relies on: each broken plan is
// rejected, naming the field.
func TestSchemaRejectsBrokenPlans(t *testing.T) {
	type breakage struct {
		request, field string
		mutate         func(p map[string]any)
	}
	ycsb, bb := schemaRequests["default experiment"], schemaRequests["benchbase"]
	phase := func(p map[string]any, i int) map[string]any {
		return p["configurations"].([]any)[0].(map[string]any)["phases"].([]any)[i].(map[string]any)
	}
	shard := func(p map[string]any, ph, i int) map[string]any {
		return phase(p, ph)["shards"].([]any)[i].(map[string]any)
	}
	cases := map[string]breakage{
		"no version":          {ycsb, "version", func(p map[string]any) { delete(p, "version") }},
		"kind walk":           {ycsb, "configurations[0].phases[0].kind", func(p map[string]any) { phase(p, 0)["kind"] = "walk" }},
		"client 0 of a run":   {ycsb, "configurations[0].phases[1].client", func(p map[string]any) { phase(p, 1)["client"] = 0 }},
		"threads a string":    {ycsb, "configurations[0].phases[1].threads", func(p map[string]any) { phase(p, 1)["threads"] = "8" }},
		"no shards":           {ycsb, "configurations[0].phases[1].shards", func(p map[string]any) { phase(p, 1)["shards"] = []any{} }},
		"both engines":        {ycsb, "configurations[0].phases[1].shards[0]", func(p map[string]any) { shard(p, 1, 0)["tpcc"] = map[string]any{"warehouses": 1, "terminals": 1} }},
		"ycsb on benchbase":   {bb, "configurations[0].phases[1].shards[0].tpcc", func(p map[string]any) { s := shard(p, 1, 0); s["ycsb"] = s["tpcc"]; delete(s, "tpcc") }},
		"timeout unresolved":  {ycsb, "timeouts.shard_s", func(p map[string]any) { delete(p["timeouts"].(map[string]any), "shard_s") }},
		"benchbase, no -xsd":  {bb, "settings.duration_s", func(p map[string]any) { delete(p["settings"].(map[string]any), "duration_s") }},
		"ycsb, no -xio":       {ycsb, "settings.insert_order", func(p map[string]any) { delete(p["settings"].(map[string]any), "insert_order") }},
		"unknown plan field":  {ycsb, "extra", func(p map[string]any) { p["extra"] = 1 }},
		"unknown phase field": {ycsb, "configurations[0].phases[0].extra", func(p map[string]any) { phase(p, 0)["extra"] = 1 }},
	}
	for _, f := range resolvedSettings {
		cases["settings without "+f] = breakage{ycsb, "settings." + f, func(p map[string]any) { delete(p["settings"].(map[string]any), f) }}
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			p := planJSON(t, c.request)
			c.mutate(p)
			err := validate(t, contracts.SchemaPlan, p)
			var ve *contracts.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("accepted (or not a validation error: %v)", err)
			}
			for _, fe := range ve.Errors {
				if fe.Field == c.field {
					return
				}
			}
			t.Errorf("errors %+v do not name %s", ve.Errors, c.field)
		})
	}
}

// The workloads a request may name are one list: the request schema's
// enum is YCSBWorkloads, tpcc and haggar.
func TestWorkloadsAreTheSchemas(t *testing.T) {
	data, err := os.ReadFile("../../contracts/schemas/request.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties struct {
			Workload struct {
				Enum []string `json:"enum"`
			} `json:"workload"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(data, &schema); err != nil {
		t.Fatal(err)
	}
	want := append(slices.Clone(YCSBWorkloads), WorkloadTPCC, WorkloadHaggar)
	if got := schema.Properties.Workload.Enum; !slices.Equal(got, want) {
		t.Errorf("request.schema.json's workloads %v, the plan's %v", got, want)
	}
}
