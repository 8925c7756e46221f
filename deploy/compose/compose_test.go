package compose

// No Docker engine runs on the machines benchq is developed on, so the
// compose stack is checked by the tools that read its files: compose-go
// (the loader of docker compose itself, pinned in go.mod) for compose.yaml
// with a generated .env, nats-server's own configuration parser for
// nats-server.conf (what `nats-server -t` runs) and a real server started
// from it, promtool for prometheus.yml, and a reading of the Dockerfile.
// None of this builds an image or starts a container: docs/compose.md says
// what was and was not run.

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/nats-io/nats.go"
	"sigs.k8s.io/yaml"

	"github.com/benchq/benchq/catalog"
	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/bus"
	"github.com/benchq/benchq/internal/credentials"
	"github.com/benchq/benchq/internal/localdb"
	"github.com/benchq/benchq/internal/natsauth"
	"github.com/benchq/benchq/internal/resultsdb"
	"github.com/benchq/benchq/internal/startup"
	"github.com/benchq/benchq/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite the stacks' nats-server.conf from credentials.NATSConfig")

const root = "../.."

// natsConf is the compose stack's nats-server.conf; Kubernetes' differs
// in the monitoring address only.
var natsConf = filepath.Join(root, "deploy", "compose", "nats-server.conf")

// The stacks' nats-server.conf files are what credentials.NATSConfig
// generates: compose's monitoring on loopback (its health check runs in
// the container), Kubernetes' on the pod's address (the kubelet probes it;
// the Service does not expose it).
func TestNATSConfigIsGenerated(t *testing.T) {
	for path, monitor := range map[string]string{natsConf: "127.0.0.1:8222", filepath.Join(root, "deploy", "k8s", "nats-server.conf"): "0.0.0.0:8222"} {
		want, err := credentials.NATSConfig(monitor)
		if err != nil {
			t.Fatal(err)
		}
		if *update {
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if got := readFile(t, path); got != want {
			t.Errorf("%s is not what NATSConfig generates (the roles of internal/natsauth changed?): go test ./deploy/compose -run TestNATSConfig -update", path)
		}
	}
}

// freshEnv writes a new .env (as `benchq credentials` does) into a temp
// dir and returns its path and its variables.
func freshEnv(t *testing.T) (string, map[string]string) {
	t.Helper()
	env, err := credentials.Env()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), ".env")
	if err := os.WriteFile(path, []byte(env), 0o600); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, line := range strings.Split(env, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			vars[k] = v
		}
	}
	want := 2*len(natsauth.Roles) + len(credentials.Secrets)
	if len(vars) != want {
		t.Fatalf(".env has %d variables, want %d", len(vars), want)
	}
	return path, vars
}

// nats-server.conf parses as nats-server parses it (-t), with the keys of
// a generated .env in its environment; a server started from it admits
// each role with its seed, as the services connect (bus.Dial with
// BENCHQ_NATS_SEED), and nobody else.
func TestNATSConfigAdmitsTheRoles(t *testing.T) {
	_, env := freshEnv(t)
	for _, r := range natsauth.Roles {
		t.Setenv(natsauth.PubEnv(r), env[natsauth.PubEnv(r)])
	}
	opts, url := testenv.NATSFromConfig(t, natsConf)
	if !opts.JetStream || opts.StoreDir != "/data" || opts.Port != 4222 || opts.HTTPPort != 8222 {
		t.Errorf("jetstream %v store %q port %d http %d; want JetStream on /data (the volume), 4222, 8222 (the healthcheck)", opts.JetStream, opts.StoreDir, opts.Port, opts.HTTPPort)
	}
	if len(opts.Nkeys) != len(natsauth.Roles) {
		t.Fatalf("%d users, want one per role (%d)", len(opts.Nkeys), len(natsauth.Roles))
	}
	if nc, err := nats.Connect(url); err == nil {
		nc.Close()
		t.Error("an anonymous connection was admitted")
	}
	for _, r := range natsauth.Roles {
		t.Setenv(natsauth.SeedValueEnv, env[natsauth.SeedValueEnvOf(r)])
		b, err := bus.Dial(url, r, "compose-test", nil)
		if err != nil {
			t.Errorf("%s: %v", r, err)
			continue
		}
		b.Close()
	}
	// The agent's key cannot end a phase (the scheduler's subject).
	t.Setenv(natsauth.SeedValueEnv, env[natsauth.SeedValueEnvOf(natsauth.Agent)])
	denied := make(chan error, 1)
	b, err := bus.Dial(url, natsauth.Agent, "compose-test", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	b.NC.SetErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		select {
		case denied <- err:
		default:
		}
	})
	if err := b.NC.Publish(contracts.TopicPhaseDone.For("e1"), []byte("{}")); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-denied:
		if !strings.Contains(err.Error(), "Permissions Violation") {
			t.Errorf("agent publishing phase.done: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("the agent's key published phase.done unrefused")
	}
}

