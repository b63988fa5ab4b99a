/*
 * The health/metrics HTTP server. Owns its listener, its connections and a
 * reserve file descriptor. Connections are kept oldest first; every one has a
 * deadline (the request's, then the answer's) and one timer is armed for the
 * earliest. Limits and why: include/brindle/httpd.h.
 */
#include <brindle/core/metrics.h>
#include <brindle/sys/httpd.h>
#include <brindle/sys/loop.h>
#include <brindle/sys/clock.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_REQUEST 8192
#define BACKLOG	    1024
/* Connections taken per wakeup of the listener, so the others' handlers get their turn. */
#define ACCEPT_BATCH 64
/* Accepting pauses this long when it fails for want of memory or descriptors. */
#define PAUSE_MS 100

struct conn {
	struct httpd *h;
	int fd;
	bool writing;
	uint64_t deadline;
	struct conn *prev, *next; /* oldest first */
	struct strbuf out;
	size_t out_off;
	size_t in_len;
	char in[MAX_REQUEST];
};

struct httpd {
	struct loop *l;
	int fd;
	int reserve; /* /dev/null, or -1 */
	uint16_t port;
	httpd_handler fn;
	void *ctx;
	struct conn *oldest, *newest;
	struct conn *spare; /* closed ones, for reuse: a flood churns through them */
	struct loop_timer *timer;
	uint64_t timer_at;     /* when the timer fires; 0: not armed */
	uint64_t paused_until; /* accepting paused until then; 0: not paused */
	struct httpd_stats stats;
};

static const char *reason(int status)
{
	switch (status) {
	case 200:
		return "OK";
	case 204:
		return "No Content";
	case 400:
		return "Bad Request";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 413:
		return "Request Entity Too Large";
	case 500:
		return "Internal Server Error";
	case 503:
		return "Service Unavailable";
	default:
		return "Status";
	}
}

static void conn_close(struct conn *c)
{
	struct httpd *h = c->h;
	loop_del_fd(h->l, c->fd);
	close(c->fd);
	if (c->prev)
		c->prev->next = c->next;
	else
		h->oldest = c->next;
	if (c->next)
		c->next->prev = c->prev;
	else
		h->newest = c->prev;
	h->stats.connections--;
	sb_free(&c->out);
	c->next = h->spare;
	h->spare = c;
}

/*
 * Have the timer fire by the earliest deadline (or the end of a pause). One
 * that fires early, or for nothing, finds nothing due and comes here again.
 */
static void schedule(struct httpd *h)
{
	uint64_t next = h->paused_until;
	for (struct conn *c = h->oldest; c; c = c->next)
		if (!next || c->deadline < next)
			next = c->deadline;
	if (!next || (h->timer_at && h->timer_at <= next && loop_timer_armed(h->timer)))
		return;
	uint64_t now = now_ms();
	loop_timer_arm(h->timer, next > now ? next - now : 1, 0);
	h->timer_at = next;
}

static void flush(struct conn *c)
{
	while (c->out_off < c->out.len) {
		ssize_t n =
			send(c->fd, c->out.buf + c->out_off, c->out.len - c->out_off, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				if (c->writing)
					return;
				if (loop_mod_fd(c->h->l, c->fd, EPOLLOUT) < 0)
					break;
				c->writing = true;
				c->deadline = now_ms() + HTTPD_ANSWER_MS;
				schedule(c->h);
				return;
			}
			if (errno == EINTR)
				continue;
			break;
		}
		c->out_off += (size_t)n;
	}
	conn_close(c);
}

static void respond(struct conn *c, bool head, struct httpd_response *r)
{
	sb_addf(&c->out,
		"HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: "
		"close\r\n\r\n",
		r->status, reason(r->status),
		r->content_type ? r->content_type : "text/plain; charset=utf-8", r->body.len);
	if (!head)
		sb_add(&c->out, r->body.buf, r->body.len);
	flush(c);
}

static void simple(struct conn *c, int status)
{
	struct httpd_response r = { .status = status };
	sb_init(&r.body);
	sb_addf(&r.body, "%s\n", reason(status));
	respond(c, false, &r);
	sb_free(&r.body);
}

