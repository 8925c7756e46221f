// Package ycsb parses the output of YCSB 0.17.0: the final summary YCSB
// prints to stdout and the status lines it prints to stderr every
// status.interval seconds (with -s).
//
// The parsers are pure functions over text; running YCSB and reading its
// pipes happens elsewhere.
//
// Both parsers target the default measurementtype=hdrhistogram with
// measurement.interval=op, which is what the fixtures under testdata/ show.
// Other settings change the output as follows:
//   - measurementtype=histogram or timeseries: the summary has the same
//     Operations/…Latency(us)/Return= lines plus one line per histogram
//     bucket or time slice ("[READ], 0, 123"), which are ignored; status
//     blocks read "[READ AverageLatency(us)=123.45]" and are parsed into
//     PerOp["READ"]["AverageLatency(us)"].
//   - measurementtype=raw: the summary uses "Total Operations" and prints
//     every data point; status blocks have no brackets. Not supported: raw
//     blocks are missing from Summary.Ops and make status lines fail to parse.
//   - measurementtype=hdrhistogram+histogram or +raw: every operation is
//     reported twice ("HdrREAD" and "BucketREAD"/"RawREAD"), and each status
//     line is split over several physical lines (only the first is a status
//     line).
//   - hdrhistogram.percentiles: 50, 95, 99 and 99.9 fill the OpResult fields
//     of the same name (YCSB 0.17.0 prints 95 and 99 by default; the agent
//     asks for all four); other percentiles are dropped.
//   - measurement.interval=both: every operation is also reported as
//     "Intended-<OP>", in the summary and in status lines, and parsed as an
//     operation of that name.
//
// With hdrhistogram.fileoutput=true YCSB also writes one HdrHistogram log per
// operation ("<hdrhistogram.output.path><OP>.hdr"): ReadHistogramLog merges
// its intervals into the histogram of the whole run.
//   - measurement.trackjvm=true: pseudo-operations THREAD_COUNT,
//     USED_MEM_MB, SYS_LOAD_AVG, GCS and GCS_TIME appear as blocks, and the
//     summary gains [MAX_MEM_USED]-style lines (ignored).
//   - exporter=…JSONMeasurementsExporter or exportfile=…: stdout has no text
//     summary, and ParseSummary reports ErrNotFinished.
package ycsb
