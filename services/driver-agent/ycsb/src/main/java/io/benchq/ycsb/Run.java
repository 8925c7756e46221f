package io.benchq.ycsb;

import java.io.FileOutputStream;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.Vector;
import java.util.concurrent.CountDownLatch;

import org.apache.htrace.core.HTraceConfiguration;
import org.apache.htrace.core.Tracer;

import site.ycsb.ByteIterator;
import site.ycsb.Client;
import site.ycsb.ClientThread;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.DBFactory;
import site.ycsb.Status;
import site.ycsb.StatusThread;
import site.ycsb.TerminatorThread;
import site.ycsb.UnknownDBException;
import site.ycsb.Utils;
import site.ycsb.Workload;
import site.ycsb.WorkloadException;
import site.ycsb.measurements.Measurements;
import site.ycsb.measurements.exporter.MeasurementsExporter;
import site.ycsb.measurements.exporter.TextMeasurementsExporter;

/**
 * One YCSB run, built from YCSB core's own parts (its workload, {@link ClientThread}s,
 * {@link StatusThread}, {@link TerminatorThread}, measurements and exporter) but ordered for a
 * start barrier: everything YCSB's {@code Client.main} does before the first operation happens
 * in {@link #prepare} and {@link #awaitConnected}, before the launcher says READY; after GO only
 * the wait for the common instant is left.
 *
 * <p>Why not {@code Client.main} after GO: it loads the workload, creates its threads and each
 * thread connects first, which on a busy machine takes from tens to hundreds of milliseconds,
 * differently in every process; the scheduler had to set the start instant half a second ahead
 * to hide that, at every phase. Why not {@code Client.main} before READY: its run time, its
 * status thread and its {@code maxexecutiontime} start with the threads, so they would count the
 * wait at the barrier.
 *
 * <p>Differences from {@code Client.main}, all deliberate: {@code [OVERALL] RunTime(ms)} and the
 * status lines start at the common instant (YCSB's start at thread creation, before the threads
 * connect); {@code maxexecutiontime} counts from the instant; messages go to stderr only, so
 * stdout holds nothing but the summary; client threads are not wrapped in an HTrace span (the
 * bindings' operations still are, by YCSB's DB wrapper); the threads are capped at the number
 * of operations only when that is set (YCSB 0.17.0 also caps them at 0 operations, i.e. runs
 * none; later YCSB does as we do). The GC totals count from the job's start (YCSB's from the
 * JVM's, which in a JVM that ran earlier jobs would hold theirs), their share
 * ({@code TOTAL_GC_TIME_%}) is of the shorter RunTime.
 */
final class Run {

  private final Properties props;
  private final Workload workload;
  private final List<ClientThread> clients;
  private final List<Thread> threads;
  private final CountDownLatch completeLatch;
  /** maxexecutiontime (s, 0: none) and status.interval (s), read before the barrier. */
  private final long maxExecutionS;
  private final int statusIntervalS;
  /** The JVM's collections (count, ms) by collector when the job started. */
  private final Map<String, Long[]> gcAtStart;
  /** The bindings' tracer: closed when the run ends (HTrace keeps every open one). */
  private final Tracer tracer;

  private Run(Properties props, Workload workload, List<ClientThread> clients,
              CountDownLatch completeLatch, Map<String, Long[]> gcAtStart, Tracer tracer)
      throws SetupException {
    this.props = props;
    this.gcAtStart = gcAtStart;
    this.tracer = tracer;
    this.workload = workload;
    this.clients = clients;
    this.completeLatch = completeLatch;
    this.maxExecutionS = number(props, Client.MAX_EXECUTION_TIME, "0");
    this.statusIntervalS = (int) number(props, "status.interval", "10");
    this.threads = new ArrayList<>(clients.size());
    for (int i = 0; i < clients.size(); i++) {
      threads.add(new Thread(clients.get(i), "ClientThread-" + i));
    }
  }

  /** Thrown when the run cannot be set up; the message names what failed. */
  static final class SetupException extends Exception {
    private static final long serialVersionUID = 1L;

    SetupException(String message) {
      super(message);
    }
  }

