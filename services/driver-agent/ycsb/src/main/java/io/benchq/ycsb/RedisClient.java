package io.benchq.ycsb;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.Vector;

import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.Response;
import redis.clients.jedis.exceptions.JedisException;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.Status;
import site.ycsb.StringByteIterator;

/**
 * YCSB binding for a single Redis server (benchq's own implementation of {@link DB}).
 *
 * <p>Data model: every record is a Redis hash {@code key -> {field: value}}. Because Redis has
 * no ordered key space, every key is also added to one sorted set, {@link #INDEX_KEY}, with the
 * key's {@code String.hashCode()} as score; {@code scan} walks that sorted set from the start
 * key's score. The order is therefore "hash order", not lexical key order: that is fine for
 * YCSB workload E, which only needs "N records following a given one" to be deterministic.
 *
 * <p>YCSB creates one DB instance per client thread, so each instance owns exactly one
 * connection (no pool needed, no sharing across threads).
 *
 * <p>Properties: {@code redis.host} (default 127.0.0.1), {@code redis.port} (6379),
 * {@code redis.password} (optional), {@code redis.user} (optional, ACL user),
 * {@code redis.database} (0), {@code redis.timeout} (socket/connect timeout in ms, 2000).
 */
public class RedisClient extends DB {

  /** Sorted set holding every record key; excluded when counting data keys. */
  public static final String INDEX_KEY = "_indices";

  public static final String HOST_PROPERTY = "redis.host";
  public static final String PORT_PROPERTY = "redis.port";
  public static final String PASSWORD_PROPERTY = "redis.password";
  public static final String USER_PROPERTY = "redis.user";
  public static final String DATABASE_PROPERTY = "redis.database";
  public static final String TIMEOUT_PROPERTY = "redis.timeout";

  private HostAndPort address;
  private DefaultJedisClientConfig config;
  private Jedis jedis;
  private int errorCount;

  /**
   * Errors logged per instance (thread). Beyond that they are only counted by YCSB
   * (Return=ERROR): a flood of stack traces on stderr would slow the run and bury the status
   * lines.
   */
  private static final int MAX_LOGGED_ERRORS = 10;

  @Override
  public void init() throws DBException {
    Properties p = getProperties();
    String host = p.getProperty(HOST_PROPERTY, "127.0.0.1");
    int port = intProperty(p, PORT_PROPERTY, 6379);
    int timeout = intProperty(p, TIMEOUT_PROPERTY, 2000);
    int database = intProperty(p, DATABASE_PROPERTY, 0);
    DefaultJedisClientConfig.Builder b = DefaultJedisClientConfig.builder()
        .timeoutMillis(timeout)
        .database(database)
        .clientName("benchq-ycsb");
    String password = p.getProperty(PASSWORD_PROPERTY);
    if (password != null && !password.isEmpty()) {
      b.password(password);
    }
    String user = p.getProperty(USER_PROPERTY);
    if (user != null && !user.isEmpty()) {
      b.user(user);
    }
    address = new HostAndPort(host, port);
    config = b.build();
    try {
      // Jedis connects lazily; PING now so that a wrong address or password fails in init()
      // (and therefore before the benchmark barrier) rather than as a stream of op errors.
      connection().ping();
    } catch (JedisException e) {
      closeQuietly();
      throw new DBException("cannot connect to Redis at " + address + ": " + e.getMessage(), e);
    }
    OpWindow.awaitStart();
  }

  @Override
  public void cleanup() throws DBException {
    OpWindow.end();
    closeQuietly();
  }

  @Override
  public Status read(String table, String key, Set<String> fields, Map<String, ByteIterator> result) {
    OpWindow.begin();
    try {
      Jedis j = connection();
      if (fields == null) {
        Map<String, String> all = j.hgetAll(key);
        if (all.isEmpty()) {
          return Status.NOT_FOUND;
        }
        StringByteIterator.putAllAsByteIterators(result, all);
        return Status.OK;
      }
      String[] names = fields.toArray(new String[0]);
      List<String> values = j.hmget(key, names);
      return collect(names, values, result) ? Status.OK : Status.NOT_FOUND;
    } catch (JedisException e) {
      return failed("read", key, e);
    }
  }

