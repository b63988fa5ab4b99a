/*
 * etcd JSON gateway codec: endpoint URLs, prefix ranges, and response and
 * watch-message decoding from jv trees into arena memory. Pure: no I/O.
 * Every decoder tolerates absent fields (the gateway omits zero
 * values) and rejects fields of the wrong JSON type with -EPROTO.
 */
#include <brindle/core/etcd_codec.h>
#include <brindle/core/hash.h>

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

/* gRPC status codes the gateway puts in "code". */
#define GRPC_NOT_FOUND	  5
#define GRPC_OUT_OF_RANGE 11

static int fail(struct strbuf *err, const char *what)
{
	if (err) {
		sb_reset(err);
		sb_adds(err, what);
	}
	return -EPROTO;
}

int etcd_endpoint_parse(const char *s, struct etcd_endpoint *out, struct strbuf *err)
{
	static const struct {
		const char *prefix;
		const char *url; /* NULL: the URL is the endpoint itself */
	} schemes[] = {
		{ "unix://", "http://localhost" },
		{ "unixs://", "https://localhost" },
		{ "unix:", "http://localhost" },
		{ "unixs:", "https://localhost" },
		{ "http://", NULL },
		{ "https://", NULL },
	};
	for (size_t i = 0; i < ARRAY_SIZE(schemes); i++) {
		size_t pl = strlen(schemes[i].prefix);
		if (strncmp(s, schemes[i].prefix, pl) != 0)
			continue;
		size_t len = strlen(s);
		while (len > pl && s[len - 1] == '/')
			len--;
		if (len == pl || strchr(s + pl, ' ') || strchr(s + pl, ',')) {
			if (err) {
				sb_reset(err);
				sb_addf(err, "endpoint \"%s\": no address after the scheme", s);
			}
			return -EINVAL;
		}
		if (schemes[i].url) {
			out->url = xstrdup(schemes[i].url);
			out->unix_path = xstrndup(s + pl, len - pl);
		} else {
			out->url = xstrndup(s, len);
			out->unix_path = NULL;
		}
		return 0;
	}
	if (err) {
		sb_reset(err);
		sb_addf(err, "endpoint \"%s\": want http://, https://, unix: or unixs:", s);
	}
	return -EINVAL;
}

void etcd_endpoint_clear(struct etcd_endpoint *ep)
{
	if (!ep)
		return;
	free(ep->url);
	free(ep->unix_path);
	ep->url = ep->unix_path = NULL;
}

void etcd_prefix_range(struct arena *a, const char *prefix, char **key, size_t *key_len, char **end,
		       size_t *end_len)
{
	size_t n = strlen(prefix);
	if (n == 0) {
		/* "\0" to "\0": every key. */
		*key = arena_memdup(a, "\0", 2);
		*key_len = 1;
		*end = arena_memdup(a, "\0", 2);
		*end_len = 1;
		return;
	}
	*key = arena_strndup(a, prefix, n);
	*key_len = n;
	char *e = arena_strndup(a, prefix, n);
	for (size_t i = n; i-- > 0;) {
		if ((unsigned char)e[i] < 0xff) {
			e[i] = (char)((unsigned char)e[i] + 1);
			e[i + 1] = '\0';
			*end = e;
			*end_len = i + 1;
			return;
		}
	}
	*end = arena_memdup(a, "\0", 2);
	*end_len = 1;
}

int etcd_decode_int64(const struct jv *v, int64_t *out)
{
	if (!v || v->type == JV_NULL) {
		*out = 0;
		return 0;
	}
	const char *t;
	if (v->type == JV_STRING || v->type == JV_NUMBER)
		t = v->s.text;
	else
		return -EPROTO;
	if (!*t || (*t != '-' && (*t < '0' || *t > '9')))
		return -EPROTO;
	char *end;
	errno = 0;
	long long i = strtoll(t, &end, 10);
	if (errno || *end)
		return -EPROTO;
	*out = i;
	return 0;
}

/* A base64 field into NUL-terminated bytes from @a; absent reads as "". */
must_check static int etcd_decode_bytes(struct arena *a, const struct jv *v, char **out,
					size_t *len)
{
	if (!v || v->type == JV_NULL) {
		*out = arena_strdup(a, "");
		*len = 0;
		return 0;
	}
	if (v->type != JV_STRING)
		return -EPROTO;
	uint8_t *buf = arena_alloc(a, v->s.len * 3 / 4 + 4);
	long n = base64_decode(v->s.text, v->s.len, buf);
	if (n < 0)
		return -EPROTO;
	buf[n] = '\0';
	*out = (char *)buf;
	*len = (size_t)n;
	return 0;
}

