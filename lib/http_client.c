/*
 * HTTP/1.1 client transport: the one adapter file for nodejs' http-parser and
 * for OpenSSL's TLS (libssl); see include/brindle/http_client.h.
 *
 * Owns sockets (TCP or unix, always non-blocking and close-on-exec) and their
 * SSL objects. Invariants:
 *  - A connection carries one request at a time; a response that is complete
 *    leaves the connection idle, reusable only when the server keeps it alive,
 *    no byte beyond the response arrived, and the peer has not closed it since.
 *  - Nothing here waits without a deadline: http_conn_advance never blocks,
 *    http_conn_run polls until the caller's deadlines, and a host name
 *    resolves (getaddrinfo_a) for at most the open deadline. An abandoned
 *    resolution finishes in glibc's thread and frees itself.
 *  - No signal is raised or handled: writes use MSG_NOSIGNAL, including TLS
 *    records (a socket BIO of our own), so a broken pipe is just an error.
 */
#include <brindle/http_client.h>

#include <http_parser.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define READ_CHUNK 16384

static int failf(struct strbuf *err, int code, const char *fmt, ...) printf_like(3, 4);
static int failf(struct strbuf *err, int code, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		sb_reset(err);
		sb_vaddf(err, fmt, ap);
		va_end(ap);
	}
	return code;
}

/* --- endpoints --- */

static char *url_field(const char *url, const struct http_parser_url *u, int f)
{
	return xstrndup(url + u->field_data[f].off, u->field_data[f].len);
}

int http_endpoint_parse(const char *url, const char *unix_path, struct http_endpoint *out,
			struct strbuf *err)
{
	struct http_parser_url u;
	http_parser_url_init(&u);
	if (http_parser_parse_url(url, strlen(url), 0, &u) != 0 ||
	    !(u.field_set & (1 << UF_SCHEMA)) || !(u.field_set & (1 << UF_HOST)) ||
	    u.field_data[UF_HOST].len == 0)
		return failf(err, -EINVAL, "%s: not an http(s) URL", url);
	if (u.field_set & ((1 << UF_QUERY) | (1 << UF_FRAGMENT) | (1 << UF_USERINFO)))
		return failf(err, -EINVAL, "%s: a user, query or fragment is not supported", url);
	char *scheme = url_field(url, &u, UF_SCHEMA);
	bool tls = strcasecmp(scheme, "https") == 0;
	bool ok = tls || strcasecmp(scheme, "http") == 0;
	free(scheme);
	if (!ok)
		return failf(err, -EINVAL, "%s: want http or https", url);
	struct http_endpoint ep = { .tls = tls };
	ep.host = url_field(url, &u, UF_HOST);
	bool v6 = strchr(ep.host, ':') != NULL;
	struct strbuf auth = STRBUF_INIT;
	sb_init(&auth);
	sb_addf(&auth, v6 ? "[%s]" : "%s", ep.host);
	if (u.field_set & (1 << UF_PORT)) {
		if (u.port == 0) {
			sb_free(&auth);
			http_endpoint_clear(&ep);
			return failf(err, -EINVAL, "%s: port 0", url);
		}
		sb_addf(&auth, ":%u", u.port);
		ep.port = xmalloc(8);
		snprintf(ep.port, 8, "%u", u.port);
	} else {
		ep.port = xstrdup(tls ? "443" : "80");
	}
	ep.authority = sb_detach(&auth);
	if (u.field_set & (1 << UF_PATH)) {
		size_t len = u.field_data[UF_PATH].len;
		const char *p = url + u.field_data[UF_PATH].off;
		while (len && p[len - 1] == '/')
			len--;
		ep.prefix = xstrndup(p, len);
	} else {
		ep.prefix = xstrdup("");
	}
	ep.unix_path = unix_path ? xstrdup(unix_path) : NULL;
	*out = ep;
	return 0;
}

