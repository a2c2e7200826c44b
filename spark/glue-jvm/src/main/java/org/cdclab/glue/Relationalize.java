package org.cdclab.glue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.expressions.Window;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * DynamicFrame.relationalize over DataFrames, as AWS documents its output
 * (knowledge-center "glue-pivoted-data-relationalize"; the Relationalize transform page):
 * structs are flattened into columns named by their dotted path (`name.first`); each array
 * becomes its own table named `<table>_<column>` with columns `id` (the join key),
 * `index` (position, from 0) and the element under `<column>.val` (flattened again, so an
 * array of structs gives `<column>.val.<field>`); in the parent the array column holds the
 * join key (long). Arrays inside arrays recurse the same way. The key values are cdclab's
 * (1, 2, ... in read order): Glue's are not documented. Nothing is staged: the staging
 * path is not written.
 */
public final class Relationalize {
  private static final String KEY = "__cdclab_relationalize_key";

  private Relationalize() {}

  /** Table name -> frame, root first. */
  public static List<Map.Entry<String, Dataset<Row>>> apply(Dataset<Row> df, String root) {
    List<Map.Entry<String, Dataset<Row>>> out = new ArrayList<>();
    into(df, root, out);
    return out;
  }

  private static void into(Dataset<Row> df, String table,
                           List<Map.Entry<String, Dataset<Row>>> out) {
    List<String> names = new ArrayList<>();
    List<Column> columns = new ArrayList<>();
    List<DataType> types = new ArrayList<>();
    for (StructField f : df.schema().fields()) {
      flatten(quote(f.name()), f.name(), f.dataType(), names, columns, types);
    }
    boolean anyArray = types.stream().anyMatch(t -> t instanceof ArrayType);
    Dataset<Row> keyed = anyArray
        ? df.withColumn(KEY, functions.row_number().over(
            Window.orderBy(functions.monotonically_increasing_id())).cast("long"))
        : df;
    List<Column> select = new ArrayList<>();
    for (int i = 0; i < names.size(); i++) {
      Column c = columns.get(i);
      select.add((types.get(i) instanceof ArrayType
          ? functions.when(c.isNotNull(), functions.col(KEY)) : c).alias(names.get(i)));
    }
    out.add(Map.entry(table, keyed.select(select.toArray(new Column[0]))));
    for (int i = 0; i < names.size(); i++) {
      if (!(types.get(i) instanceof ArrayType)) continue;
      String name = names.get(i);
      Dataset<Row> pivot = keyed.where(columns.get(i).isNotNull())
          .select(functions.col(KEY).alias("id"), functions.posexplode(columns.get(i)))
          .select(functions.col("id"), functions.col("pos").cast("int").alias("index"),
              functions.col("col").alias(name + ".val"));
      into(pivot, table + "_" + name, out);
    }
  }

  private static void flatten(String ref, String name, DataType type, List<String> names,
                              List<Column> columns, List<DataType> types) {
    if (type instanceof StructType st && st.fields().length > 0) {
      for (StructField f : st.fields()) {
        flatten(ref + "." + quote(f.name()), name + "." + f.name(), f.dataType(), names, columns,
            types);
      }
      return;
    }
    names.add(name);
    columns.add(functions.col(ref));
    types.add(type);
  }

  private static String quote(String name) {
    return "`" + name.replace("`", "``") + "`";
  }
}
