/* A client of the Kubernetes API server (see kube_client.h). */
#include <brindle/sys/kube_client.h>
#include <brindle/core/arena.h>
#include <brindle/core/json.h>
#include <brindle/core/util.h>
#include <brindle/sys/clock.h>
#include <brindle/sys/log.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_TIMEOUT_MS 10000
/*
 * Keep-alive of every connection: over HTTP/2 one connection carries the
 * watches and the requests, and whichever request opened it set its
 * keep-alive. A dead server is noticed in ~10 s.
 */
#define KEEPALIVE_IDLE_S     4
#define KEEPALIVE_INTERVAL_S 2
#define KEEPALIVE_COUNT	     3
#define USER_TIMEOUT_MS	     10000
#define CONNECT_TIMEOUT_MS   3000
#define DEFAULT_PAGE	     500
/* Restarts of a list whose continue token expired before giving up. */
#define LIST_RESTARTS 5

struct kube_client {
	struct http_agent *agent;
	struct loop *loop;
	char *server;
	long timeout_ms;
	struct arena *arena;
	struct strbuf error;
	struct strbuf url;
};

static void set_error(struct kube_client *c, const char *fmt, ...) printf_like(2, 3);
static void set_error(struct kube_client *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	sb_reset(&c->error);
	sb_vaddf(&c->error, fmt, ap);
	va_end(ap);
}

int kube_client_new(struct loop *l, const char *server, const struct http_auth *auth,
		    long timeout_ms, struct kube_client **out, struct strbuf *err)
{
	if (!server || strncmp(server, "http", 4) != 0) {
		sb_addf(err,
			"the API server's URL must start with https:// or http:// (got \"%s\")",
			server ? server : "");
		return -EINVAL;
	}
	struct kube_client *c = xcalloc(1, sizeof(*c));
	int r = http_agent_new(l, auth, &c->agent, err);
	if (r < 0) {
		free(c);
		return r;
	}
	c->loop = l;
	c->server = xstrdup(server);
	size_t n = strlen(c->server);
	while (n && c->server[n - 1] == '/')
		c->server[--n] = '\0';
	c->timeout_ms = timeout_ms > 0 ? timeout_ms : DEFAULT_TIMEOUT_MS;
	c->arena = arena_new();
	sb_init(&c->error);
	sb_init(&c->url);
	*out = c;
	return 0;
}

void kube_client_free(struct kube_client *c)
{
	if (!c)
		return;
	http_agent_free(c->agent);
	arena_free(c->arena);
	sb_free(&c->error);
	sb_free(&c->url);
	free(c->server);
	free(c);
}

const char *kube_last_error(const struct kube_client *c)
{
	return sb_str(&c->error);
}

/*
 * The errno of a non-2xx answer whose body (a Status, or anything) is
 * @body; appends "<prefix>: <message>" to @why.
 */
static int status_error(long status, const char *body, size_t len, const char *prefix,
			struct strbuf *why)
{
	struct arena *a = arena_new();
	struct jv *v = NULL;
	if (len && json_parse(a, body, len, &v, NULL) < 0)
		v = NULL;
	struct strbuf msg = STRBUF_INIT;
	sb_init(&msg);
	int r = kube_status_errno(status, v, &msg);
	sb_addf(why, "%s: %s", prefix, sb_str(&msg));
	sb_free(&msg);
	arena_free(a);
	return r;
}

/* @r's answer @res (cleared here) into r->err, r->out and r->error. */
static void request_done(struct kube_client *c, struct kube_req *r, struct http_result *res)
{
	struct strbuf why = STRBUF_INIT;
	sb_init(&why);
	r->out = NULL;
	r->err = res->err;
	if (r->err < 0) {
		sb_addf(&why, "%s %s%s: %s", r->method, c->server, r->path, res->why);
	} else if (res->status < 200 || res->status > 299) {
		struct strbuf prefix = STRBUF_INIT;
		sb_init(&prefix);
		sb_addf(&prefix, "%s %s", r->method, r->path);
		r->err = status_error(res->status, res->body.buf, res->body.len, sb_str(&prefix),
				      &why);
		sb_free(&prefix);
	} else if (res->body.len) {
		struct strbuf perr = STRBUF_INIT;
		sb_init(&perr);
		if (json_parse(c->arena, res->body.buf, res->body.len, &r->out, &perr) < 0) {
			sb_addf(&why, "%s %s: the answer is not JSON: %s", r->method, r->path,
				sb_str(&perr));
			r->err = -EPROTO;
			r->out = NULL;
		}
		sb_free(&perr);
	}
	r->error = why.len ? arena_strdup(c->arena, sb_str(&why)) : NULL;
	sb_free(&why);
	http_result_clear(res);
}