void http_endpoint_clear(struct http_endpoint *ep)
{
	if (!ep)
		return;
	free(ep->host);
	free(ep->port);
	free(ep->unix_path);
	free(ep->prefix);
	free(ep->authority);
	memset(ep, 0, sizeof(*ep));
}

/* --- responses --- */

struct http_reader {
	http_parser p;
	http_body_fn fn;
	void *ctx;
	size_t max_body;
	struct strbuf body;
	size_t header_bytes, body_bytes;
	int status;
	int cb_error;	 /* what a callback of ours failed with */
	const char *why; /* and why, for limits */
	bool started, done, keep_alive, dead;
};

static struct http_reader *reader_of(http_parser *p)
{
	return p->data;
}

static int cb_fail(struct http_reader *r, int code, const char *why)
{
	r->cb_error = code;
	r->why = why;
	return -1;
}

static int on_message_begin(http_parser *p)
{
	struct http_reader *r = reader_of(p);
	r->header_bytes = r->body_bytes = 0;
	r->status = 0;
	sb_reset(&r->body);
	return 0;
}

static int count_header(http_parser *p, size_t n)
{
	struct http_reader *r = reader_of(p);
	r->header_bytes += n;
	if (r->header_bytes > HTTP_MAX_HEADER_BYTES)
		return cb_fail(r, -EMSGSIZE, "response header too large");
	return 0;
}

static int on_status(http_parser *p, const char *at, size_t n)
{
	return count_header(p, n);
}

static int on_header_field(http_parser *p, const char *at, size_t n)
{
	return count_header(p, n + 4); /* ": " and CRLF of each line count too */
}

static int on_header_value(http_parser *p, const char *at, size_t n)
{
	return count_header(p, n);
}

static int on_headers_complete(http_parser *p)
{
	struct http_reader *r = reader_of(p);
	if (p->status_code < 100) /* http-parser takes any three digits */
		return cb_fail(r, -EPROTO, "malformed HTTP response: invalid status code");
	r->status = p->status_code;
	if (r->max_body && !(p->flags & F_CHUNKED) && p->content_length != ULLONG_MAX &&
	    p->content_length > r->max_body)
		return cb_fail(r, -EMSGSIZE, "response body too large");
	return 0;
}

static int on_body(http_parser *p, const char *at, size_t n)
{
	struct http_reader *r = reader_of(p);
	r->body_bytes += n;
	if (r->max_body && r->body_bytes > r->max_body)
		return cb_fail(r, -EMSGSIZE, "response body too large");
	if (!r->fn) {
		sb_add(&r->body, at, n);
		return 0;
	}
	int e = r->fn(r->ctx, at, n);
	return e < 0 ? cb_fail(r, e, NULL) : 0;
}

static int on_message_complete(http_parser *p)
{
	struct http_reader *r = reader_of(p);
	/* 1xx is an interim answer; the real one follows on the same stream. */
	if (p->status_code >= 100 && p->status_code < 200 && p->status_code != 101)
		return 0;
	r->done = true;
	r->keep_alive = http_should_keep_alive(p);
	http_parser_pause(p, 1); /* stop right after it: the rest is not ours */
	return 0;
}

static const http_parser_settings reader_settings = {
	.on_message_begin = on_message_begin,
	.on_status = on_status,
	.on_header_field = on_header_field,
	.on_header_value = on_header_value,
	.on_headers_complete = on_headers_complete,
	.on_body = on_body,
	.on_message_complete = on_message_complete,
};

struct http_reader *http_reader_new(size_t max_body, http_body_fn fn, void *ctx)
{
	struct http_reader *r = xcalloc(1, sizeof(*r));
	r->max_body = max_body;
	r->fn = fn;
	r->ctx = ctx;
	sb_init(&r->body);
	http_reader_reset(r);
	return r;
}

void http_reader_free(struct http_reader *r)
{
	if (!r)
		return;
	sb_free(&r->body);
	free(r);
}

