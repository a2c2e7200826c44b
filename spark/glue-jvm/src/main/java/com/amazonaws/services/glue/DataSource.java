package com.amazonaws.services.glue;

import com.amazonaws.services.glue.util.JsonOptions;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.api.java.UDF1;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.cdclab.glue.BookmarkState;
import org.cdclab.glue.CatalogPartitions;
import org.cdclab.glue.CatalogTable;
import org.cdclab.glue.ChoiceTypes;
import org.cdclab.glue.IcebergTables;
import org.cdclab.glue.Formats;
import org.cdclab.glue.JobRun;
import org.cdclab.glue.JsonChoices;
import org.cdclab.glue.Listing;
import org.cdclab.glue.SourceFile;
import org.cdclab.glue.Unsupported;

/**
 * A source of DynamicFrames: a Data Catalog table or S3 paths with a format. Files are
 * listed by cdclab (never globbed), filtered by the run's job bookmark under the
 * transformation_ctx, then read by Spark's readers.
 */
public class DataSource {
  private final GlueContext glue;
  private final String what;
  private final String ctx;
  private final JsonOptions connection;
  private final List<String> paths;
  private final boolean recurse;
  private final StructType catalogSchema; // null: the reader's own schema
  private String format;
  private JsonOptions formatOptions;
  private String[] iceberg; // database, table, push-down predicate: an Iceberg catalog table
  // a Hive-style partitioned catalog table: database, table, catalog id, push-down
  // predicate, catalogPartitionPredicate; its keys as Spark types
  private String[] partitioned;
  private StructType partitionKeys;
  // Glue's bounded execution: at most boundedFiles files / boundedSize bytes per run
  private BookmarkState.Bound bound = BookmarkState.Bound.NONE;

  DataSource(GlueContext glue, String what, String ctx, JsonOptions connection, List<String> paths,
             boolean recurse, String format, JsonOptions formatOptions, StructType catalogSchema) {
    this.glue = glue;
    this.what = what;
    this.ctx = ctx == null ? "" : ctx;
    this.connection = connection;
    this.paths = paths;
    this.recurse = recurse;
    this.format = format;
    this.formatOptions = formatOptions;
    this.catalogSchema = catalogSchema;
  }

  static DataSource fromOptions(GlueContext glue, String connectionType, JsonOptions options,
                                String ctx, String pushDownPredicate) {
    String format = Formats.s3ConnectionFormat(connectionType, "connection_type ");
    if (pushDownPredicate != null && !pushDownPredicate.isEmpty()) {
      throw Unsupported.of("push_down_predicate on connection_type " + connectionType);
    }
    Formats.refuseUnsupported(options, "connection");
    List<String> paths = options.getStringList("paths");
    if (paths.isEmpty()) throw new IllegalArgumentException("cdclab: from_options needs paths");
    DataSource source = new DataSource(glue, connectionType + " " + paths, ctx, options, paths,
        options.getBoolean("recurse", false), format, JsonOptions.empty(), null);
    source.bound = bound(options.asMap(), "connection_options");
    return source;
  }

  static final String BOUNDED_FILES = "boundedFiles";
  static final String BOUNDED_SIZE = "boundedSize";

  /**
   * boundedFiles / boundedSize from options (AWS: "need to be string"; numbers are taken too).
   * AWS supports "only a single boundary": both at once is a named error.
   */
  static BookmarkState.Bound bound(Map<String, ?> options, String where) {
    long files = positive(options.get(BOUNDED_FILES), BOUNDED_FILES, where);
    long bytes = positive(options.get(BOUNDED_SIZE), BOUNDED_SIZE, where);
    if (files > 0 && bytes > 0) {
      throw new IllegalArgumentException("cdclab: " + where + " set both " + BOUNDED_FILES
          + " and " + BOUNDED_SIZE + "; Glue's bounded execution supports only one boundary");
    }
    return files == 0 && bytes == 0 ? BookmarkState.Bound.NONE
        : new BookmarkState.Bound(files, bytes);
  }

  private static long positive(Object value, String key, String where) {
    if (value == null || value.toString().isBlank()) return 0;
    try {
      long n = Long.parseLong(value.toString().trim());
      if (n > 0) return n;
    } catch (NumberFormatException e) {
      // the message below names it
    }
    throw new IllegalArgumentException("cdclab: " + where + " " + key + " must be a positive "
        + "whole number (as a string), not " + value);
  }