static void handle(struct conn *c)
{
	char method[8], target[1024];
	if (sscanf(c->in, "%7s %1023s HTTP/1.", method, target) != 2) {
		simple(c, 400);
		return;
	}
	bool head = strcmp(method, "HEAD") == 0;
	if (!head && strcmp(method, "GET") != 0) {
		simple(c, 405);
		return;
	}
	char *q = strchr(target, '?');
	if (q)
		*q = '\0';
	struct httpd_response r = { .status = 404 };
	sb_init(&r.body);
	c->h->fn(c->h->ctx, target, &r);
	respond(c, head, &r);
	sb_free(&r.body);
}

/* Read what has come; may answer and close @c. */
static void conn_read(struct conn *c)
{
	for (;;) {
		ssize_t n = read(c->fd, c->in + c->in_len, sizeof(c->in) - 1 - c->in_len);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			if (errno == EINTR)
				continue;
			conn_close(c);
			return;
		}
		if (n == 0) {
			conn_close(c);
			return;
		}
		c->in_len += (size_t)n;
		c->in[c->in_len] = '\0';
		if (strstr(c->in, "\r\n\r\n") || strstr(c->in, "\n\n")) {
			handle(c);
			return;
		}
		if (c->in_len >= sizeof(c->in) - 1) {
			simple(c, 413);
			return;
		}
	}
}

static void conn_io(struct loop *l, int fd, uint32_t events, void *ctx)
{
	struct conn *c = ctx;
	if (c->writing)
		flush(c);
	else
		conn_read(c);
}

/* The oldest connection still waiting for its request, else the oldest; not @keep. */
static struct conn *victim(struct httpd *h, const struct conn *keep)
{
	for (struct conn *c = h->oldest; c; c = c->next)
		if (!c->writing && c != keep)
			return c;
	return h->oldest != keep ? h->oldest : NULL;
}

static void conn_open(struct httpd *h, int fd)
{
	struct conn *c = h->spare ? h->spare : xmalloc(sizeof(*c));
	if (loop_add_fd(h->l, fd, EPOLLIN, conn_io, c) < 0) {
		close(fd);
		if (c != h->spare)
			free(c);
		return;
	}
	if (c == h->spare)
		h->spare = c->next;
	/* The input buffer is not cleared: in_len says what is in it. The answer's is
	 * allocated when there is one. */
	c->h = h;
	c->fd = fd;
	c->writing = false;
	c->deadline = now_ms() + HTTPD_REQUEST_MS;
	c->next = NULL;
	c->out = (struct strbuf)STRBUF_INIT;
	c->out_off = 0;
	c->in_len = 0;
	c->prev = h->newest;
	if (h->newest)
		h->newest->next = c;
	else
		h->oldest = c;
	h->newest = c;
	h->stats.connections++;
	h->stats.accepted++;
	/* Clients send the request with the connection: answer now if it is here, which
	 * also frees the place. */
	conn_read(c);
	if (h->stats.connections > HTTPD_MAX_CONNECTIONS) {
		/* Still open, so still the newest. */
		struct conn *v = victim(h, h->newest);
		if (v) {
			h->stats.evicted++;
			conn_close(v);
		}
	}
}

static void pause_accepting(struct httpd *h)
{
	if (loop_mod_fd(h->l, h->fd, 0) == 0)
		h->paused_until = now_ms() + PAUSE_MS;
}

/*
 * Out of file descriptors. A pending connection keeps a level-triggered
 * listener readable, so leaving it there would spin the loop: give up the
 * reserve descriptor to accept it (libev's and nginx's way), then close our
 * oldest connection still waiting for its request to have the reserve back,
 * or else the new one. 1 when a connection was taken, 0 when none was pending
 * (accept checks for a free descriptor first), or a negative errno.
 */
static int out_of_descriptors(struct httpd *h)
{
	if (h->reserve < 0)
		return -EMFILE;
	close(h->reserve);
	int fd = accept4(h->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	int e = errno;
	if (fd >= 0) {
		struct conn *v = h->oldest;
		while (v && v->writing)
			v = v->next;
		if (v) {
			h->stats.evicted++;
			conn_close(v);
			conn_open(h, fd);
		} else {
			h->stats.dropped++;
			close(fd);
		}
	}
	h->reserve = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		return 1;
	return e == EAGAIN || e == EWOULDBLOCK ? 0 : -e;
}

static void on_accept(struct loop *l, int lfd, uint32_t events, void *ctx)
{
	struct httpd *h = ctx;
	for (int i = 0; i < ACCEPT_BATCH; i++) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0) {
			conn_open(h, fd);
			continue;
		}
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			break;
		if (errno == EMFILE || errno == ENFILE) {
			int r = out_of_descriptors(h);
			if (r > 0)
				continue;
			if (r < 0)
				pause_accepting(h);
			break;
		}
		if (errno == ENOBUFS || errno == ENOMEM) {
			pause_accepting(h);
			break;
		}
		/* EINTR, ECONNABORTED and the network errors of the connection, which is gone. */
	}
	schedule(h);
}

