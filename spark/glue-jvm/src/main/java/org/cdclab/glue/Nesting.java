package org.cdclab.glue;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import scala.runtime.AbstractFunction1;

/**
 * DynamicFrame.unnest and split_fields over DataFrames.
 *
 * <p>unnest, as AWS's Scala DynamicFrame reference documents it: every struct is flattened
 * into top-level fields named by their dotted path (`address.state`); structs inside arrays
 * are flattened too, "for historical reasons" named with the enclosing array's name and
 * `.val` (an `array<struct<a>>` column `items` becomes `array<struct<items.val.a>>`). Arrays
 * stay arrays (one record in, one record out); maps are left as they are.
 *
 * <p>split_fields: the first frame holds the given paths (a nested path keeps only that
 * part of its struct), the second everything else; fields keep their source order.
 */
public final class Nesting {
  private Nesting() {}

  public static Dataset<Row> unnest(Dataset<Row> df) {
    List<Column> cols = new ArrayList<>();
    for (StructField f : df.schema().fields()) {
      flatten(df.col(quote(f.name())), f.name(), f.dataType(), cols);
    }
    return df.select(cols.toArray(new Column[0]));
  }

  private static void flatten(Column c, String name, DataType type, List<Column> out) {
    if (type instanceof StructType st && st.fields().length > 0) {
      for (StructField f : st.fields()) {
        flatten(c.getField(f.name()), name + "." + f.name(), f.dataType(), out);
      }
    } else {
      out.add(element(c, name, type).alias(name));
    }
  }

  /** A value with the structs inside its arrays flattened, their fields named name.val.… */
  private static Column element(Column c, String name, DataType type) {
    if (type instanceof ArrayType at && hasStruct(at.elementType())) {
      String inner = name + ".val";
      DataType et = at.elementType();
      return functions.transform(c, new AbstractFunction1<Column, Column>() {
        @Override
        public Column apply(Column x) {
          if (et instanceof StructType st && st.fields().length > 0) {
            List<Column> fields = new ArrayList<>();
            for (StructField f : st.fields()) {
              flatten(x.getField(f.name()), inner + "." + f.name(), f.dataType(), fields);
            }
            return functions.when(x.isNotNull(), functions.struct(fields.toArray(new Column[0])));
          }
          return element(x, inner, et);
        }
      });
    }
    return c;
  }

  private static boolean hasStruct(DataType t) {
    return t instanceof StructType
        || t instanceof ArrayType at && hasStruct(at.elementType());
  }

  /** The fields of {@code paths} (keep) or all but them (!keep), structs pruned to match. */
  public static Dataset<Row> project(Dataset<Row> df, List<List<String>> paths, boolean keep) {
    List<Column> cols = prune(null, df, df.schema(), new ArrayList<>(), paths, keep);
    return df.select(cols.toArray(new Column[0]));
  }

  private static List<Column> prune(Column base, Dataset<Row> df, StructType type,
                                    List<String> prefix, List<List<String>> paths,
                                    boolean keep) {
    List<Column> out = new ArrayList<>();
    for (StructField f : type.fields()) {
      List<String> p = new ArrayList<>(prefix);
      p.add(f.name());
      Column c = base == null ? df.col(quote(f.name())) : base.getField(f.name());
      if (paths.contains(p)) {
        if (keep) out.add(c.alias(f.name()));
      } else if (f.dataType() instanceof StructType st && under(p, paths)) {
        List<Column> inner = prune(c, df, st, p, paths, keep);
        if (!inner.isEmpty()) {
          out.add(functions.when(c.isNotNull(), functions.struct(inner.toArray(new Column[0])))
              .alias(f.name()));
        }
      } else if (!keep) {
        out.add(c.alias(f.name()));
      }
    }
    return out;
  }

  private static boolean under(List<String> prefix, List<List<String>> paths) {
    for (List<String> p : paths) {
      if (p.size() > prefix.size() && p.subList(0, prefix.size()).equals(prefix)) return true;
    }
    return false;
  }

  static String quote(String name) {
    return "`" + name.replace("`", "``") + "`";
  }
}