void http_reader_reset(struct http_reader *r)
{
	http_parser_init(&r->p, HTTP_RESPONSE);
	r->p.data = r;
	sb_reset(&r->body);
	r->header_bytes = r->body_bytes = 0;
	r->status = 0;
	r->cb_error = 0;
	r->why = NULL;
	r->started = r->done = r->keep_alive = r->dead = false;
}

static int reader_failed(struct http_reader *r, struct strbuf *err)
{
	r->dead = true;
	enum http_errno e = HTTP_PARSER_ERRNO(&r->p);
	if (r->cb_error) {
		if (r->why)
			failf(err, r->cb_error, "%s", r->why);
		return r->cb_error;
	}
	return failf(err, -EPROTO, "malformed HTTP response: %s", http_errno_description(e));
}

int http_reader_feed(struct http_reader *r, const char *p, size_t n, size_t *used,
		     struct strbuf *err)
{
	*used = 0;
	if (r->dead)
		return failf(err, -EPROTO, "malformed HTTP response");
	if (r->done || n == 0) /* n == 0 would mean end of input to http-parser */
		return 0;
	r->started = true;
	size_t k = http_parser_execute(&r->p, &reader_settings, p, n);
	enum http_errno e = HTTP_PARSER_ERRNO(&r->p);
	if (e != HPE_OK && e != HPE_PAUSED)
		return reader_failed(r, err);
	if (r->p.upgrade) {
		r->dead = true;
		return failf(err, -EPROTO, "unexpected protocol upgrade");
	}
	*used = k;
	return 0;
}

int http_reader_eof(struct http_reader *r, struct strbuf *err)
{
	if (r->done)
		return 0;
	if (r->dead)
		return failf(err, -ECONNRESET, "connection closed");
	if (!r->started)
		return failf(err, -ECONNRESET, "connection closed before a response");
	http_parser_execute(&r->p, &reader_settings, NULL, 0);
	if (r->done)
		return 0;
	r->dead = true;
	if (r->cb_error)
		return reader_failed(r, err);
	return failf(err, -ECONNRESET, "connection closed in the middle of a response");
}

bool http_reader_done(const struct http_reader *r)
{
	return r->done;
}

bool http_reader_started(const struct http_reader *r)
{
	return r->started;
}

int http_reader_status(const struct http_reader *r)
{
	return r->status;
}

bool http_reader_keep_alive(const struct http_reader *r)
{
	return r->done && r->keep_alive;
}

const struct strbuf *http_reader_body(const struct http_reader *r)
{
	return &r->body;
}

void http_reader_trim(struct http_reader *r, size_t keep)
{
	if (r->body.cap > keep) {
		sb_free(&r->body);
		sb_init(&r->body);
	}
}

/* --- TLS --- */

struct http_tls {
	SSL_CTX *ctx;
};

/* OpenSSL's last error as text; clears the queue. */
static const char *ssl_reason(char *buf, size_t len)
{
	unsigned long e = ERR_peek_last_error();
	if (e)
		ERR_error_string_n(e, buf, len);
	else
		snprintf(buf, len, "unknown error");
	ERR_clear_error();
	return buf;
}