  static DataSource fromCatalog(GlueContext glue, String database, String tableName, String ctx,
                                String pushDownPredicate, JsonOptions additional, String catalogId) {
    CatalogTable table = CatalogTable.resolve(database, tableName, catalogId, "from_catalog on");
    if (table.format().equals(CatalogTable.ICEBERG)) {
      DataSource source = new DataSource(glue, "Iceberg table " + table.name(), ctx, additional,
          List.of(), false, CatalogTable.ICEBERG, JsonOptions.empty(), null);
      source.iceberg = new String[] {database, tableName, pushDownPredicate};
      return source;
    }
    boolean hasPartitions = !table.partitionKeys().isEmpty();
    if (!hasPartitions && pushDownPredicate != null && !pushDownPredicate.isEmpty()) {
      throw Unsupported.of("push_down_predicate on the unpartitioned table " + table.name());
    }
    Formats.refuseUnsupported(additional, "additional_options");
    // additional_options win over the table's parameters (Glue documents both places)
    boolean inOptions = additional.contains(BOUNDED_FILES) || additional.contains(BOUNDED_SIZE);
    BookmarkState.Bound bound = inOptions ? bound(additional.asMap(), "additional_options")
        : bound(table.params(), "table " + table.name() + " parameters");
    Map<String, String> serde = table.serde();
    Map<String, Object> fo = new HashMap<>();
    if (table.format().equals("csv")) {
      String skip = table.params().getOrDefault("skip.header.line.count", "0");
      if (!skip.equals("0") && !skip.equals("1")) {
        throw Unsupported.of("skip.header.line.count=" + skip + " on " + table.name());
      }
      fo.put("withHeader", skip.equals("1"));
      fo.put("separator", serde.getOrDefault("separatorChar",
          serde.getOrDefault("field.delim", serde.getOrDefault("serialization.format", ","))));
      if (serde.containsKey("quoteChar")) fo.put("quoteChar", serde.get("quoteChar"));
      // How Glue maps OpenCSVSerde's escapeChar is not public (docs/glue-fidelity.md); cdclab
      // reads RFC 4180 (a doubled quote inside quotes is one quote), what DMS writes. The
      // escaper applies only when set as a format option (additional_options "escaper").
      if (additional.asMap().keySet().stream().noneMatch("multiLine"::equalsIgnoreCase)) {
        fo.put("multiLine", true); // DMS and OpenCSV quote embedded newlines
      }
    }
    JsonOptions formatOptions = new JsonOptions(fo).merge(additional);
    DataSource source = new DataSource(glue, "catalog table " + table.name(), ctx, additional,
        List.of(table.location()), true, table.format(), formatOptions, schema(table.columns()));
    source.bound = bound;
    if (hasPartitions) {
      source.partitioned = new String[] {database, tableName, catalogId, pushDownPredicate,
          additional.getString("catalogPartitionPredicate", null)};
      source.partitionKeys = CatalogPartitions.keySchema(table.partitionKeys(),
          DataSource::hiveType);
    }
    return source;
  }

  /** The catalog's columns as Spark types (Hive names: int, bigint, decimal(p,s), ...). */
  static StructType schema(List<com.amazonaws.services.glue.model.Column> columns) {
    List<StructField> fields = new ArrayList<>();
    for (com.amazonaws.services.glue.model.Column c : columns == null
        ? List.<com.amazonaws.services.glue.model.Column>of() : columns) {
      fields.add(DataTypes.createStructField(c.getName(), hiveType(c.getType()), true));
    }
    return DataTypes.createStructType(fields);
  }

  static DataType hiveType(String type) {
    String t = type == null ? "string" : type.trim().toLowerCase();
    if (t.startsWith("varchar") || t.startsWith("char")) return DataTypes.StringType;
    try {
      return DataType.fromDDL(t);
    } catch (RuntimeException e) {
      throw Unsupported.of("catalog column type " + type);
    }
  }

  public void setFormat(String format, JsonOptions options) {
    this.format = Formats.normalize(format);
    Formats.refuseUnsupported(options, "format_options");
    this.formatOptions = this.formatOptions.merge(options);
  }

