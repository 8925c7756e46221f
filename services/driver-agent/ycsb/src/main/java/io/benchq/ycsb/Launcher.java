package io.benchq.ycsb;

import java.io.BufferedReader;
import java.io.File;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.Collections;
import java.util.Map;
import java.util.Properties;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

import site.ycsb.Client;
import site.ycsb.DB;
import site.ycsb.Utils;

/**
 * Drop-in replacement for {@code site.ycsb.Client} that adds a start barrier, so that several
 * driver processes (possibly on several machines) start measuring at the same moment.
 *
 * <p>Takes exactly YCSB Client's command line, or {@value #STANDBY} and then that command line
 * on stdin (see {@link #STANDBY}). Protocol:
 * <ol>
 *   <li>Parse the arguments like Client does, instantiate the {@code -db} class and run
 *       {@code init()} + {@code cleanup()} once. This catches an unreachable or misconfigured
 *       system under test with a clear message. Failure: message on stderr, exit 3 (bad command
 *       line or unknown DB class: exit 2).</li>
 *   <li>Set the run up as far as it goes before the first operation ({@link Run}): load and
 *       initialise the workload, start the client threads; each connects and waits at the
 *       start gate. Failure: exit 3.</li>
 *   <li>Write the single line {@value #READY} to stderr.</li>
 *   <li>Read one line from stdin. {@value #GO}, optionally followed by an ISO-8601 instant (the
 *       phase's common start): open the gate, so the threads' first operations start at the
 *       instant (at once without one); print YCSB's summary on stdout, status on stderr, and
 *       exit. EOF or any other line: exit 4 without running anything.</li>
 * </ol>
 *
 * <p>A standby JVM ({@value #STANDBY}) does not exit after a job that ended well (exit code 0):
 * it clears the job's state, prints {@value #DONE} on stdout (after the summary) and then on
 * stderr, and waits for the next job's arguments on stdin, so an agent's later phases need no
 * JVM start. Closing stdin then ends it with exit 0.
 *
 * <p>While the workload runs, stderr also carries {@code BENCHQ FIRST_OP <instant>} when the
 * first operation starts and, once the operations ended, {@code BENCHQ LAST_OP <instant>} (see
 * {@link OpWindow}).
 *
 * <p>stdout carries only YCSB's summary (the agent parses it), so nothing here writes to it,
 * and stdout is pointed at stderr while the probe runs in case a binding prints.
 */
public final class Launcher {

  public static final String READY = "BENCHQ READY";
  public static final String GO = "GO";
  /** A standby's end of a job, on stdout after the summary and then on stderr. */
  public static final String DONE = "BENCHQ DONE";

  public static final int EXIT_USAGE = 2;
  public static final int EXIT_INIT_FAILED = 3;
  public static final int EXIT_NO_GO = 4;

  /**
   * The only argument of a standby JVM: it starts and preloads YCSB's classes ahead of any job,
   * then reads the job's arguments from stdin (one line, NUL-separated) and goes on as if it
   * had been started with them; after a job that ended well it waits for the next. The agent
   * keeps one ready, so a phase's JVM start-up is not between the phase's job and its READY,
   * and starts every driver this way, so that it can stay for the later phases.
   */
  static final String STANDBY = "--standby";

  /** JVM system property: -Dbenchq.prewarm=false skips {@link #prewarm(boolean)} (for comparisons). */
  static final String PREWARM_PROPERTY = "benchq.prewarm";

  /** Client's options that set one property to their value. */
  private static final Map<String, String> VALUE_OPTIONS = Map.of(
      "-threads", "threadcount", "-target", "target", "-db", "db", "-l", "label");

  /** Client's default when neither -db nor a db property is given. */
  private static final String DEFAULT_DB = "site.ycsb.BasicDB";

  private Launcher() {
  }

