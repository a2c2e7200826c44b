package com.amazonaws.services.glue;

import com.amazonaws.services.glue.util.JsonOptions;
import java.util.List;
import org.apache.spark.sql.DataFrameWriter;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SaveMode;
import org.apache.spark.sql.SparkSession;
import org.cdclab.glue.CatalogTable;
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

  DataSink(GlueContext glue, JsonOptions connection, String path, String format) {
    this.glue = glue;
    this.connection = connection;
    this.path = path;
    this.format = format;
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
    if (!table.partitionKeys().isEmpty()) {
      throw Unsupported.of("write_dynamic_frame.from_catalog to the partitioned table "
          + table.name());
    }
    DataSink sink = new DataSink(glue, additional, table.location(), table.format());
    if (sink.format.equals("csv")) {
      sink.formatOptions = new JsonOptions(java.util.Map.of("writeHeader", false));
    }
    return sink;
  }

  public void setFormat(String format, JsonOptions options) {
    this.format = Formats.normalize(format);
    this.formatOptions = this.formatOptions.merge(options);
  }

  public void setAccumulableSize(int size) {}

  public void setCatalogInfo(String database, String table, String catalogId) {
    throw Unsupported.of("DataSink.setCatalogInfo (enableUpdateCatalog)");
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
    java.util.Map<String, String> options = Formats.writerOptions(format, formatOptions);
    String compression = connection.getString("compression", null);
    if (compression != null) options.put("compression", compression);
    List<String> keys = Formats.partitionKeys(connection);
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
