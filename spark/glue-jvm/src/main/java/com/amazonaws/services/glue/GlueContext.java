package com.amazonaws.services.glue;

import com.amazonaws.services.glue.util.JsonOptions;
import java.io.IOException;
import java.util.List;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RemoteIterator;
import org.apache.spark.SparkContext;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.StructType;
import org.cdclab.glue.Unsupported;

/**
 * The JVM GlueContext awsglue.context.GlueContext wraps (its `_ssql_ctx`): sources and sinks
 * over the Spark session of the calling thread.
 */
public class GlueContext {
  private final SparkContext sc;

  public GlueContext(SparkContext sc) {
    this.sc = sc;
  }

  public GlueContext(SparkContext sc, int minPartitions, int targetPartitions) {
    this(sc);
  }

  public SparkContext sparkContext() {
    return sc;
  }

  /** The session of the calling thread (the run's), else the default one; never one whose
   * SparkContext was stopped (a thread keeps its active session across a driver restart). */
  public SparkSession sparkSession() {
    for (scala.Option<SparkSession> s : java.util.List.of(SparkSession.getActiveSession(),
        SparkSession.getDefaultSession())) {
      if (s.isDefined() && !s.get().sparkContext().isStopped()) return s.get();
    }
    return SparkSession.builder().getOrCreate();
  }

  public DataSource getSource(String connectionType, JsonOptions options, String transformationCtx,
                              String pushDownPredicate) {
    return DataSource.fromOptions(this, connectionType, options, transformationCtx, pushDownPredicate);
  }

  public DataSource getCatalogSource(String database, String tableName, String redshiftTmpDir,
                                     String transformationCtx, String pushDownPredicate,
                                     JsonOptions additionalOptions, String catalogId) {
    return DataSource.fromCatalog(this, database, tableName, transformationCtx, pushDownPredicate,
        additionalOptions == null ? JsonOptions.empty() : additionalOptions, catalogId);
  }

  public DataSink getSink(String connectionType, JsonOptions options, String transformationCtx) {
    return DataSink.forOptions(this, connectionType, options);
  }

  public DataSink getCatalogSink(String database, String tableName, String redshiftTmpDir,
                                 String transformationCtx, JsonOptions additionalOptions,
                                 String catalogId) {
    return DataSink.forCatalog(this, database, tableName,
        additionalOptions == null ? JsonOptions.empty() : additionalOptions, catalogId);
  }

  public StructType getCatalogSchemaAsSparkSchema(String database, String tableName,
                                                  String catalogId) {
    return DataSource.schema(org.cdclab.glue.Catalog.getTable(database, tableName, catalogId)
        .getStorageDescriptor().getColumns());
  }

  /**
   * Deletes the objects under {@code path} older than retentionPeriod hours (default 168,
   * as Glue). manifestFilePath and excludeStorageClasses are refused (not implemented).
   */
  public void purgeS3Path(String path, JsonOptions options, String transformationCtx) {
    for (String key : List.of("manifestFilePath", "excludeStorageClasses")) {
      if (options.contains(key)) throw Unsupported.of("purge_s3_path option " + key);
    }
    long hours = options.getLong("retentionPeriod", 168);
    long cutoff = System.currentTimeMillis() - hours * 3_600_000L;
    Path root = new Path(path);
    try {
      FileSystem fs = root.getFileSystem(sc.hadoopConfiguration());
      if (!fs.exists(root)) return;
      RemoteIterator<LocatedFileStatus> it = fs.listFiles(root, true);
      while (it.hasNext()) {
        FileStatus st = it.next();
        if (st.isFile() && st.getModificationTime() <= cutoff) fs.delete(st.getPath(), false);
      }
    } catch (IOException e) {
      throw new IllegalStateException("cdclab: purge_s3_path " + path + ": " + e.getMessage(), e);
    }
  }

  // --- Glue calls cdclab does not implement: a named error, never a wrong answer ---------
  public Object getJDBCSink(String c, JsonOptions o, String t, String ctx, String catalogId) {
    throw Unsupported.of("write_dynamic_frame.from_jdbc_conf");
  }

  public Object extractJDBCConf(String connection, String catalogId) {
    throw Unsupported.of("extract_jdbc_conf");
  }

  public void purgeTable(String db, String table, JsonOptions o, String ctx, String catalogId) {
    throw Unsupported.of("purge_table");
  }

  public void transitionTable(String db, String t, String to, JsonOptions o, String ctx,
                              String catalogId) {
    throw Unsupported.of("transition_table");
  }

  public void transitionS3Path(String path, String to, JsonOptions o, String ctx) {
    throw Unsupported.of("transition_s3_path");
  }

  public Dataset<Row> addIngestionTimeColumns(Dataset<Row> df, String granularity) {
    throw Unsupported.of("add_ingestion_time_columns");
  }

  public Object startTransaction(boolean readOnly) {
    throw Unsupported.of("start_transaction (Lake Formation governed tables)");
  }

  public Object commitTransaction(String id, boolean wait) {
    throw Unsupported.of("commit_transaction (Lake Formation governed tables)");
  }

  public Object cancelTransaction(String id) {
    throw Unsupported.of("cancel_transaction (Lake Formation governed tables)");
  }
}
