package io.benchq.ycsb;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;

import org.junit.Test;
import redis.clients.jedis.util.JedisClusterCRC16;

public class ClusterIndexTest {

  @Test
  public void bucketsSliceTheScoreRangeInOrder() {
    ClusterIndex ix = new ClusterIndex(64);
    assertEquals(0, ix.bucketOf(Integer.MIN_VALUE));
    assertEquals(63, ix.bucketOf(Integer.MAX_VALUE));
    assertEquals(32, ix.bucketOf(0));
    assertEquals(31, ix.bucketOf(-1));
    // Equal slices: bucket b starts at MIN + b * 2^32/64.
    long width = (1L << 32) / 64;
    for (int b = 0; b < 64; b++) {
      int lo = (int) (Integer.MIN_VALUE + b * width);
      assertEquals(b, ix.bucketOf(lo));
      if (b > 0) {
        assertEquals(b - 1, ix.bucketOf(lo - 1));
      }
    }
    // Monotonic: a higher score never lands in an earlier bucket.
    Random r = new Random(1);
    for (int i = 0; i < 100_000; i++) {
      int a = r.nextInt();
      int c = r.nextInt();
      if (a <= c) {
        assertTrue(ix.bucketOf(a) <= ix.bucketOf(c));
      }
    }
  }

  @Test
  public void bucketKeysSitInTheMiddleOfTheirSlotShare() {
    for (int buckets : new int[] {1, 3, 64, 1000, ClusterIndex.SLOTS}) {
      ClusterIndex ix = new ClusterIndex(buckets);
      Set<String> keys = new HashSet<>();
      for (int b = 0; b < buckets; b++) {
        String k = ix.key(b);
        assertTrue(k, k.startsWith("_indices{") && k.endsWith("}"));
        int want = (int) (((long) b * ClusterIndex.SLOTS + ClusterIndex.SLOTS / 2) / buckets);
        assertEquals(k, want, JedisClusterCRC16.getSlot(k));
        keys.add(k);
      }
      assertEquals(buckets, keys.size());
    }
  }

  @Test
  public void threeMastersHoldAThirdOfTheBucketsEach() {
    ClusterIndex ix = new ClusterIndex(64);
    int[] perMaster = new int[3];
    for (int b = 0; b < 64; b++) {
      int slot = JedisClusterCRC16.getSlot(ix.key(b));
      // The local deployer's and redis-cli's split: i*16384/3 .. (i+1)*16384/3-1.
      perMaster[slot * 3 / ClusterIndex.SLOTS]++;
    }
    assertArrayEquals(new int[] {21, 22, 21}, perMaster);
  }

  @Test
  public void walkingTheBucketsIsTheSingleServerScanOrder() {
    // The single-server index: one sorted set by (score, key). The cluster's: buckets walked
    // in order, each sorted the same way. Both must list the same keys in the same order
    // from any start.
    ClusterIndex ix = new ClusterIndex(16);
    Comparator<String> byScore = Comparator.<String>comparingInt(String::hashCode)
        .thenComparing(Comparator.naturalOrder());
    List<String> all = new ArrayList<>();
    List<TreeMap<String, Boolean>> buckets = new ArrayList<>();
    for (int b = 0; b < 16; b++) {
      buckets.add(new TreeMap<>(byScore));
    }
    for (int i = 0; i < 5000; i++) {
      String k = "user" + (i * 7919L);
      all.add(k);
      buckets.get(ix.bucketOf(k.hashCode())).put(k, true);
    }
    all.sort(byScore);
    List<String> walked = new ArrayList<>();
    for (TreeMap<String, Boolean> b : buckets) {
      walked.addAll(b.keySet());
    }
    assertEquals(all, walked);
  }

  @Test
  public void rejectsBadBucketCounts() {
    for (int n : new int[] {0, -1, ClusterIndex.SLOTS + 1}) {
      try {
        new ClusterIndex(n);
        fail("accepted " + n + " buckets");
      } catch (IllegalArgumentException expected) {
        assertNotEquals("", expected.getMessage());
      }
    }
  }
}