  @Override
  public Status scan(String table, String startkey, int recordcount, Set<String> fields,
                     Vector<HashMap<String, ByteIterator>> result) {
    OpWindow.begin();
    try {
      Jedis j = connection();
      // Scores are int hash codes, so their decimal form is exact.
      List<String> keys = j.zrangeByScore(INDEX_KEY, Integer.toString(score(startkey)), "+inf",
          0, recordcount);
      if (keys.isEmpty()) {
        return Status.OK;
      }
      // One round trip for all records instead of one per record.
      String[] names = fields == null ? null : fields.toArray(new String[0]);
      List<Response<Map<String, String>>> whole = new ArrayList<>();
      List<Response<List<String>>> partial = new ArrayList<>();
      Pipeline p = j.pipelined();
      for (String k : keys) {
        if (names == null) {
          whole.add(p.hgetAll(k));
        } else {
          partial.add(p.hmget(k, names));
        }
      }
      p.sync();
      // A record deleted between the index lookup and the fetch is simply skipped.
      if (names == null) {
        for (Response<Map<String, String>> r : whole) {
          Map<String, String> rec = r.get();
          if (!rec.isEmpty()) {
            HashMap<String, ByteIterator> row = new HashMap<>();
            StringByteIterator.putAllAsByteIterators(row, rec);
            result.add(row);
          }
        }
      } else {
        for (Response<List<String>> r : partial) {
          HashMap<String, ByteIterator> row = new HashMap<>();
          if (collect(names, r.get(), row)) {
            result.add(row);
          }
        }
      }
      return Status.OK;
    } catch (JedisException e) {
      return failed("scan", startkey, e);
    }
  }

  /** HSET of the given fields. Like YCSB's other key-value bindings this is an upsert. */
  @Override
  public Status update(String table, String key, Map<String, ByteIterator> values) {
    OpWindow.begin();
    try {
      connection().hset(key, StringByteIterator.getStringMap(values));
      return Status.OK;
    } catch (JedisException e) {
      return failed("update", key, e);
    }
  }

  @Override
  public Status insert(String table, String key, Map<String, ByteIterator> values) {
    OpWindow.begin();
    try {
      // HSET + ZADD pipelined: one round trip per insert.
      Pipeline p = connection().pipelined();
      Response<Long> hset = p.hset(key, StringByteIterator.getStringMap(values));
      Response<Long> zadd = p.zadd(INDEX_KEY, score(key), key);
      p.sync();
      hset.get(); // get() rethrows a server-side error reply
      zadd.get();
      return Status.OK;
    } catch (JedisException e) {
      return failed("insert", key, e);
    }
  }

  @Override
  public Status delete(String table, String key) {
    OpWindow.begin();
    try {
      Pipeline p = connection().pipelined();
      Response<Long> del = p.del(key);
      p.zrem(INDEX_KEY, key);
      p.sync();
      return del.get() == 0 ? Status.NOT_FOUND : Status.OK;
    } catch (JedisException e) {
      return failed("delete", key, e);
    }
  }

  /** Score of a key in the index; must be the same function for insert, delete and scan. */
  private static int score(String key) {
    return key.hashCode();
  }

  /** Copies HMGET results into {@code out}; false when no requested field exists (no record). */
  private static boolean collect(String[] names, List<String> values, Map<String, ByteIterator> out) {
    boolean any = false;
    for (int i = 0; i < names.length; i++) {
      String v = values.get(i);
      if (v != null) {
        out.put(names[i], new StringByteIterator(v));
        any = true;
      }
    }
    return any;
  }

  /**
   * The connection, reopened if the previous one broke. Without this a single network blip
   * (or a Redis restart in a failover test) would turn every later operation into an ERROR.
   */
  private Jedis connection() {
    if (jedis != null && jedis.isBroken()) {
      closeQuietly();
    }
    if (jedis == null) {
      jedis = new Jedis(address, config);
    }
    return jedis;
  }

  private void closeQuietly() {
    if (jedis != null) {
      try {
        jedis.close();
      } catch (RuntimeException ignored) {
        // closing a broken connection may throw; nothing useful to do
      }
      jedis = null;
    }
  }

  private Status failed(String op, String key, JedisException e) {
    errorCount++;
    if (errorCount <= MAX_LOGGED_ERRORS) {
      System.err.println("RedisClient: " + op + " " + key + " failed: " + e);
      if (errorCount == MAX_LOGGED_ERRORS) {
        System.err.println("RedisClient: further errors of this thread are not logged");
      }
    }
    return Status.ERROR;
  }

  static int intProperty(Properties p, String name, int dflt) throws DBException {
    String v = p.getProperty(name);
    if (v == null || v.isBlank()) {
      return dflt;
    }
    try {
      return Integer.parseInt(v.trim());
    } catch (NumberFormatException e) {
      throw new DBException("property " + name + " must be an integer, got '" + v + "'");
    }
  }
}
