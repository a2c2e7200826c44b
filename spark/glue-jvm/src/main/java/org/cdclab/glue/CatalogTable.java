package org.cdclab.glue;

import com.amazonaws.services.glue.model.Column;
import com.amazonaws.services.glue.model.StorageDescriptor;
import com.amazonaws.services.glue.model.Table;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A Data Catalog table as sources and sinks read it: location, format (from the SerDe, else
 * the classification), table + storage parameters, SerDe parameters, columns and partition
 * keys (Hive-style: their values are the partitions', not the files'). Tables
 * cdclab cannot read or write correctly are refused by name.
 */
public record CatalogTable(String name, String location, String format,
                           Map<String, String> params, Map<String, String> serde,
                           List<Column> columns, List<Column> partitionKeys) {
  static final String OPEN_CSV_SERDE = "org.apache.hadoop.hive.serde2.OpenCSVSerde";
  static final String LAZY_SIMPLE_SERDE = "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe";
  public static final String ICEBERG = "iceberg";

  /** {@code use} names the call in errors, e.g. "from_catalog on". */
  public static CatalogTable resolve(String database, String tableName, String catalogId,
                                     String use) {
    Table table = Catalog.getTable(database, tableName, catalogId);
    String name = database + "." + tableName;
    Map<String, String> params = new HashMap<>();
    if (table.getParameters() != null) params.putAll(table.getParameters());
    if ("ICEBERG".equalsIgnoreCase(params.get("table_type"))) {
      // read through the job's Iceberg Spark catalog (DataSource), not from files
      return new CatalogTable(name, params.getOrDefault("metadata_location", ""), ICEBERG,
          params, Map.of(), List.of(), List.of());
    }
    StorageDescriptor sd = table.getStorageDescriptor();
    if (sd == null || sd.getLocation() == null || sd.getLocation().isEmpty()) {
      throw new IllegalStateException("cdclab: catalog table " + name + " has no Location");
    }
    if (sd.getParameters() != null) params.putAll(sd.getParameters());
    Map<String, String> serde = sd.getSerdeInfo() == null || sd.getSerdeInfo().getParameters() == null
        ? Map.of() : sd.getSerdeInfo().getParameters();
    String lib = sd.getSerdeInfo() == null ? "" : String.valueOf(sd.getSerdeInfo().getSerializationLibrary());
    String format = format(name, lib, params.getOrDefault("classification", ""));
    return new CatalogTable(name, sd.getLocation(), format, params, serde,
        sd.getColumns() == null ? List.of() : sd.getColumns(),
        table.getPartitionKeys() == null ? List.of() : table.getPartitionKeys());
  }

  static String format(String table, String serdeLib, String classification) {
    String lib = serdeLib.toLowerCase();
    if (serdeLib.equals(OPEN_CSV_SERDE) || serdeLib.equals(LAZY_SIMPLE_SERDE)) return "csv";
    if (lib.contains("json")) return "json";
    if (lib.contains("parquet")) return "parquet";
    if (lib.contains("orc")) return "orc";
    if (lib.contains("avro")) return "avro";
    if (!classification.isEmpty()) return Formats.normalize(classification);
    throw Unsupported.of("SerDe " + serdeLib + " of " + table);
  }
}
