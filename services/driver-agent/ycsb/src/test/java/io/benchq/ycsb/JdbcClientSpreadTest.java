package io.benchq.ycsb;

import static org.junit.Assert.assertEquals;

import java.util.HashMap;
import java.util.Map;

import org.junit.Test;

public class JdbcClientSpreadTest {

  private static final String POOLS =
      "jdbc:postgresql://127.0.0.1:1,127.0.0.1:2/ycsb?prepareThreshold=0&loadBalanceHosts=true";

  @Test
  public void spreadsTheConnectionsOfAPhaseEvenly() {
    // 2 shards x 32 threads over 2 pool processes: 32 connections each, whatever the offset
    // of the launcher's probe instance.
    Map<String, Integer> perHost = new HashMap<>();
    for (int shard = 1; shard <= 2; shard++) {
      for (int instance = 1; instance <= 32; instance++) {
        perHost.merge(JdbcClient.spread(POOLS, shard, 32, instance), 1, Integer::sum);
      }
    }
    assertEquals(2, perHost.size());
    assertEquals(Integer.valueOf(32), perHost.get(
        "jdbc:postgresql://127.0.0.1:1/ycsb?prepareThreshold=0&loadBalanceHosts=true"));
    assertEquals(Integer.valueOf(32), perHost.get(
        "jdbc:postgresql://127.0.0.1:2/ycsb?prepareThreshold=0&loadBalanceHosts=true"));
    // Odd thread counts: shard 2 continues where shard 1 stopped.
    perHost.clear();
    for (int shard = 1; shard <= 2; shard++) {
      for (int instance = 1; instance <= 3; instance++) {
        perHost.merge(JdbcClient.spread(POOLS, shard, 3, instance), 1, Integer::sum);
      }
    }
    assertEquals(Integer.valueOf(3), perHost.values().iterator().next());
  }

  @Test
  public void leavesOtherURLsAlone() {
    for (String url : new String[] {
        "jdbc:postgresql://127.0.0.1:1/ycsb?loadBalanceHosts=true",
        "jdbc:postgresql://127.0.0.1:1,127.0.0.1:2/ycsb",
        "jdbc:postgresql://127.0.0.1:1,127.0.0.1:2/ycsb?loadBalanceHosts=false",
        "jdbc:mysql://a:1,b:2/ycsb?loadBalanceHosts=true",
    }) {
      assertEquals(url, JdbcClient.spread(url, 2, 8, 5));
    }
  }
}
