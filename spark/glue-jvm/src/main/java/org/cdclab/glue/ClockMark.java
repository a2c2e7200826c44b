package org.cdclab.glue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Where the wall clock stood against the boot clock (CLOCK_BOOTTIME, read from
 * /proc/uptime), which never steps. Locally MinIO stamps objects with this machine's wall
 * clock, so a step back (an NTP correction, a restored VM, a manual date) makes new objects
 * look older than a bookmark's cutoff, and a Glue bookmark would take them as processed.
 * Comparing two marks of one boot measures the step (S3's own clock on AWS never steps).
 */
public record ClockMark(String bootId, long wallMinusBootMs) {
  /** Smaller differences are NTP slewing or /proc/uptime's 10 ms resolution, not a step
   *  (and any step under maxBand is covered by the band anyway). */
  public static final long TOLERANCE_MS = 2_000L;

  /** The mark at wall-clock time {@code wallMs}; null where /proc is not Linux's. */
  public static ClockMark at(long wallMs) {
    try {
      String boot = Files.readString(Path.of("/proc/sys/kernel/random/boot_id")).trim();
      String uptime = Files.readString(Path.of("/proc/uptime")).trim().split("\\s+")[0];
      long bootMs = Math.round(Double.parseDouble(uptime) * 1000.0);
      return new ClockMark(boot, wallMs - bootMs);
    } catch (IOException | RuntimeException e) {
      return null;
    }
  }

  /** How far the wall clock stepped back between {@code earlier} and this mark (0: not at
   *  all, forward, within the tolerance, or unknown because the machine rebooted). */
  public long steppedBackSince(ClockMark earlier) {
    if (earlier == null || !bootId.equals(earlier.bootId())) return 0L;
    long back = earlier.wallMinusBootMs() - wallMinusBootMs;
    return back > TOLERANCE_MS ? back : 0L;
  }
}