int kube_request_many(struct kube_client *c, struct kube_req *reqs, size_t n)
{
	arena_reset(c->arena);
	struct http_request *hr = xcalloc(n + 1, sizeof(*hr));
	struct http_result *res = xcalloc(n + 1, sizeof(*res));
	for (size_t i = 0; i < n; i++) {
		const struct kube_req *r = &reqs[i];
		hr[i] = (struct http_request){
			.method = r->method,
			.url = arena_printf(c->arena, "%s%s", c->server, r->path),
			.content_type =
				r->body ? (r->content_type ? r->content_type : "application/json")
					: NULL,
			.accept = "application/json",
			.body = r->body ? r->body->buf : NULL,
			.body_len = r->body ? r->body->len : 0,
			.connect_timeout_ms = MIN(c->timeout_ms, CONNECT_TIMEOUT_MS),
			.timeout_ms = c->timeout_ms,
			.keepalive_idle_s = KEEPALIVE_IDLE_S,
			.keepalive_interval_s = KEEPALIVE_INTERVAL_S,
			.keepalive_count = KEEPALIVE_COUNT,
			.user_timeout_ms = USER_TIMEOUT_MS,
		};
	}
	uint64_t t0 = log_enabled(LOG_DEBUG) ? now_ns() : 0;
	http_agent_perform_many(c->agent, hr, n, res);
	int first = 0;
	sb_reset(&c->error);
	for (size_t i = 0; i < n; i++) {
		request_done(c, &reqs[i], &res[i]);
		/* what each round trip cost, for whoever debugs a slow client */
		if (t0)
			log_debug("kube: %s %s: %s in %.1f ms%s", reqs[i].method, reqs[i].path,
				  reqs[i].err < 0 ? strerror(-reqs[i].err) : "ok",
				  (double)(now_ns() - t0) / 1e6,
				  n > 1 ? " (at once with others)" : "");
		if (reqs[i].err < 0 && !first) {
			first = reqs[i].err;
			sb_adds(&c->error, reqs[i].error);
		}
	}
	free(hr);
	free(res);
	return first;
}

int kube_request(struct kube_client *c, const char *method, const char *path,
		 const char *content_type, const struct strbuf *body, struct jv **out)
{
	struct kube_req r = {
		.method = method, .path = path, .content_type = content_type, .body = body
	};
	int err = kube_request_many(c, &r, 1);
	if (out)
		*out = err < 0 ? NULL : r.out;
	return err;
}

int kube_list(struct kube_client *c, const char *path, size_t limit,
	      int (*item)(void *ctx, const struct jv *obj), void (*restart)(void *ctx), void *ctx,
	      struct strbuf *rv)
{
	struct strbuf page = STRBUF_INIT, cont = STRBUF_INIT, err = STRBUF_INIT;
	sb_init(&page);
	sb_init(&cont);
	sb_init(&err);
	const char *sep = strchr(path, '?') ? "&" : "?";
	size_t restarts = 0;
	int r = 0;
	bool first = true;
	for (;;) {
		sb_reset(&page);
		sb_addf(&page, "%s%slimit=%zu", path, sep, limit ? limit : DEFAULT_PAGE);
		if (cont.len) {
			sb_adds(&page, "&continue=");
			kube_query_escape(&page, sb_str(&cont));
		}
		struct jv *v;
		r = kube_request(c, "GET", sb_str(&page), NULL, NULL, &v);
		if (r == -ESTALE && cont.len && restarts++ < LIST_RESTARTS) {
			/* The snapshot behind the continue token was compacted: from the top. */
			sb_reset(&cont);
			first = true;
			if (restart)
				restart(ctx);
			continue;
		}
		if (r < 0)
			break;
		struct kube_list_page p;
		r = kube_decode_list(v, &p, &err);
		if (r < 0) {
			set_error(c, "GET %s: %s", sb_str(&page), sb_str(&err));
			break;
		}
		if (first && rv) {
			sb_reset(rv);
			sb_adds(rv, p.resource_version);
		}
		first = false;
		for (size_t i = 0; i < p.n && r == 0; i++)
			r = item(ctx, p.items[i]);
		if (r < 0)
			break;
		if (!*p.cont)
			break;
		sb_reset(&cont);
		sb_adds(&cont, p.cont);
	}
	sb_free(&page);
	sb_free(&cont);
	sb_free(&err);
	return r;
}

