package io.benchq.ycsb;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;

import java.util.Properties;

import org.junit.Test;

import site.ycsb.DBException;
import site.ycsb.WorkloadException;

public class PropsTest {

  private static Properties props(String name, String value) {
    Properties p = new Properties();
    p.setProperty(name, value);
    return p;
  }

  @Test
  public void unsetOrBlankIsTheDefault() throws Exception {
    assertEquals(6379, Props.intProperty(new Properties(), "redis.port", 6379));
    assertEquals(6379, Props.intProperty(props("redis.port", "  "), "redis.port", 6379));
    assertEquals(1L, Props.longProperty(props("benchq.shards", ""), "benchq.shards", 1));
  }

  @Test
  public void valuesAreTrimmed() throws Exception {
    assertEquals(7000, Props.intProperty(props("redis.port", " 7000 "), "redis.port", 6379));
    assertEquals(3000000000L, Props.longProperty(props("n", "3000000000"), "n", 1));
  }

  @Test
  public void aMalformedIntIsADBException() {
    DBException e = assertThrows(DBException.class,
        () -> Props.intProperty(props("redis.port", "7x"), "redis.port", 6379));
    assertEquals("property redis.port must be an integer, got '7x'", e.getMessage());
    e = assertThrows(DBException.class, // beyond int
        () -> Props.intProperty(props("n", "3000000000"), "n", 1));
    assertEquals("property n must be an integer, got '3000000000'", e.getMessage());
  }

  @Test
  public void aMalformedLongIsAWorkloadException() {
    WorkloadException e = assertThrows(WorkloadException.class,
        () -> Props.longProperty(props("benchq.shard", "one"), "benchq.shard", 1));
    assertEquals("property benchq.shard must be an integer, got 'one'", e.getMessage());
  }
}