static void on_timer(struct loop *l, struct loop_timer *t, void *ctx)
{
	struct httpd *h = ctx;
	uint64_t now = now_ms();
	h->timer_at = 0;
	struct conn *c = h->oldest;
	while (c) {
		struct conn *next = c->next;
		if (now >= c->deadline) {
			h->stats.timed_out++;
			conn_close(c);
		}
		c = next;
	}
	if (h->paused_until && now >= h->paused_until) {
		if (h->reserve < 0)
			h->reserve = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (loop_mod_fd(l, h->fd, EPOLLIN) == 0)
			h->paused_until = 0;
		else
			h->paused_until = now + PAUSE_MS;
	}
	schedule(h);
}

int httpd_start(struct loop *l, const char *host, uint16_t port, httpd_handler fn, void *ctx,
		struct httpd **out, struct strbuf *err)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	if (!host || !*host || strcmp(host, "0.0.0.0") == 0)
		sa.sin_addr.s_addr = htonl(INADDR_ANY);
	else if (strcmp(host, "localhost") == 0)
		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	else if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
		if (err)
			sb_addf(err, "\"%s\" is not an IPv4 address or localhost", host);
		return -EINVAL;
	}
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, BACKLOG) < 0) {
		int e = errno;
		if (err)
			sb_addf(err, "cannot listen on %s:%u: %s", host && *host ? host : "*", port,
				strerror(e));
		close(fd);
		return -e;
	}
	socklen_t len = sizeof(sa);
	getsockname(fd, (struct sockaddr *)&sa, &len);
	struct httpd *h = xcalloc(1, sizeof(*h));
	h->l = l;
	h->fd = fd;
	h->reserve = open("/dev/null", O_RDONLY | O_CLOEXEC);
	h->port = ntohs(sa.sin_port);
	h->fn = fn;
	h->ctx = ctx;
	int r = loop_add_fd(l, fd, EPOLLIN, on_accept, h);
	if (r == 0 && !(h->timer = loop_timer_new(l, on_timer, h)))
		r = -ENOMEM;
	if (r < 0) {
		if (err)
			sb_addf(err, "cannot serve on %s:%u: %s", host && *host ? host : "*", port,
				strerror(-r));
		httpd_stop(h);
		return r;
	}
	*out = h;
	return 0;
}

uint16_t httpd_port(const struct httpd *h)
{
	return h->port;
}

void httpd_get_stats(const struct httpd *h, struct httpd_stats *out)
{
	*out = h->stats;
}

void httpd_stop(struct httpd *h)
{
	if (!h)
		return;
	while (h->oldest)
		conn_close(h->oldest);
	while (h->spare) {
		struct conn *c = h->spare;
		h->spare = c->next;
		free(c);
	}
	loop_del_fd(h->l, h->fd);
	close(h->fd);
	if (h->reserve >= 0)
		close(h->reserve);
	loop_timer_free(h->timer);
	free(h);
}

void httpd_health_answer(const char *path, bool ready, const char *why, const struct metrics *m,
			 struct httpd_response *resp)
{
	resp->status = 200;
	if (streq(path, "/liveness")) {
		sb_adds(&resp->body, "ok\n");
	} else if (streq(path, "/readiness")) {
		if (ready) {
			sb_adds(&resp->body, "ready\n");
		} else {
			resp->status = 503;
			sb_adds(&resp->body, why);
		}
	} else if (streq(path, "/metrics")) {
		resp->content_type = "text/plain; version=0.0.4; charset=utf-8";
		metrics_render(m, &resp->body);
	} else {
		resp->status = 404;
		sb_adds(&resp->body, "not found: try /liveness, /readiness or /metrics\n");
	}
}
