package com.amazonaws.services.glue;

import com.amazonaws.services.glue.util.JsonOptions;
import java.util.List;
import org.apache.spark.sql.DataFrameWriter;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SaveMode;
import org.apache.spark.sql.SparkSession;
import org.cdclab.glue.CatalogTable;
import org.cdclab.glue.CatalogUpdate;
import org.cdclab.glue.Formats;
import org.cdclab.glue.GlueOutputNames;
import org.cdclab.glue.IcebergTables;
import org.cdclab.glue.Unsupported;

/** Writes DynamicFrames to S3 paths in a format (append, like Glue's S3 sink). */
public class DataSink {
  private final GlueContext glue;
  private final JsonOptions connection;
  private final String path;
  private String format;
  private JsonOptions formatOptions = JsonOptions.empty();
  private String[] icebergTable; // database, table: an Iceberg table of the catalog
  private String rawFormat; // as the script named it (glueparquet is parquet to Spark)
  private List<String> keys; // partitionKeys
  // enableUpdateCatalog: database, table, catalog id (setCatalogInfo or the catalog sink)
  private String[] updateTable;
  private boolean glueParquetTable; // the catalog sink's table asks for Glue's parquet writer

  DataSink(GlueContext glue, JsonOptions connection, String path, String format) {
    this.glue = glue;
    this.connection = connection;
    this.path = path;
    this.format = format;
    this.rawFormat = format;
    this.keys = connection == null ? List.of() : Formats.partitionKeys(connection);
  }

  static DataSink forOptions(GlueContext glue, String connectionType, JsonOptions options) {
    String format = Formats.s3ConnectionFormat(connectionType, "write to connection_type ");
    String path = options.getString("path", null);
    if (path == null || path.isEmpty()) {
      throw new IllegalArgumentException("cdclab: an S3 sink needs connection_options path");
    }
    return new DataSink(glue, options, path, format);
  }

  static DataSink forCatalog(GlueContext glue, String database, String tableName,
                             JsonOptions additional, String catalogId) {
    CatalogTable table = CatalogTable.resolve(database, tableName, catalogId,
        "write_dynamic_frame.from_catalog to");
    if (table.format().equals(CatalogTable.ICEBERG)) {
      DataSink sink = new DataSink(glue, additional, null, CatalogTable.ICEBERG);
      sink.icebergTable = new String[] {database, tableName};
      return sink;
    }
    boolean update = CatalogUpdate.enabled(additional);
    if (!table.partitionKeys().isEmpty() && !update) {
      throw Unsupported.of("write_dynamic_frame.from_catalog to the partitioned table "
          + table.name());
    }
    DataSink sink = new DataSink(glue, additional, table.location(), table.format());
    if (update) {
      sink.updateTable = new String[] {database, tableName, catalogId};
      if (sink.keys.isEmpty()) { // the table's own keys (AWS: must be the same, in order)
        sink.keys = table.partitionKeys().stream()
            .map(com.amazonaws.services.glue.model.Column::getName).toList();
      }
      sink.glueParquetTable = "true".equalsIgnoreCase(table.params().get("useGlueParquetWriter"));
    }
    if (sink.format.equals("csv")) {
      sink.formatOptions = new JsonOptions(java.util.Map.of("writeHeader", false));
    }
    return sink;
  }

  public void setFormat(String format, JsonOptions options) {
    this.format = Formats.normalize(format);
    this.rawFormat = format == null ? null : format.toLowerCase();
    this.formatOptions = this.formatOptions.merge(options);
  }

  public void setAccumulableSize(int size) {}

  /** The table enableUpdateCatalog creates or updates (without that option: none, as AWS:
   * "the ETL job will not update the table in the Data Catalog"). */
  public void setCatalogInfo(String database, String table, String catalogId) {
    if (icebergTable != null) throw Unsupported.of("setCatalogInfo on an Iceberg table's sink");
    if (CatalogUpdate.enabled(connection)) {
      updateTable = new String[] {database, table, catalogId};
    }
  }

