#include <brindle/httpd.h>
#include <brindle/loop.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_REQUEST 8192
#define IDLE_MS	    5000

struct conn {
	struct httpd *h;
	int fd;
	char in[MAX_REQUEST];
	size_t in_len;
	struct strbuf out;
	size_t out_off;
	bool writing;
	uint64_t deadline;
	struct conn *next;
};

struct httpd {
	struct loop *l;
	int fd;
	uint16_t port;
	httpd_handler fn;
	void *ctx;
	struct conn *conns;
	struct loop_timer *sweep;
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
	for (struct conn **pp = &h->conns; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	sb_free(&c->out);
	free(c);
}

static void conn_io(struct loop *l, int fd, uint32_t events, void *ctx);

static void flush(struct conn *c)
{
	while (c->out_off < c->out.len) {
		ssize_t n = write(c->fd, c->out.buf + c->out_off, c->out.len - c->out_off);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				if (!c->writing && loop_mod_fd(c->h->l, c->fd, EPOLLOUT) == 0)
					c->writing = true;
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

static void conn_io(struct loop *l, int fd, uint32_t events, void *ctx)
{
	struct conn *c = ctx;
	if (c->writing) {
		flush(c);
		return;
	}
	for (;;) {
		ssize_t n = read(fd, c->in + c->in_len, sizeof(c->in) - 1 - c->in_len);
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

static void on_accept(struct loop *l, int fd, uint32_t events, void *ctx)
{
	struct httpd *h = ctx;
	for (;;) {
		int cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (cfd < 0)
			return;
		struct conn *c = xcalloc(1, sizeof(*c));
		c->h = h;
		c->fd = cfd;
		c->deadline = now_ms() + IDLE_MS;
		sb_init(&c->out);
		if (loop_add_fd(l, cfd, EPOLLIN, conn_io, c) < 0) {
			close(cfd);
			sb_free(&c->out);
			free(c);
			continue;
		}
		c->next = h->conns;
		h->conns = c;
	}
}

static void sweep(struct loop *l, struct loop_timer *t, void *ctx)
{
	struct httpd *h = ctx;
	uint64_t now = now_ms();
	struct conn *c = h->conns;
	while (c) {
		struct conn *next = c->next;
		if (now > c->deadline)
			conn_close(c);
		c = next;
	}
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
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 64) < 0) {
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
	h->port = ntohs(sa.sin_port);
	h->fn = fn;
	h->ctx = ctx;
	int r = loop_add_fd(l, fd, EPOLLIN, on_accept, h);
	h->sweep = loop_timer_new(l, sweep, h);
	if (r < 0 || !h->sweep) {
		httpd_stop(h);
		return r < 0 ? r : -ENOMEM;
	}
	loop_timer_arm(h->sweep, 1000, 1000);
	*out = h;
	return 0;
}

uint16_t httpd_port(const struct httpd *h)
{
	return h->port;
}

void httpd_stop(struct httpd *h)
{
	if (!h)
		return;
	while (h->conns)
		conn_close(h->conns);
	loop_del_fd(h->l, h->fd);
	close(h->fd);
	loop_timer_free(h->sweep);
	free(h);
}
