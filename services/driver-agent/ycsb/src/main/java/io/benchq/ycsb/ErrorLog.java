package io.benchq.ycsb;

import java.util.function.Supplier;

/**
 * The failed operations of one binding instance (one YCSB thread) on stderr, the first
 * {@value #MAX_LOGGED} only. Beyond that they are only counted by YCSB (Return=ERROR): a flood
 * of lines on stderr would slow the run and bury the status lines.
 */
final class ErrorLog {

  static final int MAX_LOGGED = 10;

  private final String prefix;
  private int count;

  /** binding prefixes every line ("RedisClient"). */
  ErrorLog(String binding) {
    this.prefix = binding + ": ";
  }

  /** Counts a failure and logs it, while under the cap; message is built only then. */
  void failed(Supplier<String> message) {
    count++;
    if (count <= MAX_LOGGED) {
      System.err.println(prefix + message.get());
      if (count == MAX_LOGGED) {
        System.err.println(prefix + "further errors of this thread are not logged");
      }
    }
  }
}
