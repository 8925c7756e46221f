package benchbase

import (
	"encoding/xml"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/benchq/benchq/contracts"
)

// EnvHome names the Benchbase installation: the directory of an unpacked
// Benchbase distribution (benchbase.jar with its lib/ and config/ beside it)
// or the jar itself. JAVA_HOME, when set, picks the JVM.
const EnvHome = "BENCHQ_BENCHBASE_HOME"

// ErrNotInstalled: no Benchbase is configured, or it is not where EnvHome
// says.
var ErrNotInstalled = errors.New("benchbase is not installed")

// Install is a Benchbase installation.
type Install struct {
	Java string // the java binary
	Jar  string // benchbase.jar
	// Dir is the jar's directory: Benchbase runs there, since it reads
	// config/plugin.xml relative to its working directory.
	Dir string
}

// FindInstall resolves EnvHome (and JAVA_HOME) through getenv and checks
// that the jar exists. It returns an error wrapping ErrNotInstalled when
// EnvHome is unset or names nothing.
func FindInstall(getenv func(string) string) (Install, error) {
	home := getenv(EnvHome)
	if home == "" {
		return Install{}, fmt.Errorf("%w: set %s to the directory of benchbase.jar or the jar itself", ErrNotInstalled, EnvHome)
	}
	jar := home
	if fi, err := os.Stat(home); err == nil && fi.IsDir() {
		jar = filepath.Join(home, "benchbase.jar")
	}
	if fi, err := os.Stat(jar); err != nil || fi.IsDir() {
		return Install{}, fmt.Errorf("%w: %s=%s: no jar at %s", ErrNotInstalled, EnvHome, home, jar)
	}
	jar, err := filepath.Abs(jar)
	if err != nil {
		return Install{}, err
	}
	java := "java"
	if jh := getenv("JAVA_HOME"); jh != "" {
		java = filepath.Join(jh, "bin", "java")
	}
	return Install{Java: java, Jar: jar, Dir: filepath.Dir(jar)}, nil
}

// Command is how to run Benchbase for one shard: write Config to
// ConfigPath (it holds the database password: mode 0600), then run Args in
// Dir; Benchbase writes its outputs into OutDir (read them with ReadDir)
// and its console output should go to OutDir/ConsoleFile.
type Command struct {
	Args       []string // Args[0] is the java binary
	Dir        string
	ConfigPath string
	Config     []byte
	OutDir     string
}

// NewCommand builds the command of a loading (kind "load": create the
// schema, load sh.Warehouses warehouses with sh.Terminals loader threads)
// or benchmarking shard (kind "run": sh.Terminals terminals for
// sh.DurationS seconds at sh.Target requests/s, a new connection per
// transaction if asked), writing into outDir.
//
// Benchbase starts measuring as soon as it runs: the agent starts it at
// GO, so its JVM start-up (a few seconds) is part of the shard's start
// skew — unlike the embedded engine, which connects before READY.
func NewCommand(in Install, kind string, ep contracts.Endpoint, sh contracts.TPCCShard, outDir string) (Command, error) {
	cfg, err := Config(kind, ep, sh)
	if err != nil {
		return Command{}, err
	}
	outDir, err = filepath.Abs(outDir)
	if err != nil {
		return Command{}, err
	}
	cmd := Command{
		Dir: in.Dir, ConfigPath: filepath.Join(outDir, "tpcc-config.xml"), Config: cfg, OutDir: outDir,
	}
	cmd.Args = []string{in.Java, "-jar", in.Jar, "-b", "tpcc", "-c", cmd.ConfigPath}
	switch kind {
	case contracts.KindLoad:
		cmd.Args = append(cmd.Args, "--create=true", "--load=true", "--execute=false")
	case contracts.KindRun:
		cmd.Args = append(cmd.Args, "--create=false", "--load=false", "--execute=true",
			"-s", strconv.Itoa(DefaultWindowS))
		if sh.StatusInterval > 0 {
			// Benchbase then logs "Throughput: … txn/sec" every interval.
			cmd.Args = append(cmd.Args, "-im", strconv.Itoa(sh.StatusInterval*1000))
		}
	}
	cmd.Args = append(cmd.Args, "-d", outDir)
	return cmd, nil
}

