/*
 * A minimal HTTP/1.1 server on the event loop, for health and metrics
 * endpoints: GET/HEAD only, one request per connection, small requests
 * (8 KiB), answers written without blocking. Not for anything exposed beyond
 * the node; but metrics listen on every address, so pods reach them, and the
 * server must stay cheap and keep answering whatever clients do:
 * - At most HTTPD_MAX_CONNECTIONS open connections per server. A new one
 *   beyond that closes the oldest still waiting for its request (the oldest of
 *   all when every one is being answered): a flood of idle connections cycles
 *   through the places, while a scraper or probe that sends its request with
 *   the connection is answered as soon as it is accepted.
 * - A request must arrive whole within HTTPD_REQUEST_MS of the accept (a total,
 *   not an idle time, so trickling bytes does not extend it), and the answer
 *   must be written within HTTPD_ANSWER_MS of being ready; otherwise the
 *   connection is closed. One timer is armed for the earliest deadline.
 * - Out of file descriptors (EMFILE, ENFILE), the server gives up a reserve
 *   descriptor (/dev/null, opened at start) to accept the pending connection,
 *   then closes its oldest connection still waiting for a request to get the
 *   reserve back, or else the new connection at once; so the level-triggered
 *   listener does not spin the loop, a prompt request is still answered, and
 *   the server serves as before once descriptors are free. Without memory or
 *   a reserve, accepting pauses for 100 ms.
 * - The listen backlog is 1024 (capped by net.core.somaxconn), so a burst of
 *   connections does not drop a probe's SYN.
 * - Writes never raise SIGPIPE.
 * So a server uses at most HTTPD_MAX_CONNECTIONS + 3 descriptors (listener,
 * timer, reserve), and 8 KiB of buffer per connection plus the answers (the
 * buffers of closed connections are kept for the next ones, up to the peak).
 */
#ifndef BRINDLE_HTTPD_H
#define BRINDLE_HTTPD_H

#include <stdbool.h>
#include <stdint.h>
#include <brindle/core/strbuf.h>

struct loop;
struct httpd;

#define HTTPD_MAX_CONNECTIONS 64
#define HTTPD_REQUEST_MS      2000
#define HTTPD_ANSWER_MS	      5000

/* Counters since start. */
struct httpd_stats {
	unsigned connections; /* open now */
	uint64_t accepted;
	uint64_t evicted;   /* closed to make room for a newer connection */
	uint64_t timed_out; /* request or answer not done by its deadline */
	uint64_t dropped;   /* accepted and closed at once: out of file descriptors */
};

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
void httpd_get_stats(const struct httpd *h, struct httpd_stats *out);
/* Closes the listener and every connection. Accepts NULL. */
void httpd_stop(struct httpd *h);

/*
 * The answers of a daemon's health and metrics port (confd's, the
 * controllers'): /liveness "ok"; /readiness "ready", or 503 with @why (lines,
 * each ending in a newline); /metrics the Prometheus text of @m; anything
 * else 404 naming the three. @why is read only when not @ready.
 */
struct metrics;
void httpd_health_answer(const char *path, bool ready, const char *why, const struct metrics *m,
			 struct httpd_response *resp);

#endif
