/*
 * etcd v3 client, unary calls over the JSON gateway through lib/http.c
 * (libcurl), whose agent keeps the connection open between the calls of a
 * client (HTTP keep-alive; a connection the server closed meanwhile is
 * replaced and the request sent again, as curl does for a reused one).
 *
 * A call has one deadline (timeout_ms). It tries the endpoint that answered
 * last first and moves on to the next one while the request was never sent
 * (connection refused, connect timeout, name resolution, TLS handshake). Once
 * a request went out, only reads move on after a broken connection: a write
 * may have been applied, so it returns -ECONNRESET instead of risking it
 * twice. HTTP and etcd errors never fail over, nor does an answer we cannot
 * read (-EPROTO).
 *
 * The blocking calls are for tools (brindlectl, the CNI plugin); a daemon
 * lists through etcd_list_start, which runs in its loop.
 */
#include "etcd_internal.h"

#include <brindle/core/hash.h>
#include <brindle/core/json.h>
#include <brindle/sys/clock.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#define DEFAULT_TIMEOUT_MS	   5000
#define DEFAULT_CONNECT_TIMEOUT_MS 1000
#define DEFAULT_PAGE_SIZE	   1000

struct etcd {
	struct etcd_conn conn;
	size_t good;		       /* endpoint tried first */
	struct http_agent *agent;      /* blocking calls; made on the first */
	struct http_agent *loop_agent; /* calls from a loop (lists) */
	struct loop *loop;
	struct strbuf error; /* etcd_last_error */
	struct arena *arena; /* decoded response of the current call */
	size_t body_len;     /* bytes of the last answer */
	bool too_large;	     /* the last call failed on an answer over the body limit */
};

static char *strdup_or_null(const char *s)
{
	return s && *s ? xstrdup(s) : NULL;
}

void etcd_conn_copy(struct etcd_conn *dst, const struct etcd_conn *src)
{
	dst->n_eps = src->n_eps;
	dst->eps = xcalloc(src->n_eps, sizeof(*dst->eps));
	for (size_t i = 0; i < src->n_eps; i++) {
		dst->eps[i].url = xstrdup(src->eps[i].url);
		dst->eps[i].unix_path = strdup_or_null(src->eps[i].unix_path);
	}
	dst->ca_file = strdup_or_null(src->ca_file);
	dst->cert_file = strdup_or_null(src->cert_file);
	dst->key_file = strdup_or_null(src->key_file);
	dst->timeout_ms = src->timeout_ms;
	dst->connect_timeout_ms = src->connect_timeout_ms;
}

void etcd_conn_clear(struct etcd_conn *c)
{
	for (size_t i = 0; i < c->n_eps; i++)
		etcd_endpoint_clear(&c->eps[i]);
	free(c->eps);
	free(c->ca_file);
	free(c->cert_file);
	free(c->key_file);
	memset(c, 0, sizeof(*c));
}

const struct etcd_conn *etcd_client_conn(const struct etcd *e)
{
	return &e->conn;
}

size_t etcd_client_good_endpoint(const struct etcd *e)
{
	return e->good;
}

int etcd_agent_new(const struct etcd_conn *c, struct loop *l, struct http_agent **out,
		   struct strbuf *err)
{
	/* TLS files matter only to TLS endpoints (a plain one never reads them). */
	bool tls = false;
	for (size_t i = 0; i < c->n_eps; i++)
		tls |= strncmp(c->eps[i].url, "https:", 6) == 0;
	struct http_auth auth = { .ca_file = c->ca_file,
				  .cert_file = c->cert_file,
				  .key_file = c->key_file };
	return http_agent_new(l, tls ? &auth : NULL, out, err);
}

void etcd_request(const struct etcd_conn *c, size_t i, const char *path, const struct strbuf *body,
		  long connect_timeout_ms, long timeout_ms, struct strbuf *url,
		  struct http_request *out)
{
	const struct etcd_endpoint *ep = &c->eps[i];
	sb_reset(url);
	sb_addf(url, "%s%s", ep->url, path);
	*out = (struct http_request){
		.method = "POST",
		.url = sb_str(url),
		.unix_socket = ep->unix_path,
		.content_type = "application/json",
		.body = body->buf,
		.body_len = body->len,
		.connect_timeout_ms = connect_timeout_ms,
		.timeout_ms = timeout_ms,
		.max_body = ETCD_MAX_BODY_BYTES,
	};
}

