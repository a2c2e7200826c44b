package org.cdclab.glue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.api.java.UDF1;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.MetadataBuilder;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * Glue's choices from JSON: a field whose records hold scalars of different JSON kinds is a
 * choice of those kinds (Spark's reader widens it to string). Records are the lines of the
 * files or, with multiLine, each file's object or the objects of its array (Spark's
 * multiLine reading); fields inside structs are walked too (a choice at `provider.id`).
 * For a catalog JSON table (declared types) a field is a choice when some values are of a
 * kind its column type does not hold: the column's type and those kinds (as a catalog CSV
 * column is a choice of its type and string). A choice inside an array fails by name.
 */
public final class JsonChoices {
  static final List<String> KINDS = List.of("long", "double", "boolean", "string");
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String ARRAY = "[]"; // a path segment's suffix: the array's elements

  private JsonChoices() {}

  /** One member of a choice: its Glue type name, the JSON kinds it takes, its type. */
  record Member(String name, Set<String> kinds, DataType type) implements java.io.Serializable {}

  /** The records of one JSON document (a file with multiLine): an object, or an array's. */
  static List<String> records(String document) {
    List<String> out = new ArrayList<>();
    if (document == null) return out;
    try {
      JsonNode node = JSON.readTree(document);
      if (node != null && node.isArray()) node.forEach(e -> out.add(e.toString()));
      else out.add(document);
    } catch (IOException e) {
      out.add(document); // Spark's reader has already made it a corrupt record
    }
    return out;
  }

  /** Each scalar path of a record outside arrays: [its JSON kind, its text]. */
  static Map<String, List<String>> values(String record) {
    Map<String, List<String>> out = new HashMap<>();
    walk(parse(record), new ArrayList<>(), (path, kind, text) -> {
      if (!path.contains(ARRAY)) out.put(path, List.of(kind, text));
    });
    return out;
  }

  /** For each choice path inside an array (`list[].field`): each element's [kind, text]. */
  static Map<String, List<List<String>>> elements(String record, Set<String> paths) {
    Map<String, List<List<String>>> out = new HashMap<>();
    JsonNode root = parse(record);
    for (String path : paths) {
      List<String> segs = FieldPath.split(path);
      JsonNode node = root;
      int i = 0;
      for (; i < segs.size() && !segs.get(i).endsWith(ARRAY); i++) {
        node = node == null ? null : node.get(segs.get(i));
      }
      String arrayName = segs.get(i).substring(0, segs.get(i).length() - ARRAY.length());
      node = node == null ? null : node.get(arrayName);
      if (node == null || !node.isArray()) continue;
      List<List<String>> values = new ArrayList<>();
      for (JsonNode e : node) {
        JsonNode v = e;
        for (int j = i + 1; j < segs.size() && v != null; j++) v = v.get(segs.get(j));
        values.add(v == null || v.isNull() ? List.of("null", "") : List.of(kindOf(v),
            v.isValueNode() ? v.asText() : v.toString()));
      }
      out.put(path, values);
    }
    return out;
  }

  private static String kindOf(JsonNode v) {
    return v.isNull() ? "null" : v.isIntegralNumber() ? "long" : v.isNumber()
        ? "double" : v.isBoolean() ? "boolean" : v.isTextual() ? "string"
        : v.isObject() ? "struct" : "array";
  }

  /** Each path of a record (inside arrays as `list[].field`): the JSON kinds it holds. */
  static Map<String, List<String>> kinds(String record) {
    Map<String, Set<String>> seen = new HashMap<>();
    walk(parse(record), new ArrayList<>(), (path, kind, text) ->
        seen.computeIfAbsent(path, k -> new LinkedHashSet<>()).add(kind));
    Map<String, List<String>> out = new HashMap<>();
    seen.forEach((k, v) -> out.put(k, new ArrayList<>(v)));
    return out;
  }

  private interface Visit {
    void at(String path, String kind, String text);
  }

  private static JsonNode parse(String record) {
    try {
      return record == null ? null : JSON.readTree(record);
    } catch (IOException e) {
      return null;
    }
  }

  private static void walk(JsonNode node, List<String> prefix, Visit visit) {
    if (node == null || !node.isObject()) return;
    node.fields().forEachRemaining(e -> {
      List<String> path = new ArrayList<>(prefix);
      path.add(e.getKey());
      visitValue(e.getValue(), path, visit);
    });
  }

