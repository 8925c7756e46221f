// Package docs holds benchq's documentation; its test keeps the front door
// short and every link between the documents alive.
package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeMaxLines keeps README.md a front door: details belong in docs/.
const readmeMaxLines = 150

func TestReadmeIsAFrontDoor(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > readmeMaxLines {
		t.Errorf("README.md has %d lines, at most %d: move details into docs/", n, readmeMaxLines)
	}
}

// link matches a Markdown link's target: [text](target).
var link = regexp.MustCompile(`\]\(([^)\s]+)\)`)

func TestEveryRelativeLinkExists(t *testing.T) {
	files := []string{"../README.md", "../CONTRIBUTING.md", "../CHANGELOG.md"}
	for _, pattern := range []string{"*.md", "adr/*.md"} {
		more, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, more...)
	}
	checked := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			path := filepath.Join(filepath.Dir(f), target)
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s links to %s, which does not exist", f, m[1])
			}
			checked++
		}
	}
	if checked < 20 {
		t.Errorf("only %d relative links found: the pattern no longer matches the documents", checked)
	}
}
