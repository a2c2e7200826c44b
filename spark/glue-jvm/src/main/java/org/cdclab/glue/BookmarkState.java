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
    List<SourceFile> out = new ArrayList<>();
    for (SourceFile f : listed) {
      if (!processed(f) && f.modifiedMs() <= runStartMs) out.add(f);
    }
    out.sort(Comparator.comparingLong(SourceFile::modifiedMs).thenComparing(SourceFile::path));
    long bandStart = runStartMs - maxBandMs;
    long inBand = 0;
    List<SourceFile> kept = new ArrayList<>();
    for (SourceFile f : out) {
      if (f.modifiedMs() > bandStart && ++inBand > maxFilesInBand) continue;
      kept.add(f);
    }
    return kept;
  }

  /** The state after a run that started at {@code runStartMs} processed {@code read}. */
  public BookmarkState advance(List<SourceFile> read, long runStartMs, long maxBandMs) {
    long cutoff = Math.max(cutoffMs, runStartMs - maxBandMs);
    Map<String, Long> next = new LinkedHashMap<>();
    for (Map.Entry<String, Long> e : band.entrySet()) {
      if (e.getValue() > cutoff) next.put(e.getKey(), e.getValue());
    }
    for (SourceFile f : read) {
      if (f.modifiedMs() > cutoff) next.put(f.path(), f.modifiedMs());
    }
    return new BookmarkState(cutoff, next);
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
