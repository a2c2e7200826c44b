package com.amazonaws.services.glue;

import com.amazonaws.services.glue.errors.CallSite;
import com.amazonaws.services.glue.util.JsonOptions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.cdclab.glue.CatalogTable;
import org.cdclab.glue.ChoiceTypes;
import org.cdclab.glue.ExplicitNulls;
import org.cdclab.glue.FieldPath;
import org.cdclab.glue.GlueSchema;
import org.cdclab.glue.Joins;
import org.cdclab.glue.Mapping;
import org.cdclab.glue.Nesting;
import org.cdclab.glue.PythonRecords;
import org.cdclab.glue.Relationalize;
import org.cdclab.glue.SpigotOptions;
import org.cdclab.glue.Unbox;
import org.cdclab.glue.Unsupported;
import scala.Option;
import scala.collection.JavaConverters;
import scala.collection.Seq;

/**
 * A DynamicFrame over a Spark DataFrame. A field whose records hold values of several types
 * is a ChoiceType, kept as a marked struct column (org.cdclab.glue.ChoiceTypes) that
 * schema() shows as a choice and resolveChoice/toDF resolve as Glue does; error records
 * come only from Python functions (map/filter).
 */
public class DynamicFrame {
  private final Dataset<Row> df;
  private final GlueContext glue;
  private final JavaRDD<Map<String, Object>> errorRecords; // from Python functions, or null
  private final long errorCount;
  // JSON records carry only the keys they have; Spark's rows cannot tell a missing key from
  // a null, so the records of a sparse frame hand Python only their non-null fields, and
  // their explicit nulls too where `tracked` (df's rows with ExplicitNulls' hidden column,
  // never shown to the user) is known
  private boolean sparse;
  private Dataset<Row> tracked;
  private String name;

  public DynamicFrame(Dataset<Row> df, GlueContext glue) {
    this(df, glue, null, 0L);
  }

  private DynamicFrame(Dataset<Row> df, GlueContext glue,
                       JavaRDD<Map<String, Object>> errorRecords, long errorCount) {
    this.df = df;
    this.glue = glue;
    this.errorRecords = errorRecords;
    this.errorCount = errorCount;
  }

  public static DynamicFrame apply(Dataset<Row> df, GlueContext glue) {
    return new DynamicFrame(df, glue);
  }

  public static DynamicFrame emptyDynamicFrame(GlueContext glue) {
    return new DynamicFrame(glue.sparkSession().emptyDataFrame(), glue);
  }

  public Dataset<Row> df() {
    return df;
  }

  /** A transform whose rows' explicit nulls are not followed: they look absent after it. */
  private DynamicFrame with(Dataset<Row> next) {
    return with(next, null);
  }

  /** A transform that maps tracked's rows as it maps df's (nextTracked: null if not). */
  private DynamicFrame with(Dataset<Row> next, Dataset<Row> nextTracked) {
    DynamicFrame out = new DynamicFrame(next, glue, errorRecords, errorCount); // errors add up
    out.sparse = sparse;
    out.tracked = nextTracked;
    return out;
  }

  /** A frame whose records carry only their non-null fields (a JSON source's). */
  public static DynamicFrame sparse(Dataset<Row> df, GlueContext glue) {
    return sparse(df, null, glue);
  }

  /** As sparse, with the records' explicit nulls (tracked: df's rows with the hidden
   * column of org.cdclab.glue.ExplicitNulls, or null). */
  public static DynamicFrame sparse(Dataset<Row> df, Dataset<Row> tracked, GlueContext glue) {
    DynamicFrame out = new DynamicFrame(df, glue);
    out.sparse = true;
    out.tracked = tracked;
    return out;
  }

  private static <T> List<T> list(Seq<T> seq) {
    return seq == null ? List.of() : JavaConverters.seqAsJavaList(seq);
  }