static int get_bool(const struct jv *obj, const char *key, bool *out)
{
	const struct jv *v = jv_get(obj, key);
	if (!v || v->type == JV_NULL) {
		*out = false;
		return 0;
	}
	return jv_as_bool(v, out) ? 0 : -EPROTO;
}

static int get_int(const struct jv *obj, const char *key, int64_t *out)
{
	return etcd_decode_int64(jv_get(obj, key), out);
}

/* An absent member, null, or an object; anything else is malformed. */
static bool object_or_absent(const struct jv *v)
{
	return !v || v->type == JV_NULL || v->type == JV_OBJECT;
}

int etcd_decode_header_revision(const struct jv *resp, int64_t *rev)
{
	const struct jv *h = jv_get(resp, "header");
	if (!object_or_absent(h))
		return -EPROTO;
	return get_int(h, "revision", rev);
}

/* A uint64 field (a cluster ID is above int64's range); absent reads as 0. */
static int get_uint64(const struct jv *obj, const char *key, uint64_t *out)
{
	const struct jv *v = jv_get(obj, key);
	if (!v || v->type == JV_NULL) {
		*out = 0;
		return 0;
	}
	if ((v->type != JV_STRING && v->type != JV_NUMBER) || v->s.text[0] < '0' ||
	    v->s.text[0] > '9')
		return -EPROTO;
	char *end;
	errno = 0;
	unsigned long long u = strtoull(v->s.text, &end, 10);
	if (errno || *end)
		return -EPROTO;
	*out = u;
	return 0;
}

int etcd_decode_header(const struct jv *resp, struct etcd_header *out)
{
	const struct jv *h = jv_get(resp, "header");
	struct etcd_header hd = { 0 };
	if (!object_or_absent(h) || get_int(h, "revision", &hd.revision) < 0 ||
	    get_uint64(h, "cluster_id", &hd.cluster_id) < 0)
		return -EPROTO;
	*out = hd;
	return 0;
}

/* A mvccpb.KeyValue object; strings come from @a. */
must_check static int etcd_decode_kv(struct arena *a, const struct jv *v, struct etcd_kv *out,
				     struct strbuf *err)
{
	if (!v || v->type != JV_OBJECT)
		return fail(err, "key-value is not an object");
	struct etcd_kv kv = { 0 };
	if (etcd_decode_bytes(a, jv_get(v, "key"), &kv.key, &kv.key_len) < 0 ||
	    etcd_decode_bytes(a, jv_get(v, "value"), &kv.value, &kv.value_len) < 0)
		return fail(err, "key or value is not base64");
	if (get_int(v, "create_revision", &kv.create_revision) < 0 ||
	    get_int(v, "mod_revision", &kv.mod_revision) < 0 ||
	    get_int(v, "version", &kv.version) < 0 || get_int(v, "lease", &kv.lease) < 0)
		return fail(err, "key-value has a malformed number");
	*out = kv;
	return 0;
}

int etcd_decode_error(const struct jv *v, struct strbuf *msg)
{
	if (!v || v->type != JV_OBJECT)
		return -EPROTO;
	/*
	 * Unary calls: {"error":"..","message":"..","code":N}. Errors inside a
	 * stream: {"error":{"grpc_code":N,"http_code":..,"message":".."}}.
	 */
	const struct jv *e = jv_get(v, "error");
	const char *code_key = "code";
	if (e && e->type == JV_OBJECT) {
		v = e;
		code_key = "grpc_code";
	} else if (!e || e->type != JV_STRING) {
		return -EPROTO;
	}
	const struct jv *m = jv_get(v, "message");
	if (!m || m->type != JV_STRING)
		m = e->type == JV_STRING ? e : NULL;
	if (!m)
		return -EPROTO;
	int64_t code;
	if (get_int(v, code_key, &code) < 0)
		return -EPROTO;
	if (msg) {
		sb_reset(msg);
		sb_add(msg, m->s.text, m->s.len);
	}
	if (code == GRPC_OUT_OF_RANGE && strstr(m->s.text, "compacted"))
		return -ESTALE;
	if (code == GRPC_OUT_OF_RANGE && strstr(m->s.text, "future revision"))
		return -ERANGE;
	if (code == GRPC_NOT_FOUND)
		return -ENOENT;
	return -EIO;
}

