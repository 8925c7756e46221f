package grafana

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// datasourceRefs collects every {"type": ..., "uid": ...} a dashboard's
// panels, targets, variables and annotations name as their datasource.
func datasourceRefs(v any, into map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		if ds, ok := x["datasource"].(map[string]any); ok {
			uid, _ := ds["uid"].(string)
			typ, _ := ds["type"].(string)
			into[uid] = typ
		}
		for _, c := range x {
			datasourceRefs(c, into)
		}
	case []any:
		for _, c := range x {
			datasourceRefs(c, into)
		}
	}
}

// The provisioning files hold every datasource the dashboards use, by uid
// and type, and the provider loads the dashboards' folder.
func TestProvisioningMatchesDashboards(t *testing.T) {
	var ds struct {
		APIVersion  int `json:"apiVersion"`
		Datasources []struct {
			Name, UID, Type, URL string
		}
	}
	data, err := os.ReadFile("provisioning/datasources/benchq.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &ds); err != nil {
		t.Fatalf("datasources: %v", err)
	}
	provisioned := map[string]string{}
	for _, d := range ds.Datasources {
		if d.UID == "" || d.Type == "" || d.URL == "" {
			t.Errorf("datasource %q: uid, type and url are required: %+v", d.Name, d)
		}
		provisioned[d.UID] = d.Type
	}
	if ds.APIVersion != 1 {
		t.Errorf("datasources apiVersion %d, want 1", ds.APIVersion)
	}
	boards, err := Dashboards()
	if err != nil {
		t.Fatal(err)
	}
	if len(boards) != 2 {
		t.Fatalf("%d dashboards, want benchq-experiment and benchq-overview", len(boards))
	}
	for _, b := range boards {
		var model any
		if err := json.Unmarshal(b.JSON, &model); err != nil {
			t.Fatal(err)
		}
		used := map[string]string{}
		datasourceRefs(model, used)
		if len(used) == 0 {
			t.Errorf("%s uses no datasource", b.UID)
		}
		for uid, typ := range used {
			if provisioned[uid] != typ {
				t.Errorf("%s uses datasource %s of type %q; provisioned: %q", b.UID, uid, typ, provisioned[uid])
			}
		}
	}
	var prov struct {
		Providers []struct {
			Name, Type string
			Options    struct{ Path string }
		}
	}
	data, err = os.ReadFile("provisioning/dashboards/benchq.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &prov); err != nil {
		t.Fatal(err)
	}
	if len(prov.Providers) != 1 || prov.Providers[0].Type != "file" || prov.Providers[0].Options.Path == "" {
		t.Errorf("dashboard provider: %+v", prov.Providers)
	}
}

func TestExperimentURL(t *testing.T) {
	from := time.Date(2026, 11, 24, 21, 45, 0, 0, time.UTC)
	got := ExperimentURL("http://grafana:3000/", "exp 1", from, from.Add(time.Minute))
	want := "http://grafana:3000/d/benchq-experiment/benchq-experiment?from=1795556700000&to=1795556760000&var-code=exp+1"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if got := ExperimentURL("http://g", "x", time.Time{}, time.Time{}); got != "http://g/d/benchq-experiment/benchq-experiment?var-code=x" {
		t.Errorf("without a time range: %s", got)
	}
	// The upload's user:password stays out of the printed link.
	if got := ExperimentURL("http://admin:s3cret@g:3000", "x", time.Time{}, time.Time{}); got != "http://g:3000/d/benchq-experiment/benchq-experiment?var-code=x" {
		t.Errorf("with basic auth in the URL: %s", got)
	}
}

// Upload against a stand-in for Grafana's HTTP API (no Grafana server can
// be installed here): the request Grafana documents for POST
// /api/dashboards/db, the token or basic auth, and its errors passed on.
func TestUpload(t *testing.T) {
	var got []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pw, basic := r.BasicAuth()
		authorized := r.Header.Get("Authorization") == "Bearer tok" || (basic && user == "admin" && pw == "secret")
		if r.Method != http.MethodPost || r.URL.Path != "/api/dashboards/db" || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, `{"message":"bad request"}`, http.StatusBadRequest)
			return
		}
		if !authorized {
			http.Error(w, `{"message":"Unauthorized"}`, http.StatusUnauthorized)
			return
		}
		var body map[string]any
		data, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(data, &body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		got = append(got, body)
		uid := body["dashboard"].(map[string]any)["uid"].(string)
		_, _ = io.WriteString(w, `{"id":1,"status":"success","uid":"`+uid+`","url":"/d/`+uid+`/x","version":1}`)
	}))
	defer srv.Close()
	boards, err := Dashboards()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	u, err := (&Client{Base: srv.URL, Token: "tok"}).Upload(ctx, boards[0], "benchq test")
	if err != nil || u != "/d/"+boards[0].UID+"/x" {
		t.Fatalf("upload: %q, %v", u, err)
	}
	d := got[0]["dashboard"].(map[string]any)
	if got[0]["overwrite"] != true || got[0]["message"] != "benchq test" || d["id"] != nil || d["title"] != boards[0].Title || d["panels"] == nil {
		t.Errorf("request body: overwrite %v, message %v, id %v, title %v", got[0]["overwrite"], got[0]["message"], d["id"], d["title"])
	}
	basicURL := strings.Replace(srv.URL, "http://", "http://admin:secret@", 1)
	if _, err := (&Client{Base: basicURL}).Upload(ctx, boards[1], "m"); err != nil {
		t.Errorf("basic auth: %v", err)
	}
	_, err = (&Client{Base: strings.Replace(srv.URL, "http://", "http://admin:wrong@", 1)}).Upload(ctx, boards[1], "m")
	if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "Unauthorized") || strings.Contains(err.Error(), "wrong") {
		t.Errorf("a refused upload: %v (want the status and Grafana's message, no password)", err)
	}
}
