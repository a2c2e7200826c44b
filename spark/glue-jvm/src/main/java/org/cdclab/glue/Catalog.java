package org.cdclab.glue;

import com.amazonaws.auth.AWSCredentialsProvider;
import com.amazonaws.auth.AWSStaticCredentialsProvider;
import com.amazonaws.auth.AnonymousAWSCredentials;
import com.amazonaws.auth.DefaultAWSCredentialsProviderChain;
import com.amazonaws.client.builder.AwsClientBuilder.EndpointConfiguration;
import com.amazonaws.services.glue.AWSGlue;
import com.amazonaws.services.glue.AWSGlueClientBuilder;
import com.amazonaws.services.glue.model.GetTableRequest;
import com.amazonaws.services.glue.model.Table;

/**
 * The Data Catalog through AWS's own Java SDK: the local Glue API when
 * AWS_ENDPOINT_URL_GLUE (or AWS_ENDPOINT_URL) is set, the real one otherwise.
 */
public final class Catalog {
  private static volatile AWSGlue client;

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

  static AWSGlue client() {
    AWSGlue c = client;
    if (c != null) return c;
    synchronized (Catalog.class) {
      if (client == null) client = build();
      return client;
    }
  }

  private static AWSGlue build() {
    String region = firstNonEmpty(System.getenv("AWS_REGION"), System.getenv("AWS_DEFAULT_REGION"),
        "us-east-1");
    String endpoint = firstNonEmpty(System.getenv("AWS_ENDPOINT_URL_GLUE"),
        System.getenv("AWS_ENDPOINT_URL"), null);
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
