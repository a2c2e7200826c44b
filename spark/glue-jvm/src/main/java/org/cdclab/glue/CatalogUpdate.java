package org.cdclab.glue;

import com.amazonaws.services.glue.model.Column;
import com.amazonaws.services.glue.model.PartitionInput;
import com.amazonaws.services.glue.model.SerDeInfo;
import com.amazonaws.services.glue.model.StorageDescriptor;
import com.amazonaws.services.glue.model.Table;
import com.amazonaws.services.glue.model.TableInput;
import com.amazonaws.services.glue.util.JsonOptions;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.catalog.ExternalCatalogUtils;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * A sink's Data Catalog update (enableUpdateCatalog, with setCatalogInfo or a catalog sink),
 * as AWS documents it in "Creating tables, updating schema, and adding new partitions in the
 * Data Catalog from AWS Glue ETL jobs" (docs.aws.amazon.com/glue/latest/dg/update-from-job.html):
 * a missing table is created; an existing one gets the frame's schema (updateBehavior
 * UPDATE_IN_DATABASE, the default) or keeps its own (LOG); new partitions are added, under
 * LOG only when the frame's columns are a subset of the table's. Its restrictions fail by name
 * before anything is written: S3 only; json, csv, avro, parquet (parquet through Glue's
 * parquet writer); partition keys equal to the table's, in order; no nested schemas.
 */
public final class CatalogUpdate {
  public static final String UPDATE_IN_DATABASE = "UPDATE_IN_DATABASE";
  public static final String LOG = "LOG";
  static final Set<String> FORMATS = Set.of("json", "csv", "avro", "parquet");
  private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(CatalogUpdate.class);

  private CatalogUpdate() {}

  public static boolean enabled(JsonOptions options) {
    return options.getBoolean("enableUpdateCatalog", false);
  }

  public static String behavior(JsonOptions options) {
    String b = options.getString("updateBehavior", UPDATE_IN_DATABASE);
    if (!b.equals(UPDATE_IN_DATABASE) && !b.equals(LOG)) {
      throw new IllegalArgumentException("cdclab: updateBehavior " + b + " is not one of "
          + UPDATE_IN_DATABASE + ", " + LOG + " (AWS Glue's schema change policies)");
    }
    return b;
  }

  /** What AWS's restrictions refuse, checked before the sink writes anything. */
  public static void check(String table, String format, boolean glueParquetWriter,
                           StructType schema, List<String> keys) {
    if (!FORMATS.contains(format)) {
      throw Unsupported.of("enableUpdateCatalog with format " + format + " (table " + table
          + "; AWS updates the catalog for json, csv, avro and parquet only)");
    }
    if (format.equals("parquet") && !glueParquetWriter) {
      throw Unsupported.of("enableUpdateCatalog with Spark's parquet writer (table " + table
          + "; AWS needs its parquet writer for catalog updates: format glueparquet, or "
          + "format_options useGlueParquetWriter=true)");
    }
    Set<String> names = new LinkedHashSet<>();
    for (StructField f : schema.fields()) {
      names.add(f.name().toLowerCase(Locale.ROOT));
      if (nested(f.dataType())) {
        throw Unsupported.of("enableUpdateCatalog with the nested column " + f.name() + " "
            + f.dataType().catalogString() + " (table " + table + "; AWS does not update "
            + "tables whose schemas are nested, e.g. arrays inside of structs)");
      }
    }
    for (String k : keys) {
      if (!names.contains(k.toLowerCase(Locale.ROOT))) {
        throw new IllegalArgumentException("cdclab: partition key " + k
            + " is not a column of the frame written to " + table);
      }
    }
  }

  private static boolean nested(DataType t) {
    DataType inner = t instanceof ArrayType a ? a.elementType()
        : t instanceof MapType m ? m.valueType() : null;
    if (inner != null) return inner instanceof StructType || inner instanceof ArrayType
        || inner instanceof MapType;
    if (t instanceof StructType s) {
      for (StructField f : s.fields()) {
        if (f.dataType() instanceof StructType || f.dataType() instanceof ArrayType
            || f.dataType() instanceof MapType) return true;
      }
    }
    return false;
  }

