package org.cdclab.glue;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RemoteIterator;

/** Lists input objects through Hadoop's FileSystem (S3A for s3://), never by glob. */
public final class Listing {
  private Listing() {}

  /** Hidden files and directory markers are skipped, as Glue and Hive do (_SUCCESS, .crc). */
  public static boolean isDataFile(String name) {
    return !name.isEmpty() && !name.startsWith("_") && !name.startsWith(".")
        && !name.endsWith("_$folder$");
  }

  public static List<SourceFile> list(List<String> roots, boolean recurse, Configuration conf) {
    List<SourceFile> out = new ArrayList<>();
    for (String root : roots) {
      Path path = new Path(root);
      try {
        FileSystem fs = path.getFileSystem(conf);
        FileStatus top;
        try {
          top = fs.getFileStatus(path);
        } catch (FileNotFoundException e) {
          continue; // an empty prefix: nothing to read yet
        }
        if (top.isFile()) {
          out.add(of(top));
          continue;
        }
        RemoteIterator<LocatedFileStatus> it = fs.listFiles(path, recurse);
        while (it.hasNext()) {
          LocatedFileStatus st = it.next();
          if (st.isFile() && isDataFile(st.getPath().getName()) && visible(path, st.getPath())) {
            out.add(of(st));
          }
        }
      } catch (IOException e) {
        throw new IllegalStateException("cdclab: cannot list " + root + ": " + e.getMessage(), e);
      }
    }
    out.sort(Comparator.comparing(SourceFile::path));
    return out;
  }

  /** No hidden directory between the root and the file (Hive skips _temporary/...). */
  private static boolean visible(Path root, Path file) {
    for (Path p = file.getParent(); p != null && !p.equals(root); p = p.getParent()) {
      if (!isDataFile(p.getName())) return false;
    }
    return true;
  }

  private static SourceFile of(FileStatus st) {
    Path p = st.getPath();
    return new SourceFile(p.toString(), st.getLen(), st.getModificationTime(), p.toUri().toString());
  }

  /** A literal path for Spark's readers, which glob any path holding {}[]*?\ . */
  public static String literal(String path) {
    StringBuilder sb = new StringBuilder(path.length());
    for (char c : path.toCharArray()) {
      if ("{}[]*?\\".indexOf(c) >= 0) sb.append('\\');
      sb.append(c);
    }
    return sb.toString();
  }
}