  public static void main(String[] args) {
    boolean prewarm = !"false".equals(System.getProperty(PREWARM_PROPERTY));
    boolean standby = args.length == 1 && args[0].equals(STANDBY);
    // A standby started with its job already waiting on stdin prewarms as a fresh JVM does
    // (load only, after the probe); one started ahead of any job also initialises.
    if (standby && prewarm && !jobWaiting()) {
      prewarm(true);
      prewarm = false;
    }
    // The end of the measured window is printed at exit, however the JVM ends (Run prints it
    // earlier when the client threads end).
    Runtime.getRuntime().addShutdownHook(new Thread(OpWindow::printLast, "benchq-last-op"));
    boolean ranOne = false;
    int code;
    while (true) {
      if (standby) {
        args = awaitArguments(ranOne);
        if (ranOne) {
          // The last job's garbage, collected now that its phase has ended (a collection right
          // after DONE could run beside another agent's shards still measuring that phase):
          // every job starts with a clean heap.
          System.gc();
        }
      }
      code = runJob(args, prewarm);
      prewarm = false;
      ranOne = true;
      if (!standby || code != 0 || !forgetJob()) {
        break;
      }
      // Done: stdout (the summary) is complete when its DONE line is there; stderr has nothing
      // more of this job after its DONE line.
      System.out.println(DONE);
      System.out.flush();
      System.err.println(DONE);
      System.err.flush();
    }
    System.out.flush();
    System.exit(code);
  }

  /**
   * One job: the probe, the run set up to the barrier, READY, GO and the run; its exit code.
   * A job that cannot start ends the JVM with {@link #fail}.
   */
  private static int runJob(String[] args, boolean prewarm) {
    Properties props;
    try {
      props = parseArguments(args);
    } catch (IllegalArgumentException e) {
      fail(EXIT_USAGE, e.getMessage());
      return EXIT_USAGE;
    }
    String dbClass = props.getProperty("db", DEFAULT_DB);
    // The probe connects once (10-50 ms here) so that a SUT the binding cannot use fails the job
    // with the binding's own message; the run's set-up does not need its connection, so the two
    // go on side by side, and the client threads connect once both are done.
    Thread probing = new Thread(() -> {
      try {
        probe(dbClass, props);
      } catch (RuntimeException | LinkageError e) {
        fail(EXIT_INIT_FAILED, dbClass + " init failed: " + describe(e));
      }
    }, "benchq-probe");
    probing.start();
    if (prewarm) {
      prewarm(false);
    }

    Run run;
    try {
      run = Run.prepare(props);
      probing.join();
      // The probe's connection is not one of the run's: client thread i is the binding's
      // instance i again, as contracts.PoolAddress counts them.
      JdbcClient.resetInstances();
      run.awaitConnected();
    } catch (Run.SetupException e) {
      fail(EXIT_INIT_FAILED, e.getMessage());
      return EXIT_INIT_FAILED;
    } catch (InterruptedException e) {
      fail(EXIT_INIT_FAILED, "interrupted while the client threads connected");
      return EXIT_INIT_FAILED;
    }

    System.err.println(READY);
    System.err.flush();

    String line = readLine();
    if (line == null) {
      fail(EXIT_NO_GO, "stdin closed before " + GO + "; not running");
      return EXIT_NO_GO;
    }
    String[] go = line.strip().split("\\s+");
    if (!go[0].equals(GO) || go.length > 2) {
      fail(EXIT_NO_GO, "expected " + GO + " [instant] on stdin, got '" + line + "'; not running");
    }
    Instant at = null;
    if (go.length == 2) {
      try {
        at = Instant.parse(go[1]);
      } catch (DateTimeParseException e) {
        fail(EXIT_NO_GO, "GO with a start instant that is not ISO-8601: '" + go[1] + "'; not running");
      }
    }
    try {
      return run.run(at);
    } catch (InterruptedException e) {
      return 1;
    }
  }

  /**
   * Clears what a job leaves in the JVM's static state (YCSB's measurements, the gate and window,
   * the bindings' shared clients and counters), so that the next job runs as in a fresh JVM,
   * apart from classes loaded and code compiled (its garbage is collected when the next job
   * comes). False when that cannot be done: the JVM exits instead.
   */
  private static boolean forgetJob() {
    if (!Run.forgetMeasurements()) {
      return false;
    }
    OpWindow.reset();
    JdbcClient.resetInstances();
    RedisClient.closeShared();
    return true;
  }

  /** Whether stdin already holds input (a job handed over with the JVM's start). */
  private static boolean jobWaiting() {
    try {
      return System.in.available() > 0;
    } catch (IOException e) {
      return false;
    }
  }

