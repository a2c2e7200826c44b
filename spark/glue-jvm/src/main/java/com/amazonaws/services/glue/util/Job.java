package com.amazonaws.services.glue.util;

import com.amazonaws.services.glue.GlueContext;
import java.nio.file.Path;
import java.util.Map;
import java.util.UUID;
import org.apache.spark.sql.SparkSession;
import org.cdclab.glue.JobRun;
import org.cdclab.glue.RunContext;

/**
 * awsglue.job.Job's JVM side: static init/commit, as awsglue calls them. The bookmark option
 * and range come from the arguments the script passes (getResolvedOptions always resolves
 * them); the run id from JOB_RUN_ID, else from the local runner's run context.
 */
public final class Job {
  private Job() {}

  public static void init(String jobName, SparkSession spark, Map<String, Object> args) {
    Map<String, Object> a = args == null ? Map.of() : args;
    RunContext ctx = RunContext.of(spark);
    String option = str(a.get("job_bookmark_option"), ctx.bookmarkOption());
    String runId = str(a.get("JOB_RUN_ID"), ctx.runId());
    if (runId == null) runId = "jr_local_" + UUID.randomUUID().toString().replace("-", "");
    Path state = ctx.stateDir();
    JobRun.start(new JobRun(jobName, runId, option == null ? JobRun.DISABLE : option,
        str(a.get("job_bookmark_from"), null), str(a.get("job_bookmark_to"), null), state,
        System.currentTimeMillis()));
  }

  public static void init(String jobName, GlueContext glueContext, Map<String, Object> args) {
    init(jobName, glueContext.sparkSession(), args);
  }

  public static boolean isInitialized() {
    return JobRun.current() != null;
  }

  public static void commit() {
    JobRun run = JobRun.current();
    if (run == null) throw new IllegalStateException("cdclab: Job.commit() called before Job.init()");
    run.commit();
  }

  private static String str(Object v, String fallback) {
    return v == null || String.valueOf(v).isEmpty() ? fallback : String.valueOf(v);
  }
}