void etcd_json_b64(struct strbuf *sb, const void *p, size_t len)
{
	char *s = base64_encode(p, len);
	sb_addc(sb, '"');
	sb_adds(sb, s);
	sb_addc(sb, '"');
	free(s);
}

static void etcd_json_b64_str(struct strbuf *sb, const char *s)
{
	etcd_json_b64(sb, s, strlen(s));
}

int etcd_parse_endpoints(const char *list, char ***out, size_t *n)
{
	char **v = NULL;
	size_t cnt = 0, cap = 0;
	const char *p = list ? list : "";
	int r = 0;
	for (;;) {
		const char *comma = strchr(p, ',');
		const char *end = comma ? comma : p + strlen(p);
		const char *b = p, *e = end;
		while (b < e && (*b == ' ' || *b == '\t'))
			b++;
		while (e > b && (e[-1] == ' ' || e[-1] == '\t'))
			e--;
		char *item = xstrndup(b, (size_t)(e - b));
		struct etcd_endpoint ep;
		if (etcd_endpoint_parse(item, &ep, NULL) < 0) {
			free(item);
			r = -EINVAL;
			break;
		}
		etcd_endpoint_clear(&ep);
		GROW(v, cap, cnt + 1);
		v[cnt++] = item;
		if (!comma)
			break;
		p = comma + 1;
	}
	if (r < 0) {
		for (size_t i = 0; i < cnt; i++)
			free(v[i]);
		free(v);
		return r;
	}
	*out = v;
	*n = cnt;
	return 0;
}

int etcd_new(const struct etcd_config *cfg, struct etcd **out, struct strbuf *err)
{
	if (!cfg || !cfg->endpoints || cfg->n_endpoints == 0) {
		if (err)
			sb_adds(err, "no etcd endpoints");
		return -EINVAL;
	}
	if (cfg->timeout_ms < 0 || cfg->connect_timeout_ms < 0) {
		if (err)
			sb_adds(err, "negative etcd timeout");
		return -EINVAL;
	}
	struct etcd *e = xcalloc(1, sizeof(*e));
	e->conn.eps = xcalloc(cfg->n_endpoints, sizeof(*e->conn.eps));
	for (size_t i = 0; i < cfg->n_endpoints; i++) {
		int r = etcd_endpoint_parse(cfg->endpoints[i] ? cfg->endpoints[i] : "",
					    &e->conn.eps[i], err);
		if (r < 0) {
			etcd_free(e);
			return r;
		}
		e->conn.n_eps++;
	}
	e->conn.ca_file = strdup_or_null(cfg->ca_file);
	e->conn.cert_file = strdup_or_null(cfg->cert_file);
	e->conn.key_file = strdup_or_null(cfg->key_file);
	e->conn.timeout_ms = cfg->timeout_ms ? cfg->timeout_ms : DEFAULT_TIMEOUT_MS;
	e->conn.connect_timeout_ms =
		cfg->connect_timeout_ms ? cfg->connect_timeout_ms : DEFAULT_CONNECT_TIMEOUT_MS;

	sb_init(&e->error);
	e->arena = arena_new();
	*out = e;
	return 0;
}

void etcd_free(struct etcd *e)
{
	if (!e)
		return;
	http_agent_free(e->agent);
	http_agent_free(e->loop_agent);
	etcd_conn_clear(&e->conn);
	sb_free(&e->error);
	arena_free(e->arena);
	free(e);
}

const char *etcd_last_error(const struct etcd *e)
{
	return sb_str(&e->error);
}

static void set_error(struct etcd *e, const char *fmt, ...) printf_like(2, 3);
static void set_error(struct etcd *e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	sb_reset(&e->error);
	sb_vaddf(&e->error, fmt, ap);
	va_end(ap);
}

/* "unix:PATH" or the URL. */
static const char *ep_name(const struct etcd *e, size_t i, char *buf, size_t len)
{
	const struct etcd_endpoint *ep = &e->conn.eps[i];
	if (!ep->unix_path)
		return ep->url;
	snprintf(buf, len, "unix:%s", ep->unix_path);
	return buf;
}