  /**
   * Loads and initialises the workload and creates the client threads, with YCSB Client's
   * rules for the number of operations per thread and the per-thread target.
   */
  static Run prepare(Properties props) throws SetupException {
    Map<String, Long[]> gcAtStart = Utils.getGCStatst();
    Measurements.setProperties(props);
    Measurements measurements;
    try {
      measurements = Measurements.getMeasurements();
    } catch (IllegalArgumentException e) { // an unknown measurementtype or measurement.interval
      throw new SetupException("YCSB's measurements: " + e.getMessage());
    }
    try {
      OnceMeasurements.install(measurements);
    } catch (ReflectiveOperationException | RuntimeException e) {
      throw new SetupException("cannot make YCSB's measurements build once per operation (" + e
          + "): is YCSB core 0.17.0 on the class path?");
    }
    Workload workload;
    String workloadClass = props.getProperty(Client.WORKLOAD_PROPERTY);
    if (workloadClass == null) {
      throw new SetupException("no workload property (give a workload file with -P)");
    }
    try {
      workload = (Workload) Class.forName(workloadClass).getDeclaredConstructor().newInstance();
    } catch (ReflectiveOperationException | ClassCastException e) {
      throw new SetupException("cannot load workload class " + workloadClass + ": " + e);
    }
    try {
      workload.init(props);
    } catch (WorkloadException | RuntimeException e) {
      throw new SetupException("workload " + workloadClass + " init failed: " + e.getMessage());
    }

    boolean transactions = Boolean.parseBoolean(
        props.getProperty(Client.DO_TRANSACTIONS_PROPERTY, "true"));
    int opcount;
    if (transactions) {
      opcount = Integer.parseInt(props.getProperty(Client.OPERATION_COUNT_PROPERTY, "0"));
    } else if (props.containsKey(Client.INSERT_COUNT_PROPERTY)) {
      opcount = Integer.parseInt(props.getProperty(Client.INSERT_COUNT_PROPERTY, "0"));
    } else {
      opcount = Integer.parseInt(props.getProperty(Client.RECORD_COUNT_PROPERTY,
          Client.DEFAULT_RECORD_COUNT));
    }
    int threadcount = Integer.parseInt(props.getProperty(Client.THREAD_COUNT_PROPERTY, "1"));
    int target = Integer.parseInt(props.getProperty(Client.TARGET_PROPERTY, "0"));
    // The target is split over the threads YCSB was asked for, before the cap below (as YCSB).
    double targetPerThreadPerMs = target > 0 ? (double) target / threadcount / 1000.0 : -1;
    if (threadcount > opcount && opcount > 0) {
      threadcount = opcount;
      System.err.println("benchq-ycsb: more threads than operations; running " + threadcount
          + " threads");
    }

    Tracer tracer = tracer(props, workload);
    String dbClass = props.getProperty(Client.DB_PROPERTY, "site.ycsb.BasicDB");
    CountDownLatch completeLatch = new CountDownLatch(threadcount);
    List<ClientThread> clients = new ArrayList<>(threadcount);
    for (int id = 0; id < threadcount; id++) {
      DB db;
      try {
        db = new GatedDB(DBFactory.newDB(dbClass, props, tracer));
      } catch (UnknownDBException e) {
        throw new SetupException("unknown DB class " + dbClass);
      }
      int threadOps = opcount / threadcount + (id < opcount % threadcount ? 1 : 0);
      ClientThread c = new ClientThread(db, transactions, workload, props, threadOps,
          targetPerThreadPerMs, completeLatch);
      c.setThreadId(id);
      c.setThreadCount(threadcount);
      clients.add(c);
    }
    return new Run(props, workload, clients, completeLatch, gcAtStart, tracer);
  }

  /** A whole-number property, read before the barrier so that a bad one fails the setup. */
  private static long number(Properties props, String name, String dflt) throws SetupException {
    String v = props.getProperty(name, dflt);
    try {
      return Integer.parseInt(v);
    } catch (NumberFormatException e) {
      throw new SetupException("property " + name + "=" + v + " is not a whole number");
    }
  }

  private static Tracer tracer(Properties props, Workload workload) {
    Map<String, String> conf = new HashMap<>();
    for (String key : props.stringPropertyNames()) {
      if (key.startsWith("htrace.")) {
        conf.put(key.substring("htrace.".length()), props.getProperty(key));
      }
    }
    return new Tracer.Builder("YCSB " + workload.getClass().getSimpleName())
        .conf(HTraceConfiguration.fromMap(conf)).build();
  }

