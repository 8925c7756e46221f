package io.benchq.ycsb;

import java.util.Properties;

import site.ycsb.WorkloadException;
import site.ycsb.workloads.CoreWorkload;

/**
 * YCSB's {@link CoreWorkload} for one of several benchmarking shards that share a key space.
 *
 * <p>Every shard runs over the whole loaded key space (so zipfian hot keys are global), and
 * every shard's CoreWorkload numbers the records it inserts during the run from
 * {@code recordcount} upwards: with two or more shards they would all write the same new keys.
 * This class interleaves those numbers: the n-th new key number of shard s (1-based) of S,
 * {@code recordcount + n}, becomes the key number {@code recordcount + n*S + (s-1)}. Shards
 * therefore never collide, and the key space keeps growing densely as with one client.
 *
 * <p>The mapping sits in {@link #buildKeyName}, which CoreWorkload uses for every key it
 * touches, so a shard's reads, updates and scans of the records it inserted (workload D's
 * "latest" distribution favours exactly those) find them under the same names. Key numbers
 * below {@code recordcount} (the loaded records, and everything a loading shard writes) are
 * unchanged, and with {@value #SHARDS_PROPERTY}=1 this is exactly CoreWorkload.
 *
 * <p>Properties: {@value #SHARD_PROPERTY} (1-based, default 1), {@value #SHARDS_PROPERTY}
 * (default 1).
 */
public class ShardedWorkload extends CoreWorkload {

  public static final String SHARD_PROPERTY = "benchq.shard";
  public static final String SHARDS_PROPERTY = "benchq.shards";

  private long loaded;
  private long shard;
  private long shards;

  @Override
  public void init(Properties p) throws WorkloadException {
    super.init(p);
    shards = Props.longProperty(p, SHARDS_PROPERTY, 1);
    shard = Props.longProperty(p, SHARD_PROPERTY, 1);
    if (shards < 1 || shard < 1 || shard > shards) {
      throw new WorkloadException(SHARD_PROPERTY + "=" + shard + " and " + SHARDS_PROPERTY + "="
          + shards + ": want 1 <= shard <= shards");
    }
    loaded = recordcount;
  }

  @Override
  protected String buildKeyName(long keynum) {
    return super.buildKeyName(keyNumber(keynum, loaded, shard, shards));
  }

  /** The key number shard (1-based) of shards uses for CoreWorkload's key number n. */
  static long keyNumber(long n, long loaded, long shard, long shards) {
    if (shards <= 1 || n < loaded) {
      return n;
    }
    return loaded + (n - loaded) * shards + (shard - 1);
  }
}
