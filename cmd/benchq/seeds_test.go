package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The seeds (bexhoma's documentation: bexhoma-*.md and *.txt, kept beside
// the repository in ../shared/seeds) show command lines and what bexhoma
// planned for them. testdata/seeds.txt holds each command line, translated
// once into benchq's CLI, with the seed's planned workflow; this test runs
// each with --dry-run and compares. TestSeedExtractIsCurrent rebuilds the
// file from the seeds when they are there.

// seedCommand is one command line of a seed and what the seed shows for it.
type seedCommand struct {
	source  string   // file:line
	args    []string // benchq's arguments, without -dry-run
	planned []string // "DBMS <base> - Pods [[…]]" lines (bexhoma before 0.9.16)
	// bexhoma 0.9.16's planned lines: "DBMS <name>-1 - Experiment E Client
	// C: ycsb (P pods)"; benchq compares the DBMS it deploys and the pods.
	plannedNew []string
}

var (
	seedCommandRE = regexp.MustCompile(`^(nohup )?(python (ycsb|benchbase)\.py|bexhoma (ycsb|benchbase))\b`)
	plannedOldRE  = regexp.MustCompile(`^(\* )?DBMS (\S+) - Pods (\[.*\])$`)
	plannedNewRE  = regexp.MustCompile(`^(\* )?DBMS (\S+)-1 - Experiment (\d+) Client (\d+): \w+ \((\d+) pods\)$`)
	// The seeds' shell variables, as the seeds set them; nodes by role.
	seedEnv = strings.NewReplacer("$BEXHOMA_NODE_SUT", "node-sut", "$BEXHOMA_NODE_LOAD", "node-load",
		"$BEXHOMA_NODE_BENCHMARK", "node-benchmark", "$BEXHOMA_MS", "1", "$BEXHOMA_STORAGE_CLASS", "shared")
)

// extractSeeds reads every command line of the seed files in dir and the
// planned workflow shown after it (before the next command line).
func extractSeeds(dir string) ([]seedCommand, error) {
	files, err := filepath.Glob(filepath.Join(dir, "bexhoma-*"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no bexhoma-* seed files in %s (%v)", dir, err)
	}
	var out []seedCommand
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		lines := strings.Split(string(b), "\n")
		for i := 0; i < len(lines); i++ {
			l := strings.TrimSpace(lines[i])
			m := seedCommandRE.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			c := seedCommand{source: fmt.Sprintf("%s:%d", filepath.Base(f), i+1)}
			cmd := l
			for strings.HasSuffix(cmd, `\`) && i+1 < len(lines) {
				i++
				cmd = strings.TrimSuffix(cmd, `\`) + " " + strings.TrimSpace(lines[i])
			}
			c.args = translate(cmd, m[3]+m[4])
			inPlanned := false
			for j := i + 1; j < len(lines); j++ {
				t := strings.TrimSpace(lines[j])
				if seedCommandRE.MatchString(t) {
					break
				}
				switch {
				case t == "#### Planned":
					inPlanned = true
				case inPlanned && plannedOldRE.MatchString(t):
					c.planned = append(c.planned, "DBMS "+strings.TrimPrefix(strings.TrimPrefix(t, "* "), "DBMS "))
				case inPlanned && plannedNewRE.MatchString(t):
					c.plannedNew = append(c.plannedNew, strings.TrimPrefix(t, "* "))
				case inPlanned && t != "":
					inPlanned = false
				}
				if !inPlanned && (len(c.planned) > 0 || len(c.plannedNew) > 0) {
					break
				}
			}
			out = append(out, c)
		}
	}
	return out, nil
}

// translate turns a seed's command line into benchq's arguments: the
// benchmark, the same flags, the shell's redirections and variables gone.
func translate(cmd, benchmark string) []string {
	fields := strings.Fields(seedEnv.Replace(cmd))
	var args []string
	for _, f := range fields {
		switch {
		case f == "nohup" || f == "python" || f == "bexhoma" || strings.HasSuffix(f, ".py") || f == "&" || f == "ycsb" && len(args) == 0 || f == "benchbase" && len(args) == 0:
		case strings.HasPrefix(f, "<") || strings.HasPrefix(f, "&>") || strings.HasPrefix(f, ">") || strings.HasPrefix(f, "2>"):
		default:
			args = append(args, f)
		}
	}
	return append([]string{benchmark}, args...)
}

// The extract's text: a block per command line.
func formatSeeds(cs []seedCommand) string {
	var b strings.Builder
	b.WriteString("# Command lines of the seeds (bexhoma's documentation) translated into benchq's CLI, with the\n" +
		"# planned workflow each seed shows. Written by TestSeedExtractIsCurrent (BENCHQ_SEEDS_UPDATE=1).\n")
	for _, c := range cs {
		fmt.Fprintf(&b, "\n# %s\nbenchq %s\n", c.source, strings.Join(c.args, " "))
		for _, p := range c.planned {
			fmt.Fprintf(&b, "planned: %s\n", p)
		}
		for _, p := range c.plannedNew {
			fmt.Fprintf(&b, "planned-0.9.16: %s\n", p)
		}
	}
	return b.String()
}

func readSeedExtract(t *testing.T) []seedCommand {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "seeds.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []seedCommand
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "# bexhoma-"):
			out = append(out, seedCommand{source: strings.TrimPrefix(l, "# ")})
		case strings.HasPrefix(l, "benchq "):
			out[len(out)-1].args = strings.Fields(strings.TrimPrefix(l, "benchq "))
		case strings.HasPrefix(l, "planned: "):
			out[len(out)-1].planned = append(out[len(out)-1].planned, strings.TrimPrefix(l, "planned: "))
		case strings.HasPrefix(l, "planned-0.9.16: "):
			out[len(out)-1].plannedNew = append(out[len(out)-1].plannedNew, strings.TrimPrefix(l, "planned-0.9.16: "))
		}
	}
	return out
}

// Every command line of the seeds runs with --dry-run and plans what the
// seed shows: the same configurations and pods (bexhoma's Planned lines),
// or, for bexhoma 0.9.16's format, the DBMS it deploys (Dragonfly, or the
// DragonflyCluster of -nw) and the pods per repetition and client.
func TestSeedCommandLines(t *testing.T) {
	cs := readSeedExtract(t)
	if len(cs) < 20 {
		t.Fatalf("%d command lines in testdata/seeds.txt, want the seeds' 23", len(cs))
	}
	for _, c := range cs {
		t.Run(c.source, func(t *testing.T) {
			code, out, errs := run(append(append([]string(nil), c.args...), "-dry-run")...)
			if code != ExitOK {
				t.Fatalf("benchq %s -dry-run: exit %d: %s", strings.Join(c.args, " "), code, errs)
			}
			if len(c.planned)+len(c.plannedNew) == 0 {
				t.Fatalf("the seed shows no planned workflow for it")
			}
			for _, p := range c.planned {
				if !strings.Contains(out, "\n* "+p+"\n") {
					t.Errorf("planned %q missing from:\n%s", p, out)
				}
			}
			for _, p := range c.plannedNew {
				m := plannedNewRE.FindStringSubmatch(p)
				dbms, experiment, client, pods := m[2], m[3], m[4], m[5]
				// "* <cfg>-<experiment> (<dbms>, experiment run <experiment>)", then
				// its phase <cfg>-<experiment>-<client> with <pods> shard(s).
				cfg := regexp.MustCompile(`\* (\S+)-` + experiment + ` \(` + dbms + `, experiment run ` + experiment + `\)\n`).FindStringSubmatch(out)
				if cfg == nil {
					t.Errorf("%s: no configuration of experiment run %s deploying %s in:\n%s", p, experiment, dbms, out)
					continue
				}
				phase := fmt.Sprintf("  * %s-%s-%s: run, %s shard(s)", cfg[1], experiment, client, pods)
				if !strings.Contains(out, phase) {
					t.Errorf("%s: no %q in:\n%s", p, phase, out)
				}
			}
		})
	}
}

// The extract is what the seeds hold today (when they are beside the
// repository, or in $BENCHQ_SEEDS); BENCHQ_SEEDS_UPDATE=1 rewrites it.
func TestSeedExtractIsCurrent(t *testing.T) {
	dir := os.Getenv("BENCHQ_SEEDS")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "shared", "seeds")
	}
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("the seeds are not at %s (set BENCHQ_SEEDS): testdata/seeds.txt is checked against them where they are", dir)
	}
	cs, err := extractSeeds(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := formatSeeds(cs)
	path := filepath.Join("testdata", "seeds.txt")
	if os.Getenv("BENCHQ_SEEDS_UPDATE") != "" {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := os.ReadFile(path)
	if string(got) != want {
		t.Errorf("%s is not what the seeds in %s hold; rewrite it: BENCHQ_SEEDS_UPDATE=1 go test ./cmd/benchq -run TestSeedExtractIsCurrent", path, dir)
	}
}
