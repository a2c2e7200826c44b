package org.cdclab.glue;

import java.io.IOException;
import java.io.OutputStream;
import java.io.Serializable;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.sql.Timestamp;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.Calendar;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import net.razorvine.pickle.IObjectPickler;
import net.razorvine.pickle.Opcodes;
import net.razorvine.pickle.Pickler;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.python.SerDeUtil;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.storage.StorageLevel;
import scala.collection.JavaConverters;

/**
 * Records to and from the Python functions of DynamicFrame.map/filter/mapPartitions.
 *
 * <p>AWS's awsglue sends each record to Python as {"record": {...}, "isError": False,
 * "errorMessage": ""} and reads the same shape back; a record the function failed on comes
 * back with isError set and becomes an error record (errorsCount), not a row. The result's
 * schema is inferred from the records, keeping the input field's type wherever the values
 * still fit it (so filter keeps the schema and map changes only what it changed); values of
 * different types in one new field become strings.
 */
public final class PythonRecords {
  private PythonRecords() {}

  /** The result of one Python transformation: good rows and the error records. */
  public record Result(Dataset<Row> rows, JavaRDD<Map<String, Object>> errors, long errorCount,
                       Dataset<Row> tracked) {}

  // --- to Python ----------------------------------------------------------------------------
  public static JavaRDD<byte[]> toPython(Dataset<Row> df) {
    return toPython(df, false);
  }

  /**
   * sparse: a record carries only its non-null fields (see DynamicFrame.sparse), and those
   * its hidden ExplicitNulls column names (outside arrays) with None, as Glue's records keep
   * a key whose JSON value is null.
   */
  public static JavaRDD<byte[]> toPython(Dataset<Row> df, boolean sparse) {
    StructType schema = df.schema();
    int hidden = ExplicitNulls.index(schema);
    String zone = df.sparkSession().sessionState().conf().sessionLocalTimeZone();
    JavaRDD<Object> records = df.javaRDD().mapPartitions(rows -> {
      registerPicklers();
      List<Object> out = new ArrayList<>();
      while (rows.hasNext()) {
        Row row = rows.next();
        Nulls nulls = hidden < 0 || !sparse ? null
            : new Nulls(ExplicitNulls.set(row.isNullAt(hidden) ? null : row.getList(hidden)),
                hidden);
        Map<String, Object> rec = new HashMap<>();
        rec.put("record", toPythonValue(row, schema, zone, sparse, nulls, List.of()));
        rec.put("isError", Boolean.FALSE);
        rec.put("errorMessage", "");
        out.add(rec);
      }
      return out.iterator();
    });
    return SerDeUtil.javaToPython(records);
  }

  /** A row's explicit null paths (ExplicitNulls.key) and the hidden column's top index. */
  private record Nulls(java.util.Set<String> keys, int hidden) {
    boolean has(List<String> path) {
      return keys.contains(ExplicitNulls.key(path));
    }
  }

  private static Object toPythonValue(Object v, DataType t, String zone) {
    return toPythonValue(v, t, zone, false, null, null);
  }

