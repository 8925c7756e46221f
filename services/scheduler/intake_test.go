package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/testenv"
)

// The HTTP intake against a real NATS and a running scheduler: a request
// accepted over HTTP is planned like one published on NATS, a bad one is
// answered with the same field errors, stop and state work, and nothing
// gets in without the token.
func TestHTTPIntake(t *testing.T) {
	w := newWorld(t)
	tokenFile := filepath.Join(t.TempDir(), "http.token")
	// The kernel picks the port (no moment for another process to take it)
	// and the scheduler names it in the address file, as benchq up has it.
	addrFile := filepath.Join(t.TempDir(), "intake.addr")
	const token = "s3cret-token-of-the-test"
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	log := testenv.Logger(t, "scheduler")
	testenv.Go(t, func(ctx context.Context) error {
		return Run(ctx, Config{NATSURL: w.url, TickEvery: 50 * time.Millisecond, HTTPAddr: "127.0.0.1:0", HTTPAddrFile: addrFile, HTTPTokenFile: tokenFile}, log)
	})
	var base string
	testenv.Eventually(t, 10*time.Second, func() error {
		b, err := os.ReadFile(addrFile)
		if err != nil {
			return err
		}
		addr := strings.TrimSpace(string(b))
		if _, port, err := net.SplitHostPort(addr); err != nil || port == "0" {
			t.Fatalf("the intake's address file says %q (%v): want the port it listens on", b, err)
		}
		base = "http://" + addr
		return nil
	})
	call := func(method, path, tok, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		var resp *http.Response
		testenv.Eventually(t, 10*time.Second, func() error { // the intake starts with the scheduler
			var err error
			resp, err = http.DefaultClient.Do(req) //nolint:bodyclose // closed below, once a try answered
			if err != nil {
				req, _ = http.NewRequest(method, base+path, strings.NewReader(body))
				if tok != "" {
					req.Header.Set("Authorization", "Bearer "+tok)
				}
			}
			return err
		})
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var v map[string]any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s %s: %d, not JSON: %s", method, path, resp.StatusCode, b)
		}
		return resp.StatusCode, v
	}

	if code, _ := call("GET", "/healthz", "", ""); code != http.StatusOK {
		t.Errorf("healthz: %d", code)
	}
	valid := `{"schema_version":1,"dbms":["Redis"],"sf":0.001,"loading_pods":[1],"loading_threads":[2],"benchmarking_pods":[1],"benchmarking_threads":[2]}`
	for _, tok := range []string{"", "wrong-token-of-the-same-length"} {
		if code, v := call("POST", "/experiments", tok, valid); code != http.StatusUnauthorized || !strings.Contains(fmt.Sprint(v["error"]), "token") {
			t.Errorf("token %q: %d %v, want 401", tok, code, v)
		}
	}

	// The same validation as the NATS path, the same field errors.
	code, v := call("POST", "/experiments", token, `{"schema_version":1,"dbms":["NoSuchDB"]}`)
	errs, _ := v["errors"].([]any)
	if code != http.StatusBadRequest || len(errs) == 0 || errs[0].(map[string]any)["field"] != "dbms[0]" {
		t.Errorf("unknown DBMS: %d %v", code, v)
	}
	if code, _ := call("POST", "/experiments", token, `not json`); code != http.StatusBadRequest {
		t.Errorf("not JSON: %d", code)
	}
	// A valid request the scheduler rejects after the intake took it (its
	// plan is larger than one message): the code's state says why, where
	// it said "planned within a moment" for ever.
	pods := strings.TrimSuffix(strings.Repeat("x,", 40), ",")
	for i := 1; i <= 40; i++ {
		pods = strings.Replace(pods, "x", strconv.Itoa(i), 1)
	}
	if code, v := call("POST", "/experiments", token, `{"schema_version":1,"code":"bighttp","dbms":["Redis"],"sf":0.001,"benchmarking_pods":[`+pods+`],"benchmarking_threads":[40],"clients":[8]}`); code != http.StatusAccepted {
		t.Fatalf("a request whose plan is too large for one message: %d %v, want 202 (the scheduler finds out)", code, v)
	}
	testenv.Eventually(t, 30*time.Second, func() error {
		code, v := call("GET", "/experiments/bighttp", token, "")
		if code != http.StatusNotFound || !strings.Contains(fmt.Sprint(v["error"]), "was rejected: (request): its plan takes") {
			return fmt.Errorf("GET a rejected code: %d %v", code, v)
		}
		return nil
	})

	// JSON that is no object (null made the handler panic: no answer).
	for _, body := range []string{`null`, `[]`, `"x"`} {
		if code, v := call("POST", "/experiments", token, body); code != http.StatusBadRequest || !strings.Contains(fmt.Sprint(v), "not a JSON object") {
			t.Errorf("%s: %d %v", body, code, v)
		}
	}
	if code, _ := call("POST", "/experiments", token, strings.Repeat(" ", maxRequestBytes+1)); code != http.StatusRequestEntityTooLarge {
		t.Errorf("a body over %d bytes: %d", maxRequestBytes, code)
	}

	// Accepted: a code of its own, planned and deployed by the scheduler.
	code, v = call("POST", "/experiments", token, valid)
	exp, _ := v["code"].(string)
	if code != http.StatusAccepted || !contracts.CodePattern.MatchString(exp) || v["state"] != "/experiments/"+exp {
		t.Fatalf("valid request: %d %v", code, v)
	}
	d := w.deploy(exp)
	testenv.Eventually(t, wait, func() error {
		if code, v := call("GET", "/experiments/"+exp, token, ""); code != http.StatusOK || v["status"] != contracts.ExperimentRunning {
			return fmt.Errorf("GET: %d %v", code, v)
		}
		return nil
	})
	// A code taken is refused at once.
	taken := strings.Replace(valid, `"schema_version":1`, fmt.Sprintf(`"schema_version":1,"code":%q`, exp), 1)
	if code, v := call("POST", "/experiments", token, taken); code != http.StatusConflict {
		t.Errorf("a code taken: %d %v", code, v)
	}
	if code, _ := call("GET", "/experiments/no-such-code", token, ""); code != http.StatusNotFound {
		t.Errorf("unknown code: %d", code)
	}

	// Stop: cancelled once its SUT is torn down; a second stop is refused.
	if code, v := call("POST", "/experiments/"+exp+"/stop", token, `{"reason":"http test"}`); code != http.StatusAccepted {
		t.Fatalf("stop: %d %v", code, v)
	}
	w.teardown(d)
	testenv.Eventually(t, wait, func() error {
		code, v := call("GET", "/experiments/"+exp, token, "")
		if code != http.StatusOK || v["status"] != contracts.ExperimentCancelled || !strings.Contains(fmt.Sprint(v["cancelled"]), "http test") {
			return fmt.Errorf("GET after stop: %d %v", code, v)
		}
		return nil
	})
	if code, _ := call("POST", "/experiments/"+exp+"/stop", token, ""); code != http.StatusConflict {
		t.Errorf("stop of an ended experiment: %d", code)
	}

	// /metrics is the scheduler's registry, open to Prometheus.
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(b, []byte("benchq_scheduler_events_total")) {
		t.Errorf("/metrics lacks the scheduler's series:\n%.500s", b)
	}
}

