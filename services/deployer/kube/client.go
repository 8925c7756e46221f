package kube

import (
	"context"
	"log/slog"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/metrics"
)

// DefaultKubeQPS is the deployer's request rate to the Kubernetes API
// (burst twice that). client-go's default of 5 a second is what one
// experiment needs; a deployer running hundreds of SUTs and driver Jobs
// (make bench-k8s-scale) waits on it.
const DefaultKubeQPS = 50

// throttleNotice is how long a wait on client-go's own rate limiter must be
// to be reported: client-go begins to mention waits at 50 ms too.
const throttleNotice = 50 * time.Millisecond

// ConfigureClient sets the API client's rate and makes its throttling
// visible: a wait on the client-side rate limiter, or a 429 from the API
// server, is logged (at most once a second, with the running count).
func ConfigureClient(rc *rest.Config, qps float32, log *slog.Logger) {
	if qps <= 0 {
		qps = DefaultKubeQPS
	}
	rc.QPS, rc.Burst = qps, int(2*qps)
	apiWatch.log.Store(log)
	registerAPIWatch.Do(func() {
		metrics.Register(metrics.RegisterOpts{RateLimiterLatency: &apiWatch, RequestResult: &apiWatch})
	})
}

var (
	apiWatch         kubeAPIWatch
	registerAPIWatch sync.Once
)

// kubeAPIWatch observes client-go's rate limiter and response codes
// (k8s.io/client-go/tools/metrics), for every client of the process.
type kubeAPIWatch struct {
	log       atomic.Pointer[slog.Logger]
	throttled atomic.Int64 // waits of throttleNotice or more
	longest   atomic.Int64 // the longest wait, nanoseconds
	refused   atomic.Int64 // 429 answers
	lastLog   atomic.Int64 // unix nanoseconds
}

func (w *kubeAPIWatch) Observe(_ context.Context, verb string, u url.URL, latency time.Duration) {
	if latency < throttleNotice {
		return
	}
	n := w.throttled.Add(1)
	for {
		l := w.longest.Load()
		if int64(latency) <= l || w.longest.CompareAndSwap(l, int64(latency)) {
			break
		}
	}
	w.report("kubernetes API: client-side throttling", "verb", verb, "path", u.Path, "waited", latency,
		"times", n, "longest", time.Duration(w.longest.Load()))
}

func (w *kubeAPIWatch) Increment(_ context.Context, code, method, _ string) {
	if code != "429" {
		return
	}
	n := w.refused.Add(1)
	w.report("kubernetes API: 429 Too Many Requests", "method", method, "times", n)
}

func (w *kubeAPIWatch) report(msg string, args ...any) {
	now := time.Now().UnixNano()
	last := w.lastLog.Load()
	if now-last < int64(time.Second) || !w.lastLog.CompareAndSwap(last, now) {
		return
	}
	if log := w.log.Load(); log != nil {
		log.Warn(msg, args...)
	}
}