  public DynamicFrame pyWriteDynamicFrame(DynamicFrame frame, String callSite, String info) {
    java.util.List<String> choices =
        org.cdclab.glue.ChoiceTypes.choiceFields(frame.df().schema());
    if (!choices.isEmpty()) { // Glue writes each record's own value; Spark's writers cannot
      throw org.cdclab.glue.Unsupported.of("writing the unresolved choice fields " + choices
          + " (resolve them with resolveChoice first)");
    }
    write(frame.df());
    return DynamicFrame.emptyDynamicFrame(glue);
  }

  public Dataset<Row> pyWriteDataFrame(Dataset<Row> df, GlueContext context, String callSite,
                                       String info) {
    write(df);
    return glue.sparkSession().emptyDataFrame();
  }

  private void write(Dataset<Row> df) {
    if (format == null) throw new IllegalArgumentException("cdclab: no format for the sink " + path);
    if (icebergTable != null) { // an Iceberg table of the catalog: append, as Glue 5 does
      if (df.schema().fields().length == 0) return;
      SparkSession spark = glue.sparkSession();
      try {
        df.writeTo(IcebergTables.sparkName(spark, icebergTable[0], icebergTable[1],
            "write_dynamic_frame.from_catalog to")).append();
      } catch (org.apache.spark.sql.catalyst.analysis.NoSuchTableException e) {
        throw new IllegalStateException("cdclab: " + e.getMessage(), e);
      }
      return;
    }
    // A frame without fields (e.g. a bookmarked source with nothing new) has no records to
    // write: Glue's sink writes nothing; Spark's writers would refuse the empty schema.
    if (df.schema().fields().length == 0) return;
    String behavior = null;
    if (updateTable != null) {
      behavior = CatalogUpdate.behavior(connection);
      CatalogUpdate.check(updateTable[0] + "." + updateTable[1], format,
          "glueparquet".equals(rawFormat) || glueParquetTable
              || formatOptions.getBoolean("useGlueParquetWriter", false), df.schema(), keys);
    }
    java.util.Map<String, String> options = Formats.writerOptions(format, formatOptions);
    String compression = connection.getString("compression", null);
    if (compression != null) options.put("compression", compression);
    if (glueNames(glue.sparkSession())) {
      options.put(GlueOutputNames.PREFIX, GlueOutputNames.newPrefix());
      options.put(GlueOutputNames.SUCCESS_MARKER, "false");
      options.put(GlueOutputNames.LAYOUT, format.equals("parquet")
          ? (keys.isEmpty() ? GlueOutputNames.PARQUET : GlueOutputNames.PARQUET_PARTITIONED)
          : List.of("csv", "json").contains(format) ? GlueOutputNames.TEXT : "");
    }
    DataFrameWriter<Row> w = df.write().mode(SaveMode.Append).format(format).options(options);
    if (!keys.isEmpty()) w = w.partitionBy(keys.toArray(new String[0]));
    w.save(path);
    if (updateTable != null) {
      CatalogUpdate.apply(df, updateTable[0], updateTable[1], updateTable[2], path, format,
          formatOptions, keys, behavior);
    }
  }

  /**
   * Glue's object names (org.cdclab.glue.GlueOutputNames) come from the session's commit
   * protocol; it names only the writes that ask, so the session keeps it. A session given
   * another protocol (S3A committers through --conf) keeps that one and Spark's names.
   */
  private static boolean glueNames(SparkSession spark) {
    String key = "spark.sql.sources.commitProtocolClass";
    String current = spark.conf().get(key, SPARK_PROTOCOL);
    if (current.equals(GlueOutputNames.class.getName())) return true;
    if (!current.equals(SPARK_PROTOCOL)) return false;
    spark.conf().set(key, GlueOutputNames.class.getName());
    return true;
  }

  private static final String SPARK_PROTOCOL =
      "org.apache.spark.sql.execution.datasources.SQLHadoopMapReduceCommitProtocol";
}
