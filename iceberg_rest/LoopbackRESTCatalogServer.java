/*
 * Runs Apache Iceberg's REST catalog server (iceberg-open-api) bound to one host.
 *
 * The stock main class binds every interface; cdclab keeps services on 127.0.0.1, so this
 * launcher builds the same backend catalog and servlet but on a connector with an explicit
 * host (REST_HOST, default 127.0.0.1; containers set 0.0.0.0 and publish on the host's
 * loopback). Catalog properties come from CATALOG_* environment variables exactly as the
 * stock server reads them (CATALOG_IO__IMPL -> io-impl), so both runtimes share one config.
 * It lives in the fixture's package to reach its package-private adapter.
 *
 * The stock server answers anyone. cdclab's requires the stack's generated bearer token
 * (REST_AUTH_TOKEN, from the credentials file: never on a command line) on every request,
 * as Iceberg clients send it from their `token` property, and refuses request bodies over
 * REST_MAX_BODY_BYTES (default 16 MiB) before the catalog reads them.
 */
package org.apache.iceberg.rest;

import jakarta.servlet.DispatcherType;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ReadListener;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletInputStream;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;
import jakarta.servlet.http.HttpServletResponse;
import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.EnumSet;
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
import org.eclipse.jetty.servlet.FilterHolder;
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
    String token = env("REST_AUTH_TOKEN", "");
    long maxBody = Long.parseLong(env("REST_MAX_BODY_BYTES", String.valueOf(16L << 20)));
    handler.addFilter(new FilterHolder(new Guard(token, maxBody)), "/*",
        EnumSet.of(DispatcherType.REQUEST));
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
        + props.get(CatalogProperties.WAREHOUSE_LOCATION) + ", "
        + (token.isEmpty() ? "no authentication" : "bearer token required") + ")");
    server.join();
  }

  /** Bearer token check and request body cap, answering as Iceberg's ErrorResponse. */
  static final class Guard implements Filter {
    private final byte[] expected;
    private final long maxBody;

    Guard(String token, long maxBody) {
      this.expected = ("Bearer " + token).getBytes(StandardCharsets.UTF_8);
      this.maxBody = maxBody;
    }

    @Override
    public void doFilter(ServletRequest req, ServletResponse resp, FilterChain chain)
        throws IOException, ServletException {
      HttpServletRequest http = (HttpServletRequest) req;
      HttpServletResponse out = (HttpServletResponse) resp;
      if (expected.length > "Bearer ".length()) {
        String given = http.getHeader("Authorization");
        byte[] got = given == null ? new byte[0] : given.getBytes(StandardCharsets.UTF_8);
        if (!MessageDigest.isEqual(expected, got)) {  // constant time
          error(out, 401, "NotAuthorizedException",
              "cdclab: the Iceberg REST catalog requires the stack's token "
                  + "(the catalog property `token`; `cdclab env --show-secrets` prints "
                  + "CDCLAB_CATALOG_TOKEN)");
          return;
        }
      }
      long declared = http.getContentLengthLong();
      if (declared > maxBody) {
        error(out, 413, "BadRequestException", tooLarge(declared));
        return;
      }
      if (declared == 0 || "GET".equals(http.getMethod()) && declared < 0) {
        chain.doFilter(req, resp);
        return;
      }
      // read at most maxBody + 1 bytes: a chunked body without a length is capped too
      ByteArrayOutputStream body = new ByteArrayOutputStream();
      byte[] buf = new byte[8192];
      InputStream in = http.getInputStream();
      for (int n; (n = in.read(buf)) > 0; ) {
        body.write(buf, 0, n);
        if (body.size() > maxBody) {
          error(out, 413, "BadRequestException", tooLarge(body.size()));
          return;
        }
      }
      chain.doFilter(new Buffered(http, body.toByteArray()), resp);
    }

    private String tooLarge(long size) {
      return "cdclab: request body of " + size + " bytes is over the catalog's limit of "
          + maxBody + " bytes (REST_MAX_BODY_BYTES)";
    }

    private static void error(HttpServletResponse out, int code, String type, String message)
        throws IOException {
      out.setStatus(code);
      out.setContentType("application/json");
      String json = "{\"error\":{\"message\":\"" + message.replace("\"", "'")
          + "\",\"type\":\"" + type + "\",\"code\":" + code + "}}";
      out.getOutputStream().write(json.getBytes(StandardCharsets.UTF_8));
    }
  }

  /** The request with its body already read (and size-checked) into memory. */
  static final class Buffered extends HttpServletRequestWrapper {
    private final byte[] body;

    Buffered(HttpServletRequest request, byte[] body) {
      super(request);
      this.body = body;
    }

    @Override
    public ServletInputStream getInputStream() {
      ByteArrayInputStream in = new ByteArrayInputStream(body);
      return new ServletInputStream() {
        @Override
        public int read() {
          return in.read();
        }

        @Override
        public int read(byte[] b, int off, int len) {
          return in.read(b, off, len);
        }

        @Override
        public boolean isFinished() {
          return in.available() == 0;
        }

        @Override
        public boolean isReady() {
          return true;
        }

        @Override
        public void setReadListener(ReadListener listener) {
          throw new UnsupportedOperationException("synchronous reads only");
        }
      };
    }

    @Override
    public BufferedReader getReader() {
      return new BufferedReader(new InputStreamReader(getInputStream(), StandardCharsets.UTF_8));
    }

    @Override
    public int getContentLength() {
      return body.length;
    }

    @Override
    public long getContentLengthLong() {
      return body.length;
    }
  }
}