/* --- lists from the loop --- */

struct kube_list_op {
	struct kube_client *c;
	struct http_call *call;
	char *path;
	size_t limit, restarts;
	int (*item)(void *ctx, const struct jv *obj);
	void (*restart)(void *ctx);
	void (*done)(void *ctx, int err, const char *rv, const char *why);
	void *ctx;
	struct strbuf url, cont, rv, why;
	bool first, cancelled;
	unsigned depth;
};

static void list_op_free(struct kube_list_op *op)
{
	http_call_cancel(op->call);
	sb_free(&op->url);
	sb_free(&op->cont);
	sb_free(&op->rv);
	sb_free(&op->why);
	free(op->path);
	free(op);
}

static int list_page_request(struct kube_list_op *op);

static void list_finish(struct kube_list_op *op, int err)
{
	op->depth++;
	op->done(op->ctx, err, sb_str(&op->rv), sb_str(&op->why));
	op->depth--;
	list_op_free(op);
}

static void list_page_done(void *ctx, const struct http_result *res)
{
	struct kube_list_op *op = ctx;
	op->call = NULL;
	int r = 0;
	sb_reset(&op->why);
	if (res->err) {
		sb_addf(&op->why, "GET %s: %s", sb_str(&op->url), res->why);
		r = res->err;
	} else if (res->status < 200 || res->status > 299) {
		struct strbuf prefix = STRBUF_INIT;
		sb_init(&prefix);
		sb_addf(&prefix, "GET %s", op->path);
		r = status_error(res->status, res->body.buf, res->body.len, sb_str(&prefix),
				 &op->why);
		sb_free(&prefix);
		if (r == -ESTALE && op->cont.len && op->restarts++ < LIST_RESTARTS) {
			sb_reset(&op->cont);
			op->first = true;
			if (op->restart) {
				op->depth++;
				op->restart(op->ctx);
				op->depth--;
			}
			if (op->cancelled) {
				list_op_free(op);
				return;
			}
			r = list_page_request(op);
			if (r == 0)
				return;
		}
	} else {
		struct arena *a = arena_new();
		struct jv *v;
		struct kube_list_page p;
		struct strbuf err = STRBUF_INIT;
		sb_init(&err);
		if (json_parse(a, res->body.buf ? res->body.buf : "", res->body.len, &v, &err) <
			    0 ||
		    kube_decode_list(v, &p, &err) < 0) {
			sb_addf(&op->why, "GET %s: %s", op->path, sb_str(&err));
			r = -EPROTO;
		} else {
			if (op->first) {
				sb_reset(&op->rv);
				sb_adds(&op->rv, p.resource_version);
			}
			op->first = false;
			op->depth++;
			for (size_t i = 0; i < p.n && r == 0 && !op->cancelled; i++)
				r = op->item(op->ctx, p.items[i]);
			op->depth--;
			if (r < 0 && !op->why.len)
				sb_addf(&op->why, "GET %s: stopped (%d)", op->path, r);
			sb_reset(&op->cont);
			sb_adds(&op->cont, p.cont);
		}
		sb_free(&err);
		arena_free(a);
		if (op->cancelled) {
			list_op_free(op);
			return;
		}
		if (r == 0 && op->cont.len) {
			r = list_page_request(op);
			if (r == 0)
				return;
			sb_addf(&op->why, "GET %s: cannot continue", op->path);
		}
	}
	list_finish(op, r);
}