static int decode_kvs(struct arena *a, const struct jv *arr, struct etcd_kv **kvs, size_t *n,
		      struct strbuf *err)
{
	*kvs = NULL;
	*n = 0;
	if (!arr || arr->type == JV_NULL)
		return 0;
	if (arr->type != JV_ARRAY)
		return fail(err, "kvs is not a list");
	struct etcd_kv *out = arena_new_array(a, struct etcd_kv, arr->arr.n ? arr->arr.n : 1);
	for (size_t i = 0; i < arr->arr.n; i++) {
		int r = etcd_decode_kv(a, arr->arr.items[i], &out[i], err);
		if (r < 0)
			return r;
	}
	*kvs = out;
	*n = arr->arr.n;
	return 0;
}

int etcd_decode_range(struct arena *a, const struct jv *v, struct etcd_range_page *out,
		      struct strbuf *err)
{
	if (!v || v->type != JV_OBJECT)
		return fail(err, "range response is not an object");
	struct etcd_range_page p = { 0 };
	struct etcd_header hd;
	if (etcd_decode_header(v, &hd) < 0 || get_bool(v, "more", &p.more) < 0 ||
	    get_int(v, "count", &p.count) < 0)
		return fail(err, "range response has a malformed field");
	p.revision = hd.revision;
	p.cluster_id = hd.cluster_id;
	int r = decode_kvs(a, jv_get(v, "kvs"), &p.kvs, &p.n, err);
	if (r < 0)
		return r;
	*out = p;
	return 0;
}

int etcd_decode_delete(const struct jv *v, int64_t *deleted, int64_t *revision, struct strbuf *err)
{
	if (!v || v->type != JV_OBJECT)
		return fail(err, "delete response is not an object");
	int64_t d, rev;
	if (etcd_decode_header_revision(v, &rev) < 0 || get_int(v, "deleted", &d) < 0)
		return fail(err, "delete response has a malformed field");
	*deleted = d;
	*revision = rev;
	return 0;
}

int etcd_decode_txn(struct arena *a, const struct jv *v, struct etcd_txn_decoded *out,
		    struct strbuf *err)
{
	if (!v || v->type != JV_OBJECT)
		return fail(err, "txn response is not an object");
	struct etcd_txn_decoded t = { 0 };
	if (etcd_decode_header_revision(v, &t.revision) < 0 ||
	    get_bool(v, "succeeded", &t.succeeded) < 0)
		return fail(err, "txn response has a malformed field");
	const struct jv *resps = jv_get(v, "responses");
	if (resps && resps->type != JV_NULL) {
		if (resps->type != JV_ARRAY)
			return fail(err, "txn responses is not a list");
		t.n = resps->arr.n;
	}
	t.kvs = arena_new_array(a, struct etcd_kv, t.n ? t.n : 1);
	t.found = arena_new_array(a, bool, t.n ? t.n : 1);
	for (size_t i = 0; i < t.n; i++) {
		const struct jv *op = resps->arr.items[i];
		if (!op || op->type != JV_OBJECT)
			return fail(err, "txn response entry is not an object");
		const struct jv *range = jv_get(op, "response_range");
		if (!range)
			continue;
		struct etcd_range_page p;
		int r = etcd_decode_range(a, range, &p, err);
		if (r < 0)
			return r;
		if (p.n) {
			t.kvs[i] = p.kvs[0];
			t.found[i] = true;
		}
	}
	*out = t;
	return 0;
}

static int lease_error(const struct jv *v, struct strbuf *err)
{
	const struct jv *e = jv_get(v, "error");
	if (!e || e->type == JV_NULL)
		return 0;
	if (e->type != JV_STRING)
		return fail(err, "lease response has a malformed error");
	if (e->s.len == 0)
		return 0;
	if (err) {
		sb_reset(err);
		sb_add(err, e->s.text, e->s.len);
	}
	return -EIO;
}

int etcd_decode_lease_grant(const struct jv *v, int64_t *id, int64_t *ttl, struct strbuf *err)
{
	if (!v || v->type != JV_OBJECT)
		return fail(err, "lease grant response is not an object");
	int r = lease_error(v, err);
	if (r < 0)
		return r;
	int64_t i, t;
	if (get_int(v, "ID", &i) < 0 || get_int(v, "TTL", &t) < 0)
		return fail(err, "lease grant response has a malformed field");
	if (i == 0)
		return fail(err, "lease grant response has no lease ID");
	*id = i;
	*ttl = t;
	return 0;
}

int etcd_decode_lease_keepalive(const struct jv *v, int64_t *id, int64_t *ttl, struct strbuf *err)
{
	if (!v || v->type != JV_OBJECT)
		return fail(err, "keepalive response is not an object");
	const struct jv *res = jv_get(v, "result");
	if (res) {
		if (res->type != JV_OBJECT)
			return fail(err, "keepalive result is not an object");
		v = res;
	}
	int64_t i, t;
	if (get_int(v, "ID", &i) < 0 || get_int(v, "TTL", &t) < 0)
		return fail(err, "keepalive response has a malformed field");
	*id = i;
	*ttl = t < 0 ? 0 : t;
	return 0;
}