  /** toDF: choices the specs do not resolve become structs of their types (Glue's
   * ResolveOption default, KeepAsStruct). */
  public Dataset<Row> toDF(Seq<ResolveSpec> specs) {
    Dataset<Row> out = ChoiceTypes.resolveAll(resolve(df, list(specs), null), "make_struct", null);
    for (String path : ChoiceTypes.choiceFields(out.schema())) { // those inside structs
      out = resolveNested(out, FieldPath.split(path), path, "make_struct", null);
    }
    return out;
  }

  public long count() {
    return df.count();
  }

  /**
   * Glue computes a DynamicFrame's schema from its records: a field that is null in every
   * record has type null (DropNullFields drops those). Spark's schema gives each such field
   * a type, so one pass finds them; a frame without records keeps Spark's types.
   */
  public GlueSchema schema() {
    List<List<String>> paths = new ArrayList<>();
    structPaths(df.schema(), new ArrayList<>(), paths);
    if (paths.isEmpty()) return new GlueSchema(df.schema());
    List<Column> aggs = new ArrayList<>();
    aggs.add(functions.count(functions.lit(1)));
    for (List<String> p : paths) {
      aggs.add(functions.max(df.col(FieldPath.sparkName(p)).isNotNull()));
    }
    Row r = df.agg(aggs.get(0), toColumnSeq(aggs.subList(1, aggs.size()))).first();
    if (r.getLong(0) == 0) return new GlueSchema(df.schema());
    java.util.Set<List<String>> allNull = new java.util.HashSet<>();
    for (int i = 0; i < paths.size(); i++) {
      if (r.isNullAt(i + 1) || !r.getBoolean(i + 1)) allNull.add(paths.get(i));
    }
    return new GlueSchema(nullTyped(df.schema(), new ArrayList<>(), allNull));
  }

  private static void structPaths(StructType t, List<String> prefix, List<List<String>> out) {
    for (StructField f : t.fields()) {
      List<String> p = new ArrayList<>(prefix);
      p.add(f.name());
      out.add(p);
      if (f.dataType() instanceof StructType st) structPaths(st, p, out);
    }
  }

  private static StructType nullTyped(StructType t, List<String> prefix,
                                      java.util.Set<List<String>> allNull) {
    List<StructField> out = new ArrayList<>();
    for (StructField f : t.fields()) {
      List<String> p = new ArrayList<>(prefix);
      p.add(f.name());
      DataType type = allNull.contains(p) ? DataTypes.NullType
          : f.dataType() instanceof StructType st ? nullTyped(st, p, allNull) : f.dataType();
      out.add(new StructField(f.name(), type, f.nullable(), f.metadata()));
    }
    return DataTypes.createStructType(out);
  }

  private static Seq<Column> toColumnSeq(List<Column> cols) {
    return JavaConverters.asScalaBuffer(cols).toSeq();
  }

  /** show(): each record as JSON, like Glue's DynamicFrame.show. */
  public String showString(int numRows) {
    StringBuilder sb = new StringBuilder();
    for (String line : df.toJSON().takeAsList(numRows)) sb.append(line).append('\n');
    return sb.toString();
  }

  public int getNumPartitions() {
    return df.rdd().getNumPartitions();
  }

  public long errorsCount() {
    return errorCount;
  }

  public long stageErrorsCount() {
    return errorRecords == null ? 0L : errorCount;
  }

  public void assertErrorThreshold() {}

  /** Error records of map/filter: the error message and the record as JSON. */
  public DynamicFrame errorsAsDynamicFrame() {
    if (errorRecords == null) return emptyDynamicFrame(glue);
    StructType schema = new StructType().add("errorMessage", "string").add("record", "string");
    JavaRDD<Row> rows = errorRecords.map(r -> RowFactory.create(
        String.valueOf(r.get("errorMessage")), PythonRecords.recordJson(r)));
    return new DynamicFrame(glue.sparkSession().createDataFrame(rows, schema), glue);
  }

  public DynamicFrame dropFields(Seq<String> paths, String ctx, CallSite cs, long t1, long t2) {
    // a dropped field's paths may stay in tracked: toPython looks up only fields it has
    return with(dropped(df, list(paths)), tracked == null ? null : dropped(tracked, list(paths)));
  }