/* An HTTP answer: the JSON body on 200, else the errno etcd's error maps to. */
static int read_answer(struct etcd *e, size_t i, long status, const struct strbuf *body,
		       struct jv **resp)
{
	char name[256];
	struct strbuf perr = STRBUF_INIT;
	struct jv *v = NULL;
	int pr = json_parse(e->arena, body->buf ? body->buf : "", body->len, &v, &perr);
	sb_free(&perr);
	if (status != 200) {
		int r = pr == 0 ? etcd_decode_error(v, &e->error) : -EPROTO;
		if (r != -EPROTO)
			return r;
		set_error(e, "%s: HTTP %ld: %.200s", ep_name(e, i, name, sizeof(name)), status,
			  body->buf ? body->buf : "");
		return -EIO;
	}
	if (pr < 0) {
		set_error(e, "%s: unreadable response: %.200s", ep_name(e, i, name, sizeof(name)),
			  body->buf ? body->buf : "");
		return -EPROTO;
	}
	/* Streaming endpoints answer errors with 200 and an error object. */
	if (jv_get(v, "error") && !jv_get(v, "header") && !jv_get(v, "result")) {
		int r = etcd_decode_error(v, &e->error);
		if (r != -EPROTO)
			return r;
	}
	*resp = v;
	return 0;
}

/*
 * POST @req to @path. On 0, *resp is the decoded body (in e->arena, valid
 * until the next call). @idempotent: the request may be repeated on another
 * endpoint after the connection broke with the request already sent.
 */
static int call(struct etcd *e, const char *path, const struct strbuf *req, bool idempotent,
		struct jv **resp)
{
	char name[256];
	arena_reset(e->arena);
	e->too_large = false;
	e->body_len = 0;
	if (!e->agent) {
		struct strbuf why = STRBUF_INIT;
		sb_init(&why);
		int r = etcd_agent_new(&e->conn, NULL, &e->agent, &why);
		if (r < 0) {
			set_error(e, "%s", sb_str(&why));
			sb_free(&why);
			return -ECONNREFUSED;
		}
		sb_free(&why);
	}
	uint64_t deadline = now_ms() + (uint64_t)e->conn.timeout_ms;
	bool all_timed_out = true, tried = false;
	size_t n = e->conn.n_eps;
	struct strbuf url = STRBUF_INIT;
	sb_init(&url);
	int result = 0;
	bool decided = false;
	for (size_t k = 0; k < n && !decided; k++) {
		size_t i = (e->good + k) % n;
		uint64_t now = now_ms();
		if (now >= deadline)
			break;
		uint64_t left = deadline - now;
		tried = true;
		struct http_request hr;
		etcd_request(&e->conn, i, path, req,
			     (long)MIN(left, (uint64_t)e->conn.connect_timeout_ms), (long)left,
			     &url, &hr);
		struct http_result res;
		int r = http_agent_perform(e->agent, &hr, &res);
		if (r == 0) {
			e->good = i;
			e->body_len = res.body.len;
			result = read_answer(e, i, res.status, &res.body, resp);
			http_result_clear(&res);
			decided = true;
			break;
		}
		set_error(e, "%s: %s", ep_name(e, i, name, sizeof(name)), res.why);
		bool sent = res.sent;
		http_result_clear(&res);
		if (r == -EMSGSIZE || r == -EPROTO) {
			e->too_large = r == -EMSGSIZE;
			result = -EPROTO; /* an answer, but not one we can read */
			decided = true;
		} else if (sent && !idempotent && r != -ETIMEDOUT) {
			sb_adds(&e->error, " (the request may have been applied)");
			result = -ECONNRESET;
			decided = true;
		} else if (sent && r == -ETIMEDOUT) {
			result = -ETIMEDOUT; /* waited for an answer until the deadline */
			decided = true;
		}
		if (r != -ETIMEDOUT)
			all_timed_out = false;
	}
	sb_free(&url);
	if (decided)
		return result;
	if (now_ms() >= deadline) {
		if (!tried)
			set_error(e, "timed out after %ld ms", e->conn.timeout_ms);
		return -ETIMEDOUT;
	}
	return all_timed_out ? -ETIMEDOUT : -ECONNREFUSED;
}

static void kv_copy(struct etcd_kv *dst, const struct etcd_kv *src)
{
	*dst = *src;
	dst->key = xmalloc(src->key_len + 1);
	memcpy(dst->key, src->key, src->key_len + 1);
	dst->value = xmalloc(src->value_len + 1);
	memcpy(dst->value, src->value, src->value_len + 1);
}

void etcd_kv_clear(struct etcd_kv *kv)
{
	if (!kv)
		return;
	free(kv->key);
	free(kv->value);
	memset(kv, 0, sizeof(*kv));
}

void etcd_range_clear(struct etcd_range *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++)
		etcd_kv_clear(&r->kvs[i]);
	free(r->kvs);
	memset(r, 0, sizeof(*r));
}

