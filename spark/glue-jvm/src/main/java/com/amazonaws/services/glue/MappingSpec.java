package com.amazonaws.services.glue;

import java.io.Serializable;
import org.cdclab.glue.Unsupported;
import scala.Product2;
import scala.Product3;
import scala.Product4;

/** One ApplyMapping entry: (source path, source type, target path, target type). */
public class MappingSpec implements Serializable {
  public final String sourcePath;
  public final String sourceType;
  public final String targetPath;
  public final String targetType;

  public MappingSpec(String sourcePath, String sourceType, String targetPath, String targetType) {
    this.sourcePath = sourcePath;
    this.sourceType = sourceType;
    this.targetPath = targetPath;
    this.targetType = targetType;
  }

  public static MappingSpec apply(Product4<String, String, String, String> t) {
    return new MappingSpec(t._1(), t._2(), t._3(), t._4());
  }

  public static MappingSpec apply(Product3<String, String, String> t) {
    throw Unsupported.of("ApplyMapping with 3-element mappings");
  }

  public static MappingSpec apply(Product2<String, String> t) {
    throw Unsupported.of("ApplyMapping with 2-element mappings");
  }
}
