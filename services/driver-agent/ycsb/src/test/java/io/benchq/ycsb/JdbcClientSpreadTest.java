package io.benchq.ycsb;

import static org.junit.Assert.assertEquals;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.junit.Test;

public class JdbcClientSpreadTest {

  private static final String POOLS =
      "jdbc:postgresql://127.0.0.1:1,127.0.0.1:2/ycsb?prepareThreshold=0&loadBalanceHosts=true";

  /**
   * Go's rule for the same thing (contracts.PoolAddress), which the plan's per-pod check and the
   * TPC-C engine use, as the table contracts' TestPoolAddressTable holds to it: thread i of a
   * shard (the launcher's probe is not counted) connects to the same pool process.
   */
  @Test
  public void agreesWithGosPoolAddress() throws IOException {
    Path table = Paths.get(System.getProperty("basedir", "."), "../../../contracts/testdata/pool_addresses.txt");
    List<String> lines = Files.readAllLines(table);
    int rows = 0;
    for (String line : lines) {
      if (line.startsWith("#") || line.isBlank()) {
        continue;
      }
      String[] f = line.trim().split(" ");
      int shard = Integer.parseInt(f[0]);
      int threads = Integer.parseInt(f[1]);
      int thread = Integer.parseInt(f[2]);
      int n = Integer.parseInt(f[3]);
      int address = Integer.parseInt(f[4]);
      StringBuilder hosts = new StringBuilder();
      for (int h = 0; h < n; h++) {
        hosts.append(h == 0 ? "" : ",").append("127.0.0.1:").append(h + 1);
      }
      String url = "jdbc:postgresql://" + hosts + "/ycsb?loadBalanceHosts=true";
      assertEquals(line, "jdbc:postgresql://127.0.0.1:" + (address + 1) + "/ycsb?loadBalanceHosts=true",
          JdbcClient.spread(url, shard, threads, thread));
      rows++;
    }
    assertEquals("rows of " + table, 72, rows);
  }

  @Test
  public void spreadsTheConnectionsOfAPhaseEvenly() {
    // 2 shards x 32 threads over 2 pool processes: 32 connections each.
    Map<String, Integer> perHost = new HashMap<>();
    for (int shard = 1; shard <= 2; shard++) {
      for (int instance = 0; instance < 32; instance++) {
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
      for (int instance = 0; instance < 3; instance++) {
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
