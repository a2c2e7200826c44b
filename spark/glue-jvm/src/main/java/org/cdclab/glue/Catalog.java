package org.cdclab.glue;

import com.amazonaws.auth.AWSCredentialsProvider;
import com.amazonaws.auth.AWSStaticCredentialsProvider;
import com.amazonaws.auth.AnonymousAWSCredentials;
import com.amazonaws.auth.DefaultAWSCredentialsProviderChain;
import com.amazonaws.client.builder.AwsClientBuilder.EndpointConfiguration;
import com.amazonaws.services.glue.AWSGlue;
import com.amazonaws.services.glue.AWSGlueClientBuilder;
import com.amazonaws.services.glue.model.BatchCreatePartitionRequest;
import com.amazonaws.services.glue.model.CreateTableRequest;
import com.amazonaws.services.glue.model.EntityNotFoundException;
import com.amazonaws.services.glue.model.GetPartitionsRequest;
import com.amazonaws.services.glue.model.GetPartitionsResult;
import com.amazonaws.services.glue.model.GetTableRequest;
import com.amazonaws.services.glue.model.Partition;
import com.amazonaws.services.glue.model.PartitionError;
import com.amazonaws.services.glue.model.PartitionInput;
import com.amazonaws.services.glue.model.Table;
import com.amazonaws.services.glue.model.TableInput;
import com.amazonaws.services.glue.model.UpdateTableRequest;
import java.util.ArrayList;
import java.util.List;

/**
 * The Data Catalog through AWS's own Java SDK: the local Glue API when
 * AWS_ENDPOINT_URL_GLUE (or AWS_ENDPOINT_URL) is set, the real one otherwise.
 */
public final class Catalog {
  /** A JVM system property that wins over the environment: a test points a driver that is
   * already running at its own local Glue API. */
  public static final String ENDPOINT_PROPERTY = "cdclab.glue.endpoint";
  private static volatile Client client;

  private Catalog() {}

  public static Table getTable(String database, String name, String catalogId) {
    GetTableRequest req = new GetTableRequest().withDatabaseName(database).withName(name);
    if (catalogId != null && !catalogId.isEmpty()) req.setCatalogId(catalogId);
    try {
      return client().getTable(req).getTable();
    } catch (RuntimeException e) {
      throw new IllegalStateException("cdclab: cannot read catalog table " + database + "." + name
          + ": " + e.getMessage(), e);
    }
  }

  /** The table, or null when the catalog has none of that name (EntityNotFoundException). */
  public static Table findTable(String database, String name, String catalogId) {
    try {
      GetTableRequest req = new GetTableRequest().withDatabaseName(database).withName(name);
      if (catalogId != null && !catalogId.isEmpty()) req.setCatalogId(catalogId);
      return client().getTable(req).getTable();
    } catch (EntityNotFoundException e) {
      return null;
    } catch (RuntimeException e) {
      throw new IllegalStateException("cdclab: cannot read catalog table " + database + "."
          + name + ": " + e.getMessage(), e);
    }
  }

  public static void createTable(String database, String catalogId, TableInput table) {
    CreateTableRequest req = new CreateTableRequest().withDatabaseName(database)
        .withTableInput(table);
    if (catalogId != null && !catalogId.isEmpty()) req.setCatalogId(catalogId);
    try {
      client().createTable(req);
    } catch (RuntimeException e) {
      throw new IllegalStateException("cdclab: cannot create catalog table " + database + "."
          + table.getName() + ": " + e.getMessage(), e);
    }
  }

  public static void updateTable(String database, String catalogId, TableInput table) {
    UpdateTableRequest req = new UpdateTableRequest().withDatabaseName(database)
        .withTableInput(table);
    if (catalogId != null && !catalogId.isEmpty()) req.setCatalogId(catalogId);
    try {
      client().updateTable(req);
    } catch (RuntimeException e) {
      throw new IllegalStateException("cdclab: cannot update catalog table " + database + "."
          + table.getName() + ": " + e.getMessage(), e);
    }
  }

