package procmetrics

import (
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/benchq/benchq/internal/testenv"
)

func TestReadCPUChildrenAndCmdline(t *testing.T) {
	t.Parallel()
	self, err := ReadCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if self.PPid != os.Getppid() {
		t.Errorf("ppid %d, want %d", self.PPid, os.Getppid())
	}
	// A child that burns CPU and is reaped adds its CPU to our Children.
	before := self.Children()
	burn := exec.Command("sh", "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done")
	if err := burn.Run(); err != nil {
		t.Fatal(err)
	}
	after, err := ReadCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if after.Children() <= before || after.Children()-before > time.Minute {
		t.Errorf("children's CPU %s then %s: the reaped shell's CPU is missing", before, after.Children())
	}

	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	kids, err := ChildrenOf(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(kids, cmd.Process.Pid) {
		t.Errorf("children %v lack the sleep %d", kids, cmd.Process.Pid)
	}
	// Start returns once the exec has closed our close-on-exec pipe, which
	// the kernel does before it lays out the new program's arguments: for a
	// moment the command line reads empty (a fresh clone's make test caught
	// it). So the test waits for the arguments, and holds them to the
	// command it started.
	testenv.Eventually(t, 5*time.Second, func() error {
		args, err := Cmdline(cmd.Process.Pid)
		if err != nil {
			return err
		}
		if !slices.Equal(args, []string{"sleep", "30"}) {
			t.Fatalf("cmdline %q, want [sleep 30]", args)
		}
		return nil
	})
}