  /** nulls (with the struct's path): explicit nulls to hand as None; null inside arrays. */
  private static Object toPythonValue(Object v, DataType t, String zone, boolean sparse,
                                      Nulls nulls, List<String> path) {
    if (v == null) return null;
    if (t instanceof StructType st) {
      Row row = (Row) v;
      Map<String, Object> m = new LinkedHashMap<>();
      StructField[] fields = st.fields();
      for (int i = 0; i < fields.length; i++) {
        if (nulls != null && path.isEmpty() && i == nulls.hidden()) continue;
        Object value = row.get(i);
        StructField f = fields[i];
        List<String> at = nulls == null ? null : append(path, f.name());
        boolean explicit = value == null && nulls != null && nulls.has(at);
        if (ChoiceTypes.isChoice(f) && value != null) { // a choice: the record's own value
          Row members = (Row) value;
          StructField[] types = ((StructType) f.dataType()).fields();
          value = null;
          for (int j = 0; j < types.length && value == null; j++) {
            value = toPythonValue(members.get(j), types[j].dataType(), zone);
          }
          if (value != null || !sparse || explicit) m.put(f.name(), value);
          continue;
        }
        if (value == null && sparse && !explicit) continue; // the record has no such key
        m.put(f.name(), toPythonValue(value, f.dataType(), zone, sparse, nulls, at));
      }
      return m;
    }
    if (t instanceof ArrayType at) {
      List<Object> out = new ArrayList<>();
      for (Object e : iterable(v)) {
        out.add(toPythonValue(e, at.elementType(), zone, sparse, null, null));
      }
      return out;
    }
    if (t instanceof MapType mt) {
      Map<Object, Object> out = new LinkedHashMap<>();
      Map<?, ?> in = v instanceof scala.collection.Map<?, ?> sm
          ? JavaConverters.mapAsJavaMap(sm) : (Map<?, ?>) v;
      for (Map.Entry<?, ?> e : in.entrySet()) {
        out.put(toPythonValue(e.getKey(), mt.keyType(), zone),
            toPythonValue(e.getValue(), mt.valueType(), zone));
      }
      return out;
    }
    if (v instanceof java.sql.Date d) return PyDate.of(d.toLocalDate());
    if (v instanceof LocalDate d) return PyDate.of(d);
    if (v instanceof Timestamp ts) return PyDateTime.of(ts.toInstant(), zone);
    if (v instanceof Instant i) return PyDateTime.of(i, zone);
    if (v instanceof LocalDateTime ldt) return new PyDateTime(ldt);
    return v;
  }

  private static List<String> append(List<String> path, String name) {
    List<String> out = new ArrayList<>(path);
    out.add(name);
    return out;
  }

  private static Iterable<?> iterable(Object v) {
    if (v instanceof scala.collection.Seq<?> s) return JavaConverters.seqAsJavaList(s);
    if (v instanceof Object[] a) return List.of(a);
    return (Iterable<?>) v;
  }

  // --- from Python --------------------------------------------------------------------------
  @SuppressWarnings("unchecked")
  public static Result fromPython(SparkSession spark, StructType input, JavaRDD<byte[]> pickled,
                                  long stageThreshold) {
    return fromPython(spark, input, pickled, stageThreshold, false);
  }

  /** sparse: the records carry only their non-null fields, so an input field no record
   * has is kept (all null) rather than taken as dropped by the function; the result's
   * tracked Dataset then holds the keys each record set to None (ExplicitNulls). */
  public static Result fromPython(SparkSession spark, StructType input, JavaRDD<byte[]> pickled,
                                  long stageThreshold, boolean sparse) {
    String zone = spark.sessionState().conf().sessionLocalTimeZone();
    JavaRDD<Map<String, Object>> parsed = SerDeUtil.pythonToJava(pickled, true)
        .map(PythonRecords::normalize)
        .persist(StorageLevel.MEMORY_AND_DISK());
    JavaRDD<Map<String, Object>> errors = parsed.filter(PythonRecords::isError);
    Inferred inferred = parsed.mapPartitions(it -> List.of(Inferred.of(it, input)).iterator())
        .fold(new Inferred(), Inferred::merge); // fold: a frame may have no partitions
    if (stageThreshold > 0 && inferred.errors > stageThreshold) {
      throw new IllegalStateException("cdclab: " + inferred.errors + " error records exceed "
          + "stageThreshold " + stageThreshold + "; first: " + inferred.firstError);
    }
    StructType schema = inferred.schema(input, sparse);
    JavaRDD<Map<String, Object>> good = parsed.filter(r -> !isError(r));
    JavaRDD<Row> rows = good.map(r -> (Row) fromPythonValue(r.get("record"), schema, zone));
    Dataset<Row> tracked = null;
    if (sparse && !ExplicitNulls.clashes(schema)) { // the same records, from the persisted RDD
      StructType withNulls = schema.add(ExplicitNulls.COLUMN, ExplicitNulls.TYPE, true);
      JavaRDD<Row> tagged = good.map(r -> {
        Row row = (Row) fromPythonValue(r.get("record"), schema, zone);
        Object[] values = new Object[row.length() + 1];
        for (int i = 0; i < row.length(); i++) values[i] = row.get(i);
        List<Object> paths = new ArrayList<>();
        for (List<String> p : ExplicitNulls.fromPython(r.get("record"))) {
          paths.add(JavaConverters.asScalaBuffer(p).toSeq());
        }
        values[row.length()] = JavaConverters.asScalaBuffer(paths).toSeq();
        return RowFactory.create(values);
      });
      tracked = spark.createDataFrame(tagged, withNulls);
    }
    return new Result(spark.createDataFrame(rows, schema), errors, inferred.errors, tracked);
  }

