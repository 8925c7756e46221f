package main

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/atomicfile"
	"github.com/benchq/benchq/internal/bus"
	"github.com/benchq/benchq/internal/plan"
)

// The HTTP intake (docs/openapi.yaml): the same requests as on
// NATS, validated by the same code, published to the same stream, so an
// accepted request is as durable as one a CLI published and the scheduler
// plans it through the one path. A token guards the experiments; /healthz
// and /metrics are open (read-only, for probes and Prometheus).

// maxRequestBytes bounds a request body (a large grid is a few KiB).
const maxRequestBytes = 1 << 20

type intake struct {
	bus     *bus.Bus
	kv      jetstream.KeyValue
	token   []byte
	metrics prometheus.Gatherer
	log     *slog.Logger
	now     func() time.Time
}

// serveIntake listens on addr until ctx ends; token is the bearer token.
func serveIntake(ctx context.Context, addr string, in *intake) (net.Addr, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("http intake: %w", err)
	}
	srv := &http.Server{Handler: in.routes(), ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			in.log.Error("http intake stopped", "err", err)
		}
	}()
	return ln.Addr(), nil
}

// routes are what the intake serves ("METHOD /path"), as docs/openapi.yaml
// documents them (a test compares the two).
func (in *intake) routes() http.Handler {
	mux := http.NewServeMux()
	for pattern, h := range in.handlers() {
		mux.Handle(pattern, h)
	}
	return mux
}

func (in *intake) handlers() map[string]http.Handler {
	return map[string]http.Handler{
		"POST /experiments":             in.auth(in.submit),
		"GET /experiments/{code}":       in.auth(in.get),
		"POST /experiments/{code}/stop": in.auth(in.stop),
		"GET /healthz":                  http.HandlerFunc(in.healthz),
		"GET /metrics":                  promhttp.HandlerFor(in.metrics, promhttp.HandlerOpts{}),
	}
}

// readToken reads the intake's bearer token from path, refusing a file
// others may read, or takes it from value (the compose stack passes it in
// BENCHQ_HTTP_TOKEN); one of the two, at least 16 characters.
func readToken(path, value string) ([]byte, error) {
	var tok []byte
	where := "in $BENCHQ_HTTP_TOKEN"
	switch {
	case path != "" && value != "":
		return nil, errors.New("the HTTP intake's token is given twice (-http-token-file and BENCHQ_HTTP_TOKEN): keep one")
	case path != "":
		var err error
		if tok, err = atomicfile.ReadSecret(path, "http token"); err != nil {
			return nil, err
		}
		where = path
	case value != "":
		tok = []byte(strings.TrimSpace(value))
	default:
		return nil, errors.New("the HTTP intake needs a token: set -http-token-file (env BENCHQ_HTTP_TOKEN_FILE) or BENCHQ_HTTP_TOKEN")
	}
	if len(tok) < 16 {
		return nil, fmt.Errorf("http token %s: shorter than 16 characters (benchq up and benchq credentials make one of 32; by hand: head -c 24 /dev/urandom | base64)", where)
	}
	return tok, nil
}

