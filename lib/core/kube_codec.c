/* The pure half of the Kubernetes API client (see kube_codec.h). */
#include <brindle/core/kube_codec.h>
#include <brindle/core/util.h>

#include <errno.h>
#include <string.h>

static int fail(struct strbuf *err, const char *what)
{
	if (err) {
		sb_reset(err);
		sb_adds(err, what);
	}
	return -EPROTO;
}

void kube_path(struct strbuf *out, const char *group_version, const char *ns, const char *plural,
	       const char *name)
{
	if (!strchr(group_version, '/'))
		sb_addf(out, "/api/%s", group_version);
	else
		sb_addf(out, "/apis/%s", group_version);
	if (ns)
		sb_addf(out, "/namespaces/%s", ns);
	sb_addf(out, "/%s", plural);
	if (name)
		sb_addf(out, "/%s", name);
}

void kube_query_escape(struct strbuf *out, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || *p == '-' || *p == '.' || *p == '_' || *p == '~') {
			sb_addc(out, (char)*p);
		} else {
			sb_addc(out, '%');
			sb_addc(out, hex[*p >> 4]);
			sb_addc(out, hex[*p & 15]);
		}
	}
}

/* A string field of an object; NULL when absent or not a string. */
static const char *str_field(const struct jv *obj, const char *key)
{
	const struct jv *v = obj && obj->type == JV_OBJECT ? jv_get(obj, key) : NULL;
	return v && v->type == JV_STRING ? v->s.text : NULL;
}

const char *kube_meta_str(const struct jv *obj, const char *field)
{
	const struct jv *md = obj && obj->type == JV_OBJECT ? jv_get(obj, "metadata") : NULL;
	const char *s = str_field(md, field);
	return s ? s : "";
}

static int errno_of(long code, const char *reason)
{
	switch (code) {
	case 404:
		return -ENOENT;
	case 409:
		return reason && streq(reason, "AlreadyExists") ? -EEXIST : -ECANCELED;
	case 410:
		return -ESTALE;
	case 401:
	case 403:
		return -EACCES;
	case 400:
	case 422:
		return -EINVAL;
	case 429:
	case 500:
	case 502:
	case 503:
	case 504:
		return -EAGAIN;
	default:
		return -EIO;
	}
}

int kube_status_errno(long http_status, const struct jv *body, struct strbuf *msg)
{
	const char *kind = str_field(body, "kind");
	bool status = kind && streq(kind, "Status");
	const char *reason = status ? str_field(body, "reason") : NULL;
	const char *m = status ? str_field(body, "message") : NULL;
	if (msg) {
		sb_reset(msg);
		if (m && *m)
			sb_addf(msg, "%s (HTTP %ld%s%s)", m, http_status, reason ? " " : "",
				reason ? reason : "");
		else
			sb_addf(msg, "HTTP %ld%s%s", http_status, reason ? " " : "",
				reason ? reason : "");
	}
	return errno_of(http_status, reason);
}

int kube_decode_list(const struct jv *v, struct kube_list_page *out, struct strbuf *err)
{
	if (!v || v->type != JV_OBJECT)
		return fail(err, "list answer is not an object");
	struct kube_list_page p = { 0 };
	const struct jv *md = jv_get(v, "metadata");
	if (md && md->type != JV_OBJECT)
		return fail(err, "list metadata is not an object");
	p.resource_version = str_field(md, "resourceVersion");
	p.cont = str_field(md, "continue");
	if (!p.resource_version)
		p.resource_version = "";
	if (!p.cont)
		p.cont = "";
	const struct jv *items = jv_get(v, "items");
	if (items && items->type != JV_NULL) {
		if (items->type != JV_ARRAY)
			return fail(err, "list items is not an array");
		for (size_t i = 0; i < items->arr.n; i++)
			if (items->arr.items[i]->type != JV_OBJECT)
				return fail(err, "a list item is not an object");
		p.items = items->arr.items;
		p.n = items->arr.n;
	}
	*out = p;
	return 0;
}

int kube_decode_event(const struct jv *v, struct kube_event *out, struct strbuf *err)
{
	if (!v || v->type != JV_OBJECT)
		return fail(err, "watch event is not an object");
	const char *type = str_field(v, "type");
	const struct jv *obj = jv_get(v, "object");
	if (!type)
		return fail(err, "watch event has no type");
	if (!obj || obj->type != JV_OBJECT)
		return fail(err, "watch event has no object");
	struct kube_event e = { .object = obj, .resource_version = "" };
	if (streq(type, "ADDED"))
		e.type = KUBE_EVENT_ADDED;
	else if (streq(type, "MODIFIED"))
		e.type = KUBE_EVENT_MODIFIED;
	else if (streq(type, "DELETED"))
		e.type = KUBE_EVENT_DELETED;
	else if (streq(type, "BOOKMARK"))
		e.type = KUBE_EVENT_BOOKMARK;
	else if (streq(type, "ERROR"))
		e.type = KUBE_EVENT_ERROR;
	else
		return fail(err, "watch event of an unknown type");
	if (e.type == KUBE_EVENT_ERROR) {
		int64_t code = 0;
		const struct jv *c = jv_get(obj, "code");
		if (c && !jv_as_int64(c, &code))
			return fail(err, "watch error has a malformed code");
		e.code = (long)code;
		e.error = kube_status_errno(e.code, obj, err);
	} else {
		e.resource_version = kube_meta_str(obj, "resourceVersion");
		if (!*e.resource_version)
			return fail(err, "watch event object has no metadata.resourceVersion");
	}
	*out = e;
	return 0;
}
