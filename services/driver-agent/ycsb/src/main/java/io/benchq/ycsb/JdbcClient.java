package io.benchq.ycsb;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.Vector;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Pattern;

import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.Status;
import site.ycsb.StringByteIterator;

/**
 * YCSB binding for PostgreSQL over JDBC (benchq's own implementation of {@link DB}).
 *
 * <p>Expects {@code <table>(YCSB_KEY VARCHAR(255) PRIMARY KEY, FIELD0 TEXT, ..., FIELDn TEXT)};
 * the deployer creates it, this class never runs DDL. Property names follow YCSB's upstream
 * JDBC binding so existing habits carry over:
 * <ul>
 *   <li>{@code db.url} (required) is passed to the driver untouched, so URL options such as
 *       {@code prepareThreshold=0} (needed behind PgBouncer in transaction mode) or
 *       {@code reWriteBatchedInserts=true} work as documented by pgJDBC. One exception: a URL
 *       with several hosts and {@code loadBalanceHosts=true} is spread evenly over the hosts
 *       instead of at random ({@link #spread}).</li>
 *   <li>{@code db.user}, {@code db.passwd}; {@code db.driver} (optional class name to load).</li>
 *   <li>{@code db.batchsize} (default off): inserts are queued with JDBC batching and sent every
 *       N rows; queued inserts report {@code BATCHED_OK}, the one that sends the batch reports
 *       the batch's outcome. The rest is sent in {@code cleanup()}.</li>
 *   <li>{@code jdbc.autocommit} (default true). When false the binding commits after every
 *       operation and after every batch, so no transaction (and no row lock) stays open
 *       between operations.</li>
 *   <li>{@code jdbc.fetchsize} (default: driver's) for read and scan result sets.</li>
 *   <li>{@code table} (default usertable), validated in {@code init()}.</li>
 * </ul>
 *
 * <p>One instance per YCSB client thread, each with its own connection and its own prepared
 * statements, cached per (operation, table, field set).
 */
public class JdbcClient extends DB {

  public static final String DRIVER_PROPERTY = "db.driver";
  public static final String URL_PROPERTY = "db.url";
  public static final String USER_PROPERTY = "db.user";
  public static final String PASSWORD_PROPERTY = "db.passwd";
  public static final String BATCH_SIZE_PROPERTY = "db.batchsize";
  public static final String AUTOCOMMIT_PROPERTY = "jdbc.autocommit";
  public static final String FETCH_SIZE_PROPERTY = "jdbc.fetchsize";
  public static final String TABLE_PROPERTY = "table";
  public static final String DEFAULT_TABLE = "usertable";

  /** Primary key column (unquoted, so PostgreSQL folds it to ycsb_key). */
  public static final String KEY_COLUMN = "YCSB_KEY";