void etcd_txn_result_clear(struct etcd_txn_result *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++)
		etcd_kv_clear(&r->kvs[i]);
	free(r->kvs);
	free(r->found);
	memset(r, 0, sizeof(*r));
}

static int protocol_error(struct etcd *e, struct strbuf *why)
{
	set_error(e, "unexpected response: %s", sb_str(why));
	sb_free(why);
	return -EPROTO;
}

int etcd_get(struct etcd *e, const char *key, struct etcd_kv *out)
{
	struct strbuf req = STRBUF_INIT;
	sb_init(&req);
	sb_adds(&req, "{\"key\":");
	etcd_json_b64_str(&req, key);
	sb_adds(&req, "}");
	struct jv *resp;
	int r = call(e, "/v3/kv/range", &req, true, &resp);
	sb_free(&req);
	if (r < 0)
		return r;
	struct etcd_range_page p;
	struct strbuf why = STRBUF_INIT;
	if (etcd_decode_range(e->arena, resp, &p, &why) < 0)
		return protocol_error(e, &why);
	if (p.n == 0) {
		set_error(e, "%s: not found", key);
		return -ENOENT;
	}
	kv_copy(out, &p.kvs[0]);
	return 0;
}

/*
 * A page whose answer was over the body limit: ask again for fewer keys, or
 * give up once a single key was too large. Returns the new size, or 0.
 */
static size_t shrink_page(struct etcd *e, const char *prefix, size_t page_size)
{
	size_t n = etcd_page_size_shrink(page_size);
	if (n == 0)
		set_error(e, "%s: a single key's answer is larger than %u bytes", prefix,
			  ETCD_MAX_BODY_BYTES);
	return n;
}

/*
 * Every key under @prefix page by page: @cb sees each page (valid during the
 * call). Pages are sized by bytes as well as keys (etcd_page_size_next).
 */
static int etcd_list_each(struct etcd *e, const char *prefix, int64_t revision, size_t page_size,
			  int (*cb)(void *ctx, const struct etcd_kv *kvs, size_t n), void *ctx,
			  int64_t *revision_out)
{
	struct arena *a = arena_new(); /* outlives each call's e->arena */
	char *key, *end;
	size_t key_len, end_len;
	etcd_prefix_range(a, prefix, &key, &key_len, &end, &end_len);
	size_t max_page = page_size ? page_size : DEFAULT_PAGE_SIZE;
	page_size = max_page;
	struct strbuf req = STRBUF_INIT;
	sb_init(&req);
	int r;
	for (;;) {
		sb_reset(&req);
		sb_adds(&req, "{\"key\":");
		etcd_json_b64(&req, key, key_len);
		sb_adds(&req, ",\"range_end\":");
		etcd_json_b64(&req, end, end_len);
		sb_addf(&req, ",\"limit\":\"%zu\"", page_size);
		/* Every page at the first page's revision: one consistent snapshot. */
		if (revision > 0)
			sb_addf(&req, ",\"revision\":\"%" PRId64 "\"", revision);
		sb_adds(&req, "}");
		struct jv *resp;
		r = call(e, "/v3/kv/range", &req, true, &resp);
		if (r == -EPROTO && e->too_large && (page_size = shrink_page(e, prefix, page_size)))
			continue;
		if (r < 0)
			break;
		struct etcd_range_page p;
		struct strbuf why = STRBUF_INIT;
		if (etcd_decode_range(e->arena, resp, &p, &why) < 0) {
			r = protocol_error(e, &why);
			break;
		}
		if (revision <= 0)
			revision = p.revision;
		page_size = etcd_page_size_next(max_page, p.n, e->body_len);
		if (p.n && (r = cb(ctx, p.kvs, p.n)) < 0)
			break;
		if (!p.more || p.n == 0)
			break;
		/* Continue right after the last key: its bytes plus "\0". */
		const struct etcd_kv *last = &p.kvs[p.n - 1];
		key = arena_alloc(a, last->key_len + 2);
		memcpy(key, last->key, last->key_len);
		key_len = last->key_len + 1;
	}
	sb_free(&req);
	arena_free(a);
	if (r < 0)
		return r;
	if (revision_out)
		*revision_out = revision;
	return 0;
}

/* --- lists from a loop ---------------------------------------------------------------- */

