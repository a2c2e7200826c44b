package org.cdclab.glue;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.MetadataBuilder;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * Glue's ChoiceType over a Spark DataFrame: a field whose records hold values of more than
 * one type (AWS's resolve_choice sample: `provider id: choice` of `long` and `string`) is a
 * struct column with one member per type, named by Glue's type name, the member of the
 * value's type set and the others null; its StructField metadata marks it. schema() shows
 * it as a choice; resolveChoice turns it into what AWS documents for cast, project,
 * make_cols, make_struct and match_catalog.
 */
public final class ChoiceTypes {
  public static final String MARK = "cdclab.choice";

  private ChoiceTypes() {}

  public static boolean isChoice(StructField f) {
    return f.metadata().contains(MARK) && f.dataType() instanceof StructType;
  }

  public static Metadata marked() {
    return new MetadataBuilder().putBoolean(MARK, true).build();
  }

  /** The member of a choice named by Glue's type name, or null. */
  public static StructField member(StructField choice, String glueType) {
    for (StructField m : ((StructType) choice.dataType()).fields()) {
      if (m.name().equals(glueType)) return m;
    }
    return null;
  }

  private static Column col(String name) {
    return functions.col("`" + name.replace("`", "``") + "`");
  }

  /**
   * A text column read against a catalog type (Glue's CSV reader types each value): values
   * the type parses are of that type, the others stay strings. If any value does not parse
   * the field is choice(type, string) (the resolve_choice sample's `provider id`); else it
   * is the catalog's type. One aggregation finds the columns holding such values.
   */
  public static Dataset<Row> fromText(Dataset<Row> df, StructType catalog) {
    List<StructField> typed = new ArrayList<>();
    for (StructField f : catalog.fields()) {
      if (!f.dataType().equals(DataTypes.StringType)) typed.add(f);
    }
    boolean[] mixed = new boolean[typed.size()];
    if (!typed.isEmpty()) {
      List<Column> aggs = new ArrayList<>();
      for (StructField f : typed) aggs.add(functions.max(unparsed(f)));
      Row r = df.agg(aggs.get(0), aggs.subList(1, aggs.size()).toArray(new Column[0])).first();
      for (int i = 0; i < typed.size(); i++) mixed[i] = !r.isNullAt(i) && r.getBoolean(i);
    }
    List<Column> cols = new ArrayList<>();
    for (String name : df.columns()) {
      StructField f = field(catalog, name);
      int i = f == null ? -1 : typed.indexOf(f);
      if (f == null || f.dataType().equals(DataTypes.StringType)) {
        cols.add(col(name));
      } else if (!mixed[i]) {
        cols.add(col(name).cast(f.dataType()).alias(name));
      } else {
        String typeName = GlueSchema.typeName(f.dataType());
        Column choice = functions.struct(col(name).cast(f.dataType()).alias(typeName),
            functions.when(unparsed(f), col(name)).alias("string"));
        cols.add(choice.as(name, marked()));
      }
    }
    return df.select(cols.toArray(new Column[0]));
  }

  private static Column unparsed(StructField f) {
    Column raw = col(f.name());
    return raw.isNotNull().and(raw.notEqual("")).and(raw.cast(f.dataType()).isNull());
  }

  private static StructField field(StructType t, String name) {
    for (StructField f : t.fields()) if (f.name().equals(name)) return f;
    return null;
  }

  /** cast:T: every member's value cast to T (a value that does not cast is null). */
  public static Column cast(StructField choice, DataType to) {
    List<Column> casts = new ArrayList<>();
    for (StructField m : ((StructType) choice.dataType()).fields()) {
      casts.add(col(choice.name()).getField(m.name()).cast(to));
    }
    return functions.coalesce(casts.toArray(new Column[0]));
  }

  /** project:T: the values of type T; the others are null. */
  public static Column project(StructField choice, String glueType, DataType to) {
    StructField m = member(choice, glueType);
    return m == null ? functions.lit(null).cast(to)
        : col(choice.name()).getField(m.name()).cast(to);
  }

  /** make_struct (and toDF): the struct itself, no longer a choice. */
  public static Column struct(StructField choice) {
    List<Column> members = new ArrayList<>(); // a new struct: the alias would keep the mark
    for (StructField m : ((StructType) choice.dataType()).fields()) {
      members.add(col(choice.name()).getField(m.name()).alias(m.name()));
    }
    return functions.struct(members.toArray(new Column[0])).alias(choice.name());
  }

  /**
   * Resolves every top-level choice of the frame with one action (resolveChoice's choice=,
   * toDF): make_cols gives name_type columns, the first in the field's place and the rest
   * at the end, as AWS's resolve_choice sample prints them.
   */
  public static Dataset<Row> resolveAll(Dataset<Row> df, String action,
                                        java.util.function.Function<String, DataType> catalog) {
    List<Column> cols = new ArrayList<>();
    List<Column> tail = new ArrayList<>();
    for (StructField f : df.schema().fields()) {
      if (!isChoice(f)) {
        cols.add(col(f.name()));
        continue;
      }
      resolveInto(f, action, catalog, cols, tail);
    }
    cols.addAll(tail);
    return df.select(cols.toArray(new Column[0]));
  }

  /** One choice field resolved by action, into cols (in place) and tail (appended). */
  public static void resolveInto(StructField f, String action,
                                 java.util.function.Function<String, DataType> catalog,
                                 List<Column> cols, List<Column> tail) {
    String name = f.name();
    if (action.startsWith("cast:")) {
      cols.add(cast(f, FieldPath.type(action.substring(5))).alias(name));
    } else if (action.startsWith("project:")) {
      String t = action.substring(8).trim().toLowerCase();
      cols.add(project(f, t, FieldPath.type(t)).alias(name));
    } else if (action.equals("make_struct") || action.equals("KeepAsStruct")) {
      cols.add(struct(f));
    } else if (action.equals("make_cols")) {
      boolean first = true;
      for (StructField m : ((StructType) f.dataType()).fields()) {
        Column c = col(name).getField(m.name()).alias(name + "_" + m.name());
        if (first) cols.add(c);
        else tail.add(c);
        first = false;
      }
    } else if (action.equals("match_catalog")) {
      DataType t = catalog == null ? null : catalog.apply(name);
      if (t == null) {
        throw new IllegalArgumentException("cdclab: resolveChoice match_catalog: the catalog "
            + "table has no column " + name + " for the choice field of that name");
      }
      cols.add(cast(f, t).alias(name));
    } else {
      throw Unsupported.of("resolveChoice action " + action);
    }
  }

  // --- JSON: a top-level field whose records hold scalars of different JSON types ---------
  private static final List<String> JSON_KINDS = List.of("long", "double", "boolean", "string");
  private static final com.fasterxml.jackson.databind.ObjectMapper JSON =
      new com.fasterxml.jackson.databind.ObjectMapper();

  /** Each top-level key of a JSON line: [its JSON kind, its scalar text]. */
  static java.util.Map<String, List<String>> kinds(String line) {
    java.util.Map<String, List<String>> out = new java.util.HashMap<>();
    if (line == null) return out;
    com.fasterxml.jackson.databind.JsonNode node;
    try {
      node = JSON.readTree(line);
    } catch (java.io.IOException e) {
      return out; // Spark's reader has already made it a corrupt record
    }
    if (node == null || !node.isObject()) return out;
    node.fields().forEachRemaining(e -> {
      com.fasterxml.jackson.databind.JsonNode v = e.getValue();
      String kind = v.isNull() ? "null" : v.isIntegralNumber() ? "long" : v.isNumber()
          ? "double" : v.isBoolean() ? "boolean" : v.isTextual() ? "string"
          : v.isObject() ? "struct" : "array";
      out.put(e.getKey(), List.of(kind, v.isValueNode() ? v.asText() : v.toString()));
    });
    return out;
  }

  /**
   * A JSON source read by Spark's reader (df) over the same files: a top-level field Spark
   * typed string whose records hold strings and numbers or booleans becomes a choice, as
   * Glue's reader makes it (Spark widens such a field to string). One pass over the lines
   * finds the kinds; a second reads the choice fields' values by kind.
   */
  public static Dataset<Row> fromJson(org.apache.spark.sql.SparkSession spark, Dataset<Row> df,
                                      String[] files) {
    List<String> candidates = new ArrayList<>();
    for (StructField f : df.schema().fields()) {
      if (f.name().equals("_corrupt_record")) return df;
      if (f.dataType().equals(DataTypes.StringType)) candidates.add(f.name());
    }
    if (candidates.isEmpty()) return df;
    spark.udf().register("cdclab_json_kinds",
        (org.apache.spark.sql.api.java.UDF1<String, java.util.Map<String, List<String>>>)
            ChoiceTypes::kinds,
        DataTypes.createMapType(DataTypes.StringType,
            DataTypes.createArrayType(DataTypes.StringType)));
    Dataset<Row> text = spark.read().text(files)
        .where(functions.trim(functions.col("value")).notEqual(""));
    Column kindsOf = functions.callUDF("cdclab_json_kinds", functions.col("value"));
    List<Row> seen = text.select(functions.explode(kindsOf).as(new String[] {"k", "v"}))
        .where(functions.col("k").isin(candidates.toArray())
            .and(functions.col("v").getItem(0).notEqual("null")))
        .groupBy("k").agg(functions.collect_set(functions.col("v").getItem(0))).collectAsList();
    java.util.Map<String, List<String>> choices = new java.util.HashMap<>();
    for (Row r : seen) {
      List<String> types = new ArrayList<>(r.<String>getList(1));
      if (types.size() < 2) continue;
      if (!JSON_KINDS.containsAll(types)) {
        throw Unsupported.of("a JSON field holding objects or arrays and other values (a "
            + "choice of " + types + " in field " + r.getString(0) + ")");
      }
      types.sort(java.util.Comparator.comparingInt(JSON_KINDS::indexOf));
      choices.put(r.getString(0), types);
    }
    if (choices.isEmpty()) return df;
    Dataset<Row> parsed = text.select(
        functions.from_json(functions.col("value"), df.schema()).as("r"), kindsOf.as("k"));
    List<Column> cols = new ArrayList<>();
    for (StructField f : df.schema().fields()) {
      Column plain = functions.col("r").getField(f.name());
      List<String> types = choices.get(f.name());
      if (types == null) {
        cols.add(plain.alias(f.name()));
        continue;
      }
      Column entry = functions.col("k").getItem(f.name());
      List<Column> members = new ArrayList<>();
      for (String t : types) {
        members.add(functions.when(entry.getItem(0).equalTo(t),
            entry.getItem(1).cast(FieldPath.type(t))).alias(t));
      }
      cols.add(functions.struct(members.toArray(new Column[0])).as(f.name(), marked()));
    }
    return parsed.select(cols.toArray(new Column[0]));
  }

  /** The names of top-level choice fields. */
  public static List<String> choiceFields(StructType t) {
    List<String> out = new ArrayList<>();
    for (StructField f : t.fields()) if (isChoice(f)) out.add(f.name());
    return out;
  }
}
