package version

import (
	"runtime/debug"
	"testing"
)

func TestFromBuildSettings(t *testing.T) {
	const rev = "7a056671f3c2d9e8b0a1c2d3e4f5a6b7c8d9e0f1"
	cases := []struct {
		name     string
		settings []debug.BuildSetting
		want     string
	}{
		{"clean checkout", []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: "false"}}, "7a05667"},
		{"uncommitted changes", []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: "true"}}, "7a05667-dirty"},
		{"no vcs (go test, module copy)", []debug.BuildSetting{{Key: "-compiler", Value: "gc"}}, Unknown},
	}
	for _, c := range cases {
		if got := fromBuildSettings(c.settings); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestStampWins(t *testing.T) {
	defer func(s string) { stamp = s }(stamp)
	stamp = "v1.2.3"
	if got := String(); got != "v1.2.3" {
		t.Errorf("String() = %q with stamp v1.2.3", got)
	}
}
