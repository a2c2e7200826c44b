package org.cdclab.glue;

import java.util.ArrayList;
import java.util.List;

/** Glue field paths: dot-separated, a segment may be `back-quoted` to hold dots. */
public final class FieldPath {
  private FieldPath() {}

  public static List<String> split(String path) {
    List<String> out = new ArrayList<>();
    StringBuilder cur = new StringBuilder();
    boolean quoted = false;
    for (int i = 0; i < path.length(); i++) {
      char c = path.charAt(i);
      if (c == '`') {
        if (quoted && i + 1 < path.length() && path.charAt(i + 1) == '`') {
          cur.append('`');
          i++;
        } else {
          quoted = !quoted;
        }
      } else if (c == '.' && !quoted) {
        out.add(cur.toString());
        cur.setLength(0);
      } else {
        cur.append(c);
      }
    }
    if (quoted) throw new IllegalArgumentException("cdclab: unbalanced ` in field path " + path);
    out.add(cur.toString());
    return out;
  }

  /** The Glue path of segments: dotted, a segment holding a dot or ` back-quoted. */
  public static String join(List<String> segments) {
    StringBuilder sb = new StringBuilder();
    for (String s : segments) {
      if (sb.length() > 0) sb.append('.');
      sb.append(s.contains(".") || s.contains("`") ? "`" + s.replace("`", "``") + "`" : s);
    }
    return sb.toString();
  }

  /** A Spark column reference for the path's segments. */
  public static String sparkName(List<String> segments) {
    StringBuilder sb = new StringBuilder();
    for (String s : segments) {
      if (sb.length() > 0) sb.append('.');
      sb.append('`').append(s.replace("`", "``")).append('`');
    }
    return sb.toString();
  }

  /** Glue type names in mappings and specs, as Spark types (decimal defaults to 10,2). */
  public static org.apache.spark.sql.types.DataType type(String glueType) {
    String t = glueType.trim().toLowerCase();
    switch (t) {
      case "decimal":
        return org.apache.spark.sql.types.DataTypes.createDecimalType(10, 2);
      case "null":
      case "varchar":
      case "char":
        return org.apache.spark.sql.types.DataTypes.StringType;
      default:
        if (t.startsWith("varchar(") || t.startsWith("char(")) {
          return org.apache.spark.sql.types.DataTypes.StringType;
        }
        try {
          return org.apache.spark.sql.types.DataType.fromDDL(t);
        } catch (RuntimeException e) {
          throw Unsupported.of("type " + glueType);
        }
    }
  }
}