  private static Dataset<Row> dropped(Dataset<Row> in, List<String> paths) {
    Dataset<Row> out = in;
    for (String path : paths) {
      List<String> seg = FieldPath.split(path);
      if (seg.size() == 1) {
        out = out.drop(out.col(FieldPath.sparkName(seg)));
      } else {
        String top = seg.get(0);
        String rest = FieldPath.sparkName(seg.subList(1, seg.size()));
        out = out.withColumn(top, out.col(FieldPath.sparkName(seg.subList(0, 1))).dropFields(
            toSeq(List.of(rest.replace("`", "")))));
      }
    }
    return out;
  }

  public DynamicFrame selectFields(Seq<String> paths, String ctx, CallSite cs, long t1, long t2) {
    List<Column> cols = new ArrayList<>();
    for (String path : list(paths)) {
      List<String> seg = FieldPath.split(path);
      if (seg.size() != 1) throw Unsupported.of("select_fields on a nested path (" + path + ")");
      if (has(df.schema(), seg.get(0))) cols.add(functions.col(FieldPath.sparkName(seg)));
    }
    Dataset<Row> next = tracked == null ? null : tracked.select(
        concat(cols, ExplicitNulls.column()).toArray(new Column[0]));
    return with(df.select(cols.toArray(new Column[0])), next);
  }

  private static List<Column> concat(List<Column> cols, Column last) {
    List<Column> out = new ArrayList<>(cols);
    out.add(last);
    return out;
  }

  public DynamicFrame renameField(String oldName, String newName, String ctx, CallSite cs, long t1,
                                  long t2) {
    List<String> from = FieldPath.split(oldName);
    List<String> to = FieldPath.split(newName);
    if (from.size() == 1 && to.size() == 1) {
      StructField f = field(df.schema(), from.get(0));
      List<String> actual = f == null ? from : List.of(f.name());
      Dataset<Row> next = tracked == null || ExplicitNulls.COLUMN.equalsIgnoreCase(to.get(0))
          ? null : tracked.withColumnRenamed(from.get(0), to.get(0))
              .withColumn(ExplicitNulls.COLUMN, ExplicitNulls.renamed(actual, to));
      return with(df.withColumnRenamed(from.get(0), to.get(0)), next);
    }
    throw Unsupported.of("rename_field on a nested path (" + oldName + " -> " + newName + ")");
  }

  public DynamicFrame applyMapping(Seq<MappingSpec> mappings, boolean caseSensitive, String ctx,
                                   CallSite cs, long t1, long t2) {
    Mapping out = new Mapping(); // a dotted target nests (org.cdclab.glue.Mapping)
    List<List<String>> sources = new ArrayList<>();
    List<List<String>> targets = new ArrayList<>();
    for (MappingSpec m : list(mappings)) {
      List<String> source = FieldPath.split(m.sourcePath);
      if (!resolves(source)) continue; // a field no record has: no output field, as on Glue
      out.put(FieldPath.split(m.targetPath),
          functions.col(FieldPath.sparkName(source)).cast(FieldPath.type(m.targetType)),
          m.targetPath);
      sources.add(source);
      targets.add(FieldPath.split(m.targetPath));
    }
    Dataset<Row> next = tracked == null ? null : tracked.select(concat(List.of(out.columns()),
        ExplicitNulls.mapped(sources, targets)).toArray(new Column[0]));
    return with(df.select(out.columns()), next);
  }

