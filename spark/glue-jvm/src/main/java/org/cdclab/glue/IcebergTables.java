package org.cdclab.glue;

import java.util.List;
import org.apache.spark.sql.SparkSession;
import scala.Tuple2;
import scala.collection.JavaConverters;

/**
 * Iceberg tables of the Data Catalog, reached the way Glue 5 reaches them: through the
 * Iceberg Spark catalog the job configures with `--conf spark.sql.catalog.<name>=
 * org.apache.iceberg.spark.SparkCatalog ...` (the name glue_catalog is preferred).
 */
public final class IcebergTables {
  private static final String PREFIX = "spark.sql.catalog.";
  private static final String SPARK_CATALOG = "org.apache.iceberg.spark.SparkCatalog";

  private IcebergTables() {}

  /** The table's Spark name, `catalog`.`database`.`table`. */
  public static String sparkName(SparkSession spark, String database, String table,
                                 String what) {
    String catalog = null;
    for (Tuple2<String, String> kv : JavaConverters.seqAsJavaList(spark.conf().getAll().toSeq())) {
      String key = kv._1();
      if (key.startsWith(PREFIX) && key.indexOf('.', PREFIX.length()) < 0
          && SPARK_CATALOG.equals(kv._2())) {
        String name = key.substring(PREFIX.length());
        if (catalog == null || name.equals("glue_catalog")) catalog = name;
      }
    }
    if (catalog == null) {
      throw new IllegalStateException("cdclab: " + what + " the Iceberg table " + database + "."
          + table + " needs an Iceberg Spark catalog (--conf " + PREFIX + "<name>="
          + SPARK_CATALOG + " ...), as on Glue");
    }
    return FieldPath.sparkName(List.of(catalog, database, table));
  }
}
