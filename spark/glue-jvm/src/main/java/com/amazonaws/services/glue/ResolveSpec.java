package com.amazonaws.services.glue;

import java.io.Serializable;

/** One resolveChoice entry: a path and an action (cast:T, project:T, make_cols, ...). */
public class ResolveSpec implements Serializable {
  public final String path;
  public final String action;

  public ResolveSpec(String path, String action) {
    this.path = path;
    this.action = action;
  }

  public static ResolveSpec apply(String path, String action) {
    return new ResolveSpec(path, action);
  }
}