  /**
   * After the write: create or update the table {@code database.table} and add the
   * partitions the frame wrote under {@code location}.
   */
  public static void apply(Dataset<Row> df, String database, String table, String catalogId,
                           String location, String format, JsonOptions formatOptions,
                           List<String> keys, String behavior) {
    String name = database + "." + table;
    log.info("Attempting to fast-forward updates to the Catalog - nameSpace: {} table: {}",
        database, table);
    log.info("Schema change policy behavior: {}", behavior);
    List<Column> columns = new ArrayList<>();
    List<Column> partitionKeys = new ArrayList<>();
    for (String k : keys) partitionKeys.add(column(df.schema().apply(k)));
    Set<String> keySet = new java.util.HashSet<>(keys);
    for (StructField f : df.schema().fields()) {
      if (!keySet.contains(f.name())) columns.add(column(f));
    }
    Table existing = Catalog.findTable(database, table, catalogId);
    StorageDescriptor sd;
    if (existing == null) {
      sd = storage(location, format, formatOptions, columns);
      Map<String, String> params = new HashMap<>(Map.of("classification", format));
      if (format.equals("csv") && formatOptions.getBoolean("writeHeader", true)) {
        params.put("skip.header.line.count", "1");
      }
      if (format.equals("parquet")) params.put("useGlueParquetWriter", "true");
      Catalog.createTable(database, catalogId, new TableInput().withName(table)
          .withTableType("EXTERNAL_TABLE").withParameters(params)
          .withPartitionKeys(partitionKeys).withStorageDescriptor(sd));
      log.info("created catalog table {}", name);
    } else {
      List<String> have = new ArrayList<>();
      if (existing.getPartitionKeys() != null) {
        for (Column c : existing.getPartitionKeys()) have.add(c.getName().toLowerCase(Locale.ROOT));
      }
      List<String> want = keys.stream().map(k -> k.toLowerCase(Locale.ROOT)).toList();
      if (!have.equals(want)) {
        throw new IllegalStateException("cdclab: partitionKeys " + keys + " differ from the "
            + "partition keys " + have + " of catalog table " + name + " (AWS: they must be "
            + "the same, in the same order)");
      }
      sd = existing.getStorageDescriptor() == null
          ? storage(location, format, formatOptions, columns) : existing.getStorageDescriptor();
      if (behavior.equals(UPDATE_IN_DATABASE)) {
        sd = sd.clone().withColumns(columns);
        Catalog.updateTable(database, catalogId, input(existing).withStorageDescriptor(sd));
        log.info("updated the schema of catalog table {}", name);
      } else {
        boolean qualifies = subset(columns, sd.getColumns());
        log.info("Schemas qualify (case-insensitive compare): {}", qualifies);
        if (!qualifies) return; // AWS: LOG adds partitions only for a subset of the columns
      }
    }
    if (keys.isEmpty()) return;
    List<PartitionInput> parts = new ArrayList<>();
    for (Row r : df.select(keys.stream().map(k -> df.col("`" + k.replace("`", "``") + "`")
        .cast("string")).toArray(org.apache.spark.sql.Column[]::new)).distinct().collectAsList()) {
      List<String> values = new ArrayList<>();
      StringBuilder path = new StringBuilder(location.endsWith("/") ? location : location + "/");
      for (int i = 0; i < keys.size(); i++) {
        String v = r.isNullAt(i) ? ExternalCatalogUtils.DEFAULT_PARTITION_NAME() : r.getString(i);
        values.add(v);
        path.append(ExternalCatalogUtils.getPartitionPathString(keys.get(i), v)).append('/');
      }
      parts.add(new PartitionInput().withValues(values)
          .withStorageDescriptor(sd.clone().withLocation(path.toString())));
    }
    int added = Catalog.addPartitions(database, table, catalogId, parts);
    log.info("added {} new partition(s) to catalog table {}", added, name);
  }

  private static Column column(StructField f) {
    return new Column().withName(f.name()).withType(f.dataType().catalogString());
  }

  private static boolean subset(List<Column> frame, List<Column> table) {
    Set<String> have = new java.util.HashSet<>();
    if (table != null) for (Column c : table) have.add(c.getName().toLowerCase(Locale.ROOT));
    for (Column c : frame) if (!have.contains(c.getName().toLowerCase(Locale.ROOT))) return false;
    return true;
  }

  /** A new table's storage: the SerDe and formats a crawler gives the classification. */
  static StorageDescriptor storage(String location, String format, JsonOptions o,
                                   List<Column> columns) {
    String text = "org.apache.hadoop.mapred.TextInputFormat";
    String textOut = "org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat";
    SerDeInfo serde = new SerDeInfo();
    String in = text;
    String out = textOut;
    switch (format) {
      case "csv" -> serde.withSerializationLibrary(CatalogTable.LAZY_SIMPLE_SERDE)
          .withParameters(Map.of("field.delim", o.getString("separator", ",")));
      case "json" -> serde.withSerializationLibrary("org.openx.data.jsonserde.JsonSerDe");
      case "parquet" -> {
        serde.withSerializationLibrary(
            "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe");
        in = "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat";
        out = "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat";
      }
      default -> { // avro
        serde.withSerializationLibrary("org.apache.hadoop.hive.serde2.avro.AvroSerDe");
        in = "org.apache.hadoop.hive.ql.io.avro.AvroContainerInputFormat";
        out = "org.apache.hadoop.hive.ql.io.avro.AvroContainerOutputFormat";
      }
    }
    return new StorageDescriptor().withLocation(location).withColumns(columns)
        .withInputFormat(in).withOutputFormat(out).withSerdeInfo(serde)
        .withParameters(Map.of("classification", format));
  }

  /** UpdateTable takes a TableInput: the table's own fields, unchanged. */
  private static TableInput input(Table t) {
    return new TableInput().withName(t.getName()).withDescription(t.getDescription())
        .withOwner(t.getOwner()).withRetention(t.getRetention())
        .withPartitionKeys(t.getPartitionKeys()).withTableType(t.getTableType())
        .withParameters(t.getParameters()).withViewOriginalText(t.getViewOriginalText())
        .withViewExpandedText(t.getViewExpandedText()).withTargetTable(t.getTargetTable())
        .withStorageDescriptor(t.getStorageDescriptor());
  }
}
