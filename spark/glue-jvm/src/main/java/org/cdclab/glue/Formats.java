package org.cdclab.glue;

import com.amazonaws.services.glue.util.JsonOptions;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** Glue's format names and format_options, mapped onto Spark's readers and writers. */
public final class Formats {
  /** Options that change what is read and that cdclab does not implement: refused by name. */
  static final Set<String> UNSUPPORTED_READ = Set.of(
      "jsonPath", "exclusions", "manifestFilePath",
      "skipFirst", "rowTag", "withSchema");

  /**
   * How Glue's CSV reader returns an unquoted empty field is not public
   * (docs/glue-fidelity.md): "null" (default) keeps DMS's distinction, an unquoted empty
   * field is NULL and a quoted "" the empty string; "empty" reads both as "".
   */
  public static final String CSV_UNQUOTED_EMPTY_CONF = "spark.cdclab.glue.csvUnquotedEmpty";
  /**
   * Spark's CSV reader turns a field equal to nullValue into NULL, and by default both the
   * unquoted empty field and a quoted "" equal it. A lone NUL marks the unquoted one
   * instead: PostgreSQL text cannot hold NUL, so no DMS value is this string.
   */
  static final String UNQUOTED_EMPTY_MARK = "\u0000";

  private Formats() {}

  public static String normalize(String format) {
    String f = format == null ? "" : format.toLowerCase();
    return switch (f) {
      case "glueparquet" -> "parquet";
      case "csv", "json", "parquet", "orc", "avro" -> f;
      default -> throw Unsupported.of("format " + format);
    };
  }

  /**
   * The format an S3 connection type implies ("parquet" and "orc" are connection types to
   * awsglue), else null; any other connection type is refused ({@code use} names the call).
   */
  public static String s3ConnectionFormat(String connectionType, String use) {
    String type = connectionType == null ? "" : connectionType.toLowerCase();
    if (!List.of("s3", "file", "parquet", "orc").contains(type)) {
      throw Unsupported.of(use + connectionType);
    }
    return type.equals("parquet") || type.equals("orc") ? type : null;
  }

  public static void refuseUnsupported(JsonOptions options, String where) {
    for (String key : options.asMap().keySet()) {
      if (UNSUPPORTED_READ.contains(key)) throw Unsupported.of(where + " option " + key);
    }
  }

  /**
   * The multiLine format option. AWS's format pages name it `multiLine`; their JSON example
   * and Glue Studio's scripts write `"multiline": True`, and both take effect on Glue, so
   * either spelling is read; given both with different values is an error naming them.
   */
  public static boolean multiLine(JsonOptions o) {
    Boolean found = null;
    String foundKey = null;
    for (Map.Entry<String, Object> e : o.asMap().entrySet()) {
      if (!e.getKey().equalsIgnoreCase("multiLine") || e.getValue() == null) continue;
      boolean v = o.getBoolean(e.getKey(), false);
      if (found != null && found != v) {
        throw new IllegalArgumentException("cdclab: format_options " + foundKey + "=" + found
            + " and " + e.getKey() + "=" + v + " disagree; give multiLine once");
      }
      found = v;
      foundKey = e.getKey();
    }
    return found != null && found;
  }

  /** Spark reader options for a Glue format and its format_options. */
  public static Map<String, String> readerOptions(String format, JsonOptions o) {
    Map<String, String> out = new LinkedHashMap<>();
    switch (format) {
      case "csv" -> {
        String quote = o.getString("quoteChar", "\"");
        out.put("sep", o.getString("separator", ","));
        // Glue's quoteChar -1 turns quoting off; Spark's is the NUL character.
        out.put("quote", "-1".equals(quote) ? "\u0000" : quote);
        // Without an escaper a doubled quote inside quotes is one quote (RFC 4180).
        out.put("escape", o.getString("escaper", "-1".equals(quote) ? "\\" : quote));
        out.put("header", String.valueOf(o.getBoolean("withHeader", false)));
        out.put("multiLine", String.valueOf(multiLine(o)));
        out.put("mode", "PERMISSIVE");
        out.put("nullValue", UNQUOTED_EMPTY_MARK);
        out.put("emptyValue", "");
      }
      case "json" -> out.put("multiLine", String.valueOf(multiLine(o)));
      default -> { }
    }
    return out;
  }

  public static Map<String, String> writerOptions(String format, JsonOptions o) {
    Map<String, String> out = new LinkedHashMap<>();
    if (format.equals("csv")) {
      out.put("sep", o.getString("separator", ","));
      out.put("quote", o.getString("quoteChar", "\""));
      out.put("escape", o.getString("quoteChar", "\""));
      out.put("header", String.valueOf(o.getBoolean("writeHeader", true)));
    }
    String compression = o.getString("compression", null);
    if (compression != null) out.put("compression", compression);
    return out;
  }

  public static List<String> partitionKeys(JsonOptions connection) {
    return connection.getStringList("partitionKeys");
  }
}