  public DynamicFrame resolveChoice(Seq<ResolveSpec> specs, Option<String> choice,
                                    Option<String> database, Option<String> tableName, String ctx,
                                    CallSite cs, long t1, long t2, Option<String> catalogId) {
    java.util.function.Function<String, DataType> catalog = name -> {
      if (!database.isDefined() || !tableName.isDefined()) {
        throw new IllegalArgumentException("cdclab: resolveChoice match_catalog needs "
            + "database and table_name");
      }
      CatalogTable t = CatalogTable.resolve(database.get(), tableName.get(),
          catalogId.isDefined() ? catalogId.get() : null, "resolveChoice match_catalog on");
      StructField f = ChoiceTypes.fieldAt(DataSource.schema(t.columns()), FieldPath.split(name));
      return f == null ? null : f.dataType();
    };
    Dataset<Row> out = resolve(df, list(specs), catalog);
    if (choice.isDefined()) {
      String action = choice.get();
      if (!action.startsWith("cast:") && !action.startsWith("project:")
          && !List.of("make_cols", "make_struct", "match_catalog").contains(action)) {
        throw Unsupported.of("resolveChoice choice " + action);
      }
      // AWS: choice is "a single resolution for all ChoiceTypes"; other fields stay
      out = ChoiceTypes.resolveAll(out, action, catalog);
      for (String path : ChoiceTypes.choiceFields(out.schema())) { // those inside structs
        out = resolveNested(out, FieldPath.split(path), path, action, catalog);
      }
    }
    return with(out);
  }

  private static Dataset<Row> resolve(Dataset<Row> in, List<ResolveSpec> specs,
                                      java.util.function.Function<String, DataType> catalog) {
    Dataset<Row> out = in;
    for (ResolveSpec s : specs) {
      List<String> seg = FieldPath.split(s.path);
      String action = s.action;
      StructField choice = seg.size() == 1 ? field(out.schema(), seg.get(0)) : null;
      if (choice != null && ChoiceTypes.isChoice(choice)) {
        List<Column> cols = new ArrayList<>();
        List<Column> tail = new ArrayList<>();
        for (StructField f : out.schema().fields()) {
          if (f == choice) {
            ChoiceTypes.resolveInto(f, action, catalog, cols, tail);
          } else {
            cols.add(out.col("`" + f.name().replace("`", "``") + "`"));
          }
        }
        cols.addAll(tail);
        out = out.select(cols.toArray(new Column[0]));
      } else if (seg.size() > 1 && ChoiceTypes.fieldAt(out.schema(), seg) != null) {
        out = resolveNested(out, seg, s.path, action, catalog);
      } else if (action.startsWith("cast:") || action.startsWith("project:")) {
        if (seg.size() != 1) return out; // no such field: nothing to resolve
        String type = action.substring(action.indexOf(':') + 1);
        if (has(out.schema(), seg.get(0))) {
          out = out.withColumn(seg.get(0), out.col(FieldPath.sparkName(seg)).cast(FieldPath.type(type)));
        }
      } else if (!List.of("make_cols", "make_struct", "match_catalog", "KeepAsStruct")
          .contains(action)) {
        throw Unsupported.of("resolveChoice action " + action);
      }
    }
    return out;
  }

  /**
   * A spec on a path inside structs (`provider.id`): a choice there is resolved as at the
   * top level, its new fields in its struct; cast:/project: cast a field that is no choice.
   */
  private static Dataset<Row> resolveNested(Dataset<Row> in, List<String> seg, String path,
      String action, java.util.function.Function<String, DataType> catalog) {
    StructField leaf = ChoiceTypes.fieldAt(in.schema(), seg);
    boolean cast = action.startsWith("cast:") || action.startsWith("project:");
    if (!ChoiceTypes.isChoice(leaf)) {
      if (!cast) {
        if (List.of("make_cols", "make_struct", "match_catalog", "KeepAsStruct")
            .contains(action)) {
          return in;
        }
        throw Unsupported.of("resolveChoice action " + action);
      }
    }
    DataType to = cast && !ChoiceTypes.isChoice(leaf)
        ? FieldPath.type(action.substring(action.indexOf(':') + 1)) : null;
    StructField top = ChoiceTypes.fieldAt(in.schema(), seg.subList(0, 1));
    Column src = in.col("`" + top.name().replace("`", "``") + "`");
    Column rebuilt = ChoiceTypes.rebuildTop(src, top, seg, (f, c, cols, tail) -> {
          if (to != null) cols.add(c.cast(to).alias(f.name()));
          else ChoiceTypes.resolveInto(f, c, path, action, catalog, cols, tail);
        });
    Dataset<Row> out = in.withColumn(top.name(), rebuilt);
    DataType marked = ChoiceTypes.remark(out.schema().apply(top.name()).dataType(),
        top.dataType(), seg.subList(1, seg.size()));  // below top (its elements, if an array)
    return out.withColumn(top.name(), out.col("`" + top.name().replace("`", "``") + "`")
        .cast(marked));
  }

