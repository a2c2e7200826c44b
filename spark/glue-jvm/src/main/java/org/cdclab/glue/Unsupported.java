package org.cdclab.glue;

/** The one error for a Glue call cdclab does not implement: named, never a wrong answer. */
public final class Unsupported {
  private Unsupported() {}

  public static UnsupportedOperationException of(String method) {
    return new UnsupportedOperationException("cdclab: " + method + " is not supported locally");
  }
}