  /** What came back from Python as a record wrapper; anything else is an error record
   * (mapPartitions lets a function yield other things). */
  @SuppressWarnings("unchecked")
  static Map<String, Object> normalize(Object o) {
    if (o instanceof Map<?, ?> m && m.get("record") instanceof Map<?, ?>) {
      return (Map<String, Object>) m;
    }
    if (o instanceof Map<?, ?> m && Boolean.TRUE.equals(m.get("isError"))) {
      return (Map<String, Object>) m;
    }
    Map<String, Object> err = new HashMap<>();
    err.put("isError", Boolean.TRUE);
    err.put("errorMessage", "cdclab: the Python function returned "
        + pythonTypeName(o) + " where a record was expected");
    err.put("record", o instanceof Map<?, ?> m ? m.get("record") : o);
    return err;
  }

  private static String pythonTypeName(Object o) {
    if (o == null) return "None";
    if (o instanceof Boolean) return "bool";
    if (o instanceof Integer || o instanceof Long || o instanceof BigInteger) return "int";
    if (o instanceof Double) return "float";
    if (o instanceof String) return "str";
    if (o instanceof byte[]) return "bytes";
    if (o instanceof Object[]) return "tuple";
    if (o instanceof List<?>) return "list";
    if (o instanceof Map<?, ?>) return "dict";
    return o.getClass().getSimpleName();
  }

  /** An error record's record, as JSON (dates and times as ISO-8601 text). */
  public static String recordJson(Map<String, Object> r) {
    try {
      return JSON.writeValueAsString(jsonable(r.get("record")));
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      return String.valueOf(r.get("record"));
    }
  }

  private static final com.fasterxml.jackson.databind.ObjectMapper JSON =
      new com.fasterxml.jackson.databind.ObjectMapper();

  private static Object jsonable(Object v) {
    if (v instanceof Map<?, ?> m) {
      Map<String, Object> out = new LinkedHashMap<>();
      m.forEach((k, x) -> out.put(String.valueOf(k), jsonable(x)));
      return out;
    }
    if (v instanceof List<?> || v instanceof Object[]) {
      List<Object> out = new ArrayList<>();
      for (Object x : iterable(v)) out.add(jsonable(x));
      return out;
    }
    if (v instanceof Calendar c) {
      return LocalDateTime.ofInstant(c.toInstant(), c.getTimeZone().toZoneId()).toString();
    }
    return v;
  }

  static boolean isError(Map<String, Object> r) {
    return Boolean.TRUE.equals(r.get("isError"));
  }

  /** Schema of the records seen so far (field order: input's, then first seen). */
  static final class Inferred implements Serializable {
    final LinkedHashMap<String, DataType> fields = new LinkedHashMap<>();
    long errors;
    String firstError;

    static Inferred of(Iterator<Map<String, Object>> it, StructType input) {
      Inferred acc = new Inferred();
      while (it.hasNext()) {
        Map<String, Object> r = it.next();
        if (isError(r)) {
          if (acc.errors++ == 0) acc.firstError = String.valueOf(r.get("errorMessage"));
          continue;
        }
        Object rec = r.get("record");
        if (rec instanceof Map<?, ?> m) acc.add(m, input);
      }
      return acc;
    }