  private static StructField field(StructType schema, String name) {
    for (StructField f : schema.fields()) if (f.name().equalsIgnoreCase(name)) return f;
    return null;
  }

  public DynamicFrame union(DynamicFrame other, String ctx, CallSite cs, long t1, long t2) {
    return with(df.unionByName(other.df, true));
  }

  public DynamicFrame repartition(int n, String ctx, CallSite cs, long t1, long t2) {
    return with(df.repartition(n), tracked == null ? null : tracked.repartition(n));
  }

  public DynamicFrame coalesce(int n, boolean shuffle, String ctx, CallSite cs, long t1, long t2) {
    return with(shuffle ? df.repartition(n) : df.coalesce(n),
        tracked == null ? null : shuffle ? tracked.repartition(n) : tracked.coalesce(n));
  }

  /** join / Join.apply: fields both frames have meet as Glue's do (org.cdclab.glue.Joins). */
  public DynamicFrame join(Seq<String> keys1, Seq<String> keys2, DynamicFrame other, String ctx,
                           CallSite cs, long t1, long t2) {
    return with(Joins.inner(df, other.df, list(keys1), list(keys2)));
  }

  /**
   * spigot: a passthrough that writes a sample of the records to path as JSON lines
   * (org.cdclab.glue.SpigotOptions: each record kept with probability prob, at most topk).
   * The sample is written as Glue's S3 sink writes JSON (appended, Glue's object names), so
   * a spigot at a bucket's root deletes nothing; the frame returned is this one.
   */
  public DynamicFrame spigot(String path, JsonOptions options, String ctx, CallSite cs, long t1,
                             long t2) {
    if (path == null || path.isBlank()) {
      throw new IllegalArgumentException("cdclab: spigot needs a path to write the sample to");
    }
    SpigotOptions o = SpigotOptions.of(options);
    Dataset<Row> sample = o.prob() < 1 ? df.sample(false, o.prob()) : df;
    new DataSink(glue, new JsonOptions(Map.of("path", path)), path, "json")
        .pyWriteDynamicFrame(with(sample.limit(o.topk())), "spigot", "");
    return this;
  }

  // --- Python record functions: map, filter, mapPartitions (org.cdclab.glue.PythonRecords) --
  public JavaRDD<byte[]> javaToPython() {
    return PythonRecords.toPython(tracked != null ? tracked : df, sparse);
  }

  public static DynamicFrame fromPythonRDD(DynamicFrame source, JavaRDD<byte[]> pickled,
                                           GlueContext glue, String ctx, String name, CallSite cs,
                                           long stageThreshold, long totalThreshold) {
    PythonRecords.Result r = PythonRecords.fromPython(glue.sparkSession(), source.df.schema(),
        pickled, stageThreshold, source.sparse);
    DynamicFrame out = new DynamicFrame(r.rows(), source.glue, r.errors(),
        source.errorCount + r.errorCount());
    out.sparse = source.sparse; // a key the function left out is absent, not null
    out.tracked = r.tracked(); // a key it set to None is present, with None
    return out;
  }

  // --- not implemented locally: a named error ---------------------------------------------

  public DynamicFrame pyWithFrameSchema(String schema) {
    throw Unsupported.of("DynamicFrame.with_frame_schema");
  }

  /** split_fields: [the given paths, everything else] (org.cdclab.glue.Nesting). */
  public Seq<DynamicFrame> splitFields(Seq<String> paths, String ctx, CallSite cs, long t1,
                                       long t2) {
    List<List<String>> split = new ArrayList<>();
    for (String p : list(paths)) split.add(FieldPath.split(p));
    return toSeq(List.of(with(Nesting.project(df, split, true)),
        with(Nesting.project(df, split, false))));
  }

