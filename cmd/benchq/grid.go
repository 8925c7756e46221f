package main

import (
	"strings"
	"unicode/utf8"
)

// grid renders rows as a bordered table, the look of bexhoma's status
// tables (tabulate's "grid" format): a header row, "=" under it, "-" between
// rows.
func grid(header []string, rows [][]string) string {
	widths := make([]int, len(header))
	for i, h := range header {
		widths[i] = utf8.RuneCountInString(h)
	}
	for _, r := range rows {
		for i := range widths {
			if i < len(r) {
				widths[i] = max(widths[i], utf8.RuneCountInString(r[i]))
			}
		}
	}
	rule := func(c string) string {
		var b strings.Builder
		b.WriteString("+")
		for _, w := range widths {
			b.WriteString(strings.Repeat(c, w+2) + "+")
		}
		return b.String() + "\n"
	}
	row := func(cells []string) string {
		var b strings.Builder
		b.WriteString("|")
		for i, w := range widths {
			c := ""
			if i < len(cells) {
				c = cells[i]
			}
			b.WriteString(" " + c + strings.Repeat(" ", w-utf8.RuneCountInString(c)) + " |")
		}
		return b.String() + "\n"
	}
	var b strings.Builder
	b.WriteString(rule("-"))
	b.WriteString(row(header))
	b.WriteString(rule("="))
	for _, r := range rows {
		b.WriteString(row(r))
		b.WriteString(rule("-"))
	}
	return b.String()
}
