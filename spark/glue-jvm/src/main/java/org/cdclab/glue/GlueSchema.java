package org.cdclab.glue;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * A DynamicFrame schema: toString() is the JSON awsglue.gluetypes deserializes
 * ({"dataType": "struct", "fields": [{"name", "container", "properties"}]}).
 */
public final class GlueSchema {
  private static final ObjectMapper JSON = new ObjectMapper();
  private final StructType struct;

  public GlueSchema(StructType struct) {
    this.struct = struct;
  }

  public StructType sparkType() {
    return struct;
  }

  @Override
  public String toString() {
    return json(struct).toString();
  }

  public String treeString() {
    StringBuilder sb = new StringBuilder("root\n");
    for (StructField f : struct.fields()) tree(sb, f, "|-- ");
    return sb.toString();
  }

  /** AWS's printSchema: a choice prints as `choice` with its types below it, unnamed. */
  private static void tree(StringBuilder sb, StructField field, String prefix) {
    DataType type = field.dataType();
    String inner = prefix.replace("|-- ", "|    ") + "|-- ";
    if (ChoiceTypes.isChoice(field)) {
      List<DataType> types = choices(field);
      if (types.size() != 1) {
        sb.append(prefix).append(field.name()).append(": choice\n");
        for (DataType t : types) sb.append(inner).append(typeName(t)).append('\n');
        return;
      }
      type = types.get(0);
    }
    sb.append(prefix).append(field.name()).append(": ").append(typeName(type)).append('\n');
    if (type instanceof StructType s) {
      for (StructField f : s.fields()) tree(sb, f, inner);
    } else if (type instanceof ArrayType a && a.elementType() instanceof StructType s) {
      for (StructField f : s.fields()) tree(sb, f, inner);
    }
  }

  /** Glue's type names (awsglue.gluetypes: class name minus "Type", lower case; IntegerType is "int"). */
  public static String typeName(DataType t) {
    if (t instanceof StructType) return "struct";
    if (t instanceof ArrayType) return "array";
    if (t instanceof MapType) return "map";
    if (t instanceof DecimalType) return "decimal";
    if (t.equals(DataTypes.StringType)) return "string";
    if (t.equals(DataTypes.IntegerType)) return "int";
    if (t.equals(DataTypes.LongType)) return "long";
    if (t.equals(DataTypes.ShortType)) return "short";
    if (t.equals(DataTypes.ByteType)) return "byte";
    if (t.equals(DataTypes.DoubleType)) return "double";
    if (t.equals(DataTypes.FloatType)) return "float";
    if (t.equals(DataTypes.BooleanType)) return "boolean";
    if (t.equals(DataTypes.DateType)) return "date";
    if (t.equals(DataTypes.TimestampType)) return "timestamp";
    if (t.equals(DataTypes.TimestampNTZType)) return "timestampntz";
    if (t.equals(DataTypes.BinaryType)) return "binary";
    if (t.equals(DataTypes.NullType)) return "null";
    return "unknown";
  }

  /**
   * The types a choice's records hold: DynamicFrame.schema() types a member no record holds
   * null, and Glue computes the schema from the records, so a choice whose records all hold
   * one type (after a filter, say) is that type.
   */
  private static List<DataType> choices(StructField f) {
    List<DataType> out = new ArrayList<>();
    for (StructField m : ((StructType) f.dataType()).fields()) {
      if (!m.dataType().equals(DataTypes.NullType)) out.add(m.dataType());
    }
    return out;
  }

  /** awsglue.gluetypes.ChoiceType's JSON: {"dataType": "choice", "choices": [...]}. */
  private static ObjectNode choiceJson(StructField f) {
    List<DataType> types = choices(f);
    if (types.size() == 1) return json(types.get(0));
    if (types.isEmpty()) return json(DataTypes.NullType);
    ObjectNode node = JSON.createObjectNode();
    node.put("dataType", "choice");
    node.putObject("properties");
    ArrayNode choices = node.putArray("choices");
    for (DataType t : types) choices.add(json(t));
    return node;
  }

  static ObjectNode json(DataType t) {
    ObjectNode node = JSON.createObjectNode();
    node.put("dataType", typeName(t));
    node.putObject("properties");
    if (t instanceof StructType s) {
      ArrayNode fields = node.putArray("fields");
      for (StructField f : s.fields()) {
        ObjectNode field = fields.addObject();
        field.put("name", f.name());
        field.set("container", ChoiceTypes.isChoice(f) ? choiceJson(f) : json(f.dataType()));
        field.putObject("properties");
      }
    } else if (t instanceof ArrayType a) {
      node.set("elementType", json(a.elementType()));
    } else if (t instanceof MapType m) {
      node.set("valueType", json(m.valueType()));
    } else if (t instanceof DecimalType d) {
      node.put("precision", d.precision());
      node.put("scale", d.scale());
    }
    return node;
  }
}
