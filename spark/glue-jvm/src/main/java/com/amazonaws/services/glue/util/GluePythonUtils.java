package com.amazonaws.services.glue.util;

import java.util.List;
import scala.Option;
import scala.collection.JavaConverters;
import scala.collection.Seq;

/** Conversions awsglue's Python asks the JVM for (awsglue/utils.py). */
public final class GluePythonUtils {
  private GluePythonUtils() {}

  public static <T> List<T> seqAsJava(Seq<T> seq) {
    return JavaConverters.seqAsJavaList(seq);
  }

  public static <T> Option<T> constructOption(T value) {
    return Option.apply(value);
  }

  /** resolveChoice(choice=...): "" means none. */
  public static String constructChoiceOption(String choice) {
    return choice == null || choice.isEmpty() ? null : choice;
  }
}
