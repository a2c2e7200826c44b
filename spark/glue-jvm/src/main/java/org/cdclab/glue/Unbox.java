package org.cdclab.glue;

import com.amazonaws.services.glue.util.JsonOptions;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.api.java.function.FilterFunction;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * DynamicFrame.unbox: a string field parsed in place into a struct (AWS's Scala reference:
 * "Parsed columns are nested under a struct with the original column name").
 *
 * <p>json: the schema is {@code withSchema} (StructType.json()) or inferred from the values
 * (Spark's JSON inference over the non-null values). csv: {@code separator} (default ","),
 * {@code escaper}, {@code quoteChar}; the fields are strings named col0, col1, … (as Glue's
 * CSV reader names headerless columns) unless {@code withSchema} names them. A value that
 * does not parse gives null fields (Glue would make it an error record). withHeader and
 * skipFirst, other formats: a named error.
 */
public final class Unbox {
  private static final FilterFunction<String> NOT_NULL = v -> v != null;

  private Unbox() {}

  public static Dataset<Row> apply(SparkSession spark, Dataset<Row> df, String path,
                                   String format, String optionsJson) {
    JsonOptions options = new JsonOptions(optionsJson);
    for (String refused : List.of("withHeader", "skipFirst")) {
      if (options.getBoolean(refused, false)) throw Unsupported.of("unbox option " + refused);
    }
    List<String> seg = FieldPath.split(path);
    Column source = df.col(FieldPath.sparkName(seg));
    String f = format == null ? "" : format.trim().toLowerCase();
    Column parsed;
    if (f.equals("json")) {
      StructType schema = options.contains("withSchema")
          ? (StructType) DataType.fromJson(options.getString("withSchema", "{}"))
          : inferJson(spark, df.select(source.cast("string")).as(Encoders.STRING()));
      parsed = functions.from_json(source.cast("string"), schema);
    } else if (f.equals("csv")) {
      Map<String, String> csv = new HashMap<>();
      csv.put("sep", options.getString("separator", ","));
      if (options.contains("escaper")) csv.put("escape", options.getString("escaper", "\\"));
      if (options.contains("quoteChar")) csv.put("quote", options.getString("quoteChar", "\""));
      StructType schema = options.contains("withSchema")
          ? (StructType) DataType.fromJson(options.getString("withSchema", "{}"))
          : csvColumns(spark, df.select(source.cast("string")).as(Encoders.STRING()), csv);
      parsed = functions.from_csv(source.cast("string"), functions.lit(schema.toDDL()), csv);
    } else {
      throw Unsupported.of("unbox format " + format);
    }
    parsed = functions.when(source.isNotNull(), parsed);
    if (seg.size() == 1) return df.withColumn(seg.get(0), parsed);
    String rest = String.join(".", seg.subList(1, seg.size()));
    return df.withColumn(seg.get(0), df.col(FieldPath.sparkName(seg.subList(0, 1)))
        .withField(rest, parsed));
  }

  private static StructType inferJson(SparkSession spark, Dataset<String> values) {
    StructType inferred = spark.read().json(values.filter(NOT_NULL)).schema();
    List<StructField> fields = new ArrayList<>();
    for (StructField field : inferred.fields()) {
      if (!field.name().equals("_corrupt_record")) fields.add(field);
    }
    return DataTypes.createStructType(fields);
  }

  private static StructType csvColumns(SparkSession spark, Dataset<String> values,
                                       Map<String, String> options) {
    int width = spark.read().options(options).csv(values.filter(NOT_NULL))
        .schema().fields().length;
    List<StructField> fields = new ArrayList<>();
    for (int i = 0; i < width; i++) {
      fields.add(DataTypes.createStructField("col" + i, DataTypes.StringType, true));
    }
    return DataTypes.createStructType(fields);
  }
}
