package io.benchq.ycsb;

import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

import site.ycsb.measurements.Measurements;
import site.ycsb.measurements.OneMeasurement;

/**
 * Makes YCSB's {@link Measurements} build each operation's measurement once.
 *
 * <p>Why: YCSB 0.17 builds a measurement outside its map's lock ({@code getOpMeasurement}: get,
 * build, putIfAbsent), so client threads that meet an operation first at the same moment each
 * build one, and all but the first are thrown away. With {@code hdrhistogram.fileoutput=true}
 * building one opens the operation's histogram log with truncation. A thread that builds late,
 * after the status thread already logged an interval through the kept measurement, cuts that
 * line: a run of NUL bytes stands in its place, and the log no longer adds up to YCSB's own
 * count (seen in about one test run in fourteen: 2,849 logged, 2,850 counted). The agent then
 * cannot ship the operation's histogram, and its percentiles cannot be merged across shards.
 *
 * <p>How: Measurements' two maps are swapped for maps whose {@code get} builds an absent
 * measurement under the map's lock ({@code computeIfAbsent}), by YCSB's own
 * {@code constructOneMeasurement} and with YCSB's names, so YCSB's own code never sees null and
 * never builds a second one. Nothing else of YCSB's changes.
 */
final class OnceMeasurements {

  private OnceMeasurements() {
  }

  /**
   * Swaps m's maps (keeping what they hold). Fails when YCSB's Measurements is not shaped as in
   * the version we build against (0.17.0).
   */
  static void install(Measurements m) throws ReflectiveOperationException {
    Method construct = Measurements.class.getDeclaredMethod("constructOneMeasurement", String.class);
    construct.setAccessible(true);
    Field interval = Measurements.class.getDeclaredField("measurementInterval");
    interval.setAccessible(true);
    // YCSB's naming (getOpIntendedMeasurement): measurement.interval=intended (1) names the
    // intended measurement as the operation, "both" prefixes it.
    boolean intendedOnly = interval.getInt(m) == 1;
    swap(m, "opToMesurementMap", construct, op -> op);
    swap(m, "opToIntendedMesurementMap", construct, op -> intendedOnly ? op : "Intended-" + op);
  }

  private static void swap(Measurements m, String field, Method construct,
                           Function<String, String> name) throws ReflectiveOperationException {
    Field f = Measurements.class.getDeclaredField(field);
    f.setAccessible(true);
    @SuppressWarnings("unchecked")
    ConcurrentHashMap<String, OneMeasurement> old = (ConcurrentHashMap<String, OneMeasurement>) f.get(m);
    BuiltOnGet map = new BuiltOnGet(op -> {
      try {
        return (OneMeasurement) construct.invoke(m, name.apply(op));
      } catch (InvocationTargetException e) {
        if (e.getCause() instanceof RuntimeException) {
          throw (RuntimeException) e.getCause(); // e.g. "Failed to open hdr histogram output file"
        }
        throw new IllegalStateException(e.getCause());
      } catch (IllegalAccessException e) {
        throw new IllegalStateException(e);
      }
    });
    map.putAll(old);
    f.set(m, map);
  }

  /** A map whose get builds an absent value, once, under the map's lock. */
  private static final class BuiltOnGet extends ConcurrentHashMap<String, OneMeasurement> {
    private static final long serialVersionUID = 1L;
    private final transient Function<String, OneMeasurement> build;

    BuiltOnGet(Function<String, OneMeasurement> build) {
      this.build = build;
    }

    @Override
    public OneMeasurement get(Object key) {
      OneMeasurement m = super.get(key);
      return m != null ? m : computeIfAbsent((String) key, build);
    }
  }
}