  public DynamicFrame getDynamicFrame() {
    if (!"json".equals(format) || iceberg != null) return DynamicFrame.apply(getDataFrame(), glue);
    Read r = readAll();
    return DynamicFrame.sparse(r.df(), r.tracked(), glue);
  }

  public DynamicFrame getDynamicFrame(int minPartitions, int targetPartitions) {
    return getDynamicFrame();
  }

  public DynamicFrame getSampleDynamicFrame(int num, JsonOptions options) {
    throw Unsupported.of("create_sample_dynamic_frame");
  }

  public Dataset<Row> getDataFrame() {
    return readAll().df();
  }

  /** The source's Dataset and, for JSON, its twin with each record's explicit nulls
   * (org.cdclab.glue.ExplicitNulls; null when not tracked). */
  private record Read(Dataset<Row> df, Dataset<Row> tracked) {
    Read map(java.util.function.UnaryOperator<Dataset<Row>> f) {
      return new Read(f.apply(df), tracked == null ? null : f.apply(tracked));
    }
  }

  private Read readAll() {
    if (format == null) throw new IllegalArgumentException("cdclab: no format for " + what);
    SparkSession spark = glue.sparkSession();
    if (iceberg != null) return new Read(readIceberg(spark), null);
    if (partitioned != null) return readPartitions(spark);
    return read(spark, bookmarked(Listing.list(paths, recurse,
        spark.sparkContext().hadoopConfiguration())));
  }

  /** The listed files the run's job bookmark has not seen (all of them outside a run), at
   * most the bounded-execution cap of them, oldest first. */
  private List<SourceFile> bookmarked(List<SourceFile> listed) {
    JobRun run = JobRun.current();
    return run == null ? JobRun.unbookmarked(listed, bound) : run.select(ctx, listed,
        connection.getLong("maxBand", BookmarkState.DEFAULT_MAX_BAND_MS),
        connection.getLong("maxFilesInBand", BookmarkState.DEFAULT_MAX_FILES_IN_BAND), bound);
  }

  /** A partitioned catalog table: the selected partitions' files (bookmarked together),
   * each partition read with its values as columns (org.cdclab.glue.CatalogPartitions). */
  private Read readPartitions(SparkSession spark) {
    String tableLocation = paths.get(0);
    List<CatalogPartitions.Selected> parts = CatalogPartitions.select(spark, partitioned[0],
        partitioned[1], partitioned[2], tableLocation, partitionKeys, partitioned[3],
        partitioned[4]);
    List<SourceFile> listed = new ArrayList<>();
    Map<String, Integer> partOf = new HashMap<>();
    for (int i = 0; i < parts.size(); i++) {
      for (SourceFile f : Listing.list(List.of(parts.get(i).location()), true,
          spark.sparkContext().hadoopConfiguration())) {
        if (partOf.putIfAbsent(f.path(), i) == null) listed.add(f);
      }
    }
    Map<Integer, List<SourceFile>> byPart = new java.util.TreeMap<>();
    for (SourceFile f : bookmarked(listed)) {
      byPart.computeIfAbsent(partOf.get(f.path()), k -> new ArrayList<>()).add(f);
    }
    Read out = null;
    for (Map.Entry<Integer, List<SourceFile>> e : byPart.entrySet()) {
      Read one = read(spark, e.getValue()).map(d -> CatalogPartitions.withValues(d,
          partitionKeys, parts.get(e.getKey()).values()));
      out = out == null ? one : new Read(out.df().unionByName(one.df()),
          out.tracked() == null || one.tracked() == null ? null
              : out.tracked().unionByName(one.tracked()));
    }
    return out != null ? out : read(spark, List.of())
        .map(d -> CatalogPartitions.withValues(d, partitionKeys, null));
  }