struct etcd_list_op {
	struct etcd *e;
	struct http_call *call;
	char *key, *end; /* the next page starts at key */
	size_t key_len, end_len;
	struct etcd_list_end
		result; /* its header is the first page's: every page is read at its revision */
	char *prefix;	/* for messages */
	size_t page_size, max_page, pages;
	size_t ep, tried; /* endpoint of this page's attempt, attempts so far */
	uint64_t deadline;
	int (*page)(void *ctx, const struct etcd_kv *kvs, size_t n);
	void (*done)(void *ctx, int err, const struct etcd_list_end *end);
	void *ctx;
	struct strbuf url, body;
	bool cancelled, in_page;
};

static void list_op_free(struct etcd_list_op *op)
{
	free(op->key);
	free(op->end);
	free(op->prefix);
	sb_free(&op->url);
	sb_free(&op->body);
	free(op);
}

static void list_op_finish(struct etcd_list_op *op, int err)
{
	op->call = NULL;
	op->done(op->ctx, err, &op->result);
	list_op_free(op);
}

static void list_page_done(void *ctx, const struct http_result *res);

static int list_page_start(struct etcd_list_op *op)
{
	struct etcd *e = op->e;
	uint64_t now = now_ms();
	if (now >= op->deadline)
		return -ETIMEDOUT;
	uint64_t left = op->deadline - now;
	sb_reset(&op->body);
	sb_adds(&op->body, "{\"key\":");
	etcd_json_b64(&op->body, op->key, op->key_len);
	sb_adds(&op->body, ",\"range_end\":");
	etcd_json_b64(&op->body, op->end, op->end_len);
	sb_addf(&op->body, ",\"limit\":\"%zu\"", op->page_size);
	if (op->result.hdr.revision > 0)
		sb_addf(&op->body, ",\"revision\":\"%" PRId64 "\"", op->result.hdr.revision);
	sb_adds(&op->body, "}");
	struct http_request hr;
	etcd_request(&e->conn, op->ep, "/v3/kv/range", &op->body,
		     (long)MIN(left, (uint64_t)e->conn.connect_timeout_ms), (long)left, &op->url,
		     &hr);
	return http_call_start(e->loop_agent, &hr, list_page_done, op, &op->call);
}

/* The next endpoint, if one is left and there is time: a list is a read, safe to repeat. */
static bool list_fail_over(struct etcd_list_op *op)
{
	struct etcd *e = op->e;
	while (++op->tried < e->conn.n_eps) {
		op->ep = (op->ep + 1) % e->conn.n_eps;
		if (list_page_start(op) == 0)
			return true;
	}
	return false;
}

static void list_page_done(void *ctx, const struct http_result *res)
{
	struct etcd_list_op *op = ctx;
	struct etcd *e = op->e;
	char name[256];
	op->call = NULL;
	if (res->err) {
		set_error(e, "%s: %s", ep_name(e, op->ep, name, sizeof(name)), res->why);
		if (res->err == -EMSGSIZE &&
		    (op->page_size = shrink_page(e, op->prefix, op->page_size))) {
			/* The same page again, smaller, from a fresh deadline. */
			op->tried = 0;
			op->deadline = now_ms() + (uint64_t)e->conn.timeout_ms;
			if (list_page_start(op) == 0 || list_fail_over(op))
				return;
			list_op_finish(op, -ECONNREFUSED);
			return;
		}
		if (res->err == -EMSGSIZE || res->err == -EPROTO) {
			list_op_finish(op, -EPROTO);
			return;
		}
		int err = res->err == -ETIMEDOUT ? -ETIMEDOUT : -ECONNREFUSED;
		if (!list_fail_over(op))
			list_op_finish(op, err);
		return;
	}
	arena_reset(e->arena);
	struct jv *resp;
	int r = read_answer(e, op->ep, res->status, &res->body, &resp);
	struct etcd_range_page p;
	if (r == 0) {
		struct strbuf why = STRBUF_INIT;
		if (etcd_decode_range(e->arena, resp, &p, &why) < 0)
			r = protocol_error(e, &why);
	}
	if (r < 0) {
		list_op_finish(op, r);
		return;
	}
	e->good = op->ep;
	if (!op->pages++) {
		if (op->result.hdr.revision <= 0)
			op->result.hdr.revision = p.revision;
		op->result.hdr.cluster_id = p.cluster_id;
		op->result.count = p.count;
	} else if (p.cluster_id && op->result.hdr.cluster_id &&
		   p.cluster_id != op->result.hdr.cluster_id) {
		/* Failed over mid-list to an endpoint of another cluster: not one snapshot. */
		set_error(e,
			  "%s answers for cluster %" PRIx64 ", the list began on cluster %" PRIx64,
			  ep_name(e, op->ep, name, sizeof(name)), p.cluster_id,
			  op->result.hdr.cluster_id);
		list_op_finish(op, -EIO);
		return;
	}
	op->page_size = etcd_page_size_next(op->max_page, p.n, res->body.len);
	if (p.n) {
		op->in_page = true;
		r = op->page(op->ctx, p.kvs, p.n);
		op->in_page = false;
		if (op->cancelled) {
			list_op_free(op);
			return;
		}
		if (r < 0) {
			list_op_finish(op, r);
			return;
		}
	}
	if (!p.more || p.n == 0 || r == ETCD_LIST_STOP) {
		list_op_finish(op, 0);
		return;
	}
	/* Continue right after the last key: its bytes plus "\0". */
	const struct etcd_kv *last = &p.kvs[p.n - 1];
	free(op->key);
	op->key = xmalloc(last->key_len + 2);
	memcpy(op->key, last->key, last->key_len);
	op->key[last->key_len] = '\0';
	op->key_len = last->key_len + 1;
	op->tried = 0;
	op->deadline = now_ms() + (uint64_t)e->conn.timeout_ms;
	r = list_page_start(op);
	if (r < 0 && !list_fail_over(op)) {
		set_error(e, "cannot start a request: %s", strerror(-r));
		list_op_finish(op, r == -ETIMEDOUT ? r : -ECONNREFUSED);
	}
}

