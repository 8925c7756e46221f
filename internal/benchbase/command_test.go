package benchbase

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchq/benchq/contracts"
)

// Benchbase itself cannot run here (it needs Java 23 and is not on Maven
// Central): these goldens pin the command line and the configuration XML
// we would hand it, field by field as Benchbase's DBWorkload reads them.

var endpoint = contracts.Endpoint{Host: "127.0.0.1", Port: 40001, Database: "benchq", User: "postgres", Password: "s3cret&<x>"}

func TestConfigGoldens(t *testing.T) {
	for name, tc := range map[string]struct {
		kind string
		sh   contracts.TPCCShard
	}{
		"load":             {contracts.KindLoad, contracts.TPCCShard{Warehouses: 2, Terminals: 4}},
		"run":              {contracts.KindRun, contracts.TPCCShard{Warehouses: 2, Terminals: 2, DurationS: 60, StatusInterval: 10}},
		"run-rate-newconn": {contracts.KindRun, contracts.TPCCShard{Warehouses: 16, Terminals: 16, Target: 8192, DurationS: 600, NewConnection: true}},
	} {
		t.Run(name, func(t *testing.T) {
			cfg, err := Config(tc.kind, endpoint, tc.sh)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "config-"+name+".golden.xml", cfg)
		})
	}
}

func TestConfigUsesTheEndpointsJDBCURL(t *testing.T) {
	ep := endpoint
	ep.JDBCURL = "jdbc:postgresql://pg.example:5432/tpcc?prepareThreshold=0"
	cfg, err := Config(contracts.KindRun, ep, contracts.TPCCShard{Warehouses: 1, Terminals: 1, DurationS: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cfg), "<url>jdbc:postgresql://pg.example:5432/tpcc?prepareThreshold=0</url>") {
		t.Errorf("jdbc_url not used:\n%s", cfg)
	}
}

func TestConfigRejects(t *testing.T) {
	for name, tc := range map[string]struct {
		kind string
		sh   contracts.TPCCShard
	}{
		"kind":          {"warmup", contracts.TPCCShard{Warehouses: 1, Terminals: 1, DurationS: 1}},
		"no warehouses": {contracts.KindLoad, contracts.TPCCShard{Terminals: 1}},
		"no terminals":  {contracts.KindRun, contracts.TPCCShard{Warehouses: 1, DurationS: 1}},
		"no duration":   {contracts.KindRun, contracts.TPCCShard{Warehouses: 1, Terminals: 1}},
		"negative rate": {contracts.KindRun, contracts.TPCCShard{Warehouses: 1, Terminals: 1, DurationS: 1, Target: -1}},
	} {
		if _, err := Config(tc.kind, endpoint, tc.sh); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestNewCommandGoldens(t *testing.T) {
	in := Install{Java: "/opt/jdk-23/bin/java", Jar: "/opt/benchbase-postgres/benchbase.jar", Dir: "/opt/benchbase-postgres"}
	var lines []string
	for _, tc := range []struct {
		kind string
		sh   contracts.TPCCShard
	}{
		{contracts.KindLoad, contracts.TPCCShard{Warehouses: 2, Terminals: 4}},
		{contracts.KindRun, contracts.TPCCShard{Warehouses: 2, Terminals: 2, DurationS: 60, StatusInterval: 10}},
		{contracts.KindRun, contracts.TPCCShard{Warehouses: 2, Terminals: 2, DurationS: 60}},
	} {
		cmd, err := NewCommand(in, tc.kind, endpoint, tc.sh, "/var/lib/benchq/shard-1")
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, "# "+tc.kind, "dir: "+cmd.Dir, "config: "+cmd.ConfigPath, "out: "+cmd.OutDir,
			"args: "+strings.Join(cmd.Args, " "), "")
	}
	golden(t, "commands.golden.txt", []byte(strings.Join(lines, "\n")))
}

func TestFindInstall(t *testing.T) {
	dir := t.TempDir()
	jar := filepath.Join(dir, "benchbase.jar")
	if err := os.WriteFile(jar, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

	for name, home := range map[string]string{"directory": dir, "jar": jar} {
		in, err := FindInstall(env(map[string]string{EnvHome: home, "JAVA_HOME": "/opt/jdk-23"}))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if in != (Install{Java: "/opt/jdk-23/bin/java", Jar: jar, Dir: dir}) {
			t.Errorf("%s: %+v", name, in)
		}
	}
	if in, err := FindInstall(env(map[string]string{EnvHome: dir})); err != nil || in.Java != "java" {
		t.Errorf("without JAVA_HOME: %+v, %v", in, err)
	}
	for name, home := range map[string]string{"unset": "", "missing": filepath.Join(dir, "nope"), "no jar in dir": t.TempDir()} {
		if _, err := FindInstall(env(map[string]string{EnvHome: home})); !errors.Is(err, ErrNotInstalled) {
			t.Errorf("%s: %v, want ErrNotInstalled", name, err)
		}
	}
}
