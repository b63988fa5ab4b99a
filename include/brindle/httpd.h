/*
 * A minimal HTTP/1.1 server on the event loop, for health and metrics
 * endpoints: GET/HEAD only, one request per connection, small requests
 * (8 KiB), answers written without blocking, idle connections closed after
 * 5 s. Not for anything exposed beyond the node.
 */
#ifndef BRINDLE_HTTPD_H
#define BRINDLE_HTTPD_H

#include <stdint.h>
#include <brindle/strbuf.h>

struct loop;
struct httpd;

struct httpd_response {
	int status;		  /* 200, 404, 503, ... */
	const char *content_type; /* default "text/plain; charset=utf-8" */
	struct strbuf body;	  /* initialised by the server */
};

/* Fill @resp for a request of @path (query string removed). */
typedef void (*httpd_handler)(void *ctx, const char *path, struct httpd_response *resp);

/*
 * Listen on @host (an IP literal, "localhost", or "" / "0.0.0.0" for all
 * IPv4 addresses) and @port (0 picks a free one). Errors go to @err.
 */
int httpd_start(struct loop *l, const char *host, uint16_t port, httpd_handler fn, void *ctx,
		struct httpd **out, struct strbuf *err) must_check;
uint16_t httpd_port(const struct httpd *h);
/* Closes the listener and every connection. Accepts NULL. */
void httpd_stop(struct httpd *h);

#endif
