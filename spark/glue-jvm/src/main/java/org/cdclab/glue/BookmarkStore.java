package org.cdclab.glue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One JSON file per job under {@code <state>/glue/bookmarks/} (named by {@link StateNames}:
 * one file per job name), shared with the local Glue
 * API (spark/glue_local/bookmarks.py serves GetJobBookmark/ResetJobBookmark from it).
 * "contexts" is the current state per transformation_ctx; "history" keeps the state after
 * each committed run (newest last, bounded) for rewinds and job-bookmark-pause ranges.
 */
public final class BookmarkStore {
  public static final int MAX_HISTORY = 100;
  private static final ObjectMapper JSON = new ObjectMapper();
  private final Path file;
  private final String job;

  public BookmarkStore(Path stateDir, String job) {
    this.job = job;
    this.file = stateDir.resolve("glue").resolve("bookmarks")
        .resolve(StateNames.of(job) + ".json");
  }

  public Path file() {
    return file;
  }

  public synchronized ObjectNode load() {
    if (!Files.exists(file)) {
      ObjectNode n = JSON.createObjectNode();
      n.put("job", job);
      n.put("version", 0);
      n.put("run", 0);
      n.put("attempt", 0);
      n.putNull("run_id");
      n.putNull("previous_run_id");
      n.putObject("contexts");
      n.putArray("history");
      return n;
    }
    try {
      return (ObjectNode) JSON.readTree(file.toFile());
    } catch (IOException | ClassCastException e) {
      throw new IllegalStateException("cdclab: job bookmark file " + file + " is corrupt: " + e, e);
    }
  }

  public BookmarkState context(String ctx) {
    return parse(load().path("contexts").path(ctx));
  }

  /** Every context's state, from one read of the file. */
  public Map<String, BookmarkState> contexts() {
    Map<String, BookmarkState> out = new LinkedHashMap<>();
    load().path("contexts").fields()
        .forEachRemaining(e -> out.put(e.getKey(), parse(e.getValue())));
    return out;
  }

  /** The clock mark of the last committed run (null: none, or an older file). */
  public ClockMark clock() {
    JsonNode c = load().path("clock");
    if (!c.hasNonNull("boot_id") || !c.hasNonNull("wall_minus_boot_ms")) return null;
    return new ClockMark(c.get("boot_id").asText(), c.get("wall_minus_boot_ms").asLong());
  }

  /** The state of {@code ctx} as it was right after run {@code runId} committed. */
  public BookmarkState afterRun(String runId, String ctx) {
    for (JsonNode h : load().path("history")) {
      if (runId.equals(h.path("run_id").asText())) return parse(h.path("contexts").path(ctx));
    }
    throw new IllegalArgumentException("cdclab: job " + job + " has no committed run " + runId
        + " in its bookmark history (--job-bookmark-from/--job-bookmark-to)");
  }

  /** Save the run's new per-context states (others unchanged) and append to the history. */
  public synchronized void commit(String runId, Map<String, BookmarkState> updated,
                                  ClockMark clock) {
    ObjectNode root = load();
    if (clock != null) {
      ObjectNode c = root.putObject("clock");
      c.put("boot_id", clock.bootId());
      c.put("wall_minus_boot_ms", clock.wallMinusBootMs());
    }
    ObjectNode contexts = root.with("contexts");
    for (Map.Entry<String, BookmarkState> e : updated.entrySet()) {
      contexts.set(e.getKey(), render(e.getValue()));
    }
    JsonNode previous = root.get("run_id");
    root.set("previous_run_id", previous == null ? JSON.nullNode() : previous);
    root.put("run_id", runId);
    root.put("run", root.path("run").asLong(0) + 1);
    root.put("version", root.path("version").asLong(0) + 1);
    ArrayNode history = root.withArray("history");
    ObjectNode entry = history.addObject();
    entry.put("run_id", runId);
    entry.set("contexts", contexts.deepCopy());
    while (history.size() > MAX_HISTORY) history.remove(0);
    write(root);
  }

  static BookmarkState parse(JsonNode node) {
    if (node == null || node.isMissingNode() || !node.has("cutoff_ms")) return BookmarkState.empty();
    long cutoff = node.get("cutoff_ms").isNull() ? Long.MIN_VALUE : node.get("cutoff_ms").asLong();
    Map<String, Long> band = new LinkedHashMap<>();
    Iterator<Map.Entry<String, JsonNode>> it = node.path("band").fields();
    while (it.hasNext()) {
      Map.Entry<String, JsonNode> e = it.next();
      band.put(e.getKey(), e.getValue().asLong());
    }
    return new BookmarkState(cutoff, band);
  }

  static ObjectNode render(BookmarkState s) {
    ObjectNode n = JSON.createObjectNode();
    if (s.cutoffMs() == Long.MIN_VALUE) n.putNull("cutoff_ms");
    else n.put("cutoff_ms", s.cutoffMs());
    ObjectNode band = n.putObject("band");
    s.band().forEach(band::put);
    return n;
  }

  /** write, fsync, rename, fsync the directory: a crash leaves the old or the new file. */
  private void write(ObjectNode root) {
    try {
      Path dir = file.getParent();
      Files.createDirectories(dir);
      Path tmp = dir.resolve("." + file.getFileName() + ".tmp");
      byte[] bytes = JSON.writerWithDefaultPrettyPrinter().writeValueAsBytes(root);
      try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE,
          StandardOpenOption.TRUNCATE_EXISTING, StandardOpenOption.WRITE)) {
        ch.write(java.nio.ByteBuffer.wrap(bytes));
        ch.force(true);
      }
      try {
        Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
      } catch (AtomicMoveNotSupportedException e) {
        Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING);
      }
      try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
        d.force(true);
      } catch (IOException ignored) {
        // some file systems cannot fsync a directory; the rename is still atomic
      }
    } catch (IOException e) {
      throw new IllegalStateException("cdclab: cannot write job bookmark " + file + ": " + e, e);
    }
  }
}
