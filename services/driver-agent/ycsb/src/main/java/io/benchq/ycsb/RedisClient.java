package io.benchq.ycsb;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.Vector;
import java.util.function.Function;

import org.apache.commons.pool2.impl.GenericObjectPoolConfig;
import redis.clients.jedis.Connection;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisCluster;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.Response;
import redis.clients.jedis.commands.JedisCommands;
import redis.clients.jedis.commands.PipelineCommands;
import redis.clients.jedis.exceptions.JedisException;
import redis.clients.jedis.exceptions.JedisRedirectionException;
import redis.clients.jedis.providers.ClusterConnectionProvider;
import redis.clients.jedis.util.JedisClusterCRC16;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.Status;
import site.ycsb.StringByteIterator;

/**
 * YCSB binding for a single Redis server or a Redis Cluster (benchq's own implementation of
 * {@link DB}).
 *
 * <p>Data model: every record is a Redis hash {@code key -> {field: value}}. Because Redis has
 * no ordered key space, every key is also added to one sorted set, {@link #INDEX_KEY}, with the
 * key's {@code String.hashCode()} as score; {@code scan} walks that sorted set from the start
 * key's score. The order is therefore "hash order", not lexical key order: that is fine for
 * YCSB workload E, which only needs "N records following a given one" to be deterministic.
 *
 * <p>YCSB creates one DB instance per client thread, so on a single server each instance owns
 * exactly one connection (no pool needed, no sharing across threads).
 *
 * <p>With {@code redis.cluster=true} the address is one node of a Redis Cluster. The instances
 * (threads) of a process share one {@link JedisCluster}, which learns the slot map from that
 * node once (in the launcher's probe, before the barrier: per-thread clients would each learn
 * it after GO, which delayed the first operations by hundreds of milliseconds) and keeps a
 * pool of up to one connection per thread to each master. The scan index is split into range
 * buckets spread over the masters ({@link ClusterIndex}); scans return the same records in the
 * same order as on a single server. A record and its index entry live in different slots, so
 * an insert or delete is two commands (two round trips) instead of one pipelined pair.
 *
 * <p>Properties: {@code redis.host} (default 127.0.0.1), {@code redis.port} (6379),
 * {@code redis.password} (optional), {@code redis.user} (optional, ACL user),
 * {@code redis.database} (0; must be 0 on a cluster), {@code redis.timeout} (socket/connect
 * timeout in ms, 2000), {@code redis.cluster} (false), {@code redis.cluster.indexbuckets} (64).
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
  public static final String CLUSTER_PROPERTY = "redis.cluster";
  public static final String INDEX_BUCKETS_PROPERTY = "redis.cluster.indexbuckets";

  static final int DEFAULT_INDEX_BUCKETS = 64;

  private HostAndPort address;
  private DefaultJedisClientConfig config;
  private Jedis jedis;
  /** Non-null in cluster mode (redis.cluster=true), shared; jedis stays null then. */
  private JedisCluster cluster;
  private ClusterConnectionProvider nodes; // cluster's, for the per-node pipelines of scans
  private ClusterIndex index;
  private final ErrorLog errors = new ErrorLog("RedisClient");

  /**
   * The job's cluster clients by address and client settings, shared by its threads; closed
   * when the job ends ({@link #closeShared()}).
   */
  private static final Map<String, SharedCluster> CLUSTERS = new HashMap<>();

  /**
   * Closes the cluster clients of the job that ended. A JVM that stays for the next job (a
   * standby, see {@code Launcher}) may then meet another cluster at the same address, or more
   * threads than the pools were sized for.
   */
  static void closeShared() {
    synchronized (CLUSTERS) {
      for (SharedCluster c : CLUSTERS.values()) {
        try {
          c.cluster.close();
        } catch (RuntimeException ignored) {
          // closing only: the job's figures are out
        }
      }
      CLUSTERS.clear();
    }
  }

  private static final class SharedCluster {
    final JedisCluster cluster;
    final ClusterConnectionProvider nodes;

    SharedCluster(JedisCluster cluster, ClusterConnectionProvider nodes) {
      this.cluster = cluster;
      this.nodes = nodes;
    }
  }

  /** One ClusterIndex per bucket count, shared by the threads (computing one takes ~10 ms). */
  private static final Map<Integer, ClusterIndex> INDEXES = new HashMap<>();

  @Override
  public void init() throws DBException {
    Properties p = getProperties();
    String host = p.getProperty(HOST_PROPERTY, "127.0.0.1");
    int port = Props.intProperty(p, PORT_PROPERTY, 6379);
    int timeout = Props.intProperty(p, TIMEOUT_PROPERTY, 2000);
    int database = Props.intProperty(p, DATABASE_PROPERTY, 0);
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
    if (Boolean.parseBoolean(p.getProperty(CLUSTER_PROPERTY, "false").trim())) {
      if (database != 0) {
        throw new DBException(DATABASE_PROPERTY + "=" + database + ": a Redis Cluster has only database 0");
      }
      index = clusterIndex(Props.intProperty(p, INDEX_BUCKETS_PROPERTY, DEFAULT_INDEX_BUCKETS));
      initCluster(timeout, Math.max(1, Props.intProperty(p, "threadcount", 1)));
    } else {
      try {
        // Jedis connects lazily; PING now so that a wrong address or password fails in init()
        // (and therefore before the benchmark barrier) rather than as a stream of op errors.
        connection().ping();
      } catch (JedisException e) {
        closeQuietly();
        throw new DBException("cannot connect to Redis at " + address + ": " + e.getMessage(), e);
      }
    }
  }

  private static ClusterIndex clusterIndex(int buckets) throws DBException {
    synchronized (INDEXES) {
      ClusterIndex ix = INDEXES.get(buckets);
      if (ix == null) {
        try {
          ix = new ClusterIndex(buckets);
        } catch (IllegalArgumentException e) {
          throw new DBException(INDEX_BUCKETS_PROPERTY + ": " + e.getMessage());
        }
        INDEXES.put(buckets, ix);
      }
      return ix;
    }
  }

  private void initCluster(int timeout, int threads) throws DBException {
    String id = address + " " + config.getUser() + " " + config.getPassword() + " " + timeout;
    SharedCluster shared;
    synchronized (CLUSTERS) {
      shared = CLUSTERS.get(id);
      if (shared == null) {
        GenericObjectPoolConfig<Connection> pool = new GenericObjectPoolConfig<>();
        // Per master: a thread holds at most one connection at a time (a scan's pipelines take
        // one per master).
        pool.setMaxTotal(threads);
        pool.setMaxIdle(threads);
        pool.setMinIdle(0);
        pool.setMaxWait(Duration.ofMillis(timeout));
        ClusterConnectionProvider provider = null;
        try {
          provider = new ClusterConnectionProvider(Collections.singleton(address), config, pool);
          shared = new SharedCluster(new JedisCluster(provider, JedisCluster.DEFAULT_MAX_ATTEMPTS,
              Duration.ofMillis((long) timeout * JedisCluster.DEFAULT_MAX_ATTEMPTS)), provider);
        } catch (JedisException e) {
          if (provider != null) {
            provider.close();
          }
          throw new DBException("cannot use the Redis Cluster at " + address + ": " + e.getMessage(), e);
        }
        CLUSTERS.put(id, shared);
      }
    }
    try {
      // A keyed command: fails unless the slot map is known and the bucket's master answers,
      // so an unformed cluster fails here, before the barrier.
      shared.cluster.exists(index.key(0));
    } catch (JedisException e) {
      throw new DBException("cannot use the Redis Cluster at " + address + ": " + e.getMessage(), e);
    }
    cluster = shared.cluster;
    nodes = shared.nodes;
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
      JedisCommands j = commands();
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
      if (cluster != null) {
        clusterFetch(clusterRange(score(startkey), recordcount), fields, result);
        return Status.OK;
      }
      Jedis j = connection();
      // Scores are int hash codes, so their decimal form is exact.
      List<String> keys = j.zrangeByScore(INDEX_KEY, Integer.toString(score(startkey)), "+inf",
          0, recordcount);
      if (!keys.isEmpty()) {
        // One round trip for all records instead of one per record.
        Pipeline p = j.pipelined();
        fetch(k -> p, p::sync, keys, fields, result);
      }
      return Status.OK;
    } catch (JedisRedirectionException e) {
      // The slot map changed under a pipeline (pipelines do not follow MOVED): relearn it for
      // the next operations.
      if (nodes != null) {
        nodes.renewSlotCache();
      }
      return failed("scan", startkey, e);
    } catch (JedisException e) {
      return failed("scan", startkey, e);
    }
  }

  /**
   * Fetches the records of keys with one pipeline per master that holds some of them, sent one
   * after the other. (Jedis' ClusterPipeline does the same but starts a thread pool for every
   * sync, which made scans several times slower here.)
   */
  private void clusterFetch(List<String> keys, Set<String> fields,
                            Vector<HashMap<String, ByteIterator>> result) {
    if (keys.isEmpty()) {
      return;
    }
    Map<HostAndPort, Pipeline> pipes = new LinkedHashMap<>();
    List<Connection> borrowed = new ArrayList<>();
    try {
      Function<String, PipelineCommands> pipeOf = k -> pipes.computeIfAbsent(
          nodes.getNode(JedisClusterCRC16.getSlot(k)), node -> {
            if (node == null) {
              throw new JedisException("no master known for the slot of " + k);
            }
            Connection c = nodes.getConnection(node);
            borrowed.add(c);
            return new Pipeline(c);
          });
      fetch(pipeOf, () -> pipes.values().forEach(Pipeline::sync), keys, fields, result);
    } finally {
      for (Connection c : borrowed) {
        c.close(); // back to its pool
      }
    }
  }

  /**
   * Up to n keys of the cluster's index from score on: the rest of score's bucket, then the
   * following buckets from their start.
   */
  private List<String> clusterRange(int score, int n) {
    List<String> keys = new ArrayList<>(n);
    int first = index.bucketOf(score);
    for (int b = first; b < index.buckets() && keys.size() < n; b++) {
      String min = b == first ? Integer.toString(score) : "-inf";
      keys.addAll(cluster.zrangeByScore(index.key(b), min, "+inf", 0, n - keys.size()));
    }
    return keys;
  }

  /**
   * Reads the records of keys, in that order, into result: each through its pipeline (pipeOf),
   * then sync sends them. A record deleted between the index lookup and the fetch is simply
   * skipped.
   */
  private static void fetch(Function<String, PipelineCommands> pipeOf, Runnable sync,
                            List<String> keys, Set<String> fields,
                            Vector<HashMap<String, ByteIterator>> result) {
    String[] names = fields == null ? null : fields.toArray(new String[0]);
    List<Response<Map<String, String>>> whole = new ArrayList<>();
    List<Response<List<String>>> partial = new ArrayList<>();
    for (String k : keys) {
      if (names == null) {
        whole.add(pipeOf.apply(k).hgetAll(k));
      } else {
        partial.add(pipeOf.apply(k).hmget(k, names));
      }
    }
    sync.run();
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
  }

  /** HSET of the given fields. Like YCSB's other key-value bindings this is an upsert. */
  @Override
  public Status update(String table, String key, Map<String, ByteIterator> values) {
    OpWindow.begin();
    try {
      commands().hset(key, StringByteIterator.getStringMap(values));
      return Status.OK;
    } catch (JedisException e) {
      return failed("update", key, e);
    }
  }

  @Override
  public Status insert(String table, String key, Map<String, ByteIterator> values) {
    OpWindow.begin();
    try {
      if (cluster != null) {
        // Record first: a failure in between leaves an unindexed record (the insert reports
        // ERROR), never an index entry without a record.
        int s = score(key);
        cluster.hset(key, StringByteIterator.getStringMap(values));
        cluster.zadd(index.key(index.bucketOf(s)), s, key);
        return Status.OK;
      }
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
      if (cluster != null) {
        long deleted = cluster.del(key);
        cluster.zrem(index.key(index.bucketOf(score(key))), key);
        return deleted == 0 ? Status.NOT_FOUND : Status.OK;
      }
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

  /** The commands of this instance's server or cluster. */
  private JedisCommands commands() {
    return cluster != null ? cluster : connection();
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
    // A cluster client is shared by the process's threads: only let go of it.
    cluster = null;
    nodes = null;
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
    errors.failed(() -> op + " " + key + " failed: " + e);
    return Status.ERROR;
  }
}
