package cachedir

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestTheShellRuleIsTheSame runs scripts/lib/cache.sh under each setting of
// the variables and compares its three places with Root, YCSBLib and K8s.
func TestTheShellRuleIsTheSame(t *testing.T) {
	_, here, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(here), "..", "..", "scripts", "lib", "cache.sh")
	home := t.TempDir()
	cases := []map[string]string{
		{},
		{"XDG_CACHE_HOME": "/x/xdg"},
		{"BENCHQ_CACHE": "/x/bq", "XDG_CACHE_HOME": "/x/xdg"},
		{"BENCHQ_YCSB_LIB": "/x/lib", "BENCHQ_YCSB_WORKLOADS": "/x/wl", "BENCHQ_K8S_CACHE": "/x/k8s"},
		{"XDG_CACHE_HOME": "/x/xdg", "BENCHQ_K8S_CACHE": "/x/k8s"},
	}
	vars := []string{"BENCHQ_CACHE", "XDG_CACHE_HOME", "BENCHQ_YCSB_LIB", "BENCHQ_YCSB_WORKLOADS", "BENCHQ_K8S_CACHE"}
	for _, c := range cases {
		t.Setenv("HOME", home)
		env := []string{"HOME=" + home, "PATH=/usr/bin:/bin"}
		for _, v := range vars {
			t.Setenv(v, c[v]) // "" is unset for both rules
			if c[v] != "" {
				env = append(env, v+"="+c[v])
			}
		}
		cmd := exec.Command("bash", "-c", `. "$1" && printf '%s\n' "$benchq_cache" "$benchq_ycsb_lib" "$benchq_ycsb_workloads" "$benchq_k8s_cache"`, "bash", script)
		cmd.Env = env
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		got := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
		want := []string{Root(), YCSBLib(), YCSBWorkloads(), K8s()}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%v: the shell says %q, Go %q", c, got, want)
		}
	}
	for _, v := range vars {
		t.Setenv(v, "")
	}
	if Root() != filepath.Join(home, ".cache", "benchq") {
		t.Errorf("default root %q, want ~/.cache/benchq", Root())
	}
}