int http_tls_new(const char *ca_file, const char *cert_file, const char *key_file,
		 struct http_tls **out, struct strbuf *err)
{
	char buf[256];
	ERR_clear_error();
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	if (!ctx)
		return failf(err, -ENOMEM, "TLS: %s", ssl_reason(buf, sizeof(buf)));
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	/* A close without close_notify ends the stream; HTTP framing tells truncation. */
	SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
	int r = 0;
	if (ca_file ? SSL_CTX_load_verify_locations(ctx, ca_file, NULL) != 1
		    : SSL_CTX_set_default_verify_paths(ctx) != 1)
		r = failf(err, -EINVAL, "TLS CA %s: %s", ca_file ? ca_file : "(system store)",
			  ssl_reason(buf, sizeof(buf)));
	else if (cert_file && SSL_CTX_use_certificate_chain_file(ctx, cert_file) != 1)
		r = failf(err, -EINVAL, "TLS certificate %s: %s", cert_file,
			  ssl_reason(buf, sizeof(buf)));
	else if (cert_file && (SSL_CTX_use_PrivateKey_file(ctx, key_file ? key_file : cert_file,
							   SSL_FILETYPE_PEM) != 1 ||
			       SSL_CTX_check_private_key(ctx) != 1))
		r = failf(err, -EINVAL, "TLS key %s: %s", key_file ? key_file : cert_file,
			  ssl_reason(buf, sizeof(buf)));
	if (r < 0) {
		SSL_CTX_free(ctx);
		return r;
	}
	struct http_tls *t = xcalloc(1, sizeof(*t));
	t->ctx = ctx;
	*out = t;
	return 0;
}

void http_tls_free(struct http_tls *t)
{
	if (!t)
		return;
	SSL_CTX_free(t->ctx);
	free(t);
}

/* A socket BIO that writes with MSG_NOSIGNAL; the fd is the BIO's data. */
static int bio_fd(BIO *b)
{
	return (int)(intptr_t)BIO_get_data(b);
}

static int bio_write(BIO *b, const char *p, int n)
{
	BIO_clear_retry_flags(b);
	ssize_t w = send(bio_fd(b), p, (size_t)n, MSG_NOSIGNAL);
	if (w < 0 && (errno == EAGAIN || errno == EINTR))
		BIO_set_retry_write(b);
	return (int)w;
}

static int bio_read(BIO *b, char *p, int n)
{
	BIO_clear_retry_flags(b);
	ssize_t r = recv(bio_fd(b), p, (size_t)n, 0);
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		BIO_set_retry_read(b);
	return (int)r;
}

static int bio_puts(BIO *b, const char *s)
{
	return bio_write(b, s, (int)strlen(s));
}

static long bio_ctrl(BIO *b, int cmd, long num, void *ptr)
{
	return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

static int bio_create(BIO *b)
{
	BIO_set_init(b, 1);
	return 1;
}

static BIO_METHOD *nosig_method;

static void nosig_method_init(void)
{
	BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "brindle socket");
	if (!m || BIO_meth_set_write(m, bio_write) != 1 || BIO_meth_set_read(m, bio_read) != 1 ||
	    BIO_meth_set_puts(m, bio_puts) != 1 || BIO_meth_set_ctrl(m, bio_ctrl) != 1 ||
	    BIO_meth_set_create(m, bio_create) != 1)
		die_oom();
	nosig_method = m;
}

static BIO *nosig_bio(int fd)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, nosig_method_init);
	BIO *b = BIO_new(nosig_method);
	if (!b)
		die_oom();
	BIO_set_data(b, (void *)(intptr_t)fd);
	return b;
}

/* --- name resolution --- */

/* One getaddrinfo_a request; freed by whichever of us and glibc is last. */
struct resolve_req {
	struct gaicb cb;
	struct addrinfo hints;
	char *name, *service;
	atomic_int refs;
};

static void resolve_unref(struct resolve_req *q)
{
	if (atomic_fetch_sub(&q->refs, 1) != 1)
		return;
	if (q->cb.ar_result)
		freeaddrinfo(q->cb.ar_result);
	free(q->name);
	free(q->service);
	free(q);
}

static void resolve_notified(union sigval v)
{
	resolve_unref(v.sival_ptr);
}

static struct timespec ms_timespec(uint64_t ms)
{
	return (struct timespec){ .tv_sec = (time_t)(ms / 1000),
				  .tv_nsec = (long)(ms % 1000) * 1000000L };
}