  /**
   * split_rows: [records for which every comparison holds, the rest]. The n-th operator
   * (!=, =, <=, <, >=, >) compares the n-th path with the n-th value, as AWS's Scala
   * reference documents; a null or missing field satisfies no comparison.
   */
  public Seq<DynamicFrame> splitRows(Seq<String> paths, Seq<Object> values, Seq<String> operators,
                                     String ctx, CallSite cs, long t1, long t2) {
    List<String> p = list(paths);
    List<Object> v = list(values);
    List<String> o = list(operators);
    if (p.size() != v.size() || p.size() != o.size()) {
      throw new IllegalArgumentException("cdclab: split_rows needs as many values and "
          + "operators as paths");
    }
    Column all = functions.lit(true);
    for (int i = 0; i < p.size(); i++) {
      List<String> seg = FieldPath.split(p.get(i));
      Column c = resolves(seg) ? df.col(FieldPath.sparkName(seg)) : functions.lit(null);
      Object value = v.get(i);
      Column cmp = switch (o.get(i)) {
        case "=" -> c.equalTo(value);
        case "!=" -> c.notEqual(value);
        case "<" -> c.lt(value);
        case "<=" -> c.leq(value);
        case ">" -> c.gt(value);
        case ">=" -> c.geq(value);
        default -> throw new IllegalArgumentException("cdclab: split_rows operator " + o.get(i)
            + " is not one of !=, =, <=, <, >=, >");
      };
      all = all.and(functions.coalesce(cmp, functions.lit(false)));
    }
    return toSeq(List.of(with(df.where(all)), with(df.where(functions.not(all)))));
  }

  /** unbox: a JSON or CSV string field parsed into a struct (org.cdclab.glue.Unbox). */
  public DynamicFrame unbox(String path, String format, String options, String ctx, CallSite cs,
                            long t1, long t2) {
    return with(Unbox.apply(glue.sparkSession(), df, path, format, options));
  }

  /** unnest: structs flattened into dotted top-level names (org.cdclab.glue.Nesting). */
  public DynamicFrame unnest(String ctx, CallSite cs, long t1, long t2) {
    return with(Nesting.unnest(df));
  }

  public Object unnestDDBJson(Object a, Object b, Object c, Object d) {
    throw Unsupported.of("DynamicFrame.unnest_ddb_json");
  }

  public Object simplifyDDBJson() {
    throw Unsupported.of("DynamicFrame.simplify_ddb_json");
  }

  /** Relationalize (org.cdclab.glue.Relationalize): the root table and one per array. */
  public Seq<DynamicFrame> relationalize(String rootTableName, String stagingPath,
                                         JsonOptions options, String ctx, CallSite cs, long t1,
                                         long t2) {
    List<DynamicFrame> out = new ArrayList<>();
    for (Map.Entry<String, Dataset<Row>> e : Relationalize.apply(df, rootTableName)) {
      DynamicFrame frame = with(e.getValue());
      frame.name = e.getKey();
      out.add(frame);
    }
    return JavaConverters.asScalaBuffer(out).toSeq();
  }

  /** The frame's name (relationalize names its tables; others have none). */
  public String getName() {
    return name == null ? "" : name;
  }

  public Object mergeDynamicFrames(Object a, Object b, Object c, Object d, Object e, Object f,
                                   Object g) {
    throw Unsupported.of("DynamicFrame.mergeDynamicFrame");
  }

  private boolean resolves(List<String> segments) {
    try {
      df.col(FieldPath.sparkName(segments));
      return true;
    } catch (Exception e) { // AnalysisException: no such field
      return false;
    }
  }

  private static boolean has(StructType schema, String name) {
    for (String f : schema.fieldNames()) if (f.equalsIgnoreCase(name)) return true;
    return false;
  }

  private static <T> Seq<T> toSeq(List<T> items) {
    return JavaConverters.asScalaBuffer(items).toSeq();
  }
}