  /**
   * Starts the client threads and waits until each has connected (its binding's
   * {@code init()} returned) and waits at the gate; fails when a thread ended instead (its
   * binding's init failed: ClientThread prints why on stderr).
   */
  void awaitConnected() throws SetupException, InterruptedException {
    OpWindow.arm();
    for (Thread t : threads) {
      t.start();
    }
    while (OpWindow.arrived() < threads.size()) {
      for (int i = 0; i < threads.size(); i++) {
        if (!threads.get(i).isAlive()) {
          throw new SetupException("client thread " + i + " ended before the barrier: its "
              + "binding's init failed (see above)");
        }
      }
      OpWindow.awaitArrivals(threads.size(), 5);
    }
  }

  /**
   * Opens the gate for the instant at (null: now), waits for it, runs to the end and exports
   * YCSB's summary to stdout (or {@code exportfile}). Returns the exit code.
   */
  int run(Instant at) throws InterruptedException {
    OpWindow.go(at);
    OpWindow.sleepUntil(at);
    long st = System.currentTimeMillis();
    TerminatorThread terminator = null;
    if (maxExecutionS > 0) {
      terminator = new TerminatorThread(maxExecutionS, threads, workload);
      terminator.start();
    }
    StatusThread status = null;
    if (Boolean.parseBoolean(props.getProperty(Client.STATUS_PROPERTY, "false"))) {
      boolean standard = "timeseries".equals(
          props.getProperty(Measurements.MEASUREMENT_TYPE_PROPERTY, ""));
      boolean trackJvm = "true".equals(props.getProperty(
          Measurements.MEASUREMENT_TRACK_JVM_PROPERTY,
          Measurements.MEASUREMENT_TRACK_JVM_PROPERTY_DEFAULT));
      status = new StatusThread(completeLatch, clients, props.getProperty(Client.LABEL_PROPERTY, ""),
          standard, statusIntervalS, trackJvm);
      status.start();
    }
    int opsDone = 0;
    for (int i = 0; i < threads.size(); i++) {
      threads.get(i).join();
      opsDone += clients.get(i).getOpsDone();
    }
    long runtime = System.currentTimeMillis() - st;
    OpWindow.printLast();
    if (terminator != null) {
      terminator.interrupt();
      terminator.join(); // its last words on stderr belong to this job, before DONE
    }
    if (status != null) {
      status.interrupt();
      status.join();
    }
    try {
      workload.cleanup();
    } catch (WorkloadException e) {
      System.err.println("benchq-ycsb: workload cleanup failed: " + e.getMessage());
    }
    try {
      export(opsDone, runtime, status);
    } catch (IOException e) {
      System.err.println("benchq-ycsb: could not export the measurements: " + e.getMessage());
      return 1;
    } finally {
      tracer.close();
    }
    return 0;
  }

  /**
   * Forgets the measurements of the job that ended: YCSB keeps them in a process-wide singleton
   * that {@link #prepare} would otherwise reuse, so a JVM that stays for the next job would
   * report both jobs' operations. False when YCSB's singleton could not be reached: the JVM
   * must not run another job then.
   */
  static boolean forgetMeasurements() {
    try {
      java.lang.reflect.Field singleton = Measurements.class.getDeclaredField("singleton");
      singleton.setAccessible(true);
      singleton.set(null, null);
      Measurements.setProperties(null); // the job's properties, its SUT's password among them
      return true;
    } catch (ReflectiveOperationException | RuntimeException e) {
      System.err.println("benchq-ycsb: cannot reset YCSB's measurements (" + e + "); not staying for another job");
      return false;
    }
  }

