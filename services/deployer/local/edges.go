package local

import (
	"context"
	"sync"
	"time"

	"github.com/benchq/benchq/catalog"
	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/prom"
)

// exporterReadTimeout bounds one read of an exporter at a phase's edge.
const exporterReadTimeout = 2 * time.Second

// ReadExporters reads configuration's exporters now (backend.SUTReader):
// each one's /metrics, on which every application metric of its
// component's catalog set is evaluated as the collector's query evaluates
// it on that exporter's series (its series narrowed by its matchers,
// combined by its aggregate). A metric the exporter does not serve is
// left out, never 0; an exporter that does not answer is left out.
func (l *Local) ReadExporters(ctx context.Context, code, configuration string) ([]contracts.ExporterRead, bool) {
	dir, err := l.dir(code, configuration)
	if err != nil {
		return nil, false
	}
	st, err := readState(dir)
	if err != nil || len(st.Exporters) == 0 {
		return nil, false
	}
	sets, err := catalog.ApplicationSetsOf(st.DBMS)
	if err != nil {
		return nil, false
	}
	reads := make([]*contracts.ExporterRead, len(st.Exporters))
	var wg sync.WaitGroup
	for i, e := range st.Exporters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			values, err := prom.ReadSet(ctx, "http://"+e.Addr+"/metrics", sets[e.Component], exporterReadTimeout)
			if err != nil {
				l.log().Debug("exporter not read at a phase edge", "exporter", e.Name, "err", err)
				return
			}
			reads[i] = &contracts.ExporterRead{Instance: e.Addr, Component: e.Component, Values: values}
		}()
	}
	wg.Wait()
	var out []contracts.ExporterRead
	for _, r := range reads {
		if r != nil && len(r.Values) > 0 {
			out = append(out, *r)
		}
	}
	return out, len(out) > 0
}
