/*
 * etcd v3 client, unary calls over the JSON gateway through lib/http_client.c,
 * keeping one connection open between the calls of a client (HTTP keep-alive).
 *
 * A call has one deadline (timeout_ms). It tries the endpoint that answered
 * last first and moves on to the next one while the request was never sent
 * (connection refused, connect timeout, name resolution, TLS handshake). Once
 * a request went out, only reads move on after a broken connection: a write
 * may have been applied, so it returns -ECONNRESET instead of risking it
 * twice. HTTP and etcd errors never fail over, nor does an answer we cannot
 * read (-EPROTO).
 *
 * A kept connection is used again only while it is idle and the server has
 * not closed it; one that breaks before any byte of the answer arrived was
 * closed by the server as we sent, and the request goes once more on a new
 * connection, as HTTP clients do.
 */
#include "etcd_internal.h"

#include <brindle/hash.h>
#include <brindle/json.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#define DEFAULT_TIMEOUT_MS	   5000
#define DEFAULT_CONNECT_TIMEOUT_MS 1000
#define DEFAULT_PAGE_SIZE	   1000

struct etcd {
	struct etcd_conn conn;
	size_t good;		    /* endpoint tried first */
	struct http_tls *tls;	    /* loaded on the first TLS endpoint */
	struct http_conn *http;	    /* the kept connection, or NULL */
	size_t http_ep;		    /* its endpoint */
	struct http_reader *reader; /* response of the current call */
	struct strbuf why;	    /* the transport's reason for a failure */
	struct strbuf error;	    /* etcd_last_error */
	struct arena *arena;	    /* decoded response of the current call */
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

int etcd_conn_open(const struct etcd_conn *c, size_t i, struct http_tls **tls, uint64_t deadline_ms,
		   struct http_conn **out, struct strbuf *err)
{
	const struct etcd_endpoint *ep = &c->eps[i];
	struct http_endpoint hep;
	if (http_endpoint_parse(ep->url, ep->unix_path, &hep, err) < 0)
		return -ECONNREFUSED;
	int r = 0;
	/* Datastore traffic goes direct: no proxy, whatever *_proxy says. */
	if (hep.tls && !*tls)
		r = http_tls_new(c->ca_file, c->cert_file, c->key_file, tls, err);
	if (r == 0)
		r = http_conn_open(&hep, *tls, deadline_ms, out, err);
	http_endpoint_clear(&hep);
	return r == 0 || r == -ETIMEDOUT ? r : -ECONNREFUSED;
}

void etcd_json_b64(struct strbuf *sb, const void *p, size_t len)
{
	char *s = base64_encode(p, len);
	sb_addc(sb, '"');
	sb_adds(sb, s);
	sb_addc(sb, '"');
	free(s);
}

static void json_b64s(struct strbuf *sb, const char *s)
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

	e->reader = http_reader_new(HTTP_MAX_BODY_BYTES, NULL, NULL);
	sb_init(&e->why);
	sb_init(&e->error);
	e->arena = arena_new();
	*out = e;
	return 0;
}