  /** The one reader of stdin (a second buffered reader could miss what the first read ahead). */
  private static final BufferedReader STDIN =
      new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));

  /** The next line of stdin, or null at its end or on an error. */
  private static String readLine() {
    try {
      return STDIN.readLine();
    } catch (IOException e) {
      return null;
    }
  }

  /**
   * A standby JVM's wait for its job: one line on stdin, the arguments separated by NUL
   * characters. When stdin closes first: exit 4 if no job ran (the agent stopped, or replaced
   * the standby), else exit 0 (no more jobs).
   */
  private static String[] awaitArguments(boolean ranOne) {
    String line = readLine();
    if (line == null) {
      if (ranOne) {
        System.exit(0);
      }
      fail(EXIT_NO_GO, "standby: stdin closed before a job; not running");
    }
    return line.split("\0", -1);
  }

  /** Instantiates the DB class and runs init() + cleanup() once; exits on failure. */
  private static void probe(String dbClass, Properties props) {
    DB db;
    try {
      db = (DB) Class.forName(dbClass).getDeclaredConstructor().newInstance();
    } catch (ClassNotFoundException e) {
      fail(EXIT_USAGE, "DB class " + dbClass + " not found on the classpath");
      return;
    } catch (ReflectiveOperationException | ClassCastException e) {
      fail(EXIT_USAGE, "cannot instantiate DB class " + dbClass + ": " + e);
      return;
    }
    db.setProperties(props);
    PrintStream stdout = System.out;
    System.setOut(System.err);
    try {
      db.init();
      db.cleanup();
    } catch (Exception | LinkageError e) {
      fail(EXIT_INIT_FAILED, dbClass + " init failed: " + describe(e));
    } finally {
      System.setOut(stdout);
    }
  }

  /**
   * Loads the classes YCSB's client, its measurements and its tracer need, before READY: after
   * GO, a JVM that still has to read and verify some six hundred classes takes hundreds of
   * milliseconds longer to its first operation on a busy machine, and differently in every
   * shard.
   *
   * <p>A fresh JVM (started with its job) only loads them: nothing runs, no static initialiser,
   * no file, no connection. A standby JVM, which does this before it has a job, also
   * initialises them and the bindings' libraries (Jedis, its pool, the PostgreSQL driver): on an
   * idle machine that takes the job's arguments to READY from about 200 ms to about 45 ms,
   * most of it the bindings' first connection. A class whose initialiser fails is skipped (a
   * job that needs it then fails with NoClassDefFoundError, as it would have on first use).
   */
  private static void prewarm(boolean initialise) {
    ClassLoader loader = Launcher.class.getClassLoader();
    preload(loader, Client.class, "site/ycsb/", initialise);
    preload(loader, org.HdrHistogram.Histogram.class, "org/HdrHistogram/", initialise);
    preload(loader, org.apache.htrace.core.Tracer.class, "org/apache/htrace/core/", initialise);
    if (initialise) {
      preload(loader, Launcher.class, "io/benchq/ycsb/", true);
      preload(loader, redis.clients.jedis.Jedis.class, "redis/clients/jedis/", true);
      preload(loader, org.apache.commons.pool2.impl.GenericObjectPool.class,
          "org/apache/commons/pool2/", true);
      preload(loader, org.postgresql.Driver.class, "org/postgresql/", true);
      warmScram();
      // A job's GC totals (Utils.getGCStatst, read at its start and end) go through the JVM's
      // management beans, whose first use loads and sets them up: 13-140 ms of a standby's job
      // between its arguments and its READY here (2 cores), up to 500 ms under make test's load.
      // Nothing a phase measures runs through them.
      Utils.getGCStatst();
    }
  }

  /** HMAC-SHA-256 rounds a standby runs ahead of any job: four logins' worth. */
  static final int SCRAM_WARM_ROUNDS = 4 * 4096;

  /**
   * Runs HMAC-SHA-256 until the JIT has compiled it. A PostgreSQL login with a password
   * (scram-sha-256: every SUT of the local backend has one) costs the client 4,096 rounds of it
   * per connection; in a cold JVM the first login took about 130 ms of CPU, so a loading
   * shard's 8 threads took about 0.4 s from the job to READY on two cores. Compiled, a login's
   * rounds take a few milliseconds. Nothing of a job's measured work uses it: its connections
   * are made before READY.
   */
  private static void warmScram() {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(new byte[32], "HmacSHA256"));
      byte[] u = new byte[32];
      for (int i = 0; i < SCRAM_WARM_ROUNDS; i++) {
        u = mac.doFinal(u);
      }
    } catch (GeneralSecurityException ignored) {
      // an optimisation: the job's logins compute it anyway
    }
  }

  /**
   * Loads (and with initialise, initialises) the classes under prefix of the jar that holds
   * anchor; failures are skipped.
   */
  private static void preload(ClassLoader loader, Class<?> anchor, String prefix,
                              boolean initialise) {
    try {
      File jar = new File(anchor.getProtectionDomain().getCodeSource().getLocation().toURI());
      try (JarFile jf = new JarFile(jar)) {
        for (JarEntry e : Collections.list(jf.entries())) {
          String name = e.getName();
          if (name.startsWith(prefix) && name.endsWith(".class") && !name.contains("-")) {
            try {
              Class.forName(name.substring(0, name.length() - 6).replace('/', '.'), initialise,
                  loader);
            } catch (ClassNotFoundException | LinkageError ignored) {
              // an optional dependency of that class is missing, or its initialiser failed:
              // the job does not need it, or meets the failure itself
            }
          }
        }
      }
    } catch (IOException | URISyntaxException | RuntimeException ignored) {
      // prewarming is an optimisation; the job loads what it needs anyway
    }
  }

  /**
   * The same merge rules as YCSB Client: -P files are loaded in order (later files win),
   * options and -p pairs are collected separately and override every file.
   */
  static Properties parseArguments(String[] args) {
    if (args.length == 0) {
      throw new IllegalArgumentException("no arguments; expected YCSB Client arguments "
          + "(-load|-t -db CLASS -P workload -p key=value ...)");
    }
    Properties fileProps = new Properties();
    Properties cliProps = new Properties();
    int i = 0;
    while (i < args.length && args[i].startsWith("-")) {
      String opt = args[i];
      switch (opt) {
        case "-load":
          cliProps.setProperty("dotransactions", "false");
          i++;
          continue;
        case "-t":
          cliProps.setProperty("dotransactions", "true");
          i++;
          continue;
        case "-s":
          cliProps.setProperty("status", "true");
          i++;
          continue;
        default:
          break;
      }
      if (i + 1 >= args.length) {
        throw new IllegalArgumentException("missing argument value for " + opt);
      }
      String value = args[i + 1];
      String property = VALUE_OPTIONS.get(opt);
      if (property != null) {
        cliProps.setProperty(property, value);
        i += 2;
        continue;
      }
      switch (opt) {
        case "-P":
          Properties file = new Properties();
          try (InputStream in = new FileInputStream(value)) {
            file.load(in);
          } catch (IOException e) {
            throw new IllegalArgumentException("unable to open the properties file " + value
                + ": " + e.getMessage());
          }
          for (String name : file.stringPropertyNames()) {
            fileProps.setProperty(name, file.getProperty(name));
          }
          break;
        case "-p":
          int eq = value.indexOf('=');
          if (eq < 0) {
            throw new IllegalArgumentException("argument -p expects key=value, got '" + value + "'");
          }
          cliProps.setProperty(value.substring(0, eq), value.substring(eq + 1));
          break;
        default:
          throw new IllegalArgumentException("unknown option " + opt);
      }
      i += 2;
    }
    if (i != args.length) {
      throw new IllegalArgumentException("argument '" + args[i] + "' has no option before it");
    }
    for (String name : cliProps.stringPropertyNames()) {
      fileProps.setProperty(name, cliProps.getProperty(name));
    }
    return fileProps;
  }

  /**
   * The exception chain on one line: the root cause is usually the useful part. Suppressed
   * exceptions are included because Jedis reports the real reason ("Connection refused") as a
   * suppressed exception of a generic connect failure.
   */
  private static String describe(Throwable e) {
    StringBuilder sb = new StringBuilder();
    Throwable t = e;
    for (int depth = 0; t != null && depth < 6; depth++, t = t.getCause()) {
      appendNew(sb, messageOf(t), depth == 0 ? "" : " (caused by: ", depth == 0 ? "" : ")");
      for (Throwable s : t.getSuppressed()) {
        appendNew(sb, messageOf(s), " [", "]");
      }
    }
    return sb.toString();
  }

  private static void appendNew(StringBuilder sb, String message, String before, String after) {
    if (sb.indexOf(message) < 0) {
      sb.append(before).append(message).append(after);
    }
  }

  private static String messageOf(Throwable t) {
    String m = t.getMessage() != null ? t.getMessage() : t.toString();
    return m.replaceAll("\\s*\\R\\s*", " ");
  }

  private static void fail(int code, String message) {
    System.err.println("benchq-ycsb: " + message);
    System.err.flush();
    System.exit(code);
  }
}