  private static void visitValue(JsonNode v, List<String> path, Visit visit) {
    String name = FieldPath.join(path);
    String kind = kindOf(v);
    visit.at(name, kind, v.isValueNode() ? v.asText() : v.toString());
    if (v.isObject()) {
      walk(v, path, visit);
    } else if (v.isArray()) {
      List<String> elements = new ArrayList<>(path);
      elements.set(elements.size() - 1, path.get(path.size() - 1) + ARRAY);
      for (JsonNode e : v) {
        if (e.isObject()) walk(e, elements, visit);
        else visitValue(e, elements, visit);
      }
    }
  }

  /** A JSON source read: the user's Dataset and, when it can be built, the same rows with
   * the hidden ExplicitNulls column (null: not tracked). */
  public record Read(Dataset<Row> df, Dataset<Row> tracked) {}

  /**
   * The frame of the JSON files: df is Spark's reading of them (its inferred schema, or the
   * catalog's declared types); fields that are choices become marked choice structs.
   */
  public static Dataset<Row> read(SparkSession spark, Dataset<Row> df, String[] files,
                                  boolean multiLine, boolean declared) {
    return readTracked(spark, df, files, multiLine, declared).df();
  }

  /**
   * As read, with a second Dataset of the same rows parsed from the files' text with the
   * hidden column of each record's explicit nulls (ExplicitNulls). It is lazy: only a
   * Python function on the frame's records reads it.
   */
  public static Read readTracked(SparkSession spark, Dataset<Row> df, String[] files,
                                 boolean multiLine, boolean declared) {
    StructType schema = df.schema();
    for (StructField f : schema.fields()) {
      if (f.name().equals("_corrupt_record")) return new Read(df, null);
    }
    spark.udf().register("cdclab_json_records", (UDF1<String, List<String>>) JsonChoices::records,
        DataTypes.createArrayType(DataTypes.StringType));
    // a line holding a JSON array is one record per element, as Spark's reader reads it
    Dataset<Row> text = (multiLine ? spark.read().option("wholetext", true).text(files)
        : spark.read().text(files)).select(functions.explode(
            functions.callUDF("cdclab_json_records", functions.col("value"))).as("value"));
    text = text.where(functions.trim(functions.col("value")).notEqual(""));
    Map<String, List<Member>> choices = mayHoldChoice(schema, declared)
        ? choices(spark, text, schema, declared) : Map.of();
    Dataset<Row> tracked = ExplicitNulls.clashes(schema) ? null
        : parsed(spark, text, schema, choices, true);
    return new Read(choices.isEmpty() ? df : parsed(spark, text, schema, choices, false),
        tracked);
  }

  /** The paths that are choices, and their members (one pass over the records). */
  private static Map<String, List<Member>> choices(SparkSession spark, Dataset<Row> text,
                                                   StructType schema, boolean declared) {
    DataType pathMap = DataTypes.createMapType(DataTypes.StringType,
        DataTypes.createArrayType(DataTypes.StringType));
    spark.udf().register("cdclab_json_kinds",
        (UDF1<String, Map<String, List<String>>>) JsonChoices::kinds, pathMap);
    List<Row> seen = text
        .select(functions.explode(functions.callUDF("cdclab_json_kinds", functions.col("value")))
            .as(new String[] {"k", "v"}))
        .select(functions.col("k"), functions.explode(functions.col("v")).as("kind"))
        .where(functions.col("kind").notEqual("null"))
        .groupBy("k").agg(functions.collect_set("kind")).collectAsList();
    Map<String, List<Member>> choices = new LinkedHashMap<>();
    for (Row r : seen) {
      String path = r.getString(0);
      DataType t = typeAt(schema, FieldPath.split(path));
      List<Member> members = members(path, t, new ArrayList<>(r.<String>getList(1)), declared);
      if (members == null) continue;
      List<String> segs = FieldPath.split(path);
      long arrays = segs.stream().filter(g -> g.endsWith(ARRAY)).count();
      if (arrays > 1 || segs.get(segs.size() - 1).endsWith(ARRAY)) {
        throw Unsupported.of("a choice inside " + (arrays > 1 ? "nested arrays" : "an array "
            + "of scalars") + " (field " + path + " holds " + names(members) + ")");
      }
      choices.put(path, members);
    }
    return choices;
  }