// load reads compose.yaml as docker compose does, its variables from
// envFile ("" for none), with the cli profile (the reporter) enabled.
func load(t *testing.T, envFile string) (*types.Project, error) {
	t.Helper()
	fns := []cli.ProjectOptionsFn{cli.WithWorkingDirectory("."), cli.WithProfiles([]string{"cli"})}
	if envFile != "" {
		fns = append(fns, cli.WithEnvFiles(envFile), cli.WithDotEnv)
	}
	opts, err := cli.NewProjectOptions([]string{"compose.yaml"}, fns...)
	if err != nil {
		t.Fatal(err)
	}
	return opts.LoadProject(context.Background())
}

// Which role's seed each service connects with.
var roleOf = map[string]natsauth.Role{
	"scheduler": natsauth.Scheduler, "collector": natsauth.Collector, "deployer": natsauth.Deployer, "driver-agent": natsauth.Agent,
	"declare": natsauth.Admin,
}

func TestComposeFile(t *testing.T) {
	if _, err := load(t, ""); err == nil || !strings.Contains(err.Error(), "run benchq credentials deploy/compose") {
		t.Errorf("without .env: %v; want the missing variable named with the fix", err)
	}
	envFile, env := freshEnv(t)
	p, err := load(t, envFile)
	if err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	want := []string{"collector", "declare", "deployer", "driver-agent", "grafana", "migrate", "nats", "nats-data-owner", "prometheus", "reporter", "results-db", "scheduler"}
	if got := p.ServiceNames(); !slices.Equal(got, want) {
		t.Fatalf("services %v, want %v", got, want)
	}
	pinned := regexp.MustCompile(`^[a-z0-9./-]+:v?[0-9][0-9A-Za-z.-]*$`)
	for name, s := range p.Services {
		// Images: ours are built here; others are pinned to a version.
		if s.Build != nil {
			if df := filepath.Join(s.Build.Context, s.Build.Dockerfile); df != filepath.Join(absRoot(t), "Dockerfile") {
				t.Errorf("%s: builds from %s, want the repository's Dockerfile", name, df)
			}
			if s.Image != "benchq/"+name+":dev" {
				t.Errorf("%s: image %q, want benchq/%s:dev (deploy/k8s names the same)", name, s.Image, name)
			}
		} else if strings.HasPrefix(s.Image, "benchq/") {
			if !slices.ContainsFunc(slices.Collect(maps.Values(p.Services)), func(o types.ServiceConfig) bool { return o.Build != nil && o.Image == s.Image }) {
				t.Errorf("%s: image %q, which no service builds", name, s.Image)
			}
		} else if !pinned.MatchString(s.Image) {
			t.Errorf("%s: image %q is not pinned to a version", name, s.Image)
		}
		// Healthchecks: every long-running service but the agents, which
		// serve no port here (their heartbeats are their health).
		// The one-shot steps (declare, migrate, nats-data-owner) are no
		// daemons either.
		oneShot := name == "declare" || name == "migrate" || name == "nats-data-owner"
		daemon := len(s.Profiles) == 0 && name != "driver-agent" && !oneShot
		if daemon && (s.HealthCheck == nil || len(s.HealthCheck.Test) < 2) {
			t.Errorf("%s: no healthcheck", name)
		}
		if s.HealthCheck != nil && len(s.HealthCheck.Test) > 1 && s.HealthCheck.Test[1] == "healthcheck" && s.Build == nil {
			t.Errorf("%s: its healthcheck runs healthcheck, which only benchq's images have", name)
		}
		if daemon && s.Restart != "unless-stopped" {
			t.Errorf("%s: restart %q, want unless-stopped", name, s.Restart)
		}
		for dep, d := range s.DependsOn {
			switch d.Condition {
			case types.ServiceConditionHealthy:
				if p.Services[dep].HealthCheck == nil {
					t.Errorf("%s waits for %s healthy, which has no healthcheck", name, dep)
				}
			case types.ServiceConditionStarted, types.ServiceConditionCompletedSuccessfully:
			default:
				t.Errorf("%s depends on %s with condition %q", name, dep, d.Condition)
			}
		}
		// Hardening: no process gains privileges; every container but the
		// results database (whose entrypoint steps down from root) drops
		// every capability.
		if !slices.Contains(s.SecurityOpt, "no-new-privileges:true") {
			t.Errorf("%s: no no-new-privileges", name)
		}
		if name != "results-db" && !slices.Equal(s.CapDrop, []string{"ALL"}) {
			t.Errorf("%s: cap_drop %v, want [ALL]", name, s.CapDrop)
		}
		// Root only where a step needs it: the results database's
		// entrypoint steps down; nats-data-owner hands NATS its volume,
		// with chown's capabilities alone. NATS itself is not root.
		switch name {
		case "nats-data-owner":
			if s.User != "0:0" || !slices.Equal(s.CapAdd, []string{"CHOWN", "DAC_READ_SEARCH"}) {
				t.Errorf("%s: user %q, cap_add %v", name, s.User, s.CapAdd)
			}
		case "nats":
			if s.User == "" || strings.HasPrefix(s.User, "0") || s.DependsOn["nats-data-owner"].Condition != types.ServiceConditionCompletedSuccessfully {
				t.Errorf("nats: user %q (want not root), after nats-data-owner: %v", s.User, s.DependsOn["nats-data-owner"])
			}
		default:
			if len(s.CapAdd) > 0 {
				t.Errorf("%s: cap_add %v", name, s.CapAdd)
			}
		}
		// Ports: published on the host's loopback only.
		for _, port := range s.Ports {
			if port.HostIP != "127.0.0.1" {
				t.Errorf("%s: port %d published on %q, want 127.0.0.1", name, port.Target, port.HostIP)
			}
		}
		// Bind mounts exist; named volumes are declared (the loader
		// checks that) and persistent stores are on one.
		for _, v := range s.Volumes {
			if v.Type == types.VolumeTypeBind {
				if _, err := os.Stat(v.Source); err != nil {
					t.Errorf("%s: mounts %v", name, err)
				}
			}
		}
		// Credentials: a service connects with its own role's seed only.
		for k, v := range s.Environment {
			if v == nil {
				t.Errorf("%s: %s has no value", name, k)
				continue
			}
			for _, r := range natsauth.Roles {
				if *v != env[natsauth.SeedValueEnvOf(r)] {
					continue
				}
				ok := k == natsauth.SeedValueEnv && roleOf[name] == r ||
					k == natsauth.AgentSeedValueEnv && name == "deployer" && r == natsauth.Agent
				if !ok {
					t.Errorf("%s: %s holds the %s seed", name, k, r)
				}
			}
		}
		if r, ok := roleOf[name]; ok {
			if dependsOn(p, name, "nats") == "" {
				t.Errorf("%s does not wait for nats", name)
			}
			if got := s.Environment[natsauth.SeedValueEnv]; got == nil || *got != env[natsauth.SeedValueEnvOf(r)] {
				t.Errorf("%s: no %s seed in %s", name, r, natsauth.SeedValueEnv)
			}
		}
	}
	// The streams are declared by the scheduler's image run once with the
	// admin key; the scheduler waits for that.
	if d := p.Services["declare"]; d.Image != p.Services["scheduler"].Image || !slices.Equal(d.Command, types.ShellCommand{"-declare"}) ||
		p.Services["scheduler"].DependsOn["declare"].Condition != types.ServiceConditionCompletedSuccessfully {
		t.Errorf("declare: image %s, command %v; want the scheduler's image with -declare, which the scheduler waits to complete", d.Image, d.Command)
	}
	for _, r := range natsauth.Roles {
		if v := p.Services["nats"].Environment[natsauth.PubEnv(r)]; v == nil || *v != env[natsauth.PubEnv(r)] {
			t.Errorf("nats: %s not from .env", natsauth.PubEnv(r))
		}
	}
	// The results database: the owner's password for the migrations only,
	// the collector's role and the readers' role (the reporter, Grafana)
	// each their own; no URL holds a password.
	for name, want := range map[string]struct{ user, password string }{
		"migrate":   {"postgres", "BENCHQ_DB_PASSWORD"},
		"collector": {resultsdb.CollectorRole, "BENCHQ_DB_COLLECTOR_PASSWORD"},
		"reporter":  {resultsdb.ReaderRole, "BENCHQ_DB_READER_PASSWORD"},
	} {
		s := p.Services[name]
		if v := s.Environment["PGPASSWORD"]; v == nil || *v != env[want.password] {
			t.Errorf("%s: PGPASSWORD is not %s", name, want.password)
		}
		if u := s.Environment["BENCHQ_DB_URL"]; u == nil || strings.Contains(*u, env[want.password]) || !strings.HasPrefix(*u, "postgresql://"+want.user+"@") {
			t.Errorf("%s: the database URL is missing, holds the password or is not %s's", name, want.user)
		}
	}
	if g := p.Services["grafana"].Environment; g["BENCHQ_RESULTS_DB_USER"] == nil || *g["BENCHQ_RESULTS_DB_USER"] != resultsdb.ReaderRole ||
		g["BENCHQ_RESULTS_DB_PASSWORD"] == nil || *g["BENCHQ_RESULTS_DB_PASSWORD"] != env["BENCHQ_DB_READER_PASSWORD"] {
		t.Errorf("grafana does not read the results as %s", resultsdb.ReaderRole)
	}
	if m := p.Services["migrate"]; !slices.Equal(m.Command, types.ShellCommand{"-migrate"}) || m.Image != p.Services["collector"].Image ||
		p.Services["collector"].DependsOn["migrate"].Condition != types.ServiceConditionCompletedSuccessfully {
		t.Errorf("migrate: image %s, command %v; want the collector's image with -migrate, which the collector waits to complete", m.Image, m.Command)
	}
	// The SUTs' key: the deployer (its SUTs, exporters and phase agents)
	// and the driver agents, no one else; no service is given one SUT's
	// password for all.
	for name, s := range p.Services {
		v := s.Environment[startup.SUTKeyEnv]
		want := name == "deployer" || name == "driver-agent"
		if got := v != nil && *v == env[startup.SUTKeyEnv] && *v != ""; got != want {
			t.Errorf("%s: holds the SUTs' key %v, want %v", name, got, want)
		}
		if _, ok := s.Environment[startup.SUTPasswordEnv]; ok {
			t.Errorf("%s: holds %s, one password for every SUT", name, startup.SUTPasswordEnv)
		}
	}
	if v := p.Services["scheduler"].Environment["BENCHQ_HTTP_TOKEN"]; v == nil || *v != env["BENCHQ_HTTP_TOKEN"] {
		t.Error("scheduler: BENCHQ_HTTP_TOKEN is not the .env's token")
	}
	if n := p.Services["driver-agent"].Deploy; n == nil || n.Replicas == nil || *n.Replicas < 1 {
		t.Error("driver-agent: no replicas")
	}
	checkMonitoring(t, p)
}