  /**
   * Table and field names are spliced into SQL text (identifiers cannot be bind parameters),
   * so only plain identifiers are accepted. The table may be schema-qualified.
   */
  private static final Pattern FIELD_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_$]*");
  private static final Pattern TABLE_NAME =
      Pattern.compile("[A-Za-z_][A-Za-z0-9_$]*(\\.[A-Za-z_][A-Za-z0-9_$]*)?");

  /**
   * Instances initialised for this job, for {@link #spread}: the launcher starts the count again
   * after its probe, so that client thread i is instance i.
   */
  private static final AtomicInteger INSTANCES = new AtomicInteger();

  /** Starts the count of {@link #INSTANCES} again, for the next job of a JVM that stays. */
  static void resetInstances() {
    INSTANCES.set(0);
  }

  private static final String PG_PREFIX = "jdbc:postgresql://";

  private String url;
  private Properties connectionProps;
  private boolean autoCommit;
  private int batchSize;
  private int fetchSize;

  private Connection conn;
  private final Map<String, PreparedStatement> statements = new HashMap<>();
  /** Statement holding the queued inserts, or null when nothing is queued. */
  private PreparedStatement batch;
  private int batched;
  private final ErrorLog errors = new ErrorLog("JdbcClient");

  @Override
  public void init() throws DBException {
    Properties p = getProperties();
    url = p.getProperty(URL_PROPERTY);
    if (url == null || url.isBlank()) {
      throw new DBException("property " + URL_PROPERTY + " is required, e.g. "
          + "jdbc:postgresql://127.0.0.1:5432/ycsb");
    }
    url = spread(url, Props.intProperty(p, ShardedWorkload.SHARD_PROPERTY, 1),
        Props.intProperty(p, "threadcount", 1), INSTANCES.getAndIncrement());
    connectionProps = new Properties();
    String user = p.getProperty(USER_PROPERTY);
    if (user != null && !user.isEmpty()) {
      connectionProps.setProperty("user", user);
    }
    String password = p.getProperty(PASSWORD_PROPERTY);
    if (password != null && !password.isEmpty()) {
      connectionProps.setProperty("password", password);
    }
    String ac = p.getProperty(AUTOCOMMIT_PROPERTY, "true").trim();
    if (!ac.equalsIgnoreCase("true") && !ac.equalsIgnoreCase("false")) {
      // Boolean.parseBoolean would silently turn a typo into "false".
      throw new DBException("property " + AUTOCOMMIT_PROPERTY + " must be true or false, got '"
          + ac + "'");
    }
    autoCommit = Boolean.parseBoolean(ac);
    batchSize = Props.intProperty(p, BATCH_SIZE_PROPERTY, -1);
    fetchSize = Props.intProperty(p, FETCH_SIZE_PROPERTY, 0);
    String table = p.getProperty(TABLE_PROPERTY, DEFAULT_TABLE);
    try {
      checkTableName(table);
    } catch (SQLException e) {
      throw new DBException(e.getMessage(), e);
    }

    String driver = p.getProperty(DRIVER_PROPERTY);
    if (driver != null && !driver.isBlank()) {
      try {
        Class.forName(driver.trim());
      } catch (ClassNotFoundException e) {
        throw new DBException("JDBC driver class " + driver + " not on the classpath", e);
      }
    }
    try {
      connection();
    } catch (SQLException e) {
      throw new DBException("cannot connect to " + url + ": " + e.getMessage(), e);
    }
    // Probe the table once, so a missing table fails here (before the benchmark barrier)
    // instead of as one ERROR per operation.
    try (Statement st = conn.createStatement()) {
      st.executeQuery("SELECT " + KEY_COLUMN + " FROM " + table + " WHERE false").close();
      endTransaction();
    } catch (SQLException e) {
      closeQuietly();
      throw new DBException("table " + table + " is not usable: " + e.getMessage(), e);
    }
  }

  /**
   * The URL one instance connects to. A PostgreSQL URL naming several hosts with
   * {@code loadBalanceHosts=true} (the local backend's PgBouncer processes, standing in for a
   * Kubernetes Service over the pool's pods) becomes a URL on one of them, taken round-robin
   * over the phase's connections: instance i of shard s with T threads per shard uses host
   * {@code ((s-1)*T + i) mod n}. pgJDBC alone picks a host at random per connection and fails
   * over when one refuses, but pool processes whose max_client_conn is their exact share of the
   * clients still refused some of many concurrent connects. Other URLs are returned as they
   * are.
   */
  static String spread(String url, int shard, int threads, int instance) {
    if (!url.startsWith(PG_PREFIX) || !url.contains("loadBalanceHosts=true")) {
      return url;
    }
    int end = url.indexOf('/', PG_PREFIX.length());
    if (end < 0) {
      return url;
    }
    String[] hosts = url.substring(PG_PREFIX.length(), end).split(",");
    if (hosts.length < 2) {
      return url;
    }
    long n = (long) Math.max(shard - 1, 0) * Math.max(threads, 1) + instance;
    return PG_PREFIX + hosts[(int) (n % hosts.length)] + url.substring(end);
  }

  @Override
  public void cleanup() throws DBException {
    int pending = batched;
    Status flushed = flushBatch();
    OpWindow.end(); // after the final batch: its rows are part of the measured work
    closeQuietly();
    if (!flushed.isOk()) {
      // YCSB does not attribute cleanup failures to an operation, so say it loudly here.
      throw new DBException("final insert batch of " + pending + " rows failed; those rows "
          + "were NOT written");
    }
  }

  @Override
  public Status read(String table, String key, Set<String> fields, Map<String, ByteIterator> result) {
    OpWindow.begin();
    try {
      String[] names = fieldNames(fields);
      PreparedStatement ps = statement("read", table, names);
      ps.setString(1, key);
      Status s;
      try (ResultSet rs = ps.executeQuery()) {
        if (rs.next()) {
          copyRow(rs, names, result);
          s = Status.OK;
        } else {
          s = Status.NOT_FOUND;
        }
      }
      endTransaction();
      return s;
    } catch (SQLException e) {
      return failed("read", key, e);
    }
  }

  @Override
  public Status scan(String table, String startkey, int recordcount, Set<String> fields,
                     Vector<HashMap<String, ByteIterator>> result) {
    OpWindow.begin();
    try {
      String[] names = fieldNames(fields);
      PreparedStatement ps = statement("scan", table, names);
      ps.setString(1, startkey);
      ps.setInt(2, recordcount);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          HashMap<String, ByteIterator> row = new HashMap<>();
          copyRow(rs, names, row);
          result.add(row);
        }
      }
      endTransaction();
      return Status.OK;
    } catch (SQLException e) {
      return failed("scan", startkey, e);
    }
  }

  @Override
  public Status update(String table, String key, Map<String, ByteIterator> values) {
    OpWindow.begin();
    try {
      String[] names = sortedNames(values);
      PreparedStatement ps = statement("update", table, names);
      int keyIndex = bindValues(ps, 1, names, values);
      ps.setString(keyIndex, key);
      return write(ps);
    } catch (SQLException e) {
      return failed("update", key, e);
    }
  }

  @Override
  public Status insert(String table, String key, Map<String, ByteIterator> values) {
    OpWindow.begin();
    try {
      String[] names = sortedNames(values);
      PreparedStatement ps = statement("insert", table, names);
      ps.setString(1, key);
      bindValues(ps, 2, names, values);
      if (batchSize <= 0) {
        ps.executeUpdate();
        endTransaction();
        return Status.OK;
      }
      // A JDBC batch belongs to one statement: if the field set changed, send the old one.
      if (batch != null && batch != ps) {
        Status s = flushBatch();
        if (!s.isOk()) {
          ps.clearParameters();
          return s;
        }
      }
      ps.addBatch();
      batch = ps;
      batched++;
      return batched >= batchSize ? flushBatch() : Status.BATCHED_OK;
    } catch (SQLException e) {
      return failed("insert", key, e);
    }
  }

  @Override
  public Status delete(String table, String key) {
    OpWindow.begin();
    try {
      PreparedStatement ps = statement("delete", table, new String[0]);
      ps.setString(1, key);
      return write(ps);
    } catch (SQLException e) {
      return failed("delete", key, e);
    }
  }

  /** Binds the values of names, in that order, from parameter first on; returns the next. */
  private static int bindValues(PreparedStatement ps, int first, String[] names,
                                Map<String, ByteIterator> values) throws SQLException {
    int i = first;
    for (String n : names) {
      ps.setString(i++, values.get(n).toString());
    }
    return i;
  }

  /** Runs an UPDATE or DELETE of one key: NOT_FOUND when no row has that key. */
  private Status write(PreparedStatement ps) throws SQLException {
    int rows = ps.executeUpdate();
    endTransaction();
    return rows == 0 ? Status.NOT_FOUND : Status.OK;
  }

  /** Sends the queued inserts (and commits them when autocommit is off). */
  private Status flushBatch() {
    if (batch == null) {
      return Status.OK;
    }
    int rows = batched;
    PreparedStatement ps = batch;
    batch = null;
    batched = 0;
    try {
      int[] counts = ps.executeBatch();
      for (int c : counts) {
        if (c == Statement.EXECUTE_FAILED) {
          throw new SQLException("a row of the batch failed");
        }
      }
      endTransaction();
      return Status.OK;
    } catch (SQLException e) {
      try {
        ps.clearBatch();
      } catch (SQLException ignored) {
        // the connection may be gone; failed() below resets it
      }
      // getNextException carries the server's reason (e.g. the duplicate key) for batches.
      SQLException cause = e.getNextException() != null ? e.getNextException() : e;
      return failed("insert batch of " + rows + " rows", "", cause);
    }
  }

  /** Ends the current transaction when autocommit is off; a no-op otherwise. */
  private void endTransaction() throws SQLException {
    if (!autoCommit) {
      conn.commit();
    }
  }

  /** The cached statement for (op, table, fields), prepared on first use. */
  private PreparedStatement statement(String op, String table, String[] names) throws SQLException {
    String cacheKey = op + '\0' + table + '\0' + String.join(",", names);
    PreparedStatement ps = statements.get(cacheKey);
    if (ps == null) {
      checkTableName(table);
      ps = connection().prepareStatement(sql(op, table, names));
      if (fetchSize > 0 && (op.equals("read") || op.equals("scan"))) {
        ps.setFetchSize(fetchSize);
      }
      statements.put(cacheKey, ps);
    }
    return ps;
  }

  /** SQL text; an empty {@code names} means "all columns" for read and scan. */
  static String sql(String op, String table, String[] names) {
    String cols = names.length == 0 ? "*" : String.join(", ", names);
    switch (op) {
      case "read":
        return "SELECT " + cols + " FROM " + table + " WHERE " + KEY_COLUMN + " = ?";
      case "scan":
        return "SELECT " + cols + " FROM " + table + " WHERE " + KEY_COLUMN + " >= ? ORDER BY "
            + KEY_COLUMN + " LIMIT ?";
      case "update": {
        StringBuilder sb = new StringBuilder("UPDATE ").append(table).append(" SET ");
        for (int i = 0; i < names.length; i++) {
          sb.append(i == 0 ? "" : ", ").append(names[i]).append(" = ?");
        }
        return sb.append(" WHERE ").append(KEY_COLUMN).append(" = ?").toString();
      }
      case "insert": {
        StringBuilder sb = new StringBuilder("INSERT INTO ").append(table).append(" (")
            .append(KEY_COLUMN);
        for (String n : names) {
          sb.append(", ").append(n);
        }
        sb.append(") VALUES (?");
        for (int i = 0; i < names.length; i++) {
          sb.append(", ?");
        }
        return sb.append(')').toString();
      }
      case "delete":
        return "DELETE FROM " + table + " WHERE " + KEY_COLUMN + " = ?";
      default:
        throw new IllegalArgumentException(op);
    }
  }

  /**
   * Copies one row into {@code out}. With explicit fields the requested names are used as map
   * keys; for "all fields" the column labels are (PostgreSQL reports them lower-case, which
   * matches YCSB's default "field0".."fieldN"). NULL columns are left out.
   */
  private static void copyRow(ResultSet rs, String[] names, Map<String, ByteIterator> out)
      throws SQLException {
    if (names.length > 0) {
      for (int i = 0; i < names.length; i++) {
        String v = rs.getString(i + 1);
        if (v != null) {
          out.put(names[i], new StringByteIterator(v));
        }
      }
      return;
    }
    ResultSetMetaData md = rs.getMetaData();
    for (int i = 1; i <= md.getColumnCount(); i++) {
      String col = md.getColumnLabel(i);
      if (col.equalsIgnoreCase(KEY_COLUMN)) {
        continue;
      }
      String v = rs.getString(i);
      if (v != null) {
        out.put(col, new StringByteIterator(v));
      }
    }
  }

  /** Requested fields in a stable order (empty = all), so equal sets share one statement. */
  private static String[] fieldNames(Set<String> fields) throws SQLException {
    if (fields == null) {
      return new String[0];
    }
    String[] names = fields.toArray(new String[0]);
    Arrays.sort(names);
    checkFieldNames(names);
    return names;
  }

  private static String[] sortedNames(Map<String, ByteIterator> values) throws SQLException {
    String[] names = values.keySet().toArray(new String[0]);
    Arrays.sort(names);
    checkFieldNames(names);
    return names;
  }

  /** Thrown as SQLException (state 42602, invalid_name) so callers report it like any error. */
  private static void checkFieldNames(String[] names) throws SQLException {
    for (String n : names) {
      if (!FIELD_NAME.matcher(n).matches()) {
        throw new SQLException("unsupported field name '" + n + "'", "42602");
      }
    }
  }

  private static void checkTableName(String table) throws SQLException {
    if (!TABLE_NAME.matcher(table).matches()) {
      throw new SQLException("unsupported table name '" + table + "'", "42602");
    }
  }

  private Connection connection() throws SQLException {
    if (conn == null) {
      conn = DriverManager.getConnection(url, connectionProps);
      conn.setAutoCommit(autoCommit);
    }
    return conn;
  }

  /**
   * Logs (capped) and recovers the connection after a failed operation: with autocommit off
   * the transaction is rolled back (PostgreSQL refuses everything else in an aborted
   * transaction); a connection that is gone is dropped and reopened by the next operation.
   */
  private Status failed(String op, String key, SQLException e) {
    // pgJDBC puts "Detail:"/"Position:" on extra lines; keep one line per error.
    errors.failed(() -> op + (key.isEmpty() ? "" : " " + key) + " failed: "
        + String.valueOf(e.getMessage()).replaceAll("\\s*\\R\\s*", " ")
        + " (SQLState " + e.getSQLState() + ")");
    boolean lost = e.getSQLState() != null && e.getSQLState().startsWith("08");
    if (conn != null && !lost) {
      try {
        lost = conn.isClosed();
        if (!lost && !autoCommit) {
          conn.rollback();
        }
      } catch (SQLException rollbackFailed) {
        lost = true;
      }
    }
    if (lost) {
      closeQuietly();
    }
    return Status.ERROR;
  }

  private void closeQuietly() {
    for (PreparedStatement ps : statements.values()) {
      try {
        ps.close();
      } catch (SQLException ignored) {
        // closing is best effort
      }
    }
    statements.clear();
    batch = null;
    batched = 0;
    if (conn != null) {
      try {
        if (!autoCommit && !conn.isClosed()) {
          conn.commit();
        }
      } catch (SQLException ignored) {
        // nothing is pending here: every operation ends its own transaction
      }
      try {
        conn.close();
      } catch (SQLException ignored) {
        // best effort
      }
      conn = null;
    }
  }
}