static int list_page_request(struct kube_list_op *op)
{
	sb_reset(&op->url);
	sb_addf(&op->url, "%s%s%slimit=%zu", op->c->server, op->path,
		strchr(op->path, '?') ? "&" : "?", op->limit);
	if (op->cont.len) {
		sb_adds(&op->url, "&continue=");
		kube_query_escape(&op->url, sb_str(&op->cont));
	}
	struct http_request hr = {
		.method = "GET",
		.url = sb_str(&op->url),
		.accept = "application/json",
		.connect_timeout_ms = MIN(op->c->timeout_ms, CONNECT_TIMEOUT_MS),
		.timeout_ms = op->c->timeout_ms * 3, /* a page of 500 big objects takes a while */
		/* not beside the watches on one HTTP/2 connection: see http.h */
		.own_connection = true,
		.keepalive_idle_s = KEEPALIVE_IDLE_S,
		.keepalive_interval_s = KEEPALIVE_INTERVAL_S,
		.keepalive_count = KEEPALIVE_COUNT,
		.user_timeout_ms = USER_TIMEOUT_MS,
	};
	return http_call_start(op->c->agent, &hr, list_page_done, op, &op->call);
}

int kube_list_start(struct kube_client *c, const char *path, size_t limit,
		    int (*item)(void *ctx, const struct jv *obj), void (*restart)(void *ctx),
		    void (*done)(void *ctx, int err, const char *rv, const char *why), void *ctx,
		    struct kube_list_op **out)
{
	if (!c->loop) {
		set_error(c, "list %s: the client has no loop", path);
		return -EINVAL;
	}
	struct kube_list_op *op = xcalloc(1, sizeof(*op));
	op->c = c;
	op->path = xstrdup(path);
	op->limit = limit ? limit : DEFAULT_PAGE;
	op->item = item;
	op->restart = restart;
	op->done = done;
	op->ctx = ctx;
	op->first = true;
	sb_init(&op->url);
	sb_init(&op->cont);
	sb_init(&op->rv);
	sb_init(&op->why);
	int r = list_page_request(op);
	if (r < 0) {
		set_error(c, "list %s: cannot start: %s", path, strerror(-r));
		list_op_free(op);
		return r;
	}
	*out = op;
	return 0;
}

void kube_list_cancel(struct kube_list_op *op)
{
	if (!op || op->cancelled)
		return;
	op->cancelled = true;
	http_call_cancel(op->call);
	op->call = NULL;
	if (op->depth == 0)
		list_op_free(op);
}

/* --- watches --- */

struct kube_watch {
	struct kube_client *c;
	struct http_call *call;
	struct json_stream *js;
	struct kube_watch_ops ops;
	void *ctx;
	struct strbuf url, errbody, why;
	unsigned depth; /* callbacks running: stop then frees on the way out */
	bool stopped, ended;
};

static void watch_free(struct kube_watch *w)
{
	http_call_cancel(w->call);
	json_stream_free(w->js);
	sb_free(&w->url);
	sb_free(&w->errbody);
	sb_free(&w->why);
	free(w);
}

static void enter(struct kube_watch *w)
{
	w->depth++;
}

static void leave(struct kube_watch *w)
{
	if (--w->depth == 0 && w->stopped)
		watch_free(w);
}

static void end(struct kube_watch *w, int err, const char *why)
{
	if (w->ended || w->stopped)
		return;
	w->ended = true;
	if (w->ops.ended)
		w->ops.ended(w->ctx, err, why);
}

static int on_value(void *ctx, struct jv *v, struct arena *a)
{
	(void)a;
	struct kube_watch *w = ctx;
	struct kube_event e;
	struct strbuf msg = STRBUF_INIT;
	sb_init(&msg);
	int r = kube_decode_event(v, &e, &msg);
	if (r < 0) {
		sb_reset(&w->why);
		sb_addf(&w->why, "%s: malformed watch event: %s", sb_str(&w->url), sb_str(&msg));
		sb_free(&msg);
		return r;
	}
	if (e.type == KUBE_EVENT_ERROR) {
		/* The server ends the stream after an ERROR event. */
		sb_reset(&w->why);
		sb_addf(&w->why, "%s: %s", sb_str(&w->url), sb_str(&msg));
		sb_free(&msg);
		end(w, e.error, sb_str(&w->why));
		return -ECANCELED;
	}
	sb_free(&msg);
	if (w->ops.event)
		w->ops.event(w->ctx, &e);
	return w->stopped || w->ended ? -ECANCELED : 0;
}

