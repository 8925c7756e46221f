package main

import "testing"

func TestGrid(t *testing.T) {
	got := grid([]string{"1745062608", "sut"}, [][]string{{"pgb-64-4-128-64", "(1. Running)"}, {"x", ""}})
	want := "+-----------------+--------------+\n" +
		"| 1745062608      | sut          |\n" +
		"+=================+==============+\n" +
		"| pgb-64-4-128-64 | (1. Running) |\n" +
		"+-----------------+--------------+\n" +
		"| x               |              |\n" +
		"+-----------------+--------------+\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