  /** Writes the summary as YCSB Client does: overall figures, GC, JVM, then each operation. */
  private void export(int opsDone, long runtime, StatusThread status) throws IOException {
    String file = props.getProperty(Client.EXPORT_FILE_PROPERTY);
    // YCSB's exporters close their stream; System.out stays open for the next job's summary.
    OutputStream out = file == null ? new KeptOpen(System.out) : new FileOutputStream(file);
    String exporterClass = props.getProperty(Client.EXPORTER_PROPERTY,
        TextMeasurementsExporter.class.getName());
    MeasurementsExporter exporter;
    try {
      exporter = (MeasurementsExporter) Class.forName(exporterClass)
          .getConstructor(OutputStream.class).newInstance(out);
    } catch (ReflectiveOperationException | ClassCastException e) {
      System.err.println("benchq-ycsb: exporter " + exporterClass + " not usable (" + e
          + "); using the text exporter");
      exporter = new TextMeasurementsExporter(out);
    }
    try {
      exporter.write("OVERALL", "RunTime(ms)", runtime);
      exporter.write("OVERALL", "Throughput(ops/sec)", 1000.0 * opsDone / runtime);
      long gcCount = 0;
      long gcTime = 0;
      for (Map.Entry<String, Long[]> gc : Utils.getGCStatst().entrySet()) {
        Long[] before = gcAtStart.getOrDefault(gc.getKey(), new Long[] {0L, 0L});
        long count = gc.getValue()[0] - before[0];
        long time = gc.getValue()[1] - before[1];
        exporter.write("TOTAL_GCS_" + gc.getKey(), "Count", count);
        exporter.write("TOTAL_GC_TIME_" + gc.getKey(), "Time(ms)", time);
        exporter.write("TOTAL_GC_TIME_%_" + gc.getKey(), "Time(%)", 100.0 * time / runtime);
        gcCount += count;
        gcTime += time;
      }
      exporter.write("TOTAL_GCs", "Count", gcCount);
      exporter.write("TOTAL_GC_TIME", "Time(ms)", gcTime);
      exporter.write("TOTAL_GC_TIME_%", "Time(%)", 100.0 * gcTime / runtime);
      if (status != null && status.trackJVMStats()) {
        exporter.write("MAX_MEM_USED", "MBs", status.getMaxUsedMem());
        exporter.write("MIN_MEM_USED", "MBs", status.getMinUsedMem());
        exporter.write("MAX_THREADS", "Count", status.getMaxThreads());
        exporter.write("MIN_THREADS", "Count", status.getMinThreads());
        exporter.write("MAX_SYS_LOAD_AVG", "Load", status.getMaxLoadAvg());
        exporter.write("MIN_SYS_LOAD_AVG", "Load", status.getMinLoadAvg());
      }
      Measurements.getMeasurements().exportMeasurements(exporter);
    } finally {
      exporter.close();
    }
  }

  /** A stream whose close() only flushes: closing System.out would end a standby's output. */
  private static final class KeptOpen extends FilterOutputStream {
    KeptOpen(OutputStream out) {
      super(out);
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      out.write(b, off, len);
    }

    @Override
    public void close() throws IOException {
      out.flush();
    }
  }

  /**
   * A binding as the client threads see it: its {@code init()} (which connects) is followed by
   * the wait at the start gate ({@link OpWindow#awaitStart()}), so every binding, ours or
   * YCSB's, waits there; everything else is the binding's.
   */
  static final class GatedDB extends DB {
    private final DB db;

    GatedDB(DB db) {
      this.db = db;
    }

    @Override
    public void setProperties(Properties p) {
      db.setProperties(p);
    }

    @Override
    public Properties getProperties() {
      return db.getProperties();
    }

    @Override
    public void init() throws DBException {
      db.init();
      OpWindow.awaitStart();
    }

    @Override
    public void cleanup() throws DBException {
      db.cleanup();
    }

    @Override
    public Status read(String table, String key, Set<String> fields,
                       Map<String, ByteIterator> result) {
      return db.read(table, key, fields, result);
    }

    @Override
    public Status scan(String table, String startkey, int recordcount, Set<String> fields,
                       Vector<HashMap<String, ByteIterator>> result) {
      return db.scan(table, startkey, recordcount, fields, result);
    }

    @Override
    public Status update(String table, String key, Map<String, ByteIterator> values) {
      return db.update(table, key, values);
    }

    @Override
    public Status insert(String table, String key, Map<String, ByteIterator> values) {
      return db.insert(table, key, values);
    }

    @Override
    public Status delete(String table, String key) {
      return db.delete(table, key);
    }
  }
}
