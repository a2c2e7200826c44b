package org.cdclab.glue;

import com.amazonaws.services.glue.util.JsonOptions;

/**
 * Spigot's sampling options, as AWS's Scala DynamicFrame reference documents them
 * (https://docs.aws.amazon.com/glue/latest/dg/glue-etl-scala-apis-glue-dynamicframe-class.html,
 * "def spigot"): topk, "the total number of records written out" (default 100), and prob,
 * "the probability (as a decimal) that an individual record is included" (default 1);
 * "selecting each record with a 20 percent probability and stopping after 200 records".
 */
public record SpigotOptions(int topk, double prob) {
  public static final int DEFAULT_TOPK = 100;

  public static SpigotOptions of(JsonOptions options) {
    long topk = options.getLong("topk", DEFAULT_TOPK);
    if (topk < 0 || topk > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("cdclab: spigot option topk=" + options.get("topk")
          + ": the number of records to write, from 0 to " + Integer.MAX_VALUE);
    }
    double prob = 1.0;
    Object raw = options.get("prob");
    if (raw != null) {
      try {
        prob = raw instanceof Number n ? n.doubleValue() : Double.parseDouble(raw.toString().trim());
      } catch (NumberFormatException e) {
        prob = Double.NaN;
      }
      if (!(prob >= 0 && prob <= 1)) { // NaN fails too
        throw new IllegalArgumentException("cdclab: spigot option prob=" + raw
            + ": the probability of picking a record, a decimal from 0 to 1");
      }
    }
    return new SpigotOptions((int) topk, prob);
  }
}
