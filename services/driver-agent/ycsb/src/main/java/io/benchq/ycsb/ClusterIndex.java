package io.benchq.ycsb;

import java.util.HashMap;
import java.util.Map;

import redis.clients.jedis.util.JedisClusterCRC16;

/**
 * The scan index of {@link RedisClient} on a Redis Cluster: the single-server index (one sorted
 * set of every key, scored by the key's hash) split by score range into {@code buckets} sorted
 * sets, {@code _indices{<tag>}}.
 *
 * <p>Why range buckets: one index key would live in one hash slot, so every insert of every
 * client would also write to the one master that owns it, a hot spot that caps the cluster's
 * load rate. Bucket {@code b} holds the keys whose score lies in the b-th of {@code buckets}
 * equal slices of the int range, so inserts spread evenly over the buckets; and because the
 * slices are ordered, a scan reads the bucket of its start key's score from that score on and
 * then the following buckets from their beginning, which yields exactly the single-server
 * order (hash order, ties by key). A scan of up to N keys touches one bucket, or two when it
 * crosses a bucket's end.
 *
 * <p>Each bucket's hash tag is chosen so that its slot is the middle of the b-th of
 * {@code buckets} equal slot ranges. {@code redis-cli --cluster create} and benchq's local
 * deployer give the masters equal contiguous slot ranges, so every master holds the same
 * number of buckets (give or take one).
 *
 * <p>Every client of one data set must use the same bucket count (the property
 * {@value RedisClient#INDEX_BUCKETS_PROPERTY}); the default suits clusters of up to ~30
 * masters.
 */
final class ClusterIndex {

  /** Common prefix of the bucket keys; excluded when counting data keys. */
  static final String PREFIX = RedisClient.INDEX_KEY + "{";

  static final int SLOTS = 16384;

  private final String[] keys;

  ClusterIndex(int buckets) {
    if (buckets < 1 || buckets > SLOTS) {
      throw new IllegalArgumentException("index buckets must be 1.." + SLOTS + ", got " + buckets);
    }
    keys = new String[buckets];
    Map<Integer, Integer> bucketOfSlot = new HashMap<>();
    for (int b = 0; b < buckets; b++) {
      // Distinct for buckets <= SLOTS: consecutive values differ by at least one.
      bucketOfSlot.put((int) (((long) b * SLOTS + SLOTS / 2) / buckets), b);
    }
    // The first decimal tag that hashes to each wanted slot: deterministic, so every client
    // computes the same keys. Every slot is hit within a few hundred thousand tags.
    int missing = buckets;
    for (int i = 0; missing > 0; i++) {
      String tag = Integer.toString(i);
      Integer b = bucketOfSlot.get(JedisClusterCRC16.getSlot(tag));
      if (b != null && keys[b] == null) {
        keys[b] = PREFIX + tag + "}";
        missing--;
      }
    }
  }

  int buckets() {
    return keys.length;
  }

  /** The sorted set of bucket b. */
  String key(int b) {
    return keys[b];
  }

  /** The bucket of a score: its slice of the int range. */
  int bucketOf(int score) {
    return (int) ((((long) score) - Integer.MIN_VALUE) * keys.length >>> 32);
  }
}
