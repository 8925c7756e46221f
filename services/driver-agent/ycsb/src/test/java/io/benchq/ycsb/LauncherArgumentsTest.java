package io.benchq.ycsb;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;

import java.util.Properties;

import org.junit.Test;

public class LauncherArgumentsTest {

  @Test
  public void optionsSetClientsProperties() {
    Properties p = Launcher.parseArguments(new String[] {
        "-t", "-s", "-threads", "4", "-target", "100", "-db", "io.benchq.ycsb.RedisClient",
        "-l", "shard-1", "-p", "redis.port=7000"});
    assertEquals("true", p.getProperty("dotransactions"));
    assertEquals("true", p.getProperty("status"));
    assertEquals("4", p.getProperty("threadcount"));
    assertEquals("100", p.getProperty("target"));
    assertEquals("io.benchq.ycsb.RedisClient", p.getProperty("db"));
    assertEquals("shard-1", p.getProperty("label"));
    assertEquals("7000", p.getProperty("redis.port"));
  }

  @Test
  public void badArgumentsAreRefused() {
    assertThrows(IllegalArgumentException.class,
        () -> Launcher.parseArguments(new String[] {"-threads"}));
    assertThrows(IllegalArgumentException.class,
        () -> Launcher.parseArguments(new String[] {"-x", "1"}));
    assertThrows(IllegalArgumentException.class,
        () -> Launcher.parseArguments(new String[] {"-p", "novalue"}));
  }
}