int etcd_list_start(struct etcd *e, struct loop *l, const char *prefix, int64_t revision,
		    size_t page_size, int (*page)(void *ctx, const struct etcd_kv *kvs, size_t n),
		    void (*done)(void *ctx, int err, const struct etcd_list_end *end), void *ctx,
		    struct etcd_list_op **out)
{
	if (!l || !page || !done || (e->loop && e->loop != l))
		return -EINVAL;
	if (!e->loop_agent) {
		struct strbuf why = STRBUF_INIT;
		sb_init(&why);
		int r = etcd_agent_new(&e->conn, l, &e->loop_agent, &why);
		if (r < 0) {
			set_error(e, "%s", sb_str(&why));
			sb_free(&why);
			return -ECONNREFUSED;
		}
		sb_free(&why);
		e->loop = l;
	}
	struct etcd_list_op *op = xcalloc(1, sizeof(*op));
	op->e = e;
	struct arena *a = arena_new();
	char *key, *end;
	etcd_prefix_range(a, prefix, &key, &op->key_len, &end, &op->end_len);
	op->key = xmalloc(op->key_len + 1);
	memcpy(op->key, key, op->key_len + 1);
	op->end = xmalloc(op->end_len + 1);
	memcpy(op->end, end, op->end_len + 1);
	arena_free(a);
	op->result.hdr.revision = revision;
	op->prefix = xstrdup(prefix);
	op->max_page = page_size ? page_size : DEFAULT_PAGE_SIZE;
	op->page_size = op->max_page;
	op->page = page;
	op->done = done;
	op->ctx = ctx;
	op->ep = e->good % e->conn.n_eps;
	op->deadline = now_ms() + (uint64_t)e->conn.timeout_ms;
	sb_init(&op->url);
	sb_init(&op->body);
	int r = list_page_start(op);
	if (r < 0 && !list_fail_over(op)) {
		set_error(e, "cannot start a request: %s", strerror(-r));
		list_op_free(op);
		return r;
	}
	*out = op;
	return 0;
}

void etcd_loop_release(struct etcd *e)
{
	http_agent_free(e->loop_agent);
	e->loop_agent = NULL;
	e->loop = NULL;
}

void etcd_list_cancel(struct etcd_list_op *op)
{
	if (!op)
		return;
	if (op->in_page) {
		op->cancelled = true; /* freed when @page returns */
		return;
	}
	http_call_cancel(op->call);
	list_op_free(op);
}

struct list_all {
	struct etcd_range res;
	size_t cap;
};

static int collect_page(void *ctx, const struct etcd_kv *kvs, size_t n)
{
	struct list_all *l = ctx;
	GROW(l->res.kvs, l->cap, l->res.n + n);
	for (size_t i = 0; i < n; i++)
		kv_copy(&l->res.kvs[l->res.n++], &kvs[i]);
	return 0;
}

int etcd_list(struct etcd *e, const char *prefix, int64_t revision, size_t page_size,
	      struct etcd_range *out)
{
	struct list_all l = { 0 };
	int r = etcd_list_each(e, prefix, revision, page_size, collect_page, &l, &l.res.revision);
	if (r < 0) {
		etcd_range_clear(&l.res);
		return r;
	}
	*out = l.res;
	return 0;
}

