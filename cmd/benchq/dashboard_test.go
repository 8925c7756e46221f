package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func runWith(t *testing.T, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(t.Context(), args, &State{Env: func(k string) string { return env[k] }, Stdout: &out, Stderr: &errb})
	return code, out.String(), errb.String()
}

// Without a Grafana, benchq dashboard says how to get the plots anyway
// (the HTML report), and touches nothing.
func TestDashboardWithoutGrafana(t *testing.T) {
	s := newFakeStack(t, "")
	code, out, errs := runWith(t, map[string]string{"BENCHQ_HOME": s.home}, "dashboard", "-e", "c1")
	if code != ExitFailed || out != "" || !strings.Contains(errs, "BENCHQ_GRAFANA_URL") || !strings.Contains(errs, "benchq report -e c1") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
	s.untouched(t)
	// A URL without its scheme would make a link no browser opens.
	code, out, errs = runWith(t, map[string]string{"BENCHQ_HOME": s.home, "BENCHQ_GRAFANA_URL": "localhost:3000"}, "dashboard", "-e", "c1")
	if code != ExitUsage || out != "" || !strings.Contains(errs, "BENCHQ_GRAFANA_URL=localhost:3000 is not a Grafana URL: give its scheme and host, e.g. http://localhost:3000") {
		t.Errorf("no scheme: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// With a Grafana but no stack, the link has no time range and a warning
// says why; -upload sends both dashboards before printing it.
func TestDashboardLinkAndUpload(t *testing.T) {
	var uids []string
	grafana := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, `{"message":"Unauthorized"}`, http.StatusUnauthorized)
			return
		}
		var body struct {
			Dashboard struct{ UID string } `json:"dashboard"`
		}
		data, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(data, &body)
		uids = append(uids, body.Dashboard.UID)
		_, _ = io.WriteString(w, `{"status":"success","uid":"`+body.Dashboard.UID+`","url":"/d/`+body.Dashboard.UID+`/x"}`)
	}))
	defer grafana.Close()
	env := map[string]string{"BENCHQ_HOME": t.TempDir(), "BENCHQ_GRAFANA_URL": grafana.URL + "/"}
	want := grafana.URL + "/d/benchq-experiment/benchq-experiment?var-code=c1\n"

	code, out, errs := runWith(t, env, "dashboard", "-e", "c1")
	if code != ExitOK || out != want || !strings.Contains(errs, "no time range") || len(uids) != 0 {
		t.Errorf("link: exit %d, stdout %q, stderr %q, uploads %v", code, out, errs, uids)
	}
	code, out, errs = runWith(t, env, "dashboard", "-e", "c1", "-upload")
	if code != ExitFailed || out != "" || !strings.Contains(errs, "401 Unauthorized") {
		t.Errorf("upload without a token: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	env["BENCHQ_GRAFANA_TOKEN"] = "tok"
	code, out, errs = runWith(t, env, "dashboard", "-e", "c1", "-upload")
	if code != ExitOK || out != want || strings.Join(uids, ",") != "benchq-experiment,benchq-overview" || strings.Count(errs, "uploaded ") != 2 {
		t.Errorf("upload: exit %d, stdout %q, stderr %q, uploads %v", code, out, errs, uids)
	}
}
