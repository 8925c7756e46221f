// make bench-intake (docs/bench.md): experiment requests submitted to the
// scheduler's HTTP intake at a ramping arrival rate, up to RATE a second held
// for HOLD. Each is a small Redis experiment with -ms 1, so all but one wait
// in the queue. Figures only: the goals are printed by the Go side
// (e2e/intake_bench_test.go), never asserted here.
import http from 'k6/http';
import { Counter } from 'k6/metrics';

const BASE = __ENV.BENCHQ_INTAKE_URL;
const TOKEN = __ENV.BENCHQ_INTAKE_TOKEN;
const RATE = parseInt(__ENV.RATE || '1000', 10);
const RAMP = __ENV.RAMP || '5s';
const HOLD = __ENV.HOLD || '60s';

export const options = {
  scenarios: {
    submit: {
      executor: 'ramping-arrival-rate',
      startRate: Math.min(50, RATE),
      timeUnit: '1s',
      preAllocatedVUs: 100,
      maxVUs: 2000,
      stages: [
        { target: RATE, duration: RAMP },
        { target: RATE, duration: HOLD },
      ],
    },
  },
  summaryTrendStats: ['avg', 'min', 'med', 'p(95)', 'p(99)', 'max'],
};

const accepted = new Counter('benchq_accepted');
const refused = new Counter('benchq_refused');

const body = JSON.stringify({
  schema_version: 1,
  dbms: ['Redis'],
  sf: 0.001,
  max_suts: 1,
  loading_pods: [1],
  loading_threads: [1],
  benchmarking_pods: [1],
  benchmarking_threads: [1],
});
const params = {
  headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${TOKEN}` },
  timeout: '10s',
};

export default function () {
  const r = http.post(`${BASE}/experiments`, body, params);
  if (r.status === 202) {
    accepted.add(1);
  } else {
    refused.add(1);
  }
}

// One JSON line on stdout for the Go side.
export function handleSummary(data) {
  const m = data.metrics;
  const n = (name) => (m[name] ? m[name].values.count : 0);
  const d = m.http_req_duration.values;
  return {
    stdout: JSON.stringify({
      requests: n('http_reqs'),
      rate: m.http_reqs ? m.http_reqs.values.rate : 0,
      accepted: n('benchq_accepted'),
      refused: n('benchq_refused'),
      dropped: n('dropped_iterations'),
      failed_http: m.http_req_failed ? m.http_req_failed.values.passes : 0,
      p50_ms: d.med,
      p95_ms: d['p(95)'],
      p99_ms: d['p(99)'],
      max_ms: d.max,
    }) + '\n',
  };
}