void etcd_free(struct etcd *e)
{
	if (!e)
		return;
	http_conn_close(e->http);
	http_reader_free(e->reader);
	http_tls_free(e->tls);
	etcd_conn_clear(&e->conn);
	sb_free(&e->why);
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
static int read_answer(struct etcd *e, size_t i, struct jv **resp)
{
	char name[256];
	int status = http_reader_status(e->reader);
	const struct strbuf *body = http_reader_body(e->reader);
	struct strbuf perr = STRBUF_INIT;
	struct jv *v = NULL;
	int pr = json_parse(e->arena, body->buf, body->len, &v, &perr);
	sb_free(&perr);
	if (status != 200) {
		int r = pr == 0 ? etcd_decode_error(v, &e->error) : -EPROTO;
		if (r != -EPROTO)
			return r;
		set_error(e, "%s: HTTP %d: %.200s", ep_name(e, i, name, sizeof(name)), status,
			  body->buf);
		return -EIO;
	}
	if (pr < 0) {
		set_error(e, "%s: unreadable response: %.200s", ep_name(e, i, name, sizeof(name)),
			  body->buf);
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

static void drop_connection(struct etcd *e)
{
	http_conn_close(e->http);
	e->http = NULL;
}

/*
 * One request to endpoint @i on the kept connection or a new one. On 0 the
 * answer is in e->reader. *sent (always written) says whether the request
 * went out before a failure.
 */
static int exchange(struct etcd *e, size_t i, const char *path, const struct strbuf *req,
		    uint64_t connect_deadline, uint64_t deadline, bool *sent)
{
	*sent = false;
	for (bool retried = false;; retried = true) {
		bool reused = e->http && e->http_ep == i && http_conn_reusable(e->http);
		if (!reused) {
			drop_connection(e);
			int r = etcd_conn_open(&e->conn, i, &e->tls, connect_deadline, &e->http,
					       &e->why);
			if (r < 0)
				return r;
			e->http_ep = i;
		}
		http_conn_post(e->http, path, req->buf, req->len, e->reader);
		int r = http_conn_run(e->http, connect_deadline, deadline, &e->why);
		if (r == 0) {
			if (!http_reader_keep_alive(e->reader))
				drop_connection(e);
			return 0;
		}
		*sent = http_conn_sent(e->http);
		drop_connection(e);
		if (!reused || retried || r != -ECONNRESET || http_reader_started(e->reader))
			return r;
		*sent = false;
	}
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
	uint64_t deadline = now_ms() + (uint64_t)e->conn.timeout_ms;
	bool all_timed_out = true, tried = false;
	size_t n = e->conn.n_eps;
	for (size_t k = 0; k < n; k++) {
		size_t i = (e->good + k) % n;
		uint64_t now = now_ms();
		if (now >= deadline)
			break;
		uint64_t left = deadline - now;
		tried = true;
		/* A big answer (the first list of a large cluster) leaves no big buffer behind. */
		http_reader_trim(e->reader, 256 * 1024);
		sb_reset(&e->why);
		bool sent;
		int r = exchange(e, i, path, req,
				 now + MIN(left, (uint64_t)e->conn.connect_timeout_ms), deadline,
				 &sent);
		if (r == 0) {
			e->good = i;
			return read_answer(e, i, resp);
		}
		set_error(e, "%s: %s", ep_name(e, i, name, sizeof(name)), sb_str(&e->why));
		if (r == -EPROTO || r == -EMSGSIZE)
			return -EPROTO; /* an answer, but not one we can read */
		if (r != -ETIMEDOUT)
			all_timed_out = false;
		if (sent && !idempotent && r != -ETIMEDOUT) {
			sb_adds(&e->error, " (the request may have been applied)");
			return -ECONNRESET;
		}
		if (sent && r == -ETIMEDOUT)
			return -ETIMEDOUT; /* waited for an answer until the deadline */
	}
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
	json_b64s(&req, key);
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

int etcd_list_each(struct etcd *e, const char *prefix, int64_t revision, size_t page_size,
		   int (*cb)(void *ctx, const struct etcd_kv *kvs, size_t n), void *ctx,
		   int64_t *revision_out)
{
	struct arena *a = arena_new(); /* outlives each call's e->arena */
	char *key, *end;
	size_t key_len, end_len;
	etcd_prefix_range(a, prefix, &key, &key_len, &end, &end_len);
	if (!page_size)
		page_size = DEFAULT_PAGE_SIZE;
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
	json_b64s(&req, key);
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
	json_b64s(&req, key);
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
		json_b64s(sb, op->key);
		sb_adds(sb, ",\"value\":");
		etcd_json_b64(sb, op->value ? op->value : "", op->value ? op->value_len : 0);
		if (op->lease)
			sb_addf(sb, ",\"lease\":\"%" PRId64 "\"", op->lease);
		sb_adds(sb, "}}");
		break;
	case ETCD_OP_DELETE:
		sb_adds(sb, "{\"request_delete_range\":{\"key\":");
		json_b64s(sb, op->key);
		sb_adds(sb, "}}");
		break;
	case ETCD_OP_GET:
		sb_adds(sb, "{\"request_range\":{\"key\":");
		json_b64s(sb, op->key);
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
	json_b64s(sb, c->key);
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
