package com.amazonaws.services.glue;

/**
 * Field-name helpers awsglue's Python calls (DropNullFields builds paths with quoteName):
 * a name holding a dot or a back-quote is back-quoted, as org.cdclab.glue.FieldPath reads it.
 */
public final class RecordUtils {
  private RecordUtils() {}

  public static String quoteName(String name) {
    if (name.indexOf('.') < 0 && name.indexOf('`') < 0) return name;
    return '`' + name.replace("`", "``") + '`';
  }
}