  /** The records parsed from their text with the choices built; track: with the hidden
   * column of their explicit nulls. */
  private static Dataset<Row> parsed(SparkSession spark, Dataset<Row> text, StructType schema,
                                     Map<String, List<Member>> choices, boolean track) {
    StructType parse = (StructType) retype(schema, new ArrayList<>(), choices, true);
    StructType target = (StructType) retype(schema, new ArrayList<>(), choices, false);
    Set<String> inArrays = new LinkedHashSet<>();
    for (String p : choices.keySet()) if (p.contains(ARRAY)) inArrays.add(p);
    DataType pathMap = DataTypes.createMapType(DataTypes.StringType,
        DataTypes.createArrayType(DataTypes.StringType));
    spark.udf().register("cdclab_json_values",
        (UDF1<String, Map<String, List<String>>>) JsonChoices::values, pathMap);
    spark.udf().register("cdclab_json_elements",
        (UDF1<String, Map<String, List<List<String>>>>) v -> elements(v, inArrays),
        DataTypes.createMapType(DataTypes.StringType, DataTypes.createArrayType(
            DataTypes.createArrayType(DataTypes.StringType))));
    spark.udf().register("cdclab_json_nulls",
        (UDF1<String, List<List<String>>>) ExplicitNulls::paths, ExplicitNulls.TYPE);
    List<Column> read = new ArrayList<>(List.of(
        functions.from_json(functions.col("value"), parse).as("r")));
    if (!choices.isEmpty()) {
      read.add(functions.callUDF("cdclab_json_values", functions.col("value")).as("k"));
      read.add(functions.callUDF("cdclab_json_elements", functions.col("value")).as("ke"));
    }
    if (track) {
      read.add(functions.callUDF("cdclab_json_nulls", functions.col("value"))
          .as(ExplicitNulls.COLUMN));
    }
    Dataset<Row> parsed = text.select(read.toArray(new Column[0]));
    List<Column> cols = new ArrayList<>();
    for (StructField f : target.fields()) {
      Column built = build(functions.col("r").getField(f.name()),
          parse.apply(f.name()).dataType(), List.of(f.name()), choices, null);
      cols.add(built.cast(f.dataType()).as(f.name(), f.metadata()));
    }
    if (track) cols.add(ExplicitNulls.column());
    return parsed.select(cols.toArray(new Column[0]));
  }

  /** A field that could be a choice: string (files alone) or a declared non-string scalar. */
  static boolean mayHoldChoice(DataType t, boolean declared) {
    if (t instanceof StructType s) {
      for (StructField f : s.fields()) if (mayHoldChoice(f.dataType(), declared)) return true;
      return false;
    }
    if (t instanceof ArrayType a) return mayHoldChoice(a.elementType(), declared);
    if (t instanceof org.apache.spark.sql.types.MapType) return false;
    return declared != t.equals(DataTypes.StringType);
  }

  private static List<String> names(List<Member> members) {
    return members.stream().map(Member::name).toList();
  }

  /** The type at a path of the schema (`name[]` for an array's elements), or null. */
  static DataType typeAt(StructType schema, List<String> segments) {
    DataType t = schema;
    for (String seg : segments) {
      boolean elements = seg.endsWith(ARRAY);
      String name = elements ? seg.substring(0, seg.length() - ARRAY.length()) : seg;
      if (!(t instanceof StructType s) || !List.of(s.fieldNames()).contains(name)) return null;
      t = s.apply(name).dataType();
      if (elements) {
        if (!(t instanceof ArrayType a)) return null;
        t = a.elementType();
      }
    }
    return t;
  }

  /**
   * The members of the choice at path, or null when it is none: from files alone, a field
   * Spark typed string whose values are of several kinds; with declared types, a non-string
   * field holding kinds its type does not take (then its type is the first member).
   */
  static List<Member> members(String path, DataType t, List<String> kinds, boolean declared) {
    if (t == null || kinds.size() < (declared ? 1 : 2)) return null;
    boolean scalarsOnly = KINDS.containsAll(kinds);
    kinds.sort(Comparator.comparingInt(k -> KINDS.contains(k) ? KINDS.indexOf(k) : 99));
    List<Member> out = new ArrayList<>();
    if (!declared) {
      if (!t.equals(DataTypes.StringType)) return null;
      if (!scalarsOnly) throw mixed(path, kinds);
      for (String k : kinds) out.add(new Member(k, Set.of(k), FieldPath.type(k)));
      return out;
    }
    if (t.equals(DataTypes.StringType) || t instanceof StructType || t instanceof ArrayType) {
      return null;
    }
    Set<String> fitting = new LinkedHashSet<>();
    for (String k : kinds) if (fits(k, t)) fitting.add(k);
    if (fitting.size() == kinds.size()) return null;
    if (!scalarsOnly) throw mixed(path, kinds);
    if (!fitting.isEmpty()) out.add(new Member(GlueSchema.typeName(t), fitting, t));
    for (String k : kinds) {
      if (!fitting.contains(k)) out.add(new Member(k, Set.of(k), FieldPath.type(k)));
    }
    return out;
  }