static int on_body(void *ctx, const char *p, size_t n)
{
	struct kube_watch *w = ctx;
	if (w->stopped || w->ended)
		return -ECANCELED;
	if (http_call_status(w->call) != 200) {
		if (w->errbody.len < 4096)
			sb_add(&w->errbody, p, MIN(n, 4096 - w->errbody.len));
		return 0;
	}
	enter(w);
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	int r = json_stream_feed(w->js, p, n, &err);
	if (r < 0 && r != -ECANCELED && !w->ended) {
		if (!w->why.len)
			sb_addf(&w->why, "%s: malformed watch stream: %s", sb_str(&w->url),
				sb_str(&err));
		end(w, -EPROTO, sb_str(&w->why));
	}
	sb_free(&err);
	leave(w);
	return r < 0 ? -ECANCELED : 0;
}

static void on_done(void *ctx, const struct http_result *res)
{
	struct kube_watch *w = ctx;
	w->call = NULL;
	enter(w);
	if (!w->ended && !w->stopped) {
		if (res->status && res->status != 200) {
			sb_reset(&w->why);
			int err = status_error(res->status, w->errbody.buf, w->errbody.len,
					       sb_str(&w->url), &w->why);
			end(w, err, sb_str(&w->why));
		} else if (res->err && res->err != -ECANCELED) {
			sb_reset(&w->why);
			sb_addf(&w->why, "%s: %s", sb_str(&w->url), res->why);
			end(w, res->err, sb_str(&w->why));
		} else {
			end(w, 0, "the server closed the watch");
		}
	}
	leave(w);
}

int kube_watch_start(struct kube_client *c, const char *path, const char *rv, long timeout_s,
		     const struct kube_watch_ops *ops, void *ctx, struct kube_watch **out)
{
	if (!c->loop) {
		set_error(c, "watch %s: the client has no loop", path);
		return -EINVAL;
	}
	struct kube_watch *w = xcalloc(1, sizeof(*w));
	w->c = c;
	w->ops = *ops;
	w->ctx = ctx;
	sb_init(&w->url);
	sb_init(&w->errbody);
	sb_init(&w->why);
	sb_addf(&w->url, "%s%s%swatch=1&allowWatchBookmarks=true", c->server, path,
		strchr(path, '?') ? "&" : "?");
	if (rv && *rv) {
		sb_adds(&w->url, "&resourceVersion=");
		kube_query_escape(&w->url, rv);
	}
	if (timeout_s > 0)
		sb_addf(&w->url, "&timeoutSeconds=%ld", timeout_s);
	w->js = json_stream_new(on_value, w);
	struct http_request hr = {
		.method = "GET",
		.url = sb_str(&w->url),
		.accept = "application/json",
		.connect_timeout_ms = MIN(c->timeout_ms, CONNECT_TIMEOUT_MS),
		/* A stream: no overall timeout; a dead peer is found by keep-alive. */
		.keepalive_idle_s = KEEPALIVE_IDLE_S,
		.keepalive_interval_s = KEEPALIVE_INTERVAL_S,
		.keepalive_count = KEEPALIVE_COUNT,
		.user_timeout_ms = USER_TIMEOUT_MS,
		.on_data = on_body,
		.ctx = w,
	};
	int r = http_call_start(c->agent, &hr, on_done, w, &w->call);
	if (r < 0) {
		set_error(c, "watch %s: cannot start: %s", path, strerror(-r));
		watch_free(w);
		return r;
	}
	*out = w;
	return 0;
}

void kube_watch_stop(struct kube_watch *w)
{
	if (!w || w->stopped)
		return;
	w->stopped = true;
	http_call_cancel(w->call);
	w->call = NULL;
	if (w->depth == 0)
		watch_free(w);
}

bool kube_watch_established(const struct kube_watch *w)
{
	return w && !w->ended && !w->stopped && w->call && http_call_status(w->call) == 200;
}
