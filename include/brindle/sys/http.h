/*
 * HTTP for the datastore clients, on libcurl: the only header of ours that
 * speaks of HTTP transport, and lib/http.c the only file that includes
 * curl.h. One agent (a curl multi handle, with its connection cache) serves
 * many requests; in a daemon it is driven by the daemon's own event loop
 * (curl's socket and timer callbacks registered in struct loop), so no
 * network call ever blocks the loop: name resolution, connects, TLS and
 * bodies all proceed as the loop turns. Short-lived tools use the same agent
 * without a loop and wait for one call at a time (http_agent_perform).
 *
 * A request names a URL (or a unix socket and a URL for the Host header and
 * path), a method, a body, and how much of the answer to keep or where to
 * stream it. TLS verifies the server against a CA file (or the system
 * store) and its name; a client certificate and key may be given; a bearer
 * token may come from a file that is read again whenever it changes (a
 * ServiceAccount token rotates). HTTP/2 is used when the server offers it
 * over TLS, so many watches share one connection. Proxies are off unless a
 * request names one: datastore traffic goes direct whatever *_proxy says.
 *
 * Errors are negative errno values, with the reason in the result's text:
 *   -ECONNREFUSED  could not reach the server (refused, unresolvable, TLS
 *                  handshake or certificate failure): the request was not sent
 *   -ETIMEDOUT     the connect or the whole request took too long
 *   -ECONNRESET    the connection broke after the request was sent
 *   -EMSGSIZE      the answer was larger than allowed (header 32 KiB, body max_body)
 *   -EPROTO        the server's answer is not HTTP we can read
 *   other          what the body callback returned to stop the transfer
 */
#ifndef BRINDLE_HTTP_H
#define BRINDLE_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <brindle/core/strbuf.h>
#include <brindle/core/util.h>

struct loop;
struct http_agent;
struct http_call;

/*
 * TLS and authentication, shared by the requests of a client. Copied by the
 * agent (files by name, PEM blobs by content). A CA given as a file or a blob
 * is the only one trusted: the system's store is not consulted then. Each
 * blob replaces its file when both are set; the PEM stays in memory (inline
 * kubeconfig data need not touch the disk).
 */
struct http_auth {
	const char *ca_file;	/* NULL: the system's store */
	const char *cert_file;	/* client certificate, or NULL */
	const char *key_file;	/* its key (default: cert_file) */
	const char *token;	/* bearer token, or NULL (wins over token_file) */
	const char *token_file; /* bearer token read from a file, re-read when it changes */
	const char *ca_pem;	/* CA certificates as PEM text, ca_pem_len bytes, or NULL */
	size_t ca_pem_len;
	const char *cert_pem; /* client certificate as PEM, or NULL */
	size_t cert_pem_len;
	const char *key_pem; /* its key as PEM (required with cert_pem), or NULL */
	size_t key_pem_len;
	bool insecure; /* verify neither the server's certificate nor its name */
	/* Verify the server's certificate for this name (and send it as SNI and Host)
	   while connecting to the URL's host; NULL: the URL's host. */
	const char *tls_server_name;
};

/* Streamed body bytes; a negative return stops the transfer with that error. */
typedef int (*http_data_fn)(void *ctx, const char *p, size_t n);

struct http_request {
	const char *method; /* "GET", "POST", "PUT", "PATCH", "DELETE" */
	const char *url;
	const char *unix_socket; /* connect here instead (the URL still gives Host and path) */
	const char *content_type;
	const char *accept;
	const char *body; /* NULL: none */
	size_t body_len;
	long connect_timeout_ms;   /* 0: 1000 */
	long timeout_ms;	   /* whole request; 0: none (watches) */
	long keepalive_idle_s;	   /* TCP keep-alive probes after this much idle time; 0: 30 */
	long keepalive_interval_s; /* and then every this often; 0: 10 */
	long keepalive_count;	   /* unanswered probes that end the connection; 0: the kernel's */
	long user_timeout_ms;	   /* TCP_USER_TIMEOUT: unacknowledged data ends it; 0: none */
	size_t max_body;	   /* kept body limit (when not streaming); 0: 64 MiB */
	/*
	 * A bulk answer (a list page of megabytes) that must not share an HTTP/2
	 * connection with streams: it goes over HTTP/1.1, on a connection of its
	 * own (in a loop agent closed when done, so that no watch takes it over;
	 * kept for the next request in a blocking one). With libcurl 7.88 a large
	 * response multiplexed beside watches was seen to stall mid-body.
	 */
	bool own_connection;
	http_data_fn on_data; /* stream the body here instead of keeping it */
	void *ctx;
};

struct http_result {
	int err;	    /* 0, or a negative errno (above) */
	long status;	    /* HTTP status, 0 when none arrived */
	bool sent;	    /* the request may have reached the server */
	struct strbuf body; /* the kept body (NUL-terminated), when not streaming */
	char why[256];	    /* the reason of a failure */
};

/*
 * An agent. With @l it is driven by that loop (http_call_start); without, by
 * http_agent_perform. @auth may be NULL. -EINVAL with the reason in @err when
 * a TLS file cannot be used.
 */
int http_agent_new(struct loop *l, const struct http_auth *auth, struct http_agent **out,
		   struct strbuf *err) must_check;
/* Cancels every call in flight (no callbacks). Accepts NULL. */
void http_agent_free(struct http_agent *a);

/*
 * Blocking: one request to its end. @res is initialised here (free its body
 * with http_result_clear). Returns res->err.
 */
int http_agent_perform(struct http_agent *a, const struct http_request *req,
		       struct http_result *res) must_check;
/*
 * Several blocking calls at once (over one HTTP/2 connection where the
 * server offers it): every @reqs[i] runs, and @res[i] gets its result, as
 * http_agent_perform's. Returns 0, or the first of their errors. An agent of
 * a loop runs them one after another.
 */
int http_agent_perform_many(struct http_agent *a, const struct http_request *reqs, size_t n,
			    struct http_result *res);

/*
 * From the loop: start @req (copied); @done runs once from the loop when it
 * ends, with a result valid during the call. The call is freed after @done
 * returns, or by http_call_cancel (then @done never runs). Cancelling from
 * inside a streaming callback or @done is allowed.
 */
typedef void (*http_done_fn)(void *ctx, const struct http_result *res);
int http_call_start(struct http_agent *a, const struct http_request *req, http_done_fn done,
		    void *ctx, struct http_call **out) must_check;
void http_call_cancel(struct http_call *c);
/* The status of the answer so far (in a streaming callback: the body's), 0 before one. */
long http_call_status(const struct http_call *c);

void http_result_clear(struct http_result *r);

/* The transport's libraries, as libcurl names them ("libcurl/7.88.1 OpenSSL/3.0.x ..."). */
const char *http_library_version(void);

#endif