static int resolve(const char *host, const char *port, uint64_t deadline_ms, struct addrinfo **out,
		   struct strbuf *err)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV };
	if (getaddrinfo(host, port, &hints, out) == 0)
		return 0;
	struct resolve_req *q = xcalloc(1, sizeof(*q));
	q->hints = hints;
	q->hints.ai_flags = AI_NUMERICSERV;
	q->name = xstrdup(host);
	q->service = xstrdup(port);
	q->cb.ar_name = q->name;
	q->cb.ar_service = q->service;
	q->cb.ar_request = &q->hints;
	atomic_init(&q->refs, 2);
	struct sigevent sev = { .sigev_notify = SIGEV_THREAD,
				.sigev_notify_function = resolve_notified,
				.sigev_value.sival_ptr = q };
	struct gaicb *list[] = { &q->cb };
	int g = getaddrinfo_a(GAI_NOWAIT, list, 1, &sev);
	if (g != 0) {
		atomic_store(&q->refs, 1);
		resolve_unref(q);
		return failf(err, -ECONNREFUSED, "resolving %s: %s", host, gai_strerror(g));
	}
	while ((g = gai_error(&q->cb)) == EAI_INPROGRESS) {
		uint64_t now = now_ms();
		if (now >= deadline_ms) {
			resolve_unref(q);
			return failf(err, -ETIMEDOUT, "resolving %s: timed out", host);
		}
		struct timespec ts = ms_timespec(deadline_ms - now);
		gai_suspend((const struct gaicb *const *)list, 1, &ts);
	}
	if (g == 0) {
		*out = q->cb.ar_result;
		q->cb.ar_result = NULL;
	}
	resolve_unref(q);
	if (g != 0)
		return failf(err, -ECONNREFUSED, "resolving %s: %s", host, gai_strerror(g));
	return 0;
}

/* --- connections --- */

enum phase {
	PH_CONNECTING,
	PH_HANDSHAKE,
	PH_IDLE,
	PH_SENDING,
	PH_RECEIVING,
	PH_CLOSED, /* the response ended with the connection */
	PH_BROKEN,
};

struct http_conn {
	int fd;
	unsigned generation;
	enum phase phase;
	struct addrinfo *addrs, *next_addr;
	int connect_errno;
	int keepidle, keepintvl;
	SSL_CTX *ssl_ctx;
	SSL *ssl;
	char *host, *prefix, *authority;
	struct strbuf out;
	size_t out_off;
	bool have_request, sent, leftover;
	struct http_reader *reader;
};

static bool is_ip_literal(const char *host)
{
	unsigned char buf[sizeof(struct in6_addr)];
	return inet_pton(AF_INET, host, buf) == 1 || inet_pton(AF_INET6, host, buf) == 1;
}

static void apply_keepalive(struct http_conn *c)
{
	if (!c->keepidle || c->fd < 0 || !c->addrs)
		return;
	int one = 1;
	setsockopt(c->fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	setsockopt(c->fd, IPPROTO_TCP, TCP_KEEPIDLE, &c->keepidle, sizeof(c->keepidle));
	setsockopt(c->fd, IPPROTO_TCP, TCP_KEEPINTVL, &c->keepintvl, sizeof(c->keepintvl));
}

static void close_socket(struct http_conn *c)
{
	if (c->ssl) {
		SSL_free(c->ssl); /* also frees its BIO */
		c->ssl = NULL;
	}
	if (c->fd >= 0) {
		close(c->fd);
		c->fd = -1;
	}
}

static void connected(struct http_conn *c)
{
	c->phase = c->ssl_ctx ? PH_HANDSHAKE : c->have_request ? PH_SENDING : PH_IDLE;
}

/* Starts connecting to the next address; -ECONNREFUSED when none is left. */
static int connect_next(struct http_conn *c, struct strbuf *err)
{
	while (c->next_addr) {
		struct addrinfo *a = c->next_addr;
		c->next_addr = a->ai_next;
		close_socket(c);
		c->generation++;
		c->fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
			       a->ai_protocol);
		if (c->fd < 0) {
			c->connect_errno = errno;
			continue;
		}
		int one = 1;
		setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		apply_keepalive(c);
		if (connect(c->fd, a->ai_addr, a->ai_addrlen) == 0) {
			connected(c);
			return 0;
		}
		if (errno == EINPROGRESS) {
			c->phase = PH_CONNECTING;
			return 0;
		}
		c->connect_errno = errno;
	}
	close_socket(c);
	c->phase = PH_BROKEN;
	return failf(err, -ECONNREFUSED, "connect: %s", strerror(c->connect_errno));
}

