package org.cdclab.glue;

import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.hadoop.mapreduce.TaskAttemptContext;
import org.apache.spark.internal.io.FileNameSpec;
import org.apache.spark.sql.execution.datasources.SQLHadoopMapReduceCommitProtocol;

/**
 * Names the objects write_dynamic_frame writes as Glue does, on Spark's own commit protocol.
 * Glue does not document them; its public outputs show (see docs/glue-fidelity.md):
 *
 * <ul>
 *   <li>csv, json: {@code run-<epoch ms>-part-r-<task, 5 digits>}, no extension but the
 *       compression's ({@code .gz}, {@code .bz2});
 *   <li>parquet, glueparquet: {@code run-<epoch ms>-part-block-0-r-<task>-<codec>.parquet}
 *       ({@code snappy}, {@code uncompressed}, …), {@code part-block-0-0-r-} inside
 *       partition folders.
 * </ul>
 *
 * A write asks for these names with the {@link #PREFIX} and {@link #LAYOUT} options (Spark
 * copies a writer's options into the tasks' Hadoop configuration); any other write keeps
 * Spark's names. A task's second file in one folder (maxRecordsPerFile) gets the counter.
 * Those writes leave no {@code _SUCCESS} marker (Glue's listed outputs hold none).
 */
public class GlueOutputNames extends SQLHadoopMapReduceCommitProtocol {
  public static final String PREFIX = "cdclab.glue.outputPrefix";
  public static final String LAYOUT = "cdclab.glue.outputLayout";
  public static final String PARQUET = "parquet";
  public static final String PARQUET_PARTITIONED = "parquet-partitioned";
  public static final String TEXT = "text";
  /** Hadoop's FileOutputCommitter setting for the _SUCCESS marker, per write. */
  public static final String SUCCESS_MARKER = "mapreduce.fileoutputcommitter.marksuccessfuljobs";

  private static final AtomicLong LAST_MS = new AtomicLong();
  private static final Pattern SPARK_SUFFIX = Pattern.compile("[-.]c(\\d+)(.*)");

  public GlueOutputNames(String jobId, String path, boolean dynamicPartitionOverwrite) {
    super(jobId, path, dynamicPartitionOverwrite);
  }

  @Override
  public String getFilename(TaskAttemptContext context, FileNameSpec spec) {
    String prefix = context.getConfiguration().get(PREFIX);
    if (prefix == null || !spec.prefix().isEmpty()) return super.getFilename(context, spec);
    return name(prefix, context.getConfiguration().get(LAYOUT, ""),
        context.getTaskAttemptID().getTaskID().getId(), spec.suffix());
  }

  /** {@code run-<epoch ms>}, never the same twice in this JVM, so no write replaces another. */
  public static String newPrefix() {
    long now = System.currentTimeMillis();
    return "run-" + LAST_MS.updateAndGet(last -> Math.max(now, last + 1));
  }

  /** The object name for task {@code split}; {@code sparkSuffix} is Spark's
   * ("-c000.snappy.parquet", "-c001.csv.gz"; ".c000…" inside partition folders). */
  public static String name(String prefix, String layout, int split, String sparkSuffix) {
    String task = String.format("%05d", split);
    Matcher m = SPARK_SUFFIX.matcher(sparkSuffix);
    if (!m.matches()) return prefix + "-part-r-" + task + sparkSuffix;
    int counter = Integer.parseInt(m.group(1));
    String ext = m.group(2);
    switch (layout) {
      case PARQUET, PARQUET_PARTITIONED -> {
        String codec = ext.endsWith(".parquet") ? ext.substring(0, ext.length() - 8) : ext;
        codec = codec.startsWith(".") ? codec.substring(1) : codec;
        codec = codec.isEmpty() ? "uncompressed" : codec.equals("gz") ? "gzip" : codec;
        String block = layout.equals(PARQUET) ? "block-" + counter : "block-0-" + counter;
        return prefix + "-part-" + block + "-r-" + task + "-" + codec + ".parquet";
      }
      case TEXT -> {
        int dot = ext.indexOf('.', 1); // ".csv.gz" -> ".gz"; ".json" -> ""
        String compression = ext.startsWith(".") && dot > 0 ? ext.substring(dot) : "";
        return prefix + "-part-r-" + task + (counter > 0 ? "-c" + m.group(1) : "") + compression;
      }
      default -> {
        return prefix + "-part-r-" + task + (counter > 0 ? "-c" + m.group(1) : "") + ext;
      }
    }
  }
}