    void add(Map<?, ?> record, StructType input) {
      for (Map.Entry<?, ?> e : record.entrySet()) {
        String name = String.valueOf(e.getKey());
        DataType hint = hint(input, name);
        StructField choice = input == null ? null : choiceField(input, name);
        DataType t = choice != null && (e.getValue() == null || member(e.getValue(), choice) >= 0)
            ? choice.dataType() : typeOf(e.getValue(), hint);
        fields.merge(name, t, PythonRecords::mergeTypes);
      }
    }

    Inferred merge(Inferred other) {
      other.fields.forEach((k, v) -> fields.merge(k, v, PythonRecords::mergeTypes));
      if (errors == 0) firstError = other.firstError;
      errors += other.errors;
      return this;
    }

    StructType schema(StructType input) {
      return schema(input, false);
    }

    StructType schema(StructType input, boolean keepAbsent) {
      List<StructField> out = new ArrayList<>();
      for (StructField f : input.fields()) {
        DataType t = fields.getOrDefault(f.name(), keepAbsent ? DataTypes.NullType : null);
        if (t == null) continue; // the function dropped it from every record
        DataType type = t == DataTypes.NullType ? f.dataType() : t;
        out.add(DataTypes.createStructField(f.name(), type, true,
            type.equals(f.dataType()) ? f.metadata() : org.apache.spark.sql.types.Metadata.empty()));
      }
      fields.forEach((name, t) -> {
        if (hint(input, name) == null) {
          out.add(DataTypes.createStructField(name,
              t == DataTypes.NullType ? DataTypes.StringType : t, true));
        }
      });
      return DataTypes.createStructType(out);
    }
  }

  private static StructField choiceField(StructType t, String name) {
    for (StructField f : t.fields()) {
      if (f.name().equals(name) && ChoiceTypes.isChoice(f)) return f;
    }
    return null;
  }

  /** The index of the choice's member a value from Python fits, or -1. */
  static int member(Object v, StructField choice) {
    StructField[] types = ((StructType) choice.dataType()).fields();
    for (int j = 0; j < types.length; j++) if (fits(v, types[j].dataType())) return j;
    return -1;
  }

  private static DataType hint(StructType t, String name) {
    if (t == null) return null;
    for (StructField f : t.fields()) if (f.name().equals(name)) return f.dataType();
    return null;
  }

  /** The Spark type of a value from Python; the hint (the input's type) wins if it fits. */
  static DataType typeOf(Object v, DataType hint) {
    if (v == null) return DataTypes.NullType;
    if (hint != null && fits(v, hint)) return hint;
    if (v instanceof Boolean) return DataTypes.BooleanType;
    if (v instanceof Integer || v instanceof Long) return DataTypes.LongType;
    if (v instanceof BigInteger) return DataTypes.createDecimalType(38, 0);
    if (v instanceof Double || v instanceof Float) return DataTypes.DoubleType;
    if (v instanceof BigDecimal) return DecimalType.SYSTEM_DEFAULT();
    if (v instanceof String) return DataTypes.StringType;
    if (v instanceof byte[]) return DataTypes.BinaryType;
    if (v instanceof Calendar) return DataTypes.TimestampType;
    if (v instanceof Map<?, ?> && hint instanceof MapType mt) return mt; // dict of a map column
    if (v instanceof Map<?, ?> m) {
      Inferred nested = new Inferred();
      nested.add(m, hint instanceof StructType st ? st : null);
      return nested.schema(hint instanceof StructType st ? st : new StructType());
    }
    if (v instanceof List<?> || v instanceof Object[]) {
      DataType el = DataTypes.NullType;
      DataType elHint = hint instanceof ArrayType at ? at.elementType() : null;
      for (Object e : iterable(v)) el = mergeTypes(el, typeOf(e, elHint));
      return DataTypes.createArrayType(el == DataTypes.NullType ? DataTypes.StringType : el);
    }
    return DataTypes.StringType;
  }