// auth lets through requests that carry the token (Authorization: Bearer).
func (in *intake) auth(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), in.token) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="benchq"`)
			writeJSON(w, http.StatusUnauthorized, problem{Error: "missing or wrong token (Authorization: Bearer <the token in $BENCHQ_HOME/auth/http.token>)"})
			return
		}
		h(w, r)
	}
}

// problem is every error answer; Errors names the fields of a request the
// schema or the plan refused, as a rejected event does.
type problem struct {
	Error  string                 `json:"error"`
	Errors []contracts.FieldError `json:"errors,omitempty"`
}

// accepted answers a submitted request.
type accepted struct {
	Code      string `json:"code"`
	RequestID string `json:"request_id"`
	State     string `json:"state"` // where to follow it
}

func (in *intake) submit(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBytes))
	if err != nil {
		writeJSON(w, http.StatusRequestEntityTooLarge, problem{Error: fmt.Sprintf("request body: %v (at most %d bytes)", err, maxRequestBytes)})
		return
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		why := "null" // valid JSON that leaves the map nil
		if err != nil {
			why = err.Error()
		}
		writeJSON(w, http.StatusBadRequest, problem{Error: "not a JSON object: " + why, Errors: []contracts.FieldError{{Field: "(request)", Message: "not a JSON object: " + why}}})
		return
	}
	code, generated := "", false
	if raw, ok := fields["code"]; ok {
		_ = json.Unmarshal(raw, &code)
	} else {
		code, generated = newCode(in.now()), true
	}
	id, givenID := "", false
	if raw, ok := fields["id"]; ok {
		_ = json.Unmarshal(raw, &id)
		givenID = true
	}
	for attempt := 1; ; attempt++ {
		if generated {
			fields["code"], _ = json.Marshal(code)
		}
		body, status, p := in.prepare(r.Context(), fields, code, givenID)
		if p != nil {
			writeJSON(w, status, *p)
			return
		}
		if !givenID {
			id = "http-" + code
		}
		duplicate, err := in.bus.PublishNew(r.Context(), contracts.SubjRequest, id, body)
		if err != nil {
			writeJSON(w, http.StatusServiceUnavailable, problem{Error: "the request could not be queued: " + err.Error()})
			return
		}
		if !duplicate {
			break
		}
		// JetStream already holds a request with this id: the same request
		// sent again (a given id), or a code of ours drawn twice.
		if !generated || attempt == 3 {
			writeJSON(w, http.StatusConflict, problem{Error: fmt.Sprintf("a request with id %s was accepted already (experiment %s)", id, code)})
			return
		}
		code = newCode(in.now())
	}
	w.Header().Set("Location", "/experiments/"+code)
	writeJSON(w, http.StatusAccepted, accepted{Code: code, RequestID: id, State: "/experiments/" + code})
}

// prepare validates the request with its code and id filled in and checks
// that the code is free; it returns the body to publish, or the answer.
func (in *intake) prepare(ctx context.Context, fields map[string]json.RawMessage, code string, givenID bool) ([]byte, int, *problem) {
	if !givenID {
		// The request's id (its message id, and the stored request_id):
		// said to come over HTTP.
		fields["id"], _ = json.Marshal("http-" + code)
	}
	body, _ := json.Marshal(fields)
	if _, _, errs := plan.FromRequest(body, code); len(errs) > 0 {
		return nil, http.StatusBadRequest, &problem{Error: plan.Reason(errs), Errors: errs}
	}
	if _, err := in.kv.Get(ctx, code); err == nil {
		return nil, http.StatusConflict, &problem{Error: fmt.Sprintf("experiment %s already exists; choose another code or leave it out", code)}
	} else if !errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, http.StatusServiceUnavailable, &problem{Error: "the experiments' state cannot be read: " + err.Error()}
	}
	return body, 0, nil
}

// newCode is a code the intake draws: unix seconds and 48 random bits (a
// code drawn twice is drawn again, see submit).
func newCode(now time.Time) string { return contracts.Code(now, contracts.RandomSuffix()) }

// experimentView is an experiment's state as GET answers it.
type experimentView struct {
	Code           string       `json:"code"`
	Status         string       `json:"status"`
	StartedAt      time.Time    `json:"started_at"`
	EndedAt        *time.Time   `json:"ended_at,omitempty"`
	Failures       []string     `json:"failures,omitempty"`
	Cancelled      string       `json:"cancelled,omitempty"`
	Configurations []configView `json:"configurations"`
}

type configView struct {
	Name   string `json:"name"`
	DBMS   string `json:"dbms"`
	Status string `json:"status"`
	Phase  string `json:"phase,omitempty"` // the current or last phase
	Failed string `json:"failed,omitempty"`
}

func (in *intake) get(w http.ResponseWriter, r *http.Request) {
	st, ok := in.state(w, r)
	if !ok {
		return
	}
	v := experimentView{Code: st.Code, Status: st.Status, StartedAt: st.StartedAt, EndedAt: st.EndedAt, Failures: st.Failures, Cancelled: st.Cancelled}
	for i, c := range st.Configs {
		pc := st.Plan.Configurations[i]
		cv := configView{Name: pc.Name, DBMS: pc.DBMS, Status: c.Status, Failed: c.Failed}
		if c.Phase < len(pc.Phases) {
			cv.Phase = pc.Phases[c.Phase].Name
		}
		v.Configurations = append(v.Configurations, cv)
	}
	writeJSON(w, http.StatusOK, v)
}

func (in *intake) stop(w http.ResponseWriter, r *http.Request) {
	st, ok := in.state(w, r)
	if !ok {
		return
	}
	if st.Status != contracts.ExperimentRunning {
		writeJSON(w, http.StatusConflict, problem{Error: fmt.Sprintf("experiment %s has ended (%s)", st.Code, st.Status)})
		return
	}
	var body struct {
		Reason string `json:"reason"`
	}
	_ = json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&body)
	now := in.now().UTC()
	stop := &contracts.Stop{Envelope: contracts.NewEnvelope(st.Code, contracts.StopID(st.Code, now), now), Reason: body.Reason}
	if err := in.bus.Publish(r.Context(), contracts.SubjStop, stop); err != nil {
		writeJSON(w, http.StatusServiceUnavailable, problem{Error: "the stop could not be queued: " + err.Error()})
		return
	}
	writeJSON(w, http.StatusAccepted, accepted{Code: st.Code, RequestID: stop.ID, State: "/experiments/" + st.Code})
}

// rejection is the scheduler's last rejection of a request for code
// (nil: none): a code that was never planned says why, not "planned
// within a moment" for ever.
func (in *intake) rejection(ctx context.Context, code string) *contracts.Rejected {
	events, err := in.bus.JS.Stream(ctx, contracts.StreamEvents)
	if err != nil {
		return nil
	}
	m, err := events.GetLastMsgForSubject(ctx, contracts.TopicRejected.For(code))
	if err != nil {
		return nil
	}
	var rej contracts.Rejected
	if json.Unmarshal(m.Data, &rej) != nil {
		return nil
	}
	return &rej
}

// state reads an experiment's stored state (the bucket: what the scheduler
// last wrote), answering 404 or 503 itself when it cannot.
func (in *intake) state(w http.ResponseWriter, r *http.Request) (*contracts.ExperimentState, bool) {
	code := r.PathValue("code")
	if !contracts.CodePattern.MatchString(code) {
		writeJSON(w, http.StatusNotFound, problem{Error: fmt.Sprintf("no experiment %q (a code is %s)", code, contracts.CodePattern)})
		return nil, false
	}
	e, err := in.kv.Get(r.Context(), code)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		if rej := in.rejection(r.Context(), code); rej != nil {
			writeJSON(w, http.StatusNotFound, problem{Error: fmt.Sprintf("no experiment %s: its last request (%s) was rejected: %s (a request accepted since is planned within a moment)", code, rej.RequestID, rej.Reason), Errors: rej.Errors})
			return nil, false
		}
		writeJSON(w, http.StatusNotFound, problem{Error: fmt.Sprintf("no experiment %s (a request just accepted is planned within a moment)", code)})
		return nil, false
	}
	if err != nil {
		writeJSON(w, http.StatusServiceUnavailable, problem{Error: "the experiments' state cannot be read: " + err.Error()})
		return nil, false
	}
	var st contracts.ExperimentState
	if err := json.Unmarshal(e.Value(), &st); err != nil {
		writeJSON(w, http.StatusInternalServerError, problem{Error: fmt.Sprintf("the state of %s is unreadable: %v", code, err)})
		return nil, false
	}
	return &st, true
}

func (in *intake) healthz(w http.ResponseWriter, _ *http.Request) {
	if s := in.bus.NC.Status(); s != nats.CONNECTED {
		writeJSON(w, http.StatusServiceUnavailable, problem{Error: "NATS: " + s.String()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
