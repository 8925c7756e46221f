package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/benchq/benchq/grafana"
	"github.com/benchq/benchq/internal/version"
)

// Environment of `benchq dashboard`.
const (
	envGrafanaURL   = "BENCHQ_GRAFANA_URL"   // e.g. http://localhost:3000 (user:password@ for basic auth)
	envGrafanaToken = "BENCHQ_GRAFANA_TOKEN" // a service account token, for -upload
)

// dashboardMargin widens the experiment's time range in the link, so its
// first and last samples are not at the edges of the plots.
const dashboardMargin = 10 * time.Second

// cmdDashboard is `benchq dashboard -e CODE [-upload]`: the link to the
// experiment's dashboard on the Grafana of BENCHQ_GRAFANA_URL (stdout: only
// the URL), with the experiment's time range when the stack's results
// database has it; -upload first creates or replaces benchq's dashboards
// there. Without a Grafana it says how to open the HTML report instead.
func cmdDashboard(ctx context.Context, args []string, st *State) int {
	fs := newFlagSet("dashboard -e CODE [-upload]",
		"Print the link to an experiment's Grafana dashboard (the Grafana of $"+envGrafanaURL+").\n"+
			"-upload first creates or replaces benchq's dashboards there (grafana/dashboards) through\n"+
			"Grafana's HTTP API, with the token of $"+envGrafanaToken+" or the URL's user:password.")
	var code string
	var upload bool
	experimentFlag(fs, &code)
	fs.BoolVar(&upload, "upload", false, "upload the dashboards before printing the link")
	if rc, done := parseCodeArgs(fs, args, st, &code); done {
		return rc
	}
	base := st.Env(envGrafanaURL)
	if base == "" {
		st.Errorf("dashboard: no Grafana configured: set %s (e.g. http://localhost:3000, the compose stack's Grafana).\n"+
			"Without Grafana, the experiment's plots are in its HTML report, which opens without network:\n"+
			"  benchq report -e %s    (it prints the page's path; open it in a browser)", envGrafanaURL, code)
		return ExitFailed
	}
	if u, err := url.Parse(base); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		st.Errorf("dashboard: %s=%s is not a Grafana URL: give its scheme and host, e.g. http://localhost:3000", envGrafanaURL, base)
		return ExitUsage
	}
	from, to, err := experimentWindow(ctx, st, code)
	switch {
	case errors.Is(err, errNoExperiment):
		st.Errorf("dashboard: no experiment %q in the results database (list them with: benchq list)", code)
		return ExitFailed
	case err != nil:
		st.Errorf("dashboard: warning: no time range in the link (%v)", err)
	}
	if upload {
		boards, err := grafana.Dashboards()
		if err != nil {
			st.Errorf("dashboard: %v", err)
			return ExitFailed
		}
		c := &grafana.Client{Base: base, Token: st.Env(envGrafanaToken)}
		for _, d := range boards {
			u, err := c.Upload(ctx, d, "benchq "+version.String())
			if err != nil {
				st.Errorf("dashboard: %v", err)
				return ExitFailed
			}
			fmt.Fprintf(st.Stderr, "uploaded %s (%s)\n", d.Title, u)
		}
	}
	fmt.Fprintln(st.Stdout, grafana.ExperimentURL(base, code, from, to))
	return ExitOK
}

// experimentWindow is the experiment's time in the stack's results
// database (to now while it runs), widened by dashboardMargin.
func experimentWindow(ctx context.Context, st *State, code string) (from, to time.Time, err error) {
	err = experimentRow(ctx, st, 10*time.Second, `SELECT coalesce(started_at, planned_at), coalesce(ended_at, now()) FROM experiments WHERE code = $1`, code, &from, &to)
	if err != nil {
		return from, to, err
	}
	return from.Add(-dashboardMargin), to.Add(dashboardMargin), nil
}
