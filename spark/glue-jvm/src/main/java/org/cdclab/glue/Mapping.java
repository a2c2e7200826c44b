package org.cdclab.glue;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.functions;

/**
 * ApplyMapping's output fields. A dotted target nests: AWS's data_cleaning_and_lambda sample
 * maps `provider id` to `provider.id` and `provider name` to `provider.name` and prints
 * `provider: struct` holding `id`, `name`, … (aws-samples/aws-glue-samples,
 * examples/data_cleaning_and_lambda.md); a back-quoted segment (`` `a.b` ``) is one name.
 * Fields and struct members come in the order their first mapping names them.
 */
public final class Mapping {
  private final Map<String, Object> root = new LinkedHashMap<>(); // name -> Column | Map

  /** Adds {@code value} at {@code target}; two mappings to one path, or to a path and a
   * field inside it, cannot both hold: named, as Glue's behaviour for them is undocumented. */
  @SuppressWarnings("unchecked")
  public void put(List<String> target, Column value, String targetPath) {
    Map<String, Object> level = root;
    for (int i = 0; i < target.size() - 1; i++) {
      Object next = level.computeIfAbsent(target.get(i), k -> new LinkedHashMap<String, Object>());
      if (!(next instanceof Map)) {
        throw Unsupported.of("apply_mapping to both " + FieldPath.join(target.subList(0, i + 1))
            + " and " + targetPath);
      }
      level = (Map<String, Object>) next;
    }
    String leaf = target.get(target.size() - 1);
    Object had = level.putIfAbsent(leaf, value);
    if (had instanceof Map) {
      throw Unsupported.of("apply_mapping to both " + targetPath + " and fields inside it");
    } else if (had != null) {
      throw Unsupported.of("apply_mapping with two mappings to " + targetPath);
    }
  }

  /** The output columns: a struct for each nested target. cdclab's choice (not
   * documented): the struct is there even when every value in it is null. */
  public Column[] columns() {
    List<Column> out = new ArrayList<>();
    root.forEach((name, node) -> out.add(column(node).alias(name)));
    return out.toArray(new Column[0]);
  }

  @SuppressWarnings("unchecked")
  private static Column column(Object node) {
    if (node instanceof Column c) return c;
    List<Column> fields = new ArrayList<>();
    ((Map<String, Object>) node).forEach((name, child) -> fields.add(column(child).alias(name)));
    return functions.struct(fields.toArray(new Column[0]));
  }
}
