// Command healthcheck is the container healthcheck of benchq's images,
// which have no curl or wget: it GETs a URL and exits 0 when the answer is
// 200 OK within 3 seconds, 1 otherwise (prom.Probe).
//
//	healthcheck http://127.0.0.1:9464/healthz
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/benchq/benchq/internal/prom"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: healthcheck URL")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := prom.Probe(ctx, os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "healthcheck:", err)
		os.Exit(1)
	}
}
