package org.cdclab.glue;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.ArrayType;
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

  /** cast:T: every member's value cast to T (a value that does not cast is null). */
  public static Column cast(StructField choice, Column src, DataType to) {
    List<Column> casts = new ArrayList<>();
    for (StructField m : ((StructType) choice.dataType()).fields()) {
      casts.add(src.getField(m.name()).cast(to));
    }
    return functions.coalesce(casts.toArray(new Column[0]));
  }

  /** project:T: the values of type T; the others are null. */
  public static Column project(StructField choice, Column src, String glueType, DataType to) {
    StructField m = member(choice, glueType);
    return m == null ? functions.lit(null).cast(to) : src.getField(m.name()).cast(to);
  }

  /** make_struct (and toDF): the struct itself, no longer a choice. */
  public static Column struct(StructField choice, Column src) {
    List<Column> members = new ArrayList<>(); // a new struct: the alias would keep the mark
    for (StructField m : ((StructType) choice.dataType()).fields()) {
      members.add(src.getField(m.name()).alias(m.name()));
    }
    return functions.when(src.isNull(), functions.lit(null))
        .otherwise(functions.struct(members.toArray(new Column[0]))).alias(choice.name());
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
    resolveInto(f, col(f.name()), f.name(), action, catalog, cols, tail);
  }

  /** The same for the choice f read from src; path names it for match_catalog. */
  public static void resolveInto(StructField f, Column src, String path, String action,
                                 java.util.function.Function<String, DataType> catalog,
                                 List<Column> cols, List<Column> tail) {
    String name = f.name();
    if (action.startsWith("cast:")) {
      cols.add(cast(f, src, FieldPath.type(action.substring(5))).alias(name));
    } else if (action.startsWith("project:")) {
      String t = action.substring(8).trim().toLowerCase();
      cols.add(project(f, src, t, FieldPath.type(t)).alias(name));
    } else if (action.equals("make_struct") || action.equals("KeepAsStruct")) {
      cols.add(struct(f, src));
    } else if (action.equals("make_cols")) {
      boolean first = true;
      for (StructField m : ((StructType) f.dataType()).fields()) {
        Column c = src.getField(m.name()).alias(name + "_" + m.name());
        if (first) cols.add(c);
        else tail.add(c);
        first = false;
      }
    } else if (action.equals("match_catalog")) {
      DataType t = catalog == null ? null : catalog.apply(path);
      if (t == null) {
        throw new IllegalArgumentException("cdclab: resolveChoice match_catalog: the catalog "
            + "table has no column " + path + " for the choice field of that name");
      }
      cols.add(cast(f, src, t).alias(name));
    } else {
      throw Unsupported.of("resolveChoice action " + action);
    }
  }

  /** The Glue paths of the choice fields, top-level and inside structs. */
  public static List<String> choiceFields(StructType t) {
    List<String> out = new ArrayList<>();
    collect(t, new ArrayList<>(), out);
    return out;
  }

  private static void collect(StructType t, List<String> prefix, List<String> out) {
    for (StructField f : t.fields()) {
      List<String> path = new ArrayList<>(prefix);
      path.add(f.name());
      if (isChoice(f)) {
        out.add(FieldPath.join(path));
      } else if (f.dataType() instanceof StructType s) {
        collect(s, path, out);
      } else if (f.dataType() instanceof ArrayType a && a.elementType() instanceof StructType s) {
        path.set(path.size() - 1, f.name() + ARRAY);
        collect(s, path, out);
      }
    }
  }

  /** What replaces the field at a nested path: columns in its place and at its struct's end. */
  public interface Leaf {
    void resolve(StructField f, Column src, List<Column> cols, List<Column> tail);
  }

  /** The field of a struct by name, exact or else ignoring case (Glue's paths), or null. */
  public static StructField field(StructType t, String name) {
    StructField loose = null;
    for (StructField f : t.fields()) {
      if (f.name().equals(name)) return f;
      if (loose == null && f.name().equalsIgnoreCase(name)) loose = f;
    }
    return loose;
  }

  private static final String ARRAY = "[]"; // a path segment's suffix: the array's elements

  private static String bare(String segment) {
    return segment.endsWith(ARRAY) ? segment.substring(0, segment.length() - 2) : segment;
  }

  /** The field at a path of structs (`list[]` for an array's elements), or null. */
  public static StructField fieldAt(StructType t, List<String> segments) {
    StructField f = null;
    DataType cur = t;
    for (String seg : segments) {
      if (!(cur instanceof StructType s) || (f = field(s, bare(seg))) == null) return null;
      cur = f.dataType();
      if (seg.endsWith(ARRAY)) {
        if (!(cur instanceof ArrayType a)) return null;
        cur = a.elementType();
      }
    }
    return f;
  }

  /**
   * The column of the top-level field top (read as src) with the field at path (its first
   * segment names top) replaced by what leaf gives; null structs and arrays stay null.
   */
  public static Column rebuildTop(Column src, StructField top, List<String> path, Leaf leaf) {
    List<String> rest = path.subList(1, path.size());
    if (path.get(0).endsWith(ARRAY)) {
      StructType element = (StructType) ((ArrayType) top.dataType()).elementType();
      return functions.transform(src, e -> rebuild(e, element, rest, leaf));
    }
    return rebuild(src, (StructType) top.dataType(), rest, leaf);
  }

  /**
   * The struct src (of type t) with the field at rest (a path below it) replaced by what leaf
   * gives; a null struct stays null.
   */
  public static Column rebuild(Column src, StructType t, List<String> rest, Leaf leaf) {
    StructField target = field(t, bare(rest.get(0)));
    List<Column> cols = new ArrayList<>();
    List<Column> tail = new ArrayList<>();
    for (StructField f : t.fields()) {
      Column c = src.getField(f.name());
      if (f != target) {
        cols.add(c.alias(f.name()));
      } else if (rest.size() == 1) {
        leaf.resolve(f, c, cols, tail);
      } else {
        cols.add(rebuildTop(c, f, rest, leaf).alias(f.name()));
      }
    }
    cols.addAll(tail);
    return functions.when(src.isNull(), functions.lit(null))
        .otherwise(functions.struct(cols.toArray(new Column[0])));
  }

  /**
   * The type built by rebuild with the choice marks of the original's untouched fields put
   * back (Spark's struct() drops nested field metadata); skip is the path resolved.
   */
  public static DataType remark(DataType built, DataType original, List<String> skip) {
    if (built instanceof ArrayType b && original instanceof ArrayType o) {
      return DataTypes.createArrayType(remark(b.elementType(), o.elementType(), skip),
          b.containsNull());
    }
    if (!(built instanceof StructType b) || !(original instanceof StructType o)) return built;
    List<StructField> out = new ArrayList<>();
    for (StructField f : b.fields()) {
      StructField was = field(o, f.name());
      boolean onPath = skip != null && !skip.isEmpty()
          && bare(skip.get(0)).equalsIgnoreCase(f.name());
      List<String> below = onPath ? skip.subList(1, skip.size()) : null;
      if (was != null && isChoice(was) && !(onPath && below.isEmpty())
          && was.dataType().catalogString().equals(f.dataType().catalogString())) {
        out.add(new StructField(f.name(), f.dataType(), f.nullable(), marked()));
      } else {
        DataType inner = was == null ? f.dataType() : remark(f.dataType(), was.dataType(), below);
        out.add(new StructField(f.name(), inner, f.nullable(), f.metadata()));
      }
    }
    return DataTypes.createStructType(out);
  }
}
