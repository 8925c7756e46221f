// Package nearest suggests what a user probably meant: the known name
// nearest to a mistyped one (a flag, a DBMS), for "did you mean …?".
package nearest

import (
	"slices"
	"strings"
)

// Name returns the name of names nearest to typed, at most two edits away
// (letter case does not count), or "" when none is that near or typed is
// shorter than three letters (one or two letters are near everything).
// Of names equally near, the first wins.
func Name(typed string, names []string) string {
	if len(typed) < 3 {
		return ""
	}
	best, bestD := "", 3
	for _, n := range names {
		if d := edits(strings.ToLower(typed), strings.ToLower(n)); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// edits is the Levenshtein distance of a and b (byte-wise).
func edits(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = slices.Min([]int{prev[j] + 1, cur[j-1] + 1, prev[j-1] + cost})
		}
		prev = cur
	}
	return prev[len(b)]
}