  private static boolean fits(Object v, DataType t) {
    if (t == DataTypes.StringType) return v instanceof String;
    if (t == DataTypes.LongType || t == DataTypes.IntegerType || t == DataTypes.ShortType
        || t == DataTypes.ByteType) {
      if (!(v instanceof Integer || v instanceof Long)) return false;
      long n = ((Number) v).longValue();
      if (t == DataTypes.IntegerType) return n >= Integer.MIN_VALUE && n <= Integer.MAX_VALUE;
      if (t == DataTypes.ShortType) return n >= Short.MIN_VALUE && n <= Short.MAX_VALUE;
      if (t == DataTypes.ByteType) return n >= Byte.MIN_VALUE && n <= Byte.MAX_VALUE;
      return true;
    }
    if (t == DataTypes.DoubleType || t == DataTypes.FloatType) return v instanceof Double;
    if (t == DataTypes.BooleanType) return v instanceof Boolean;
    if (t instanceof DecimalType) return v instanceof BigDecimal || v instanceof Integer
        || v instanceof Long;
    if (t == DataTypes.DateType || t == DataTypes.TimestampType
        || t == DataTypes.TimestampNTZType) return v instanceof Calendar;
    if (t == DataTypes.BinaryType) return v instanceof byte[];
    return false; // structs, arrays, maps: inferred and merged
  }

  static DataType mergeTypes(DataType a, DataType b) {
    if (a.equals(b) || b == DataTypes.NullType) return a;
    if (a == DataTypes.NullType) return b;
    if (isIntegral(a) && isIntegral(b)) return DataTypes.LongType;
    if (isNumeric(a) && isNumeric(b)) return DataTypes.DoubleType;
    if (a instanceof StructType sa && b instanceof StructType sb) {
      Inferred m = new Inferred();
      for (StructField f : sa.fields()) m.fields.put(f.name(), f.dataType());
      for (StructField f : sb.fields()) m.fields.merge(f.name(), f.dataType(),
          PythonRecords::mergeTypes);
      return m.schema(new StructType());
    }
    if (a instanceof ArrayType x && b instanceof ArrayType y) {
      return DataTypes.createArrayType(mergeTypes(x.elementType(), y.elementType()));
    }
    return DataTypes.StringType; // Glue would make a choice type here
  }

  private static boolean isIntegral(DataType t) {
    return t == DataTypes.LongType || t == DataTypes.IntegerType || t == DataTypes.ShortType
        || t == DataTypes.ByteType;
  }

  private static boolean isNumeric(DataType t) {
    return isIntegral(t) || t == DataTypes.DoubleType || t == DataTypes.FloatType
        || t instanceof DecimalType;
  }

