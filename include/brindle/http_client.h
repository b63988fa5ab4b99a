/*
 * A small HTTP/1.1 client for the etcd gateway: POST requests with a JSON
 * body over TCP, TLS or a unix socket, responses read with nodejs'
 * http-parser (Content-Length, chunked and close-delimited bodies). The only
 * file that includes http_parser.h or OpenSSL's SSL headers is
 * lib/http_client.c; lib/etcd.c and lib/etcd_watch.c use this interface. It
 * is exported so tests and fuzz targets can reach the response reader.
 *
 * Three layers:
 *  - http_endpoint: a base URL split into what a connection needs.
 *  - http_reader: the response parser, pure (bytes in, status and body out),
 *    bounded (header bytes, body bytes), reusable across the responses of a
 *    keep-alive connection.
 *  - http_conn: one non-blocking connection (resolve, connect, TLS handshake,
 *    one request at a time, its response into a reader). Driven either by an
 *    event loop (http_conn_advance on readiness) or blocking until deadlines
 *    (http_conn_run).
 *
 * No proxies, no redirects, no authentication other than TLS client
 * certificates; servers' certificates are always verified (CA file or the
 * system store) along with their host name or IP address.
 */
#ifndef BRINDLE_HTTP_CLIENT_H
#define BRINDLE_HTTP_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <brindle/strbuf.h>
#include <brindle/util.h>

/* Limits of a response. */
#define HTTP_MAX_HEADER_BYTES (32 * 1024)
/* Unary bodies: a list page of 1,000 keys with values of ~45 KB each. */
#define HTTP_MAX_BODY_BYTES (64 * 1024 * 1024)

/*
 * "http://host[:port][/prefix]", "https://..." (IPv6 literals in brackets),
 * or a unix socket (@unix_path set; the URL then only gives the scheme and
 * the host name for the Host header and certificate checks).
 */
struct http_endpoint {
	char *host; /* without brackets */
	char *port; /* digits */
	char *unix_path;
	char *prefix;	 /* path prefix without a trailing "/"; "" when none */
	char *authority; /* the Host header: host[:port] as the URL had it */
	bool tls;
};

int http_endpoint_parse(const char *url, const char *unix_path, struct http_endpoint *out,
			struct strbuf *err) must_check;
void http_endpoint_clear(struct http_endpoint *ep);

/* --- responses --- */

/*
 * Body bytes as they arrive, de-chunked. A negative return stops the reader
 * and is what http_reader_feed returns.
 */
typedef int (*http_body_fn)(void *ctx, const char *p, size_t n);

struct http_reader;

/*
 * @max_body: 0 for no limit (a stream; bound it in @fn). Without @fn the body
 * is collected (http_reader_body).
 */
struct http_reader *http_reader_new(size_t max_body, http_body_fn fn, void *ctx);
void http_reader_free(struct http_reader *r);
/* Ready for the next response of the connection. */
void http_reader_reset(struct http_reader *r);
/*
 * Parses up to @n bytes; *used says how many belong to this response (the
 * reader stops after a complete one). Returns 0, -EPROTO (not HTTP, or a
 * protocol upgrade), -EMSGSIZE (over a limit), or @fn's error. After an
 * error the reader is dead until reset. The reason is in @err (optional).
 */
int http_reader_feed(struct http_reader *r, const char *p, size_t n, size_t *used,
		     struct strbuf *err) must_check;
/*
 * The peer closed the connection: completes a body that runs to the close.
 * 0 when the response is complete; -ECONNRESET when it was cut short (or
 * never started).
 */
int http_reader_eof(struct http_reader *r, struct strbuf *err) must_check;
bool http_reader_done(const struct http_reader *r);
/* Whether any byte of a response arrived since the last reset. */
bool http_reader_started(const struct http_reader *r);
/* 0 until the status line has been read. */
int http_reader_status(const struct http_reader *r);
/* After a complete response: the connection may carry another request. */
bool http_reader_keep_alive(const struct http_reader *r);
/* The collected body (NUL-terminated) when there is no body callback. */
const struct strbuf *http_reader_body(const struct http_reader *r);
/* Gives a collected body above @keep bytes of capacity back to the allocator. */
void http_reader_trim(struct http_reader *r, size_t keep);

/* --- TLS settings --- */

struct http_tls;

/*
 * Loads @ca_file (NULL: the system store) and the client certificate and key
 * (optional; the key defaults to @cert_file). -EINVAL with a reason in @err
 * when a file cannot be used.
 */
int http_tls_new(const char *ca_file, const char *cert_file, const char *key_file,
		 struct http_tls **out, struct strbuf *err) must_check;
void http_tls_free(struct http_tls *t);

/* --- connections --- */

enum http_want {
	HTTP_WANT_READ = 1,
	HTTP_WANT_WRITE = 2,
};

struct http_conn;

/*
 * Resolves @ep (an address literal at once; a name waits until @deadline_ms
 * at the latest) and starts a non-blocking connect. @tls is required for TLS
 * endpoints and must outlive the connection. Nothing is sent yet. Errors:
 * -ECONNREFUSED (refused at once, no address, bad URL), -ETIMEDOUT (the name
 * did not resolve in time); the reason in @err.
 */
int http_conn_open(const struct http_endpoint *ep, struct http_tls *tls, uint64_t deadline_ms,
		   struct http_conn **out, struct strbuf *err) must_check;
/* Closes the socket. Accepts NULL. */
void http_conn_close(struct http_conn *c);
/*
 * The socket. While connecting it changes when an address fails and the next
 * one is tried; *@generation (optional) counts those changes, so a caller
 * that registered the descriptor somewhere knows to register it again.
 */
int http_conn_fd(const struct http_conn *c, unsigned *generation);
/* TCP keep-alive probes after @idle_s idle seconds, every @interval_s (TCP only). */
void http_conn_keepalive_probes(struct http_conn *c, int idle_s, int interval_s);

/*
 * Queues a POST of @body (copied) to the endpoint's prefix + @path; its
 * response goes to @r (reset here), which must outlive the exchange. One
 * request at a time: the previous response must be complete.
 */
void http_conn_post(struct http_conn *c, const char *path, const char *body, size_t len,
		    struct http_reader *r);
/*
 * Does whatever can be done without blocking. Returns a combination of
 * enum http_want to wait for, 0 once the response is complete, or a negative
 * errno: -ECONNREFUSED (could not connect, TLS handshake failed), -ECONNRESET
 * (the connection broke or closed early), the reader's errors. The reason is
 * in @err.
 */
int http_conn_advance(struct http_conn *c, struct strbuf *err) must_check;
/*
 * Blocking: advances until the response is complete. The connection (TCP and
 * TLS) must be up by @connect_deadline_ms, the response complete by
 * @deadline_ms (both now_ms() clock); -ETIMEDOUT otherwise.
 */
int http_conn_run(struct http_conn *c, uint64_t connect_deadline_ms, uint64_t deadline_ms,
		  struct strbuf *err) must_check;
/* TCP (and TLS) connected. */
bool http_conn_established(const struct http_conn *c);
/* Some bytes of the current request have been written. */
bool http_conn_sent(const struct http_conn *c);
/*
 * Idle, kept alive by the server, and not closed by it meanwhile: the next
 * request may go on this connection.
 */
bool http_conn_reusable(const struct http_conn *c);

#endif
