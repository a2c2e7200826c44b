package org.cdclab.glue;

import java.nio.file.Path;
import org.apache.spark.sql.SparkSession;

/**
 * What the local Glue runner tells the JVM about the run on this thread (Spark local
 * properties, set by spark/glue_local/runner.py before the script starts), with the state
 * directory from the session conf or the environment.
 */
public record RunContext(String runId, String bookmarkOption, Path stateDir) {
  public static final String RUN_ID = "cdclab.glue.runId";
  public static final String BOOKMARK_OPTION = "cdclab.glue.bookmarkOption";
  public static final String STATE_DIR_CONF = "spark.cdclab.stateDir";

  public static RunContext of(SparkSession spark) {
    String runId = spark.sparkContext().getLocalProperty(RUN_ID);
    String option = spark.sparkContext().getLocalProperty(BOOKMARK_OPTION);
    String dir = spark.conf().get(STATE_DIR_CONF, System.getenv("CDCLAB_STATE_DIR"));
    return new RunContext(runId, option, dir == null || dir.isEmpty() ? null : Path.of(dir));
  }
}