  private static RuntimeException mixed(String path, List<String> kinds) {
    return Unsupported.of("a JSON field holding objects or arrays and other values (a choice "
        + "of " + kinds + " in field " + path + ")");
  }

  /** A JSON kind a column type holds as Spark's reader reads it. */
  static boolean fits(String kind, DataType t) {
    boolean fractional = t.equals(DataTypes.DoubleType) || t.equals(DataTypes.FloatType)
        || t instanceof DecimalType;
    return switch (kind) {
      case "long" -> fractional || t.equals(DataTypes.LongType)
          || t.equals(DataTypes.IntegerType) || t.equals(DataTypes.ShortType)
          || t.equals(DataTypes.ByteType);
      case "double" -> fractional;
      case "boolean" -> t.equals(DataTypes.BooleanType);
      default -> false;
    };
  }

  /** The schema with each choice's type: string to parse it, else its marked struct. */
  private static DataType retype(DataType t, List<String> prefix, Map<String, List<Member>> ch,
                                 boolean forParsing) {
    if (!(t instanceof StructType s)) return t;
    List<StructField> out = new ArrayList<>();
    for (StructField f : s.fields()) {
      List<String> path = new ArrayList<>(prefix);
      path.add(f.name());
      List<Member> members = ch.get(FieldPath.join(path));
      if (members == null && f.dataType() instanceof ArrayType a) {
        List<String> elements = new ArrayList<>(prefix);
        elements.add(f.name() + ARRAY);
        out.add(new StructField(f.name(), DataTypes.createArrayType(
            retype(a.elementType(), elements, ch, forParsing), a.containsNull()),
            f.nullable(), f.metadata()));
      } else if (members == null) {
        out.add(new StructField(f.name(), retype(f.dataType(), path, ch, forParsing),
            f.nullable(), f.metadata()));
      } else if (forParsing) {
        out.add(new StructField(f.name(), DataTypes.StringType, true, f.metadata()));
      } else {
        List<StructField> ms = new ArrayList<>();
        for (Member m : members) ms.add(DataTypes.createStructField(m.name(), m.type(), true));
        out.add(new StructField(f.name(), DataTypes.createStructType(ms), true,
            new MetadataBuilder().withMetadata(f.metadata())
                .putBoolean(ChoiceTypes.MARK, true).build()));
      }
    }
    return DataTypes.createStructType(out);
  }

  /**
   * The column at path built from the parsed record and each choice's [kind, text]: the
   * record's (k) or, inside an array, the element's (ke[path][index]).
   */
  private static Column build(Column src, DataType parsedType, List<String> path,
                              Map<String, List<Member>> choices, Column index) {
    String name = FieldPath.join(path);
    List<Member> members = choices.get(name);
    if (members != null) {
      Column entry = index == null ? functions.col("k").getItem(name)
          : functions.col("ke").getItem(name).apply(index); // apply: a column index
      List<Column> cols = new ArrayList<>();
      for (Member m : members) {
        cols.add(functions.when(entry.getItem(0).isin(m.kinds().toArray()),
            entry.getItem(1).cast(m.type())).alias(m.name()));
      }
      // a record without the value has no choice value (make_struct gives no struct)
      return functions.when(entry.isNull().or(entry.getItem(0).equalTo("null")),
          functions.lit(null)).otherwise(functions.struct(cols.toArray(new Column[0])));
    }
    if (parsedType instanceof ArrayType a && index == null
        && holdsChoice(name + ARRAY, choices)) {
      List<String> elements = new ArrayList<>(path);
      elements.set(elements.size() - 1, path.get(path.size() - 1) + ARRAY);
      DataType et = a.elementType();
      return functions.transform(src, (e, i) -> build(e, et, elements, choices, i));
    }
    if (!(parsedType instanceof StructType s) || !holdsChoice(name, choices)) return src;
    List<Column> cols = new ArrayList<>();
    for (StructField f : s.fields()) {
      List<String> child = new ArrayList<>(path);
      child.add(f.name());
      cols.add(build(src.getField(f.name()), f.dataType(), child, choices, index)
          .alias(f.name()));
    }
    return functions.when(src.isNull(), functions.lit(null))
        .otherwise(functions.struct(cols.toArray(new Column[0])));
  }

  private static boolean holdsChoice(String path, Map<String, List<Member>> choices) {
    for (String p : choices.keySet()) if (p.startsWith(path + ".")) return true;
    return false;
  }
}
