package io.benchq.ycsb;

import java.io.BufferedReader;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Properties;

import site.ycsb.Client;
import site.ycsb.DB;

/**
 * Drop-in replacement for {@code site.ycsb.Client} that adds a start barrier, so that several
 * driver processes (possibly on several machines) start measuring at the same moment.
 *
 * <p>Takes exactly YCSB Client's command line. Protocol:
 * <ol>
 *   <li>Parse the arguments like Client does, instantiate the {@code -db} class and run
 *       {@code init()} + {@code cleanup()} once. This catches an unreachable or misconfigured
 *       system under test before the barrier. Failure: message on stderr, exit 3 (bad command
 *       line or unknown DB class: exit 2).</li>
 *   <li>Write the single line {@value #READY} to stderr.</li>
 *   <li>Read one line from stdin. {@value #GO}: run {@code Client.main(args)}, which prints the
 *       summary on stdout, status on stderr, and exits. EOF or any other line: exit 4 without
 *       running anything.</li>
 * </ol>
 *
 * <p>stdout carries only YCSB's summary (the agent parses it), so nothing here writes to it,
 * and stdout is pointed at stderr while the probe runs in case a binding prints.
 */
public final class Launcher {

  public static final String READY = "BENCHQ READY";
  public static final String GO = "GO";

  public static final int EXIT_USAGE = 2;
  public static final int EXIT_INIT_FAILED = 3;
  public static final int EXIT_NO_GO = 4;

  /** Client's default when neither -db nor a db property is given. */
  private static final String DEFAULT_DB = "site.ycsb.BasicDB";

  private Launcher() {
  }

  public static void main(String[] args) {
    Properties props;
    try {
      props = parseArguments(args);
    } catch (IllegalArgumentException e) {
      fail(EXIT_USAGE, e.getMessage());
      return;
    }
    String dbClass = props.getProperty("db", DEFAULT_DB);
    probe(dbClass, props);

    System.err.println(READY);
    System.err.flush();

    String line;
    try {
      // Client never reads stdin, so a buffered reader cannot steal anything from it.
      line = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
    } catch (IOException e) {
      line = null;
    }
    if (line == null) {
      fail(EXIT_NO_GO, "stdin closed before " + GO + "; not running");
      return;
    }
    if (!line.strip().equals(GO)) {
      fail(EXIT_NO_GO, "expected " + GO + " on stdin, got '" + line + "'; not running");
    }
    Client.main(args);
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
      switch (opt) {
        case "-threads":
          cliProps.setProperty("threadcount", value);
          break;
        case "-target":
          cliProps.setProperty("target", value);
          break;
        case "-db":
          cliProps.setProperty("db", value);
          break;
        case "-l":
          cliProps.setProperty("label", value);
          break;
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
