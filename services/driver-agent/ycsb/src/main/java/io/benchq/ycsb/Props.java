package io.benchq.ycsb;

import java.util.Properties;
import java.util.function.Function;
import java.util.function.ToLongFunction;

import site.ycsb.DBException;
import site.ycsb.WorkloadException;

/**
 * The integer properties of the bindings and the workload, read by one rule: unset or blank
 * is the default, anything else must be an integer. Each YCSB extension point throws its own
 * exception type, hence one method for each.
 */
final class Props {

  private Props() {
  }

  /** An int property of a {@link site.ycsb.DB} binding. */
  static int intProperty(Properties p, String name, int dflt) throws DBException {
    return (int) integer(p, name, dflt, Integer::parseInt, DBException::new);
  }

  /** A long property of a {@link site.ycsb.Workload}. */
  static long longProperty(Properties p, String name, long dflt) throws WorkloadException {
    return integer(p, name, dflt, Long::parseLong, WorkloadException::new);
  }

  private static <E extends Exception> long integer(Properties p, String name, long dflt,
      ToLongFunction<String> parse, Function<String, E> error) throws E {
    String v = p.getProperty(name);
    if (v == null || v.isBlank()) {
      return dflt;
    }
    try {
      return parse.applyAsLong(v.trim());
    } catch (NumberFormatException e) {
      throw error.apply("property " + name + " must be an integer, got '" + v + "'");
    }
  }
}
