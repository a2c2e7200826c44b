package org.cdclab.glue;

/** One listed input object: its path as Glue shows it (s3://bucket/key), size, mtime. */
public record SourceFile(String path, long size, long modifiedMs, String sparkUri) {}
