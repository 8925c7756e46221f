package io.benchq.ycsb;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicBoolean;

import org.HdrHistogram.Histogram;
import org.HdrHistogram.HistogramLogReader;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

import site.ycsb.measurements.Measurements;
import site.ycsb.measurements.exporter.MeasurementsExporter;

public class OnceMeasurementsTest {

  @Rule
  public TemporaryFolder tmp = new TemporaryFolder();

  private static final int THREADS = 8;
  private static final int ROUNDS = 300;

  /**
   * What the agent checks after every shard: an operation's histogram log adds up to YCSB's own
   * count. Each round, THREADS client threads meet READ first at the same instant while a status
   * thread writes interval lines, as at a phase's GO. Without {@link OnceMeasurements} this
   * failed in each of four runs by hand, at round 42 in the first (a log with NUL bytes where
   * its first line was); with it, five runs of all rounds passed.
   */
  @Test
  public void theLogAddsUpToTheCountWhenThreadsMeetAnOperationFirstTogether() throws Exception {
    for (int round = 0; round < ROUNDS; round++) {
      File dir = tmp.newFolder("round" + round);
      Measurements m = new Measurements(props(dir, "both"));
      OnceMeasurements.install(m);
      race(m);
      Map<String, Long> counted = export(m);
      for (String op : new String[] {"READ", "Intended-READ"}) {
        Path log = dir.toPath().resolve(op + ".hdr");
        assertFalse("round " + round + ": " + op + ".hdr holds NUL bytes (overwritten)",
            new String(Files.readAllBytes(log), "ISO-8859-1").indexOf('\0') >= 0);
        assertEquals("round " + round + ": " + op + " logged vs counted",
            (long) counted.get(op), logged(log));
      }
    }
  }

  @Test
  public void getBuildsOnceWithYcsbsNames() throws Exception {
    File dir = tmp.newFolder();
    Measurements m = new Measurements(props(dir, "both"));
    OnceMeasurements.install(m);
    m.measure("UPDATE", 5);
    m.measureIntended("UPDATE", 7);
    Map<String, Long> counted = export(m);
    assertEquals(Long.valueOf(1), counted.get("UPDATE"));
    assertEquals(Long.valueOf(1), counted.get("Intended-UPDATE"));
    assertEquals(2, counted.size());
    assertEquals(1, logged(dir.toPath().resolve("Intended-UPDATE.hdr")));

    // measurement.interval=intended: YCSB names the intended measurement as the operation.
    File dir2 = tmp.newFolder();
    Measurements intended = new Measurements(props(dir2, "intended"));
    OnceMeasurements.install(intended);
    intended.measureIntended("READ", 3);
    assertEquals(Long.valueOf(1), export(intended).get("READ"));
  }

  @Test
  public void installKeepsWhatWasAlreadyMeasured() throws Exception {
    File dir = tmp.newFolder();
    Measurements m = new Measurements(props(dir, "both"));
    m.measure("INSERT", 5);
    OnceMeasurements.install(m);
    m.measure("INSERT", 6);
    assertEquals(Long.valueOf(2), export(m).get("INSERT"));
  }

  private static Properties props(File dir, String interval) {
    Properties p = new Properties();
    p.setProperty(Measurements.MEASUREMENT_TYPE_PROPERTY, "hdrhistogram");
    p.setProperty(Measurements.MEASUREMENT_INTERVAL, interval);
    p.setProperty("hdrhistogram.fileoutput", "true");
    p.setProperty("hdrhistogram.output.path", dir.getPath() + File.separator);
    return p;
  }

  /** THREADS threads measure READ at once; a status thread writes interval lines meanwhile. */
  private static void race(Measurements m) throws Exception {
    CyclicBarrier gate = new CyclicBarrier(THREADS + 1);
    AtomicBoolean done = new AtomicBoolean();
    Thread status = new Thread(() -> {
      while (!done.get()) {
        m.getSummary();
      }
    });
    List<Thread> clients = new ArrayList<>();
    for (int i = 0; i < THREADS; i++) {
      Thread t = new Thread(() -> {
        try {
          gate.await();
        } catch (Exception e) {
          throw new AssertionError(e);
        }
        for (int n = 0; n < 3; n++) {
          m.measure("READ", 10 + n);
          m.measureIntended("READ", 20 + n);
        }
      });
      t.start();
      clients.add(t);
    }
    status.start();
    gate.await();
    for (Thread t : clients) {
      t.join();
    }
    done.set(true);
    status.join();
  }

  /** Exports m (closing its logs) and returns each measurement's Operations. */
  private static Map<String, Long> export(Measurements m) throws IOException {
    Map<String, Long> ops = new HashMap<>();
    m.exportMeasurements(new MeasurementsExporter() {
      @Override
      public void write(String metric, String measurement, int i) {
        write(metric, measurement, (long) i);
      }

      @Override
      public void write(String metric, String measurement, long i) {
        if ("Operations".equals(measurement)) {
          ops.put(metric, i);
        }
      }

      @Override
      public void write(String metric, String measurement, double d) {
      }

      @Override
      public void close() {
      }
    });
    return ops;
  }

  /** The sum of a histogram log's interval counts, as HdrHistogram's own reader reads it. */
  private static long logged(Path log) throws IOException {
    long n = 0;
    HistogramLogReader r = new HistogramLogReader(log.toFile());
    try {
      for (Histogram h; (h = (Histogram) r.nextIntervalHistogram()) != null; ) {
        n += h.getTotalCount();
      }
    } finally {
      r.close();
    }
    return n;
  }
}
