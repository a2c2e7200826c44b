package org.cdclab.glue;

import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.SparkSession;
import scala.Option;

/**
 * Forgets a finished run's objects that other threads inherited.
 *
 * <p>Spark's active session and {@link JobRun#current()} are inheritable thread locals: a
 * thread created while a run's session (or a clone of it: Spark's cache manager and
 * adaptive execution clone sessions) is active keeps a copy for its whole life. That covers
 * pools' new workers (broadcast exchange, S3A transfers) and the shutdown-hook threads
 * Iceberg registers for its worker pools, which are never started and never go away. On
 * Glue the driver ends with the run; our warm driver serves every run, so each such thread
 * kept an old session (catalogs, tables, file listings) alive: a heap dump after five
 * minutes of soak showed 124 sessions held this way. Needs {@code --add-opens
 * java.base/java.lang=ALL-UNNAMED}, which Spark's launcher passes on Java 17.
 */
public final class ThreadLocals {
  private ThreadLocals() {}

  /**
   * Clears every thread's inherited copy of {@code value} (by identity) and, for a session,
   * of its clones; the number cleared, or -1 when the JVM does not let us look.
   */
  public static int forget(Object value) {
    return visit(value, true);
  }

  /** How many threads (running, or registered as shutdown hooks) hold such a copy. */
  public static int holders(Object value) {
    return visit(value, false);
  }

  private static int visit(Object value, boolean clear) {
    if (value == null) {
      return 0;
    }
    try {
      List<Object> entries = inheritedEntries();
      Field valueField = entryValueField();
      Set<Object> family = Collections.newSetFromMap(new IdentityHashMap<>());
      family.add(value);
      if (value instanceof SparkSession) {
        addClones((SparkSession) value, entries, valueField, family);
      }
      int found = 0;
      for (Object entry : entries) {
        if (family.contains(valueField.get(entry))) {
          found++;
          if (clear) {
            valueField.set(entry, null); // no active session there: Spark uses the default
          }
        }
      }
      return found;
    } catch (ReflectiveOperationException | RuntimeException e) {
      return -1; // InaccessibleObjectException without the add-opens: leave them be
    }
  }

  /** Sessions cloned from the run's session, or from its clones, that threads hold. */
  private static void addClones(SparkSession run, List<Object> entries, Field valueField,
      Set<Object> family) throws ReflectiveOperationException {
    Field parent = SparkSession.class.getDeclaredField("parentSessionState");
    parent.setAccessible(true);
    Set<Object> states = Collections.newSetFromMap(new IdentityHashMap<>());
    states.add(run.sessionState());
    boolean grew = true;
    while (grew) {
      grew = false;
      for (Object entry : entries) {
        Object v = valueField.get(entry);
        if (v instanceof SparkSession && !family.contains(v)) {
          Option<?> p = (Option<?>) parent.get(v);
          if (p != null && p.isDefined() && states.contains(p.get())) {
            family.add(v);
            states.add(((SparkSession) v).sessionState());
            grew = true;
          }
        }
      }
    }
  }

  /** Every thread's inherited thread-local entries (ThreadLocal.ThreadLocalMap.Entry). */
  private static List<Object> inheritedEntries() throws ReflectiveOperationException {
    Field mapField = Thread.class.getDeclaredField("inheritableThreadLocals");
    mapField.setAccessible(true);
    Field tableField = Class.forName("java.lang.ThreadLocal$ThreadLocalMap")
        .getDeclaredField("table");
    tableField.setAccessible(true);
    List<Object> out = new ArrayList<>();
    for (Thread thread : threads()) {
      Object map = mapField.get(thread);
      if (map != null) {
        for (Object entry : (Object[]) tableField.get(map)) {
          if (entry != null) {
            out.add(entry);
          }
        }
      }
    }
    return out;
  }

  private static Field entryValueField() throws ReflectiveOperationException {
    Field f = Class.forName("java.lang.ThreadLocal$ThreadLocalMap$Entry")
        .getDeclaredField("value");
    f.setAccessible(true);
    return f;
  }

  /** Live threads, and shutdown hooks: created (so inheriting) but not started. */
  private static Set<Thread> threads() throws ReflectiveOperationException {
    Set<Thread> all = Collections.newSetFromMap(new IdentityHashMap<>());
    all.addAll(Thread.getAllStackTraces().keySet());
    Class<?> hooksClass = Class.forName("java.lang.ApplicationShutdownHooks");
    Field hooksField = hooksClass.getDeclaredField("hooks");
    hooksField.setAccessible(true);
    synchronized (hooksClass) {
      Map<?, ?> hooks = (Map<?, ?>) hooksField.get(null);
      if (hooks != null) {
        for (Object hook : hooks.keySet()) {
          all.add((Thread) hook);
        }
      }
    }
    return all;
  }
}