func TestIntakeRefusesABadToken(t *testing.T) {
	dir := t.TempDir()
	for name, c := range map[string]struct {
		content string
		mode    os.FileMode
		want    string
	}{
		"open":  {"a-token-long-enough-1234", 0o644, "chmod 600"},
		"short": {"short", 0o600, "shorter than 16"},
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(c.content), c.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, c.mode); err != nil {
			t.Fatal(err)
		}
		if _, err := readToken(path, ""); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
	if _, err := readToken("", ""); err == nil || !strings.Contains(err.Error(), "BENCHQ_HTTP_TOKEN_FILE") {
		t.Errorf("no token file: %v", err)
	}
	// The compose stack passes the token itself.
	if tok, err := readToken("", " a-token-long-enough-1234\n"); err != nil || string(tok) != "a-token-long-enough-1234" {
		t.Errorf("token in the environment: %q, %v", tok, err)
	}
	if _, err := readToken("", "short"); err == nil || !strings.Contains(err.Error(), "$BENCHQ_HTTP_TOKEN") {
		t.Errorf("short token in the environment: %v", err)
	}
	if _, err := readToken(filepath.Join(dir, "short"), "a-token-long-enough-1234"); err == nil || !strings.Contains(err.Error(), "keep one") {
		t.Errorf("token given twice: %v", err)
	}
}

// docs/openapi.yaml documents exactly what the intake serves.
func TestOpenAPIDocumentsTheIntake(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("docs/openapi.yaml: %v", err)
	}
	documented := map[string]bool{}
	for path, ops := range doc.Paths {
		for method := range ops {
			documented[strings.ToUpper(method)+" "+path] = true
		}
	}
	served := map[string]bool{}
	for pattern := range (&intake{}).handlers() {
		served[pattern] = true
		if !documented[pattern] {
			t.Errorf("%s is served but not in docs/openapi.yaml", pattern)
		}
	}
	for pattern := range documented {
		if !served[pattern] {
			t.Errorf("%s is in docs/openapi.yaml but not served", pattern)
		}
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Errorf("openapi: %q", doc.OpenAPI)
	}
}

// A request sent again with its id is not taken for a new one: JetStream
// drops the copy, and the intake says so instead of answering 202 for a
// request that will never be planned.
func TestIntakeAnswersADuplicateID(t *testing.T) {
	w := newWorld(t)
	in := &intake{bus: w.b, log: testenv.Logger(t, "intake"), now: time.Now, token: []byte("a-token-long-enough-1234")}
	kv, err := w.b.JS.KeyValue(w.ctx, contracts.KVExperiments)
	if err != nil {
		t.Fatal(err)
	}
	in.kv = kv
	srv := httptestServer(t, in)
	post := func(body string) int {
		req, _ := http.NewRequest("POST", srv+"/experiments", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer a-token-long-enough-1234")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	req := `{"schema_version":1,"id":"client-42","dbms":["Redis"],"sf":0.001}`
	if got := post(req); got != http.StatusAccepted {
		t.Fatalf("first: %d", got)
	}
	if got := post(req); got != http.StatusConflict {
		t.Errorf("the same id again: %d, want 409", got)
	}
}

func httptestServer(t *testing.T, in *intake) string {
	t.Helper()
	srv := httptest.NewServer(in.routes())
	t.Cleanup(srv.Close)
	return srv.URL
}