  static Object fromPythonValue(Object v, DataType t, String zone) {
    if (v == null) return null;
    if (t instanceof StructType st) {
      if (!(v instanceof Map<?, ?> m)) return null;
      StructField[] fields = st.fields();
      Object[] values = new Object[fields.length];
      for (int i = 0; i < fields.length; i++) {
        Object x = m.get(fields[i].name());
        if (ChoiceTypes.isChoice(fields[i]) && x != null) { // the value into its type's member
          StructField[] types = ((StructType) fields[i].dataType()).fields();
          Object[] members = new Object[types.length];
          int j = member(x, fields[i]);
          if (j >= 0) members[j] = fromPythonValue(x, types[j].dataType(), zone);
          values[i] = RowFactory.create(members);
          continue;
        }
        values[i] = fromPythonValue(x, fields[i].dataType(), zone);
      }
      return RowFactory.create(values);
    }
    if (t instanceof ArrayType at) {
      List<Object> out = new ArrayList<>();
      for (Object e : iterable(v)) out.add(fromPythonValue(e, at.elementType(), zone));
      return JavaConverters.asScalaBuffer(out).toSeq(); // a Row's external array type
    }
    if (t instanceof MapType mt) {
      Map<Object, Object> out = new LinkedHashMap<>();
      ((Map<?, ?>) v).forEach((k, x) -> out.put(fromPythonValue(k, mt.keyType(), zone),
          fromPythonValue(x, mt.valueType(), zone)));
      return JavaConverters.mapAsScalaMap(out); // a Row's external map type
    }
    if (t == DataTypes.StringType) {
      if (v instanceof Calendar c) return Instant.ofEpochMilli(c.getTimeInMillis()).toString();
      if (v instanceof Map<?, ?> || v instanceof List<?>) return String.valueOf(v);
      return v.toString();
    }
    if (t == DataTypes.LongType) return ((Number) v).longValue();
    if (t == DataTypes.IntegerType) return ((Number) v).intValue();
    if (t == DataTypes.ShortType) return ((Number) v).shortValue();
    if (t == DataTypes.ByteType) return ((Number) v).byteValue();
    if (t == DataTypes.DoubleType) return ((Number) v).doubleValue();
    if (t == DataTypes.FloatType) return ((Number) v).floatValue();
    if (t instanceof DecimalType) {
      return v instanceof BigDecimal b ? b : new BigDecimal(v.toString());
    }
    if (t == DataTypes.DateType) {
      Calendar c = (Calendar) v;
      return java.sql.Date.valueOf(LocalDate.of(c.get(Calendar.YEAR),
          c.get(Calendar.MONTH) + 1, c.get(Calendar.DAY_OF_MONTH)));
    }
    // Python's naive datetimes are wall-clock times in the session time zone (as they were
    // sent); Pyrolite put the fields in a Calendar of the JVM's zone: read the fields back
    if (t == DataTypes.TimestampType) {
      return Timestamp.from(wallClock((Calendar) v).atZone(ZoneId.of(zone)).toInstant());
    }
    if (t == DataTypes.TimestampNTZType) return wallClock((Calendar) v);
    return v; // boolean, binary
  }

  private static LocalDateTime wallClock(Calendar c) {
    return LocalDateTime.of(c.get(Calendar.YEAR), c.get(Calendar.MONTH) + 1,
        c.get(Calendar.DAY_OF_MONTH), c.get(Calendar.HOUR_OF_DAY), c.get(Calendar.MINUTE),
        c.get(Calendar.SECOND), c.get(Calendar.MILLISECOND) * 1_000_000);
  }

  // --- picklers for dates and times (Python's datetime.date and naive datetime) -----------
  private static volatile boolean registered;

  static void registerPicklers() {
    if (registered) return;
    synchronized (PythonRecords.class) {
      if (registered) return;
      Pickler.registerCustomPickler(PyDate.class, new DatetimePickler("date"));
      Pickler.registerCustomPickler(PyDateTime.class, new DatetimePickler("datetime"));
      registered = true;
    }
  }

  /** datetime.date(y, m, d). */
  record PyDate(int y, int m, int d) implements Serializable {
    static PyDate of(LocalDate d) {
      return new PyDate(d.getYear(), d.getMonthValue(), d.getDayOfMonth());
    }
  }

  /** A naive datetime.datetime in the session time zone (as PySpark's collect gives it). */
  record PyDateTime(LocalDateTime t) implements Serializable {
    static PyDateTime of(Instant i, String zone) {
      return new PyDateTime(LocalDateTime.ofInstant(i, ZoneId.of(zone)));
    }
  }

  private static final class DatetimePickler implements IObjectPickler {
    private final String cls;

    DatetimePickler(String cls) {
      this.cls = cls;
    }

    @Override
    public void pickle(Object o, OutputStream out, Pickler p) throws IOException {
      out.write(Opcodes.GLOBAL);
      out.write(("datetime\n" + cls + "\n").getBytes(StandardCharsets.UTF_8));
      out.write(Opcodes.MARK);
      if (o instanceof PyDate d) {
        p.save(d.y());
        p.save(d.m());
        p.save(d.d());
      } else {
        LocalDateTime t = ((PyDateTime) o).t();
        for (int v : new int[] {t.getYear(), t.getMonthValue(), t.getDayOfMonth(), t.getHour(),
            t.getMinute(), t.getSecond(), t.getNano() / 1000}) {
          p.save(v);
        }
      }
      out.write(Opcodes.TUPLE);
      out.write(Opcodes.REDUCE);
    }
  }
}
