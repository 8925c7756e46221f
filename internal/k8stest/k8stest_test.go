package k8stest

import "testing"

func TestStartSkipsWithoutBinaries(t *testing.T) {
	var skipped bool
	t.Run("no binaries", func(t *testing.T) {
		t.Setenv("BENCHQ_K8S_CACHE", t.TempDir())
		t.Setenv("BENCHQ_K8S_REQUIRED", "")
		defer func() { skipped = t.Skipped() }()
		Start(t)
		t.Error("Start returned without binaries")
	})
	if !skipped {
		t.Error("Start did not skip without binaries")
	}
}
