package org.cdclab.glue;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What one transformation_ctx has processed, the way Glue's S3 bookmarks track it: every
 * object modified at or before {@code cutoffMs} is done; objects modified after it (within
 * the last maxBand of the previous run) are remembered by path and modification time in
 * {@code band}. A modified object (new mtime) is read again. Pure logic, no I/O.
 */
public record BookmarkState(long cutoffMs, Map<String, Long> band) {
  public static final long DEFAULT_MAX_BAND_MS = 900_000L;
  public static final long DEFAULT_MAX_FILES_IN_BAND = 1000L;

  public static BookmarkState empty() {
    return new BookmarkState(Long.MIN_VALUE, Map.of());
  }

  public boolean processed(SourceFile f) {
    if (f.modifiedMs() <= cutoffMs) return true;
    Long seen = band.get(f.path());
    return seen != null && seen == f.modifiedMs();
  }

  /**
   * The files a run starting at {@code runStartMs} reads: not yet processed, modified no later
   * than the run's start, and at most {@code maxFilesInBand} of those inside the new band (the
   * rest wait for the next run, as on Glue). Sorted by modification time, then path.
   */
  public List<SourceFile> select(List<SourceFile> listed, long runStartMs, long maxBandMs,
                                 long maxFilesInBand) {
    return select(listed, runStartMs, maxBandMs, maxFilesInBand, Bound.NONE).chosen();
  }

  /**
   * As above, then capped by Glue's bounded execution ({@code bound}): the oldest files first,
   * the rest {@code left} for later runs. {@code left} holds every unprocessed file this run
   * could have read but did not; {@link #advance} keeps the cutoff below all of them.
   */
  public Selection select(List<SourceFile> listed, long runStartMs, long maxBandMs,
                          long maxFilesInBand, Bound bound) {
    List<SourceFile> out = new ArrayList<>();
    for (SourceFile f : listed) {
      if (!processed(f) && f.modifiedMs() <= runStartMs) out.add(f);
    }
    out.sort(Comparator.comparingLong(SourceFile::modifiedMs).thenComparing(SourceFile::path));
    long bandStart = runStartMs - maxBandMs;
    long inBand = 0;
    List<SourceFile> kept = new ArrayList<>();
    List<SourceFile> left = new ArrayList<>();
    for (SourceFile f : out) {
      if (f.modifiedMs() > bandStart && ++inBand > maxFilesInBand) {
        left.add(f);
        continue;
      }
      kept.add(f);
    }
    List<SourceFile> chosen = bound.take(kept);
    left.addAll(kept.subList(chosen.size(), kept.size()));
    return new Selection(chosen, left);
  }

  /** The files one run reads, and those it leaves for later runs. */
  public record Selection(List<SourceFile> chosen, List<SourceFile> left) {}

  /**
   * Glue's bounded execution (additional_options / table parameters {@code boundedFiles},
   * {@code boundedSize}): at most {@code files} files; files until their sizes reach
   * {@code bytes} (the file that reaches it is read, so a run always takes at least one).
   * A value of 0 or less is no cap.
   */
  public record Bound(long files, long bytes) {
    public static final Bound NONE = new Bound(0, 0);

    public List<SourceFile> take(List<SourceFile> sorted) {
      List<SourceFile> out = new ArrayList<>();
      long total = 0;
      for (SourceFile f : sorted) {
        if (files > 0 && out.size() >= files) break;
        if (bytes > 0 && total >= bytes) break;
        out.add(f);
        total += Math.max(0, f.size());
      }
      return out;
    }
  }

  /** The state after a run that started at {@code runStartMs} processed {@code read}. */
  public BookmarkState advance(List<SourceFile> read, long runStartMs, long maxBandMs) {
    return advance(read, List.of(), runStartMs, maxBandMs);
  }

  /**
   * The state after a run that processed {@code read} and left {@code left} unread (bounded
   * execution, maxFilesInBand): the cutoff moves up to the run's band start, but never to or
   * past a file left for later, so no later run takes a left file as processed.
   */
  public BookmarkState advance(List<SourceFile> read, List<SourceFile> left, long runStartMs,
                               long maxBandMs) {
    long cutoff = Math.max(cutoffMs, runStartMs - maxBandMs);
    for (SourceFile f : left) {
      cutoff = Math.min(cutoff, f.modifiedMs() - 1); // unprocessed: modifiedMs > cutoffMs
    }
    cutoff = Math.max(cutoff, cutoffMs);
    Map<String, Long> next = new LinkedHashMap<>();
    for (Map.Entry<String, Long> e : band.entrySet()) {
      if (e.getValue() > cutoff) next.put(e.getKey(), e.getValue());
    }
    for (SourceFile f : read) {
      if (f.modifiedMs() > cutoff) next.put(f.path(), f.modifiedMs());
    }
    return new BookmarkState(cutoff, next);
  }

  /**
   * The state read again from {@code ms} earlier: after the wall clock stepped back by that
   * much, objects written since carry modification times up to that much older, maybe below
   * the cutoff. The files between the two cutoffs are read once more (the merge is
   * idempotent: a replayed file changes nothing); those in the band stay remembered.
   */
  public BookmarkState rewound(long ms) {
    if (ms <= 0 || cutoffMs == Long.MIN_VALUE) return this;
    return new BookmarkState(cutoffMs - ms, band);
  }

  /** job-bookmark-pause with from/to: processed by {@code to} but not by {@code from}. */
  public static List<SourceFile> range(List<SourceFile> listed, BookmarkState from,
                                       BookmarkState to) {
    List<SourceFile> out = new ArrayList<>();
    Set<String> seen = new HashSet<>();
    for (SourceFile f : listed) {
      if (to.processed(f) && !from.processed(f) && seen.add(f.path())) out.add(f);
    }
    out.sort(Comparator.comparingLong(SourceFile::modifiedMs).thenComparing(SourceFile::path));
    return out;
  }
}
