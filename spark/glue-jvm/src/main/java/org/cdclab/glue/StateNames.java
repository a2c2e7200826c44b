package org.cdclab.glue;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/**
 * The file name that stands for a job in the state dir: spark/glue_local/job_names.py's
 * state_name, character for character (a test runs both over the same names). Glue job
 * names may hold '/', "..", spaces and capitals, so a-z, 0-9, '_' and '-' stand for
 * themselves, every other character is %xx per UTF-8 byte, and a result that is empty or
 * longer than {@link #MAX} is its first {@link #HEAD} characters, '~' and the SHA-256 of
 * the name: one name, one file, inside its folder, on any file system.
 */
public final class StateNames {
  public static final int MAX = 120;
  static final int HEAD = 48;

  private StateNames() {}

  public static String of(String name) {
    StringBuilder out = new StringBuilder();
    name.codePoints().forEach(cp -> {
      if ((cp >= 'a' && cp <= 'z') || (cp >= '0' && cp <= '9') || cp == '_' || cp == '-') {
        out.append((char) cp);
      } else {
        for (byte b : new String(Character.toChars(cp)).getBytes(StandardCharsets.UTF_8)) {
          out.append('%').append(String.format("%02x", b & 0xff));
        }
      }
    });
    String escaped = out.toString();
    if (!escaped.isEmpty() && escaped.length() <= MAX) return escaped;
    String head = escaped.substring(0, Math.min(HEAD, escaped.length()));
    int cut = head.lastIndexOf('%');
    if (cut >= 0 && cut > head.length() - 3) head = head.substring(0, cut);
    return head + "~" + sha256(name);
  }

  private static String sha256(String name) {
    try {
      byte[] d = MessageDigest.getInstance("SHA-256").digest(name.getBytes(StandardCharsets.UTF_8));
      StringBuilder hex = new StringBuilder();
      for (byte b : d) hex.append(String.format("%02x", b & 0xff));
      return hex.toString();
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /** One state name per line of standard input (names with no newline), for the test. */
  public static void main(String[] args) throws java.io.IOException {
    java.io.BufferedReader in = new java.io.BufferedReader(
        new java.io.InputStreamReader(System.in, StandardCharsets.UTF_8));
    java.io.PrintStream outStream = new java.io.PrintStream(System.out, true, "UTF-8");
    for (String line = in.readLine(); line != null; line = in.readLine()) {
      outStream.println(of(line));
    }
  }
}
