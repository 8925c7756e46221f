package io.benchq.ycsb;

import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The measured window of one driver process: when its first operation started and when its
 * last one ended, reported on stderr so the agent can compute the phase's common window and the
 * start skew of its shards. It also holds the common start instant of the phase's shards.
 *
 * <p>The start: loading the workload, creating the client threads and connecting them takes
 * from tens to hundreds of milliseconds on a busy machine, differently in every process, so
 * {@code Run} does it all before READY. Each thread's binding {@code init()} connects and then
 * waits at a gate ({@link #awaitStart()}); the launcher says READY once every thread waits
 * there, and GO opens the gate with the phase's common start instant: all shards' first
 * operations start at that instant. YCSB's throttle and intended-start clocks begin after
 * {@code init()}, so the wait does not distort them.
 *
 * <p>Our bindings call {@link #begin()} at the start of every operation
 * (after the first call it is a single volatile read) and {@link #end()} in {@code cleanup()},
 * which YCSB calls in each client thread right after that thread's last operation; the latest
 * of those is the end of the window. {@code Run} prints the end once its client threads have
 * ended; {@code Launcher} prints it at JVM exit if it was not printed yet.
 */
final class OpWindow {

  /** stderr line prefixes the agent parses; the value is an ISO-8601 instant (UTC). */
  static final String FIRST_OP = "BENCHQ FIRST_OP ";
  static final String LAST_OP = "BENCHQ LAST_OP ";

  private static final AtomicBoolean STARTED = new AtomicBoolean();
  private static volatile boolean started;
  private static final AtomicReference<Instant> LAST = new AtomicReference<>();
  private static final AtomicBoolean LAST_PRINTED = new AtomicBoolean();
  /** The common start instant; null (a plain GO) means: do not wait. */
  private static volatile Instant startAt;
  /** The gate the client threads wait at between connecting and their first operation. */
  private static volatile boolean armed;
  private static volatile CountDownLatch go = new CountDownLatch(1);
  private static final Object ARRIVALS = new Object();
  private static int arrivals;

  private OpWindow() {
  }

  /**
   * Forgets the last job's window and gate, so that a JVM that stays for the next job (a
   * standby, see {@code Launcher}) measures that job alone. Called between jobs, when no client
   * thread runs.
   */
  static void reset() {
    synchronized (ARRIVALS) {
      arrivals = 0;
    }
    armed = false;
    startAt = null;
    go = new CountDownLatch(1);
    LAST.set(null);
    LAST_PRINTED.set(false);
    started = false;
    STARTED.set(false);
  }

  /**
   * Arms the gate: from now on {@link #awaitStart()} counts the thread as arrived and holds it
   * until {@link #go}. Before (the launcher's probe) it returns at once.
   */
  static void arm() {
    armed = true;
  }

  /** How many client threads wait at the gate. */
  static int arrived() {
    synchronized (ARRIVALS) {
      return arrivals;
    }
  }

  /** Waits up to ms milliseconds for the n-th arrival at the gate. */
  static void awaitArrivals(int n, long ms) throws InterruptedException {
    synchronized (ARRIVALS) {
      if (arrivals < n) {
        ARRIVALS.wait(ms);
      }
    }
  }

  /** Opens the gate: the threads start their first operation at the instant at (null: now). */
  static void go(Instant at) {
    startAt = at;
    go.countDown();
  }

  /**
   * Called at the end of each binding's {@code init()}, after it connected (see
   * {@code Run.GatedDB}): once the gate is armed, waits for GO and then for its instant.
   */
  static void awaitStart() {
    if (!armed) {
      return;
    }
    synchronized (ARRIVALS) {
      arrivals++;
      ARRIVALS.notifyAll();
    }
    try {
      go.await();
      sleepUntil(startAt);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Sleeps until the instant at; returns at once when it is null or past. */
  static void sleepUntil(Instant at) throws InterruptedException {
    if (at == null) {
      return;
    }
    for (long ms = Instant.now().until(at, ChronoUnit.MILLIS); ms > 0;
         ms = Instant.now().until(at, ChronoUnit.MILLIS)) {
      Thread.sleep(ms);
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

  /**
   * Prints the LAST_OP line, once: as soon as the client threads have ended ({@code Run}), so
   * that the agent reads the driver's CPU counter at the end of the operations and not after the
   * export of the measurements, or else at exit. Nothing when no operation ran.
   */
  static void printLast() {
    Instant last = LAST.get();
    if (last != null && LAST_PRINTED.compareAndSet(false, true)) {
      System.err.println(LAST_OP + last);
      System.err.flush();
    }
  }
}
