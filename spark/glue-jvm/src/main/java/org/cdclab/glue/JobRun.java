package org.cdclab.glue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The bookmark side of one job run (Job.init .. Job.commit): which files each
 * transformation_ctx reads, and the state committed at the end. One per py4j thread, so
 * concurrent runs in one driver never share it.
 */
public final class JobRun {
  public static final String ENABLE = "job-bookmark-enable";
  public static final String DISABLE = "job-bookmark-disable";
  public static final String PAUSE = "job-bookmark-pause";

  private static final InheritableThreadLocal<JobRun> CURRENT = new InheritableThreadLocal<>();

  private final String jobName;
  private final String runId;
  private final String option;
  private final String fromRun;
  private final String toRun;
  private final BookmarkStore store;
  private final long startMs;
  private final ClockMark clock;
  private final long steppedBackMs; // the wall clock's step back since the last commit
  private final Map<String, BookmarkState> pending = new LinkedHashMap<>();
  private boolean committed;

  public JobRun(String jobName, String runId, String option, String fromRun, String toRun,
                Path stateDir, long startMs) {
    if (!List.of(ENABLE, DISABLE, PAUSE).contains(option)) {
      throw new IllegalArgumentException("cdclab: --job-bookmark-option " + option
          + " is not one of " + ENABLE + ", " + DISABLE + ", " + PAUSE);
    }
    if (!option.equals(DISABLE) && stateDir == null) {
      throw new IllegalStateException("cdclab: job bookmarks need a state directory"
          + " (spark.cdclab.stateDir or CDCLAB_STATE_DIR)");
    }
    this.jobName = jobName;
    this.runId = runId;
    this.option = option;
    this.fromRun = fromRun;
    this.toRun = toRun;
    this.store = stateDir == null ? null : new BookmarkStore(stateDir, jobName);
    this.startMs = startMs;
    this.clock = ClockMark.at(startMs);
    this.steppedBackMs = store == null || clock == null ? 0L : clock.steppedBackSince(store.clock());
    if (steppedBackMs > 0) {
      System.err.println("cdclab: the wall clock stepped back " + steppedBackMs / 1000 + " s since"
          + " job " + jobName + "'s last committed run: its bookmarks read the files of that span"
          + " again (objects written since look older than they are; replays are harmless)");
    }
  }

  /** How far the wall clock stepped back since the job's last committed run (0: not). */
  public long steppedBackMs() {
    return steppedBackMs;
  }

  public static JobRun current() {
    return CURRENT.get();
  }

  public static void start(JobRun run) {
    CURRENT.set(run);
  }

  public static void clear() {
    JobRun run = CURRENT.get();
    CURRENT.remove();
    ThreadLocals.forget(run); // copies threads started during the run inherited
  }

  public String jobName() {
    return jobName;
  }

  public String runId() {
    return runId;
  }

  public String option() {
    return option;
  }

  /** The files of {@code ctx} this run reads, per the bookmark option and the run's cap. */
  public synchronized List<SourceFile> select(String ctx, List<SourceFile> listed, long maxBandMs,
                                              long maxFilesInBand, BookmarkState.Bound bound) {
    if (ctx == null || ctx.isEmpty() || option.equals(DISABLE)) {
      return unbookmarked(listed, bound);
    }
    if (option.equals(PAUSE) && fromRun != null && toRun != null) {
      return bound.take(BookmarkState.range(listed, store.afterRun(fromRun, ctx),
          store.afterRun(toRun, ctx)));
    }
    BookmarkState state = pending.containsKey(ctx) ? pending.get(ctx)
        : store.context(ctx).rewound(steppedBackMs);
    BookmarkState.Selection chosen = state.select(listed, startMs, maxBandMs, maxFilesInBand,
        bound);
    if (option.equals(ENABLE)) {
      pending.put(ctx, state.advance(chosen.chosen(), chosen.left(), startMs, maxBandMs));
    }
    return chosen.chosen();
  }

  /** Without a bookmark every listed file is read; a cap takes the oldest first. */
  public static List<SourceFile> unbookmarked(List<SourceFile> listed,
                                              BookmarkState.Bound bound) {
    if (bound.equals(BookmarkState.Bound.NONE)) return new ArrayList<>(listed);
    List<SourceFile> sorted = new ArrayList<>(listed);
    sorted.sort(java.util.Comparator.comparingLong(SourceFile::modifiedMs)
        .thenComparing(SourceFile::path));
    return bound.take(sorted);
  }

  /** job.commit(): only job-bookmark-enable saves; a second commit does nothing. */
  public synchronized void commit() {
    if (committed) return;
    committed = true;
    if (!option.equals(ENABLE)) return;
    Map<String, BookmarkState> updated = new LinkedHashMap<>();
    if (steppedBackMs > 0) { // contexts this run did not read keep the step in mind too
      store.contexts().forEach((ctx, state) -> updated.put(ctx, state.rewound(steppedBackMs)));
    }
    updated.putAll(pending);
    store.commit(runId, updated, clock);
  }
}