// The agents and Prometheus share the deployer's network (the SUTs listen
// on its loopback); Prometheus reads the target groups the deployer writes
// and scrapes at the interval the collector and Grafana are told.
func checkMonitoring(t *testing.T, p *types.Project) {
	for _, name := range []string{"driver-agent", "prometheus"} {
		if got := p.Services[name].NetworkMode; got != "service:deployer" {
			t.Errorf("%s: network_mode %q, want service:deployer", name, got)
		}
	}
	for _, name := range []string{"collector", "grafana"} {
		if v := p.Services[name].Environment["BENCHQ_PROMETHEUS_URL"]; v == nil || *v != "http://deployer:9090" {
			t.Errorf("%s: BENCHQ_PROMETHEUS_URL %v, want http://deployer:9090 (Prometheus in the deployer's network)", name, v)
		}
	}
	var cfg struct {
		Global struct {
			ScrapeInterval string `json:"scrape_interval"`
		} `json:"global"`
		ScrapeConfigs []struct {
			FileSD []struct {
				Files []string `json:"files"`
			} `json:"file_sd_configs"`
		} `json:"scrape_configs"`
	}
	if err := yaml.Unmarshal([]byte(readFile(t, "prometheus.yml")), &cfg); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"collector", "deployer", "grafana"} {
		if v := p.Services[name].Environment["BENCHQ_SCRAPE_INTERVAL"]; v == nil || *v != cfg.Global.ScrapeInterval {
			t.Errorf("%s: BENCHQ_SCRAPE_INTERVAL %v, prometheus.yml scrapes every %s", name, v, cfg.Global.ScrapeInterval)
		}
	}
	targets := p.Services["deployer"].Environment["BENCHQ_PROMETHEUS_TARGETS"]
	if targets == nil || len(cfg.ScrapeConfigs) == 0 || len(cfg.ScrapeConfigs[0].FileSD) == 0 ||
		cfg.ScrapeConfigs[0].FileSD[0].Files[0] != *targets+"/*.json" {
		t.Errorf("prometheus.yml's file_sd is not where the deployer writes its target groups (%v)", targets)
	}
	if !mounts(p.Services["prometheus"], "deployer-home", *targets) || !mounts(p.Services["deployer"], "deployer-home", *targets) {
		t.Error("the deployer's target groups are not on a volume Prometheus mounts")
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool not found (apt-get install prometheus; make bootstrap does)")
	}
	if out, err := exec.Command(promtool, "check", "config", "prometheus.yml").CombinedOutput(); err != nil {
		t.Errorf("promtool check config prometheus.yml: %v\n%s", err, out)
	}
	// Grafana's provisioned datasources read these from its environment.
	ds := readFile(t, filepath.Join(root, "grafana", "provisioning", "datasources", "benchq.yaml"))
	for _, m := range regexp.MustCompile(`\$\{([A-Z_]+)\}`).FindAllStringSubmatch(ds, -1) {
		if p.Services["grafana"].Environment[m[1]] == nil {
			t.Errorf("grafana: %s (grafana/provisioning/datasources) is not set", m[1])
		}
	}
}

