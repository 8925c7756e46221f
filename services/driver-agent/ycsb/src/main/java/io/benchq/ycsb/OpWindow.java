package io.benchq.ycsb;

import java.time.Instant;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The measured window of one driver process: when its first operation started and when its
 * last one ended, reported on stderr so the agent can compute the phase's common window and the
 * start skew of its shards. It also holds the common start instant of the phase's shards.
 *
 * <p>The start: after GO, YCSB's Client still loads the workload, creates its threads and each
 * thread connects (our bindings' {@code init()}) before its first operation; on a busy machine
 * that takes from tens to hundreds of milliseconds, differently in every process. So the agent
 * sends GO a little ahead, with the phase's start instant ({@link #startAt}), and every
 * binding's {@code init()} ends in {@link #awaitStart()}: the threads connect, then wait, and
 * all shards' first operations start at that instant. YCSB's throttle and intended-start
 * clocks begin after {@code init()}, so the wait does not distort them.
 *
 * <p>YCSB's own RunTime(ms) starts before the client threads connect, so it says nothing about
 * when work really began. Our bindings call {@link #begin()} at the start of every operation
 * (after the first call it is a single volatile read) and {@link #end()} in {@code cleanup()},
 * which YCSB calls in each client thread right after that thread's last operation; the latest
 * of those is the end of the window. {@code Launcher} prints the end at JVM exit.
 */
final class OpWindow {

  /** stderr line prefixes the agent parses; the value is an ISO-8601 instant (UTC). */
  static final String FIRST_OP = "BENCHQ FIRST_OP ";
  static final String LAST_OP = "BENCHQ LAST_OP ";

  private static final AtomicBoolean STARTED = new AtomicBoolean();
  private static volatile boolean started;
  private static final AtomicReference<Instant> LAST = new AtomicReference<>();
  /** The common start instant; null (the probe, a plain GO) means: do not wait. */
  private static volatile Instant startAt;

  private OpWindow() {
  }

  /** Sets the instant {@link #awaitStart()} waits for. */
  static void startAt(Instant at) {
    startAt = at;
  }

  /**
   * Waits until the common start instant, if one is set and still ahead. Called at the end of
   * each binding's {@code init()}, after it connected.
   */
  static void awaitStart() {
    Instant at = startAt;
    if (at == null) {
      return;
    }
    try {
      for (long ms = Instant.now().until(at, java.time.temporal.ChronoUnit.MILLIS); ms > 0;
           ms = Instant.now().until(at, java.time.temporal.ChronoUnit.MILLIS)) {
        Thread.sleep(ms);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Marks the start of an operation; the first call in the process prints FIRST_OP. */
  static void begin() {
    if (!started) {
      first();
    }
  }

  private static void first() {
    Instant now = Instant.now();
    if (STARTED.compareAndSet(false, true)) {
      started = true;
      System.err.println(FIRST_OP + now);
      System.err.flush();
    }
  }

  /**
   * Marks the end of a client thread's work. Before the first operation it does nothing: the
   * launcher's probe runs init() and cleanup() before the barrier.
   */
  static void end() {
    if (!started) {
      return;
    }
    Instant now = Instant.now();
    LAST.accumulateAndGet(now, (a, b) -> a == null || b.isAfter(a) ? b : a);
  }

  /** The LAST_OP line, or null when no operation ran. */
  static String lastLine() {
    Instant last = LAST.get();
    return last == null ? null : LAST_OP + last;
  }
}
