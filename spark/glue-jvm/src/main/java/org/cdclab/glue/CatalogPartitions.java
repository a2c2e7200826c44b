package org.cdclab.glue;

import com.amazonaws.services.glue.model.Column;
import com.amazonaws.services.glue.model.Partition;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * The partitions of a Hive-style partitioned catalog table that a from_catalog read
 * covers, as Glue documents it (aws-glue-programming-etl-partitions): the catalog lists them
 * (GetPartitions; `catalogPartitionPredicate` is its Expression, filtered by the catalog),
 * `push_down_predicate` is any Spark SQL boolean expression over the partition keys,
 * evaluated here by Spark over the partitions' values typed as the keys; only the
 * selected partitions' locations are listed and read, and their values become columns.
 */
public final class CatalogPartitions {
  private static final String INDEX = "__cdclab_partition";

  private CatalogPartitions() {}

  /** A selected partition: its location and its values as a row typed like the keys. */
  public record Selected(String location, Row values) {}

  public static StructType keySchema(List<Column> keys, java.util.function.Function<String,
      DataType> hiveType) {
    List<StructField> fields = new ArrayList<>();
    for (Column k : keys) fields.add(DataTypes.createStructField(k.getName(),
        hiveType.apply(k.getType()), true));
    return DataTypes.createStructType(fields);
  }

  public static List<Selected> select(SparkSession spark, String database, String table,
                                      String catalogId, String tableLocation,
                                      StructType keys, String pushDown,
                                      String catalogPredicate) {
    List<Partition> parts = Catalog.getPartitions(database, table, catalogPredicate, catalogId);
    StructType strings = new StructType().add(INDEX, DataTypes.IntegerType);
    for (StructField k : keys.fields()) strings = strings.add(k.name(), DataTypes.StringType);
    List<Row> rows = new ArrayList<>();
    for (int i = 0; i < parts.size(); i++) {
      List<String> values = parts.get(i).getValues();
      if (values == null || values.size() != keys.fields().length) {
        throw new IllegalStateException("cdclab: partition " + values + " of " + database + "."
            + table + " does not have one value per partition key");
      }
      Object[] row = new Object[values.size() + 1];
      row[0] = i;
      for (int j = 0; j < values.size(); j++) row[j + 1] = values.get(j);
      rows.add(RowFactory.create(row));
    }
    Dataset<Row> df = spark.createDataFrame(rows, strings);
    List<org.apache.spark.sql.Column> typed = new ArrayList<>();
    typed.add(functions.col(INDEX));
    for (StructField k : keys.fields()) {
      typed.add(functions.col(quote(k.name())).cast(k.dataType()).alias(k.name()));
    }
    df = df.select(typed.toArray(new org.apache.spark.sql.Column[0]));
    if (pushDown != null && !pushDown.isBlank()) df = df.where(pushDown);
    List<Selected> out = new ArrayList<>();
    for (Row r : df.orderBy(INDEX).collectAsList()) {
      Partition p = parts.get(r.getInt(0));
      Object[] values = new Object[keys.fields().length];
      for (int j = 0; j < values.length; j++) values[j] = r.get(j + 1);
      out.add(new Selected(location(p, tableLocation, keys), RowFactory.create(values)));
    }
    return out;
  }

  /** The partition's own location; without one, Hive's layout under the table's. */
  private static String location(Partition p, String tableLocation, StructType keys) {
    if (p.getStorageDescriptor() != null && p.getStorageDescriptor().getLocation() != null
        && !p.getStorageDescriptor().getLocation().isEmpty()) {
      return p.getStorageDescriptor().getLocation();
    }
    StringBuilder sb = new StringBuilder(tableLocation.replaceAll("/+$", ""));
    for (int j = 0; j < keys.fields().length; j++) {
      sb.append('/').append(keys.fields()[j].name()).append('=').append(p.getValues().get(j));
    }
    return sb.toString();
  }

  /** The frame with the partition's values (or nulls) as columns after its own. */
  public static Dataset<Row> withValues(Dataset<Row> df, StructType keys, Row values) {
    Dataset<Row> out = df;
    for (int j = 0; j < keys.fields().length; j++) {
      StructField k = keys.fields()[j];
      out = out.withColumn(k.name(),
          functions.lit(values == null ? null : values.get(j)).cast(k.dataType()));
    }
    return out;
  }

  private static String quote(String name) {
    return "`" + name.replace("`", "``") + "`";
  }
}