static int open_unix(struct http_conn *c, const char *path, struct strbuf *err)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sa.sun_path))
		return failf(err, -ECONNREFUSED, "unix socket path too long");
	memcpy(sa.sun_path, path, strlen(path) + 1);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return failf(err, -ECONNREFUSED, "socket: %s", strerror(errno));
	/* A unix connect completes or fails at once; EAGAIN is a full backlog. */
	if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return failf(err, -ECONNREFUSED, "connect: %s", strerror(errno));
	connected(c);
	return 0;
}

int http_conn_open(const struct http_endpoint *ep, struct http_tls *tls, uint64_t deadline_ms,
		   struct http_conn **out, struct strbuf *err)
{
	struct http_conn *c = xcalloc(1, sizeof(*c));
	c->fd = -1;
	c->ssl_ctx = ep->tls ? tls->ctx : NULL;
	c->host = xstrdup(ep->host);
	c->prefix = xstrdup(ep->prefix);
	c->authority = xstrdup(ep->authority);
	sb_init(&c->out);
	int r;
	if (ep->unix_path) {
		r = open_unix(c, ep->unix_path, err);
	} else {
		r = resolve(ep->host, ep->port, deadline_ms, &c->addrs, err);
		if (r == 0) {
			c->next_addr = c->addrs;
			r = connect_next(c, err);
		}
	}
	if (r < 0) {
		http_conn_close(c);
		return r;
	}
	*out = c;
	return 0;
}

void http_conn_close(struct http_conn *c)
{
	if (!c)
		return;
	close_socket(c);
	if (c->addrs)
		freeaddrinfo(c->addrs);
	free(c->host);
	free(c->prefix);
	free(c->authority);
	sb_free(&c->out);
	free(c);
}

int http_conn_fd(const struct http_conn *c, unsigned *generation)
{
	if (generation)
		*generation = c->generation;
	return c->fd;
}

void http_conn_keepalive_probes(struct http_conn *c, int idle_s, int interval_s)
{
	c->keepidle = idle_s;
	c->keepintvl = interval_s;
	apply_keepalive(c);
}

void http_conn_post(struct http_conn *c, const char *path, const char *body, size_t len,
		    struct http_reader *r)
{
	sb_reset(&c->out);
	sb_addf(&c->out,
		"POST %s%s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
		"Content-Length: %zu\r\n\r\n",
		c->prefix, path, c->authority, len);
	sb_add(&c->out, body, len);
	c->out_off = 0;
	c->have_request = true;
	c->sent = false;
	c->leftover = false;
	c->reader = r;
	http_reader_reset(r);
	if (c->phase == PH_IDLE)
		c->phase = PH_SENDING;
}

static int broken(struct http_conn *c, int code)
{
	c->phase = PH_BROKEN;
	return code;
}

static int want_of(SSL *ssl, int ret)
{
	int e = SSL_get_error(ssl, ret);
	if (e == SSL_ERROR_WANT_READ)
		return HTTP_WANT_READ;
	if (e == SSL_ERROR_WANT_WRITE)
		return HTTP_WANT_WRITE;
	return -e - 1000; /* not a want: the caller reports it */
}