static int decode_event(struct arena *a, const struct jv *v, struct etcd_event *out,
			struct strbuf *err)
{
	if (!v || v->type != JV_OBJECT)
		return fail(err, "watch event is not an object");
	const struct jv *type = jv_get(v, "type");
	struct etcd_event ev = { .type = ETCD_EVENT_PUT };
	if (type && type->type != JV_NULL) {
		if (type->type != JV_STRING && type->type != JV_NUMBER)
			return fail(err, "watch event type is malformed");
		if (streq(type->s.text, "DELETE") || streq(type->s.text, "1"))
			ev.type = ETCD_EVENT_DELETE;
		else if (!streq(type->s.text, "PUT") && !streq(type->s.text, "0"))
			return fail(err, "watch event type is unknown");
	}
	int r = etcd_decode_kv(a, jv_get(v, "kv"), &ev.kv, err);
	if (r < 0)
		return r;
	*out = ev;
	return 0;
}

int etcd_decode_watch_msg(struct arena *a, const struct jv *v, struct etcd_watch_msg *out,
			  struct strbuf *err)
{
	if (!v || v->type != JV_OBJECT)
		return fail(err, "watch message is not an object");
	struct etcd_watch_msg m = { .message = "" };
	const struct jv *res = jv_get(v, "result");
	if (!res) {
		struct strbuf text = STRBUF_INIT;
		sb_init(&text);
		int r = etcd_decode_error(v, &text);
		if (r == -EPROTO) {
			sb_free(&text);
			return fail(err, "watch message has neither result nor error");
		}
		m.kind = ETCD_WATCH_MSG_ERROR;
		m.error = r;
		m.message = arena_strdup(a, sb_str(&text));
		sb_free(&text);
		*out = m;
		return 0;
	}
	if (res->type != JV_OBJECT)
		return fail(err, "watch result is not an object");
	bool created, canceled;
	struct etcd_header hd;
	if (etcd_decode_header(res, &hd) < 0 || get_bool(res, "created", &created) < 0 ||
	    get_bool(res, "canceled", &canceled) < 0 ||
	    get_bool(res, "fragment", &m.fragment) < 0 ||
	    get_int(res, "compact_revision", &m.compact_revision) < 0)
		return fail(err, "watch result has a malformed field");
	m.header_revision = hd.revision;
	m.cluster_id = hd.cluster_id;
	const struct jv *evs = jv_get(res, "events");
	if (evs && evs->type != JV_NULL) {
		if (evs->type != JV_ARRAY)
			return fail(err, "watch events is not a list");
		m.n_events = evs->arr.n;
		m.events = arena_new_array(a, struct etcd_event, m.n_events ? m.n_events : 1);
		int64_t last = 0;
		for (size_t i = 0; i < m.n_events; i++) {
			int r = decode_event(a, evs->arr.items[i], &m.events[i], err);
			if (r < 0)
				return r;
			if (m.events[i].kv.mod_revision < last)
				return fail(err, "watch events are out of revision order");
			last = m.events[i].kv.mod_revision;
		}
	}
	if (canceled) {
		m.kind = ETCD_WATCH_MSG_CANCELED;
		const struct jv *reason = jv_get(res, "cancel_reason");
		if (reason && reason->type == JV_STRING)
			m.message = arena_strndup(a, reason->s.text, reason->s.len);
	} else if (created) {
		m.kind = ETCD_WATCH_MSG_CREATED;
	} else if (m.n_events) {
		m.kind = ETCD_WATCH_MSG_EVENTS;
	} else {
		m.kind = ETCD_WATCH_MSG_PROGRESS;
	}
	*out = m;
	return 0;
}

size_t etcd_events_first_new(const struct etcd_event *evs, size_t n, int64_t next_revision)
{
	size_t i = 0;
	while (i < n && evs[i].kv.mod_revision < next_revision)
		i++;
	return i;
}

size_t etcd_page_size_next(size_t max, size_t keys, size_t bytes)
{
	if (keys == 0 || bytes == 0)
		return max;
	/* keys * target / bytes, without overflow: bytes per key first. */
	size_t per_key = bytes / keys ? bytes / keys : 1;
	size_t n = ETCD_PAGE_TARGET_BYTES / per_key;
	return n < 1 ? 1 : n > max ? max : n;
}

size_t etcd_page_size_shrink(size_t cur)
{
	return cur <= 1 ? 0 : cur / 16 ? cur / 16 : 1;
}
