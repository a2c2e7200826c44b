package org.cdclab.glue;

import java.lang.reflect.Field;

/**
 * Forgets a finished run's objects that other threads inherited.
 *
 * <p>Spark's active session and {@link JobRun#current()} are inheritable thread locals: a
 * thread a run's code creates (a pool's new worker: block manager, S3A transfers, broadcast
 * exchange) keeps a copy of that run's session for its whole life. On Glue the driver ends
 * with the run; our warm driver serves every run, and pool threads outlive them, so each
 * kept one old session (its catalogs, tables and file listings) alive: hundreds of sessions
 * and a full heap after half an hour of runs. Needs {@code --add-opens
 * java.base/java.lang=ALL-UNNAMED}, which Spark's launcher passes on Java 17.
 */
public final class ThreadLocals {
  private ThreadLocals() {}

  /**
   * Clears every thread's inherited copy of {@code value} (compared by identity); the
   * number cleared, or -1 when the JVM does not let us look (no add-opens).
   */
  public static int forget(Object value) {
    return visit(value, true);
  }

  /** How many threads hold an inherited copy of {@code value}. */
  public static int holders(Object value) {
    return visit(value, false);
  }

  private static int visit(Object value, boolean clear) {
    if (value == null) {
      return 0;
    }
    try {
      Field mapField = Thread.class.getDeclaredField("inheritableThreadLocals");
      mapField.setAccessible(true);
      int found = 0;
      for (Thread thread : Thread.getAllStackTraces().keySet()) {
        Object map = mapField.get(thread);
        if (map == null) {
          continue;
        }
        Field tableField = map.getClass().getDeclaredField("table");
        tableField.setAccessible(true);
        Object[] table = (Object[]) tableField.get(map);
        for (Object entry : table) {
          if (entry == null) {
            continue;
          }
          Field valueField = entry.getClass().getDeclaredField("value");
          valueField.setAccessible(true);
          if (valueField.get(entry) == value) {
            found++;
            if (clear) {
              // the thread then has no active session (Spark falls back to the default)
              valueField.set(entry, null);
            }
          }
        }
      }
      return found;
    } catch (ReflectiveOperationException | RuntimeException e) {
      return -1; // InaccessibleObjectException without the add-opens: leave them be
    }
  }
}