  private Read read(SparkSession spark, List<SourceFile> files) {
    String fileColumn = option("attachFilename");
    String timeColumn = option("attachTimestamp");
    Dataset<Row> df;
    Dataset<Row> tracked = null;
    if (files.isEmpty()) {
      StructType empty = catalogSchema != null ? catalogSchema : new StructType();
      df = spark.createDataFrame(new ArrayList<Row>(), empty);
      if (fileColumn != null) df = df.withColumn(fileColumn, functions.lit(null).cast("string"));
      if (timeColumn != null) df = df.withColumn(timeColumn, functions.lit(null).cast("long"));
      return new Read(df, null);
    }
    String[] literal = files.stream().map(f -> Listing.literal(f.path())).toArray(String[]::new);
    var reader = spark.read().format(format).options(Formats.readerOptions(format, formatOptions));
    if (catalogSchema != null && format.equals("csv")) {
      // CSV columns are positional strings; the catalog types are applied after (Spark cast).
      List<StructField> strings = new ArrayList<>();
      for (StructField f : catalogSchema.fields()) {
        strings.add(DataTypes.createStructField(f.name(), DataTypes.StringType, true));
      }
      df = reader.schema(DataTypes.createStructType(strings)).load(literal);
    } else {
      df = catalogSchema != null ? reader.schema(catalogSchema).load(literal)
          : reader.load(literal);
      if (format.equals("json")) { // Glue's choices from mixed values (JsonChoices)
        JsonChoices.Read r = JsonChoices.readTracked(spark, df, literal,
            Formats.multiLine(formatOptions), catalogSchema != null);
        df = r.df();
        tracked = r.tracked();
      }
    }
    if (fileColumn != null || timeColumn != null) {
      HashMap<String, String> pathOf = new HashMap<>();
      HashMap<String, Long> timeOf = new HashMap<>();
      for (SourceFile f : files) {
        pathOf.put(f.sparkUri(), f.path());
        timeOf.put(f.sparkUri(), f.modifiedMs());
      }
      Column uri = functions.input_file_name();
      java.util.function.UnaryOperator<Dataset<Row>> attach = d -> {
        Dataset<Row> out = d;
        if (fileColumn != null) {
          out = out.withColumn(fileColumn, functions.udf((UDF1<String, String>) pathOf::get,
              DataTypes.StringType).apply(uri));
        }
        if (timeColumn != null) {
          out = out.withColumn(timeColumn, functions.udf((UDF1<String, Long>) timeOf::get,
              DataTypes.LongType).apply(uri));
        }
        return out;
      };
      df = attach.apply(df);
      if (tracked != null) tracked = attach.apply(tracked);
    }
    boolean emptyNotNull = format.equals("csv")
        && "empty".equals(spark.conf().get(Formats.CSV_UNQUOTED_EMPTY_CONF, "null"));
    if (emptyNotNull) {
      List<Column> cols = new ArrayList<>();
      for (StructField f : df.schema().fields()) {
        Column c = functions.col("`" + f.name().replace("`", "``") + "`");
        boolean text = f.dataType().equals(DataTypes.StringType)
            && !f.name().equals(fileColumn);
        cols.add(text ? functions.coalesce(c, functions.lit("")).alias(f.name()) : c);
      }
      df = df.select(cols.toArray(new Column[0]));
    }
    if (catalogSchema != null && format.equals("csv")) {
      List<Column> cols = new ArrayList<>();
      for (StructField f : catalogSchema.fields()) {
        cols.add(functions.col("`" + f.name().replace("`", "``") + "`"));
      }
      if (fileColumn != null) cols.add(functions.col(fileColumn));
      if (timeColumn != null) cols.add(functions.col(timeColumn));
      // Glue types each value: one that the catalog type does not parse makes a choice
      df = ChoiceTypes.fromText(df.select(cols.toArray(new Column[0])), catalogSchema);
    }
    return new Read(df, tracked);
  }

  /** An Iceberg table of the Data Catalog: the current snapshot through the job's Iceberg
   * catalog (Glue documents job bookmarks for S3 and JDBC sources only); a push-down
   * predicate becomes a filter. */
  private Dataset<Row> readIceberg(SparkSession spark) {
    Dataset<Row> df = spark.table(
        IcebergTables.sparkName(spark, iceberg[0], iceberg[1], "from_catalog on"));
    String predicate = iceberg[2];
    return predicate == null || predicate.isEmpty() ? df : df.where(predicate);
  }

  private String option(String key) {
    String v = formatOptions.getString(key, connection.getString(key, null));
    return v == null || v.isEmpty() ? null : v;
  }
}
