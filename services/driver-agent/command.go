package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/benchq/benchq/contracts"
	"github.com/benchq/benchq/internal/atomicfile"
)

// shardedWorkload is our CoreWorkload for shards that share a key space
// (services/driver-agent/ycsb): it gives every benchmarking shard its own
// numbers for the records it inserts, and is CoreWorkload otherwise.
const shardedWorkload = "io.benchq.ycsb.ShardedWorkload"

// percentiles YCSB prints per operation; the histograms hold all of them.
const percentiles = "50,95,99,99.9"

// launcher is the start of every shard's command line: the JVM running our
// Launcher; a standby JVM runs it too (standby.go). With the class-data-
// sharing archive scripts/build-ycsb.sh makes in lib, the JVM maps the
// classes from it instead of loading them from the jars; its logging is off
// because the JVM would print it on stdout, which holds YCSB's summary.
func launcher(java, lib string) []string {
	args := []string{java}
	if archive := filepath.Join(lib, classArchive); fileExists(archive) {
		args = append(args, "-XX:SharedArchiveFile="+archive, "-Xlog:cds*=off")
	}
	return append(args, "-cp", filepath.Join(lib, "*"), "io.benchq.ycsb.Launcher")
}

// classArchive is the name of the class-data-sharing archive in the lib dir.
const classArchive = "classes.jsa"

func fileExists(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// ycsbCommand builds the java command line of one shard: our Launcher, which
// sets YCSB's client up (its threads connected), reports READY and waits for
// GO on stdin (io.benchq.ycsb.Run).
// binding is the site.ycsb.DB class and props the catalog's properties filled
// with the SUT endpoint; YCSB writes one HdrHistogram log per operation into
// hdrDir. secretFile, when set, is a properties file (mode 0600) with what
// must not be on a command line — the SUT's password — loaded after the
// workload. Pure but for launcher's look for the archive, so tests pin the
// exact command.
func ycsbCommand(java, lib, workloads, hdrDir string, job contracts.ShardJob, binding string, props map[string]string, secretFile string) []string {
	y := job.YCSB
	mode := "-t"
	if job.Kind == contracts.KindLoad {
		mode = "-load"
	}
	args := append(launcher(java, lib), mode,
		"-db", binding,
		"-P", filepath.Join(workloads, "workload"+y.Workload),
	)
	if secretFile != "" {
		args = append(args, "-P", secretFile)
	}
	args = append(args, "-threads", strconv.Itoa(y.Threads), "-s")
	if y.Target > 0 {
		args = append(args, "-target", strconv.Itoa(y.Target))
	}
	// Catalog properties first: they are defaults (e.g. a load batch size);
	// what the request and the plan say about this shard wins.
	all := map[string]string{}
	for k, v := range props {
		all[k] = v
	}
	all["recordcount"] = strconv.FormatInt(y.RecordCount, 10)
	all["insertstart"] = strconv.FormatInt(y.InsertStart, 10)
	all["insertcount"] = strconv.FormatInt(y.InsertCount, 10)
	all["operationcount"] = strconv.FormatInt(y.OperationCount, 10)
	all["status.interval"] = strconv.Itoa(max(y.StatusInterval, 1))
	all["workload"] = shardedWorkload
	all["benchq.shard"] = strconv.Itoa(job.Shard)
	all["benchq.shards"] = strconv.Itoa(max(job.Shards, 1))
	// Every latency goes into an HdrHistogram (YCSB's default measurement,
	// named so a catalog cannot switch it off), logged per status interval.
	all["measurementtype"] = "hdrhistogram"
	all["hdrhistogram.fileoutput"] = "true"
	all["hdrhistogram.output.path"] = hdrDir + string(filepath.Separator)
	all["hdrhistogram.percentiles"] = percentiles
	if y.Target > 0 {
		// With a target rate YCSB also measures each operation from when it
		// was due ("Intended-<OP>"): latency without coordinated omission.
		all["measurement.interval"] = "both"
	}
	if y.InsertOrder != "" {
		all["insertorder"] = y.InsertOrder
	}
	if y.BatchSize > 0 {
		all["db.batchsize"] = strconv.Itoa(y.BatchSize)
	}
	if y.MaxExecutionS > 0 {
		all["maxexecutiontime"] = strconv.Itoa(y.MaxExecutionS)
	}
	keys := make([]string, 0, len(all))
	for k := range all {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, "-p", fmt.Sprintf("%s=%s", k, all[k]))
	}
	return args
}

// writeSecretProperties moves the properties named by secret out of props
// into a properties file in dir (mode 0600; dir is the shard's private
// temporary directory) and returns its path; "" when none has a value.
func writeSecretProperties(dir string, props map[string]string, secret []string) (string, error) {
	var b strings.Builder
	for _, k := range secret {
		v, ok := props[k]
		if !ok {
			continue
		}
		delete(props, k)
		// java.util.Properties reads backslash escapes: escape the value.
		fmt.Fprintf(&b, "%s=%s\n", k, escapeProperty(v))
	}
	if b.Len() == 0 {
		return "", nil
	}
	path := filepath.Join(dir, "sut.properties")
	if err := atomicfile.Write(path, []byte(b.String()), 0o600); err != nil {
		return "", err
	}
	return path, nil
}

// escapeProperty writes v so that java.util.Properties.load reads it back
// as it is.
func escapeProperty(v string) string {
	var b strings.Builder
	for i, r := range v {
		switch {
		case r == '\\' || r == '=' || r == ':' || r == '#' || r == '!':
			b.WriteString(`\` + string(r))
		case r == ' ' && i == 0:
			b.WriteString(`\ `)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r > 0xffff:
			// \u takes four hex digits: a UTF-16 surrogate pair.
			hi, lo := utf16.EncodeRune(r)
			fmt.Fprintf(&b, `\u%04x\u%04x`, hi, lo)
		case r > 0x7e || r < 0x20:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
