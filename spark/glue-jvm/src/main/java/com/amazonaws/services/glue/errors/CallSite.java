package com.amazonaws.services.glue.errors;

import java.io.Serializable;

/** Where in the script a transform was called (Glue attaches it to error records). */
public class CallSite implements Serializable {
  private final String site;
  private final String info;

  public CallSite(String site, String info) {
    this.site = site;
    this.info = info;
  }

  public String site() {
    return site;
  }

  public String info() {
    return info;
  }
}
