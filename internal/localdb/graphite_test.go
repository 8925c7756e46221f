package localdb

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchq/benchq/catalog"
	"github.com/benchq/benchq/internal/metricsload"
	"github.com/benchq/benchq/internal/procs"
	"github.com/benchq/benchq/internal/whisper"
)

// The bootstrap installs the version this package looks for.
func TestBootstrapInstallsThePinnedCarbon(t *testing.T) {
	for file, want := range map[string]string{
		"../../scripts/bootstrap.sh":            "\nCARBON_VERSION=" + CarbonVersion + "\n",
		"../../scripts/carbon-requirements.txt": "\ncarbon==" + CarbonVersion + "\nwhisper==" + CarbonVersion + "\n",
	} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), want) {
			t.Errorf("%s does not pin %q", file, strings.TrimSpace(want))
		}
	}
}

// Carbon's version comes from its venv's metadata, whichever way pip wrote
// it: a wheel's dist-info, or the egg-info of a legacy install (this
// machine's pip, 2026-11-27); none, or two, is an error naming the venv.
func TestCarbonVersionFromEitherMetadata(t *testing.T) {
	for name, tc := range map[string]struct {
		dirs []string
		want string
	}{
		"wheel":         {[]string{"carbon-1.1.10.dist-info"}, "Graphite carbon 1.1.10"},
		"legacy":        {[]string{"carbon-1.1.10.egg-info"}, "Graphite carbon 1.1.10"},
		"legacy egg":    {[]string{"carbon-1.1.10-py3.11.egg-info"}, "Graphite carbon 1.1.10"},
		"none":          {nil, ""},
		"two":           {[]string{"carbon-1.1.10.dist-info", "carbon-1.1.9.egg-info"}, ""},
		"whisper alone": {[]string{"whisper-1.1.10.dist-info"}, ""},
	} {
		venv := t.TempDir()
		site := filepath.Join(venv, "lib", "python3.11", "site-packages")
		for _, d := range append([]string{"bin"}, tc.dirs...) {
			if err := os.MkdirAll(filepath.Join(site, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		got, err := carbonVersion(filepath.Join(venv, "bin", "carbon-cache.py"))
		if got != tc.want || (tc.want == "") != (err != nil) || (err != nil && !strings.Contains(err.Error(), venv)) {
			t.Errorf("%s: %q, %v; want %q", name, got, err, tc.want)
		}
	}
}

// CarbonHome takes a venv only when its bin has both carbon-cache.py and
// the python3 our carbon-cache.py runs on, and names what it looked for.
func TestCarbonHomeWantsTheVenvsPython(t *testing.T) {
	venv := t.TempDir()
	bin := filepath.Join(venv, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "carbon-cache.py"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BENCHQ_CARBON_HOME", venv)
	if home, err := CarbonHome(); err == nil || !strings.Contains(err.Error(), "python3") || !strings.Contains(err.Error(), venv) {
		t.Errorf("a venv without bin/python3: %q, %v; want an error naming python3 and %s", home, err, venv)
	}
	if err := os.Symlink("/bin/sh", filepath.Join(bin, "python3")); err != nil {
		t.Fatal(err)
	}
	if home, err := CarbonHome(); err != nil || home != venv {
		t.Errorf("a venv with both: %q, %v; want %s", home, err, venv)
	}
}

// A carbon-relay in front of two carbon-caches, run as the SUT's OS user:
// points written to the relay end up on both caches (consistent hashing),
// and the caches' count of what they wrote (our carbon-cache.py,
// whisper.ReadWritten) says exactly how many were stored, as their files
// and whisper's own library do; graphite-web's /render answers with all of
// them. A second start keeps the live daemons; Stop stops them.
func TestGraphiteClusterStoresWhatTheRelayTook(t *testing.T) {
	if _, err := CarbonHome(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	ctx := testCtx(t, 2*time.Minute)
	dir := serverDir(t, "graphite")
	g, err := StartGraphite(ctx, dir, GraphiteOptions{Caches: 2, OSUser: SUTUser})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Stop(ctx) })
	if len(g.Caches) != 2 || g.Relay == nil || g.Web.Pid == 0 || len(g.Pids()) != 4 {
		t.Fatalf("started %+v", g)
	}

	// 3 points of each of 100 series, on distinct seconds: 300 stored.
	conn, err := net.Dial("tcp", g.Front().Addr())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Unix()
	var b strings.Builder
	for s := range 100 {
		for k := range 3 {
			fmt.Fprintf(&b, "bq.test.s%d %d %d\n", s, k, now-10+int64(k))
		}
	}
	if _, err := conn.Write([]byte(b.String())); err != nil {
		t.Fatal(err)
	}
	_ = conn.Close()

	var own int64 // points of carbon's own series, counted apart
	stored := func() (total int64, perCache []int64, err error) {
		own = 0
		for _, d := range g.WhisperDirs() {
			w, err := whisper.ReadWritten(d)
			if err != nil {
				return 0, nil, err
			}
			total += w.Points
			perCache = append(perCache, w.Points)
			own += w.Own
		}
		return total, perCache, nil
	}
	var total int64
	var perCache []int64
	err = procs.WaitFor(ctx, "300 points stored", 200*time.Millisecond, func(ctx context.Context) error {
		if total, perCache, err = stored(); err != nil {
			return procs.Permanent(err)
		}
		if total != 300 {
			return fmt.Errorf("stored %d (per cache %v)", total, perCache)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range perCache {
		if n == 0 {
			t.Errorf("cache %d stored nothing: the relay did not spread the series (%v)", i, perCache)
		}
	}
	if own == 0 {
		t.Error("no point of carbon's own series counted: they are counted apart, or not at all")
	}
	// The same, counted in the series' own files.
	var inFiles int
	for _, d := range g.WhisperDirs() {
		files, _ := filepath.Glob(filepath.Join(d, "bq", "test", "*.wsp"))
		for _, f := range files {
			_, pts, err := whisper.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			inFiles += len(pts)
		}
	}
	if inFiles != 300 {
		t.Errorf("the series' files hold %d points, want 300", inFiles)
	}
	// And by whisper's own library, in carbon's venv: the same series, and
	// the committedPoints our reader sums. Carbon keeps writing its own
	// series, so both read one copy of them: two records of carbon's in
	// the same second share one slot, the later one replacing the earlier
	// (docs/tsdb.md), and files read at two instants need not agree.
	// Carbon records its committedPoints once a second, after the writes.
	err = procs.WaitFor(ctx, "300 points in committedPoints", 200*time.Millisecond, func(context.Context) error {
		var committed int64
		for _, d := range g.WhisperDirs() {
			c, err := whisper.ReadCarbon(d)
			if err != nil {
				return procs.Permanent(err)
			}
			committed += c.Committed
		}
		if committed < 300 {
			return fmt.Errorf("%d committed", committed)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	snap := t.TempDir()
	var snaps []string
	for i, d := range g.WhisperDirs() {
		files, _ := filepath.Glob(filepath.Join(d, "carbon", "agents", "*", "committedPoints.wsp"))
		if len(files) == 0 {
			t.Fatalf("cache %d has no committedPoints series", i)
		}
		to := filepath.Join(snap, fmt.Sprint(i))
		for _, f := range files {
			rel, _ := filepath.Rel(d, f)
			b, err := os.ReadFile(f)
			if err == nil {
				err = os.MkdirAll(filepath.Dir(filepath.Join(to, rel)), 0o755)
			}
			if err == nil {
				err = os.WriteFile(filepath.Join(to, rel), b, 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		snaps = append(snaps, to)
	}
	home, _ := CarbonHome()
	script := `import glob, sys, whisper
def points(f):
    return [v for v in whisper.fetch(f, 0)[1] if v is not None]
n = len(sys.argv[1:]) // 2
ours = sum(len(points(f)) for d in sys.argv[1:n+1] for f in glob.glob(d + "/bq/test/*.wsp"))
committed = sum(sum(points(f)) for d in sys.argv[n+1:] for f in glob.glob(d + "/carbon/agents/*/committedPoints.wsp"))
print(ours, int(committed))`
	out, err := exec.CommandContext(ctx, filepath.Join(home, "bin", "python3"), append(append([]string{"-c", script}, g.WhisperDirs()...), snaps...)...).CombinedOutput()
	var theirs, theirCommitted int64
	if _, serr := fmt.Sscan(string(out), &theirs, &theirCommitted); err != nil || serr != nil {
		t.Fatalf("whisper.fetch: %v %v: %s", err, serr, out)
	}
	var ourCommitted int64
	for _, d := range snaps {
		c, err := whisper.ReadCarbon(d)
		if err != nil {
			t.Fatal(err)
		}
		ourCommitted += c.Committed
	}
	if theirs != 300 || theirCommitted != ourCommitted || ourCommitted < 300 {
		t.Errorf("whisper's library reads %d points of the series (want 300) and %d committed (ours %d, at least 300)", theirs, theirCommitted, ourCommitted)
	}
	// And as Graphite answers a query — the query benchq's probe makes
	// (metricsload.Probe, which counts the points that are not null):
	// graphite-web reads both caches' files (and asks the caches for what
	// they hold unwritten).
	read := metricsload.Probe{URL: g.Web.URL(), Path: "/render", API: catalog.QueryGraphite, Query: "bq.test.*",
		Window: 2 * time.Minute, Timeout: 30 * time.Second}.Read(ctx)
	if read.Err != nil || read.Points != 300 {
		t.Errorf("graphite-web renders %d points of the 100 series (%v), want 300", read.Points, read.Err)
	}
	// Stable: carbon keeps writing its own series, not ours.
	time.Sleep(2500 * time.Millisecond)
	if again, per, err := stored(); err != nil || again != 300 {
		t.Errorf("later: stored %d (per cache %v), %v; want 300", again, per, err)
	}

	again, err := StartGraphite(ctx, dir, GraphiteOptions{Caches: 2, OSUser: SUTUser})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(again.Pids()) != fmt.Sprint(g.Pids()) || again.Front().Line != g.Front().Line {
		t.Errorf("second start: %v on %d, first %v on %d", again.Pids(), again.Front().Line, g.Pids(), g.Front().Line)
	}
	if err := g.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	for _, pid := range g.Pids() {
		if procs.Alive(pid) {
			t.Errorf("pid %d alive after Stop", pid)
		}
	}
}
