package com.amazonaws.services.glue.util;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Options passed from Python as a JSON object (awsglue.utils.makeOptions). */
public class JsonOptions implements Serializable {
  private static final ObjectMapper JSON = new ObjectMapper();
  private final LinkedHashMap<String, Object> values;

  @SuppressWarnings("unchecked")
  public JsonOptions(String json) {
    try {
      Object parsed = json == null || json.isBlank() ? Map.of() : JSON.readValue(json, Map.class);
      this.values = new LinkedHashMap<>((Map<String, Object>) parsed);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("cdclab: options are not a JSON object: " + e.getMessage(), e);
    }
  }

  public JsonOptions(Map<String, Object> values) {
    this.values = new LinkedHashMap<>(values);
  }

  public static JsonOptions empty() {
    return new JsonOptions(Map.of());
  }

  public Map<String, Object> asMap() {
    return Collections.unmodifiableMap(values);
  }

  public boolean contains(String key) {
    return values.containsKey(key) && values.get(key) != null;
  }

  public Object get(String key) {
    return values.get(key);
  }

  public String getString(String key, String fallback) {
    Object v = values.get(key);
    return v == null ? fallback : String.valueOf(v);
  }

  public boolean getBoolean(String key, boolean fallback) {
    Object v = values.get(key);
    if (v == null) return fallback;
    if (v instanceof Boolean b) return b;
    return Boolean.parseBoolean(String.valueOf(v).trim());
  }

  public long getLong(String key, long fallback) {
    Object v = values.get(key);
    if (v == null) return fallback;
    if (v instanceof Number n) return n.longValue();
    try {
      return Long.parseLong(String.valueOf(v).trim());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("cdclab: option " + key + "=" + v + " is not a number");
    }
  }

  /** A list option; a single string counts as a one-element list (Glue's "paths"). */
  public List<String> getStringList(String key) {
    Object v = values.get(key);
    List<String> out = new ArrayList<>();
    if (v instanceof List<?> list) {
      for (Object o : list) out.add(String.valueOf(o));
    } else if (v != null) {
      out.add(String.valueOf(v));
    }
    return out;
  }

  public JsonOptions with(String key, Object value) {
    LinkedHashMap<String, Object> copy = new LinkedHashMap<>(values);
    copy.put(key, value);
    return new JsonOptions(copy);
  }

  public JsonOptions merge(JsonOptions other) {
    LinkedHashMap<String, Object> copy = new LinkedHashMap<>(values);
    copy.putAll(other.values);
    return new JsonOptions(copy);
  }

  @Override
  public String toString() {
    try {
      return JSON.writeValueAsString(values);
    } catch (JsonProcessingException e) {
      return values.toString();
    }
  }
}
