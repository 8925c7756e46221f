// Command benchq is the user's entry point: it starts and stops the embedded
// stack (up, down), submits experiments with bexhoma's flags and follows them
// (ycsb ... run), and prints summaries (summary -e CODE).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Main(ctx, os.Args[1:], &State{Env: os.Getenv, Stdout: os.Stdout, Stderr: os.Stderr})
	stop()
	os.Exit(code)
}