static int step_connecting(struct http_conn *c, struct strbuf *err)
{
	int soerr = 0;
	socklen_t len = sizeof(soerr);
	if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
		soerr = errno;
	if (soerr) {
		c->connect_errno = soerr;
		return connect_next(c, err);
	}
	struct sockaddr_storage ss;
	len = sizeof(ss);
	if (getpeername(c->fd, (struct sockaddr *)&ss, &len) < 0)
		return errno == ENOTCONN ? HTTP_WANT_WRITE : connect_next(c, err);
	connected(c);
	return 0;
}

static int step_handshake(struct http_conn *c, struct strbuf *err)
{
	char buf[256];
	if (!c->ssl) {
		c->ssl = SSL_new(c->ssl_ctx);
		if (!c->ssl)
			die_oom();
		BIO *b = nosig_bio(c->fd);
		SSL_set_bio(c->ssl, b, b);
		if (is_ip_literal(c->host)) {
			X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c->ssl), c->host);
		} else {
			SSL_set_tlsext_host_name(c->ssl, c->host);
			SSL_set1_host(c->ssl, c->host);
		}
	}
	ERR_clear_error();
	int ret = SSL_connect(c->ssl);
	if (ret == 1) {
		c->phase = c->have_request ? PH_SENDING : PH_IDLE;
		return 0;
	}
	int w = want_of(c->ssl, ret);
	if (w > 0)
		return w;
	long v = SSL_get_verify_result(c->ssl);
	if (v != X509_V_OK)
		return broken(c, failf(err, -ECONNREFUSED, "TLS handshake: %s",
				       X509_verify_cert_error_string(v)));
	if (ERR_peek_last_error())
		return broken(c, failf(err, -ECONNREFUSED, "TLS handshake: %s",
				       ssl_reason(buf, sizeof(buf))));
	return broken(c, failf(err, -ECONNREFUSED, "TLS handshake: %s",
			       errno ? strerror(errno) : "connection closed"));
}

static int step_sending(struct http_conn *c, struct strbuf *err)
{
	char buf[256];
	while (c->out_off < c->out.len) {
		const char *p = c->out.buf + c->out_off;
		size_t n = c->out.len - c->out_off;
		ssize_t w;
		if (c->ssl) {
			ERR_clear_error();
			int ret = SSL_write(c->ssl, p, (int)MIN(n, (size_t)INT_MAX));
			if (ret <= 0) {
				int want = want_of(c->ssl, ret);
				if (want > 0)
					return want;
				return broken(c, failf(err, -ECONNRESET, "TLS send: %s",
						       ssl_reason(buf, sizeof(buf))));
			}
			w = ret;
		} else {
			w = send(c->fd, p, n, MSG_NOSIGNAL);
			if (w < 0) {
				if (errno == EAGAIN || errno == EINTR)
					return errno == EAGAIN ? HTTP_WANT_WRITE : 0;
				return broken(c,
					      failf(err, -ECONNRESET, "send: %s", strerror(errno)));
			}
		}
		c->sent = true;
		c->out_off += (size_t)w;
	}
	c->phase = PH_RECEIVING;
	return 0;
}

/* Feeds @n bytes; 0 and phase IDLE once the response is complete. */
static int feed(struct http_conn *c, const char *p, size_t n, struct strbuf *err)
{
	while (n) {
		size_t used;
		int r = http_reader_feed(c->reader, p, n, &used, err);
		if (r < 0)
			return broken(c, r);
		if (http_reader_done(c->reader)) {
			c->leftover = used < n;
			c->have_request = false;
			c->phase = PH_IDLE;
			return 0;
		}
		if (used == 0)
			return broken(c, failf(err, -EPROTO, "HTTP response parser stalled"));
		p += used;
		n -= used;
	}
	return 0;
}