int etcd_put(struct etcd *e, const char *key, const char *value, size_t len, int64_t lease,
	     int64_t *rev)
{
	struct strbuf req = STRBUF_INIT;
	sb_init(&req);
	sb_adds(&req, "{\"key\":");
	etcd_json_b64_str(&req, key);
	sb_adds(&req, ",\"value\":");
	etcd_json_b64(&req, value ? value : "", value ? len : 0);
	if (lease)
		sb_addf(&req, ",\"lease\":\"%" PRId64 "\"", lease);
	sb_adds(&req, "}");
	struct jv *resp;
	int r = call(e, "/v3/kv/put", &req, false, &resp);
	sb_free(&req);
	if (r < 0)
		return r;
	int64_t revision;
	if (etcd_decode_header_revision(resp, &revision) < 0) {
		set_error(e, "unexpected response: malformed header");
		return -EPROTO;
	}
	if (rev)
		*rev = revision;
	return 0;
}

int etcd_delete(struct etcd *e, const char *key, bool *deleted, int64_t *rev)
{
	struct strbuf req = STRBUF_INIT;
	sb_init(&req);
	sb_adds(&req, "{\"key\":");
	etcd_json_b64_str(&req, key);
	sb_adds(&req, "}");
	struct jv *resp;
	int r = call(e, "/v3/kv/deleterange", &req, false, &resp);
	sb_free(&req);
	if (r < 0)
		return r;
	int64_t n, revision;
	struct strbuf why = STRBUF_INIT;
	if (etcd_decode_delete(resp, &n, &revision, &why) < 0)
		return protocol_error(e, &why);
	if (deleted)
		*deleted = n > 0;
	if (rev)
		*rev = revision;
	return 0;
}

static void add_op(struct strbuf *sb, const struct etcd_op *op)
{
	switch (op->type) {
	case ETCD_OP_PUT:
		sb_adds(sb, "{\"request_put\":{\"key\":");
		etcd_json_b64_str(sb, op->key);
		sb_adds(sb, ",\"value\":");
		etcd_json_b64(sb, op->value ? op->value : "", op->value ? op->value_len : 0);
		if (op->lease)
			sb_addf(sb, ",\"lease\":\"%" PRId64 "\"", op->lease);
		sb_adds(sb, "}}");
		break;
	case ETCD_OP_DELETE:
		sb_adds(sb, "{\"request_delete_range\":{\"key\":");
		etcd_json_b64_str(sb, op->key);
		sb_adds(sb, "}}");
		break;
	case ETCD_OP_GET:
		sb_adds(sb, "{\"request_range\":{\"key\":");
		etcd_json_b64_str(sb, op->key);
		sb_adds(sb, "}}");
		break;
	}
}

static void add_ops(struct strbuf *sb, const char *name, const struct etcd_op *ops, size_t n)
{
	sb_addf(sb, ",\"%s\":[", name);
	for (size_t i = 0; i < n; i++) {
		if (i)
			sb_addc(sb, ',');
		add_op(sb, &ops[i]);
	}
	sb_addc(sb, ']');
}

static void add_cmp(struct strbuf *sb, const struct etcd_cmp *c)
{
	static const char *const targets[] = {
		[ETCD_CMP_VERSION] = "VERSION",
		[ETCD_CMP_CREATE] = "CREATE",
		[ETCD_CMP_MOD] = "MOD",
		[ETCD_CMP_VALUE] = "VALUE",
	};
	static const char *const fields[] = {
		[ETCD_CMP_VERSION] = "version",
		[ETCD_CMP_CREATE] = "create_revision",
		[ETCD_CMP_MOD] = "mod_revision",
	};
	static const char *const results[] = {
		[ETCD_CMP_EQUAL] = "EQUAL",
		[ETCD_CMP_NOT_EQUAL] = "NOT_EQUAL",
		[ETCD_CMP_LESS] = "LESS",
		[ETCD_CMP_GREATER] = "GREATER",
	};
	sb_adds(sb, "{\"key\":");
	etcd_json_b64_str(sb, c->key);
	sb_addf(sb, ",\"target\":\"%s\",\"result\":\"%s\",", targets[c->target],
		results[c->result]);
	if (c->target == ETCD_CMP_VALUE) {
		sb_adds(sb, "\"value\":");
		etcd_json_b64(sb, c->value ? c->value : "", c->value ? c->value_len : 0);
	} else {
		sb_addf(sb, "\"%s\":\"%" PRId64 "\"", fields[c->target], c->revision);
	}
	sb_addc(sb, '}');
}

