package com.amazonaws.services.glue.log;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** glueContext.get_logger(): messages go to the driver log, like Glue's. */
public class GlueLogger {
  private final Logger log = LoggerFactory.getLogger("GlueLogger");

  public void info(String message) {
    log.info(message);
  }

  public void warn(String message) {
    log.warn(message);
  }

  public void error(String message) {
    log.error(message);
  }

  public void debug(String message) {
    log.debug(message);
  }

  public void trace(String message) {
    log.trace(message);
  }
}
