package org.cdclab.glue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * Which keys of a record hold an explicit null. A Glue DynamicRecord keeps a key whose JSON
 * value is null (its value None in Python) apart from a key it does not have; Spark's rows
 * cannot, so a sparse frame (a JSON source's) may carry, beside its user-visible Dataset, a
 * second one with this hidden column: per row, the paths (segment lists) outside arrays
 * whose value is an explicit null. Only Python functions read it (PythonRecords.toPython);
 * schema, toDF, show, count and writes use the Dataset without it.
 */
public final class ExplicitNulls {
  public static final String COLUMN = "__cdclab_explicit_nulls";
  public static final DataType TYPE =
      DataTypes.createArrayType(DataTypes.createArrayType(DataTypes.StringType));
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String SEP = "\u0000";

  private ExplicitNulls() {}

  /** The paths of a JSON record's explicit nulls, inside objects (not inside arrays). */
  public static List<List<String>> paths(String record) {
    List<List<String>> out = new ArrayList<>();
    try {
      JsonNode root = record == null ? null : JSON.readTree(record);
      walk(root, new ArrayList<>(), out);
    } catch (IOException e) {
      // not a JSON object: Spark's reader has no fields for it either
    }
    return out;
  }

  private static void walk(JsonNode node, List<String> prefix, List<List<String>> out) {
    if (node == null || !node.isObject()) return;
    node.fields().forEachRemaining(e -> {
      List<String> path = new ArrayList<>(prefix);
      path.add(e.getKey());
      if (e.getValue().isNull()) out.add(path);
      else walk(e.getValue(), path, out);
    });
  }

  /** The paths of a record from Python whose value is None (inside dicts, not lists). */
  public static List<List<String>> fromPython(Object record) {
    List<List<String>> out = new ArrayList<>();
    walkPython(record, new ArrayList<>(), out);
    return out;
  }

  private static void walkPython(Object v, List<String> prefix, List<List<String>> out) {
    if (!(v instanceof Map<?, ?> m)) return;
    m.forEach((k, x) -> {
      List<String> path = new ArrayList<>(prefix);
      path.add(String.valueOf(k));
      if (x == null) out.add(path);
      else walkPython(x, path, out);
    });
  }

  /** A row's hidden paths as a set of joined keys (see key). */
  public static Set<String> set(List<?> paths) {
    Set<String> out = new HashSet<>();
    if (paths == null) return out;
    for (Object p : paths) out.add(key(asList(p)));
    return out;
  }

  /** A path's lookup key. */
  public static String key(List<String> path) {
    return String.join(SEP, path);
  }

  @SuppressWarnings("unchecked")
  private static List<String> asList(Object p) {
    if (p instanceof scala.collection.Seq<?> s) {
      return (List<String>) scala.collection.JavaConverters.seqAsJavaList(s);
    }
    return (List<String>) p;
  }

  /** The index of the hidden column in a schema, or -1. */
  public static int index(StructType schema) {
    String[] names = schema.fieldNames();
    for (int i = 0; i < names.length; i++) if (names[i].equals(COLUMN)) return i;
    return -1;
  }

  /** The hidden column of a Dataset that has it. */
  public static Column column() {
    return functions.col(COLUMN);
  }

  /** A path column starts with prefix (case-insensitively, as Spark resolves names). */
  static Column under(Column p, List<String> prefix) {
    int n = prefix.size();
    return functions.size(p).geq(n).and(functions.lower(functions.array_join(
        functions.slice(p, 1, n), SEP)).equalTo(key(prefix).toLowerCase()));
  }

  /** The paths under from moved under to (the rest of each path kept). */
  static Column moved(Column paths, List<String> from, List<String> to) {
    int n = from.size();
    Column target = functions.array(to.stream().map(functions::lit).toArray(Column[]::new));
    return functions.transform(functions.filter(paths, p -> under(p, from)),
        p -> functions.concat(target, functions.slice(p, functions.lit(n + 1),
            functions.greatest(functions.size(p).minus(n), functions.lit(0)))));
  }

  /** rename_field of a top-level field: its paths renamed, any already at the new name gone. */
  public static Column renamed(List<String> from, List<String> to) {
    Column kept = functions.filter(column(), p -> functions.not(under(p, to))
        .and(functions.not(under(p, from))));
    return functions.concat(kept, moved(column(), from, to)).alias(COLUMN);
  }

  /** apply_mapping: for each (source, target) the source's paths moved to the target; paths
   * of fields no mapping names are gone. */
  public static Column mapped(List<List<String>> sources, List<List<String>> targets) {
    List<Column> parts = new ArrayList<>();
    for (int i = 0; i < sources.size(); i++) {
      parts.add(moved(column(), sources.get(i), targets.get(i)));
    }
    Column all = parts.isEmpty() ? functions.array().cast(TYPE)
        : functions.array_distinct(functions.flatten(functions.array(parts.toArray(new Column[0]))));
    return all.alias(COLUMN);
  }

  /** The schema has a user field of the hidden column's name: nothing can be tracked. */
  public static boolean clashes(StructType schema) {
    for (StructField f : schema.fields()) if (f.name().equalsIgnoreCase(COLUMN)) return true;
    return false;
  }
}