// mounts reports whether s mounts the named volume at a path that holds dir.
func mounts(s types.ServiceConfig, volume, dir string) bool {
	for _, v := range s.Volumes {
		if v.Type == types.VolumeTypeVolume && v.Source == volume && strings.HasPrefix(dir+"/", strings.TrimSuffix(v.Target, "/")+"/") {
			return true
		}
	}
	return false
}

// dependsOn is the path by which service name waits for dep ("" if none).
func dependsOn(p *types.Project, name, dep string) string {
	for d := range p.Services[name].DependsOn {
		if d == dep {
			return name + " -> " + dep
		}
		if path := dependsOn(p, d, dep); path != "" {
			return name + " -> " + path
		}
	}
	return ""
}

func absRoot(t *testing.T) string {
	t.Helper()
	r, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// stage is one FROM … AS name of the Dockerfile, with what it inherits.
type stage struct {
	from, user, entry string
	healthcheck       bool
	copied            []string // what it copies from the go stage (/out/…)
}

// readDockerfile reads the stages of the repository's Dockerfile, checking
// on the way that every base image is pinned, every path it copies exists
// and every package it builds has Go files.
func readDockerfile(t *testing.T) (map[string]*stage, []string) {
	t.Helper()
	text := readFile(t, filepath.Join(root, "Dockerfile"))
	pinned := regexp.MustCompile(`^[a-z0-9./-]+:v?[0-9][0-9A-Za-z._-]*$`)
	stages := map[string]*stage{}
	var built []string
	var cur *stage
	for _, line := range strings.Split(strings.ReplaceAll(text, "\\\n", " "), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		switch fields[0] {
		case "FROM":
			if len(fields) != 4 || fields[2] != "AS" {
				t.Errorf("FROM without AS: %s", line)
				continue
			}
			cur = &stage{from: fields[1]}
			if parent, ok := stages[fields[1]]; ok { // inherits user, entrypoint, healthcheck
				*cur = *parent
				cur.from, cur.copied = fields[1], slices.Clone(parent.copied)
			} else if !pinned.MatchString(fields[1]) {
				t.Errorf("FROM %s is not pinned to a version", fields[1])
			}
			stages[fields[3]] = cur
		case "USER":
			cur.user = fields[1]
		case "ENTRYPOINT":
			cur.entry = strings.Trim(fields[1], `["],`)
		case "HEALTHCHECK":
			cur.healthcheck = fields[1] != "NONE"
		case "COPY":
			if strings.HasPrefix(fields[1], "--from=go") {
				cur.copied = append(cur.copied, fields[2])
				continue
			}
			if strings.HasPrefix(fields[1], "--from=") {
				continue
			}
			for _, src := range fields[1 : len(fields)-1] {
				if _, err := os.Stat(filepath.Join(root, src)); err != nil {
					t.Errorf("COPY %s: %v", src, err)
				}
			}
		case "RUN":
			for _, cmd := range regexp.MustCompile(`go build .*`).FindAllString(line, -1) {
				for _, pkg := range regexp.MustCompile(`\./(services|cmd)/[a-z-]+`).FindAllString(cmd, -1) {
					if m, _ := filepath.Glob(filepath.Join(root, pkg, "*.go")); len(m) == 0 {
						t.Errorf("builds %s, which has no Go files", pkg)
					}
					built = append(built, filepath.Base(pkg))
				}
			}
		}
	}
	return stages, built
}

// The Dockerfile has a target per image compose builds: it runs as a
// non-root user, its ENTRYPOINT is the binary of its name, built by the go
// stage, and its healthcheck binary is in it.
func TestDockerfile(t *testing.T) {
	stages, built := readDockerfile(t)
	envFile, _ := freshEnv(t)
	p, err := load(t, envFile)
	if err != nil {
		t.Fatal(err)
	}
	targets := 0
	for name, s := range p.Services {
		if s.Build == nil {
			continue
		}
		targets++
		st, ok := stages[s.Build.Target]
		if !ok || s.Build.Target != name {
			t.Errorf("%s: builds target %q, which the Dockerfile does not have under its name", name, s.Build.Target)
			continue
		}
		if st.user == "" || st.user == "root" || st.user == "0" || strings.HasPrefix(st.user, "0:") {
			t.Errorf("%s: runs as %q, want a non-root USER", name, st.user)
		}
		if st.entry != name {
			t.Errorf("%s: ENTRYPOINT %q, want %s", name, st.entry, name)
		}
		if name == "reporter" {
			continue
		}
		for _, bin := range []string{name, "healthcheck"} {
			if !slices.Contains(st.copied, "/out/"+bin) || !slices.Contains(built, bin) {
				t.Errorf("%s: %s is not built by the go stage and copied into the image", name, bin)
			}
		}
		if hc := s.HealthCheck != nil && !s.HealthCheck.Disable; hc != st.healthcheck && name != "driver-agent" {
			t.Errorf("%s: healthcheck in compose %v, in the image %v", name, hc, st.healthcheck)
		}
	}
	if targets != 5 {
		t.Errorf("compose builds %d images, want 5 (scheduler, collector, deployer, driver-agent, reporter)", targets)
	}
	ignore := readFile(t, filepath.Join(root, ".dockerignore"))
	// Every .env (compose's, deploy/k8s's: the stack's secrets) stays out of the context.
	for _, must := range []string{".git", ".venv", ".benchq", "**/.env", "**/.env.*"} {
		if !slices.Contains(strings.Split(ignore, "\n"), must) {
			t.Errorf(".dockerignore: %s is not excluded from the build context", must)
		}
	}
}

// Every image of benchq's own that the catalog names (benchq/<target>:dev,
// Graphite's) is a target of the Dockerfile: it runs as user benchq, whose
// uid the entry's kubernetes.run_as_user gives, and its ENTRYPOINT is a
// binary the go stage builds and the image copies. Graphite's carries
// carbon in the venv internal/localdb looks in.
func TestCatalogImagesAreDockerfileTargets(t *testing.T) {
	stages, built := readDockerfile(t)
	text := readFile(t, filepath.Join(root, "Dockerfile"))
	own := 0
	for _, n := range catalog.Names() {
		e, _ := catalog.Lookup(n)
		target, ok := strings.CutPrefix(e.Image, "benchq/")
		if !ok {
			continue
		}
		own++
		st, ok := stages[strings.TrimSuffix(target, ":dev")]
		if !ok {
			t.Errorf("%s: image %s is no target of the Dockerfile", n, e.Image)
			continue
		}
		if uid := e.Kubernetes.RunAsUser; st.user != "benchq" || !strings.Contains(text, fmt.Sprintf("useradd --system --uid %d ", uid)) {
			t.Errorf("%s: the image runs as %q; the catalog's run_as_user %d is not user benchq's uid", n, st.user, uid)
		}
		if !slices.Contains(st.copied, "/out/"+st.entry) || !slices.Contains(built, st.entry) {
			t.Errorf("%s: ENTRYPOINT %q is not built by the go stage and copied into the image", n, st.entry)
		}
	}
	if own == 0 {
		t.Error("no catalog image is benchq's own; Graphite's should be")
	}
	if venv := "/opt/benchq/carbon/" + localdb.CarbonVersion + " "; !strings.Contains(text, venv) {
		t.Errorf("the Dockerfile makes no venv %q (internal/localdb.CarbonHome)", strings.TrimSpace(venv))
	}
}