// configXML is Benchbase's workload configuration (its
// config/postgres/sample_tpcc_config.xml, our values).
type configXML struct {
	XMLName       xml.Name  `xml:"parameters"`
	Type          string    `xml:"type"`
	Driver        string    `xml:"driver"`
	URL           string    `xml:"url"`
	Username      string    `xml:"username"`
	Password      string    `xml:"password"`
	Reconnect     bool      `xml:"reconnectOnConnectionFailure"`
	Isolation     string    `xml:"isolation"`
	BatchSize     int       `xml:"batchsize"`
	ScaleFactor   int       `xml:"scalefactor"`
	LoaderThreads int       `xml:"loaderThreads,omitempty"`
	Terminals     int       `xml:"terminals"`
	NewConnection bool      `xml:"newConnectionPerTxn"`
	Works         []workXML `xml:"works>work"`
	TxTypes       []txXML   `xml:"transactiontypes>transactiontype"`
}

type txXML struct {
	Name string `xml:"name"`
}

type workXML struct {
	Time    int    `xml:"time"`
	Rate    string `xml:"rate"`
	Weights string `xml:"weights"`
}

// Config renders the Benchbase configuration of a shard against
// PostgreSQL: the endpoint (its jdbc_url if given), TPC-C's five
// transactions with the standard mix, Benchbase's default isolation
// (serializable) and batch size, sh.Warehouses as the scale factor, and
// for kind "run" one work phase of sh.DurationS seconds at sh.Target
// requests/s ("unlimited" for 0); for kind "load" sh.Terminals loader
// threads.
func Config(kind string, ep contracts.Endpoint, sh contracts.TPCCShard) ([]byte, error) {
	switch {
	case kind != contracts.KindLoad && kind != contracts.KindRun:
		return nil, fmt.Errorf("kind %q: want %q or %q", kind, contracts.KindLoad, contracts.KindRun)
	case sh.Warehouses < 1:
		return nil, fmt.Errorf("warehouses %d: want at least 1", sh.Warehouses)
	case sh.Terminals < 1:
		return nil, fmt.Errorf("terminals %d: want at least 1", sh.Terminals)
	case kind == contracts.KindRun && sh.DurationS < 1:
		return nil, fmt.Errorf("duration_s %d: a benchmarking shard needs at least 1", sh.DurationS)
	case sh.Target < 0:
		return nil, fmt.Errorf("target %d: want 0 (unlimited) or more", sh.Target)
	}
	jdbc := ep.JDBCURL
	if jdbc == "" {
		jdbc = JDBCURL(ep)
	}
	c := configXML{
		Type: "POSTGRES", Driver: "org.postgresql.Driver", URL: jdbc, Username: ep.User, Password: ep.Password,
		Reconnect: true, Isolation: "TRANSACTION_SERIALIZABLE", BatchSize: 128, ScaleFactor: sh.Warehouses,
		Terminals: sh.Terminals, NewConnection: sh.NewConnection,
	}
	for _, name := range TxTypes {
		c.TxTypes = append(c.TxTypes, txXML{name})
	}
	weights := make([]string, len(TxWeights))
	for i, w := range TxWeights {
		weights[i] = strconv.Itoa(w)
	}
	work := workXML{Time: sh.DurationS, Rate: "unlimited", Weights: strings.Join(weights, ",")}
	if sh.Target > 0 {
		work.Rate = strconv.Itoa(sh.Target)
	}
	if kind == contracts.KindLoad {
		c.LoaderThreads = sh.Terminals
		// Benchbase wants a work phase even when it only loads.
		work.Time = max(sh.DurationS, 1)
	}
	c.Works = []workXML{work}
	b, err := xml.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("benchbase config: %w", err)
	}
	return append([]byte(xml.Header), append(b, '\n')...), nil
}

// JDBCURL is the PostgreSQL JDBC URL of an endpoint, with the options
// Benchbase's sample configuration uses (batched inserts rewritten for a
// fast load).
func JDBCURL(ep contracts.Endpoint) string {
	db := ep.Database
	if db == "" {
		db = "postgres"
	}
	return fmt.Sprintf("jdbc:postgresql://%s/%s?sslmode=disable&ApplicationName=tpcc&reWriteBatchedInserts=true",
		net.JoinHostPort(ep.Host, strconv.Itoa(ep.Port)), url.PathEscape(db))
}
