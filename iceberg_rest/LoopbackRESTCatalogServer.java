/*
 * Runs Apache Iceberg's REST catalog server (iceberg-open-api) bound to one host.
 *
 * The stock main class binds every interface; cdclab keeps services on 127.0.0.1, so this
 * launcher builds the same backend catalog and servlet but on a connector with an explicit
 * host (REST_HOST, default 127.0.0.1; containers set 0.0.0.0 and publish on the host's
 * loopback). Catalog properties come from CATALOG_* environment variables exactly as the
 * stock server reads them (CATALOG_IO__IMPL -> io-impl), so both runtimes share one config.
 * It lives in the fixture's package to reach its package-private adapter.
 */
package org.apache.iceberg.rest;

import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.CatalogProperties;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.jdbc.JdbcCatalog;
import org.apache.iceberg.relocated.com.google.common.collect.Maps;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.server.handler.gzip.GzipHandler;
import org.eclipse.jetty.servlet.ServletContextHandler;
import org.eclipse.jetty.servlet.ServletHolder;

public final class LoopbackRESTCatalogServer {
  private LoopbackRESTCatalogServer() {}

  private static String env(String name, String fallback) {
    String value = System.getenv(name);
    return value == null || value.isEmpty() ? fallback : value;
  }

  public static void main(String[] args) throws Exception {
    Map<String, String> props = Maps.newHashMap(RCKUtils.environmentCatalogConfig());
    props.putIfAbsent(CatalogProperties.CATALOG_IMPL, JdbcCatalog.class.getName());
    props.putIfAbsent("jdbc.schema-version", "V1");
    if (!props.containsKey(CatalogProperties.URI) || !props.containsKey(CatalogProperties.WAREHOUSE_LOCATION)) {
      // A durable catalog is the point: refuse the fixture's in-memory/temp defaults.
      throw new IllegalArgumentException("CATALOG_URI and CATALOG_WAREHOUSE must be set");
    }
    String host = env("REST_HOST", "127.0.0.1");
    int port = Integer.parseInt(env("REST_PORT", "8181"));

    Catalog catalog = CatalogUtil.buildIcebergCatalog("rest_backend", props, new Configuration());
    RESTCatalogServer.CatalogContext context = new RESTCatalogServer.CatalogContext(catalog, props);
    RESTCatalogServlet servlet = new RESTCatalogServlet(new RESTServerCatalogAdapter(context));

    ServletContextHandler handler = new ServletContextHandler(ServletContextHandler.NO_SESSIONS);
    handler.addServlet(new ServletHolder(servlet), "/*");
    handler.insertHandler(new GzipHandler());

    Server server = new Server();
    ServerConnector connector = new ServerConnector(server);
    connector.setHost(host);
    connector.setPort(port);
    server.addConnector(connector);
    server.setHandler(handler);
    server.start();
    System.out.println("iceberg rest catalog listening on " + host + ":" + port
        + " (uri " + props.get(CatalogProperties.URI) + ", warehouse "
        + props.get(CatalogProperties.WAREHOUSE_LOCATION) + ")");
    server.join();
  }
}
