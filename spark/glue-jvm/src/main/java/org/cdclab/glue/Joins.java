package org.cdclab.glue;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.spark.sql.AnalysisException;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.StructField;

/**
 * DynamicFrame.join (Join.apply): an inner equi-join whose record holds each field of both
 * frames once, by name, as Glue's does:
 *
 * <ul>
 *   <li>a field both frames have that is not a join key is one field: AWS's
 *       join_and_relationalize walkthrough joins orgs with persons, both holding `links` and
 *       `image`, and prints one `links` and one `image` (aws-samples/aws-glue-samples,
 *       examples/join_and_relationalize.md). Its value: the second frame's, else (null)
 *       the first's — cdclab's reading of Glue's record merge, which is not documented;
 *   <li>a join key whose name the other frame also has stays twice: the first frame's is
 *       renamed with a leading dot (awslabs/aws-glue-libs issue 76 prints `a`, `b`, `.a`,
 *       `.b` for `dyf1.join(["a","b"], ["a","b"], dyf2)`, the dotted values being dyf1's;
 *       public Glue scripts drop it with {@code drop_fields(['`.customerid`'])}).
 * </ul>
 *
 * Only top-level names meet; nested key paths join but are not renamed. Field order
 * (not meaningful in Glue's records): the first frame's, then the second's others.
 */
public final class Joins {
  private Joins() {}

  public static Dataset<Row> inner(Dataset<Row> left, Dataset<Row> right, List<String> keys1,
                                   List<String> keys2) {
    if (keys1.size() != keys2.size() || keys1.isEmpty()) {
      throw new IllegalArgumentException("cdclab: join needs the same number of keys on both "
          + "sides (got " + keys1 + " and " + keys2 + ")");
    }
    Column cond = null;
    Set<String> keyNames = new HashSet<>();
    for (int i = 0; i < keys1.size(); i++) {
      List<String> a = FieldPath.split(keys1.get(i));
      List<String> b = FieldPath.split(keys2.get(i));
      Column eq = left.col(FieldPath.sparkName(a)).equalTo(right.col(FieldPath.sparkName(b)));
      cond = cond == null ? eq : cond.and(eq);
      if (a.size() == 1) keyNames.add(a.get(0));
      if (b.size() == 1) keyNames.add(b.get(0));
    }
    Set<String> rightNames = new HashSet<>(List.of(right.columns()));
    List<Column> out = new ArrayList<>();
    Set<String> merged = new HashSet<>();
    for (StructField f : left.schema().fields()) {
      Column l = left.col(quote(f.name()));
      if (!rightNames.contains(f.name())) {
        out.add(l);
      } else if (keyNames.contains(f.name())) {
        out.add(l.alias("." + f.name()));
      } else {
        out.add(functions.coalesce(right.col(quote(f.name())), l).alias(f.name()));
        merged.add(f.name());
      }
    }
    for (String name : right.columns()) {
      if (!merged.contains(name)) out.add(right.col(quote(name)));
    }
    Dataset<Row> joined = left.join(right, cond, "inner");
    try {
      return joined.select(out.toArray(new Column[0]));
    } catch (Exception e) { // AnalysisException: a shared field of two kinds of type
      if (!(e instanceof AnalysisException)) throw e;
      throw Unsupported.of("join of frames sharing a field of different types (" + merged
          + "; Glue makes a choice type: " + e.getMessage().split("\n")[0] + ")");
    }
  }

  private static String quote(String name) {
    return "`" + name.replace("`", "``") + "`";
  }
}
