package procs

import (
	"io"
	"os"
	"strings"
)

// StartMarker begins the line Start writes into a process's log before the
// process writes its own: a log is appended to by every start (a server
// started again on another port, a restarted stack), and LogTail reads only
// what the latest start wrote.
const StartMarker = "--- benchq started "

// LogTail returns the last n non-empty lines of the file at path joined by
// " | ", for error messages about a process that would not start ("" when
// the file is missing, empty, or its latest start wrote nothing). Lines of
// an earlier start (before the last StartMarker line) are not among them:
// they would explain another failure. Only the last 64 KiB are read.
func LogTail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close() //nolint:errcheck // read only
	const maxTail = 64 << 10
	if st, err := f.Stat(); err == nil && st.Size() > maxTail {
		if _, err := f.Seek(-maxTail, io.SeekEnd); err != nil {
			return ""
		}
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return ""
	}
	text := string(b)
	if i := strings.LastIndex(text, StartMarker); i >= 0 && (i == 0 || text[i-1] == '\n') {
		if j := strings.IndexByte(text[i:], '\n'); j >= 0 {
			text = text[i+j+1:]
		} else {
			text = ""
		}
	}
	return lastLines(text, n)
}

func lastLines(s string, n int) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

func tailSuffix(t string) string {
	if t == "" {
		return ""
	}
	return ": " + t
}