int etcd_txn(struct etcd *e, const struct etcd_cmp *cmps, size_t n_cmps,
	     const struct etcd_op *success, size_t n_success, const struct etcd_op *failure,
	     size_t n_failure, struct etcd_txn_result *res)
{
	struct strbuf req = STRBUF_INIT;
	sb_init(&req);
	sb_adds(&req, "{\"compare\":[");
	for (size_t i = 0; i < n_cmps; i++) {
		if (i)
			sb_addc(&req, ',');
		add_cmp(&req, &cmps[i]);
	}
	sb_addc(&req, ']');
	add_ops(&req, "success", success, n_success);
	add_ops(&req, "failure", failure, n_failure);
	sb_addc(&req, '}');
	struct jv *resp;
	int r = call(e, "/v3/kv/txn", &req, false, &resp);
	sb_free(&req);
	if (r < 0)
		return r;
	struct etcd_txn_decoded t;
	struct strbuf why = STRBUF_INIT;
	if (etcd_decode_txn(e->arena, resp, &t, &why) < 0)
		return protocol_error(e, &why);
	if (t.n != (t.succeeded ? n_success : n_failure)) {
		set_error(e, "unexpected response: %zu results for the txn's branch", t.n);
		return -EPROTO;
	}
	struct etcd_txn_result out = {
		.succeeded = t.succeeded,
		.revision = t.revision,
		.n = t.n,
		.kvs = xcalloc(t.n ? t.n : 1, sizeof(struct etcd_kv)),
		.found = xcalloc(t.n ? t.n : 1, sizeof(bool)),
	};
	for (size_t i = 0; i < t.n; i++) {
		out.found[i] = t.found[i];
		if (t.found[i])
			kv_copy(&out.kvs[i], &t.kvs[i]);
	}
	*res = out;
	return 0;
}

int etcd_lease_grant(struct etcd *e, int64_t ttl_s, int64_t *id, int64_t *granted_ttl)
{
	struct strbuf req = STRBUF_INIT;
	sb_init(&req);
	sb_addf(&req, "{\"TTL\":\"%" PRId64 "\"}", ttl_s);
	struct jv *resp;
	int r = call(e, "/v3/lease/grant", &req, false, &resp);
	sb_free(&req);
	if (r < 0)
		return r;
	int64_t i, t;
	struct strbuf why = STRBUF_INIT;
	r = etcd_decode_lease_grant(resp, &i, &t, &why);
	if (r == -EIO) {
		set_error(e, "%s", sb_str(&why));
		sb_free(&why);
		return r;
	}
	if (r < 0)
		return protocol_error(e, &why);
	sb_free(&why);
	*id = i;
	if (granted_ttl)
		*granted_ttl = t;
	return 0;
}

int etcd_lease_keepalive(struct etcd *e, int64_t id, int64_t *ttl_left)
{
	struct strbuf req = STRBUF_INIT;
	sb_init(&req);
	sb_addf(&req, "{\"ID\":\"%" PRId64 "\"}", id);
	struct jv *resp;
	int r = call(e, "/v3/lease/keepalive", &req, true, &resp);
	sb_free(&req);
	if (r < 0)
		return r;
	int64_t got, ttl;
	struct strbuf why = STRBUF_INIT;
	if (etcd_decode_lease_keepalive(resp, &got, &ttl, &why) < 0)
		return protocol_error(e, &why);
	*ttl_left = ttl;
	return 0;
}

int etcd_lease_revoke(struct etcd *e, int64_t id)
{
	struct strbuf req = STRBUF_INIT;
	sb_init(&req);
	sb_addf(&req, "{\"ID\":\"%" PRId64 "\"}", id);
	struct jv *resp;
	int r = call(e, "/v3/lease/revoke", &req, true, &resp);
	sb_free(&req);
	return r;
}

int etcd_compact(struct etcd *e, int64_t revision)
{
	struct strbuf req = STRBUF_INIT;
	sb_init(&req);
	/* physical: answer once the old revisions are really gone. */
	sb_addf(&req, "{\"revision\":\"%" PRId64 "\",\"physical\":true}", revision);
	struct jv *resp;
	int r = call(e, "/v3/kv/compaction", &req, true, &resp);
	sb_free(&req);
	return r;
}