  /** BatchCreatePartition, 100 a call (its limit); partitions that exist already are kept.
   * Returns how many were new. */
  public static int addPartitions(String database, String name, String catalogId,
                                  List<PartitionInput> partitions) {
    int added = 0;
    for (int i = 0; i < partitions.size(); i += 100) {
      List<PartitionInput> chunk = partitions.subList(i, Math.min(i + 100, partitions.size()));
      BatchCreatePartitionRequest req = new BatchCreatePartitionRequest()
          .withDatabaseName(database).withTableName(name).withPartitionInputList(chunk);
      if (catalogId != null && !catalogId.isEmpty()) req.setCatalogId(catalogId);
      List<PartitionError> errors;
      try {
        errors = client().batchCreatePartition(req).getErrors();
      } catch (RuntimeException e) {
        throw new IllegalStateException("cdclab: cannot add partitions to catalog table "
            + database + "." + name + ": " + e.getMessage(), e);
      }
      int failed = 0;
      for (PartitionError err : errors == null ? List.<PartitionError>of() : errors) {
        failed++;
        String code = err.getErrorDetail() == null ? "" : err.getErrorDetail().getErrorCode();
        if (!"AlreadyExistsException".equals(code)) {
          throw new IllegalStateException("cdclab: cannot add partition "
              + err.getPartitionValues() + " to catalog table " + database + "." + name
              + ": " + code + " " + err.getErrorDetail().getErrorMessage());
        }
      }
      added += chunk.size() - failed;
    }
    return added;
  }

  /** The table's partitions (GetPartitions, every page), filtered by the catalog when an
   * expression (catalogPartitionPredicate) is given. */
  public static List<Partition> getPartitions(String database, String name, String expression,
                                              String catalogId) {
    List<Partition> out = new ArrayList<>();
    GetPartitionsRequest req = new GetPartitionsRequest().withDatabaseName(database)
        .withTableName(name);
    if (expression != null && !expression.isEmpty()) req.setExpression(expression);
    if (catalogId != null && !catalogId.isEmpty()) req.setCatalogId(catalogId);
    try {
      do {
        GetPartitionsResult page = client().getPartitions(req);
        out.addAll(page.getPartitions());
        req.setNextToken(page.getNextToken());
      } while (req.getNextToken() != null && !req.getNextToken().isEmpty());
    } catch (RuntimeException e) {
      throw new IllegalStateException("cdclab: cannot read the partitions of catalog table "
          + database + "." + name + ": " + e.getMessage(), e);
    }
    return out;
  }

  static AWSGlue client() {
    String endpoint = firstNonEmpty(System.getProperty(ENDPOINT_PROPERTY),
        System.getenv("AWS_ENDPOINT_URL_GLUE"), System.getenv("AWS_ENDPOINT_URL"), null);
    Client c = client;
    if (c != null && java.util.Objects.equals(c.endpoint(), endpoint)) return c.glue();
    synchronized (Catalog.class) {
      if (client == null || !java.util.Objects.equals(client.endpoint(), endpoint)) {
        client = new Client(endpoint, build(endpoint));
      }
      return client.glue();
    }
  }

  private record Client(String endpoint, AWSGlue glue) {}

  private static AWSGlue build(String endpoint) {
    String region = firstNonEmpty(System.getenv("AWS_REGION"), System.getenv("AWS_DEFAULT_REGION"),
        "us-east-1");
    AWSGlueClientBuilder b = AWSGlueClientBuilder.standard();
    if (endpoint == null) return b.withRegion(region).build();
    AWSCredentialsProvider creds = DefaultAWSCredentialsProviderChain.getInstance();
    try {
      creds.getCredentials();
    } catch (RuntimeException e) {
      creds = new AWSStaticCredentialsProvider(new AnonymousAWSCredentials());
    }
    return b.withEndpointConfiguration(new EndpointConfiguration(endpoint, region))
        .withCredentials(creds).build();
  }

  private static String firstNonEmpty(String... values) {
    for (String v : values) if (v != null && !v.isEmpty()) return v;
    return null;
  }
}