static int step_receiving(struct http_conn *c, struct strbuf *err)
{
	char buf[READ_CHUNK], ebuf[256];
	while (c->phase == PH_RECEIVING) {
		ssize_t n;
		if (c->ssl) {
			ERR_clear_error();
			int ret = SSL_read(c->ssl, buf, sizeof(buf));
			if (ret > 0) {
				n = ret;
			} else if (SSL_get_error(c->ssl, ret) == SSL_ERROR_ZERO_RETURN) {
				n = 0;
			} else {
				int want = want_of(c->ssl, ret);
				if (want > 0)
					return want;
				if (SSL_get_error(c->ssl, ret) == SSL_ERROR_SYSCALL && errno)
					return broken(c, failf(err, -ECONNRESET, "TLS receive: %s",
							       strerror(errno)));
				return broken(c, failf(err, -ECONNRESET, "TLS receive: %s",
						       ssl_reason(ebuf, sizeof(ebuf))));
			}
		} else {
			n = recv(c->fd, buf, sizeof(buf), 0);
			if (n < 0) {
				if (errno == EAGAIN)
					return HTTP_WANT_READ;
				if (errno == EINTR)
					continue;
				return broken(
					c, failf(err, -ECONNRESET, "receive: %s", strerror(errno)));
			}
		}
		if (n == 0) {
			int r = http_reader_eof(c->reader, err);
			if (r < 0)
				return broken(c, r);
			c->have_request = false;
			c->phase = PH_CLOSED;
			return 0;
		}
		int r = feed(c, buf, (size_t)n, err);
		if (r < 0)
			return r;
	}
	return 0;
}

int http_conn_advance(struct http_conn *c, struct strbuf *err)
{
	for (;;) {
		int r;
		switch (c->phase) {
		case PH_CONNECTING:
			r = step_connecting(c, err);
			break;
		case PH_HANDSHAKE:
			r = step_handshake(c, err);
			break;
		case PH_SENDING:
			r = step_sending(c, err);
			break;
		case PH_RECEIVING:
			r = step_receiving(c, err);
			break;
		case PH_IDLE:
		case PH_CLOSED:
			return 0;
		case PH_BROKEN:
		default:
			return failf(err, -ECONNRESET, "connection broken");
		}
		if (r != 0)
			return r;
	}
}

int http_conn_run(struct http_conn *c, uint64_t connect_deadline_ms, uint64_t deadline_ms,
		  struct strbuf *err)
{
	for (;;) {
		int w = http_conn_advance(c, err);
		if (w <= 0)
			return w;
		bool up = http_conn_established(c);
		uint64_t until = up ? deadline_ms : MIN(connect_deadline_ms, deadline_ms);
		uint64_t now = now_ms();
		if (now >= until)
			return failf(err, -ETIMEDOUT,
				     up ? "timed out waiting for the response"
					: "timed out connecting");
		struct pollfd pfd = {
			.fd = c->fd,
			.events = (short)((w & HTTP_WANT_READ ? POLLIN : 0) |
					  (w & HTTP_WANT_WRITE ? POLLOUT : 0)),
		};
		int n = poll(&pfd, 1, (int)MIN(until - now, (uint64_t)INT_MAX));
		if (n < 0 && errno != EINTR)
			return broken(c, failf(err, -ECONNRESET, "poll: %s", strerror(errno)));
	}
}

bool http_conn_established(const struct http_conn *c)
{
	return c->phase != PH_CONNECTING && c->phase != PH_HANDSHAKE && c->phase != PH_BROKEN;
}

bool http_conn_sent(const struct http_conn *c)
{
	return c->sent;
}

bool http_conn_reusable(const struct http_conn *c)
{
	if (c->phase != PH_IDLE || c->leftover || !c->reader || !http_reader_keep_alive(c->reader))
		return false;
	if (c->ssl && SSL_pending(c->ssl))
		return false;
	/* Readable while idle: the server closed it, or sent what we did not ask for. */
	struct pollfd pfd = { .fd = c->fd, .events = POLLIN | POLLRDHUP };
	return poll(&pfd, 1, 0) == 0;
}
