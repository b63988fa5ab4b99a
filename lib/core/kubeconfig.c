/*
 * kubeconfig files (see kubeconfig.h): one YAML document through our libyaml
 * reader, then the chosen context, its cluster and its user. Every message
 * names the file and the field as a path into the document
 * ("users[0].user.client-key-data"), so a user can find it. Paths are only
 * resolved here, never opened: that is lib/sys/kube_conn.c's business.
 */
#include <brindle/core/hash.h>
#include <brindle/core/kubeconfig.h>
#include <brindle/core/yaml.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

struct kparser {
	struct arena *a;
	const char *path;
	struct strbuf *err;
};

static int fail(struct kparser *p, const char *fmt, ...) printf_like(2, 3);
static int fail(struct kparser *p, const char *fmt, ...)
{
	if (p->err) {
		va_list ap;
		sb_addf(p->err, "kubeconfig %s: ", p->path);
		va_start(ap, fmt);
		sb_vaddf(p->err, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* YAML's words for what was found. */
static const char *type_name(const struct jv *v)
{
	return v->type == JV_OBJECT ? "map" : jv_type_name(v->type);
}

/* A string field: absent, null and "" all read as NULL (kubectl treats them alike). */
static int get_str(struct kparser *p, const struct jv *obj, const char *where, const char *key,
		   const char **out)
{
	const struct jv *v = jv_get(obj, key);
	*out = NULL;
	if (!v || v->type == JV_NULL)
		return 0;
	const char *s = jv_as_string(v);
	if (!s || v->type == JV_ARRAY || v->type == JV_OBJECT)
		return fail(p, "%s.%s: not a string but %s", where, key, type_name(v));
	*out = *s ? s : NULL;
	return 0;
}

/* A file path: relative ones are relative to the kubeconfig's own directory. */
static int get_path(struct kparser *p, const struct jv *obj, const char *where, const char *key,
		    const char **out)
{
	const char *s;
	int r = get_str(p, obj, where, key, &s);
	if (r < 0 || !s || s[0] == '/') {
		*out = s;
		return r;
	}
	const char *slash = strrchr(p->path, '/');
	if (!slash)
		*out = s; /* the kubeconfig's directory is the working directory */
	else
		*out = arena_printf(p->a, "%.*s/%s", (int)(slash - p->path), p->path, s);
	return 0;
}

static bool is_b64(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '+' || c == '/';
}

/* A -data field: standard base64 (line breaks allowed) of a PEM file. */
static int get_pem(struct kparser *p, const struct jv *obj, const char *where, const char *key,
		   const char **out, size_t *out_len)
{
	const char *s;
	int r = get_str(p, obj, where, key, &s);
	*out = NULL;
	*out_len = 0;
	if (r < 0 || !s)
		return r;
	size_t n = strlen(s);
	char *clean = arena_alloc(p->a, n + 1);
	size_t m = 0, pad = 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c == '\n' || c == '\r' || c == ' ' || c == '\t')
			continue;
		if (c == '=' ? m == 0 : !is_b64(c) || pad)
			return fail(p, "%s.%s: not base64 (character %zu)", where, key, i + 1);
		pad += c == '=';
		if (pad > 2)
			return fail(p, "%s.%s: not base64 (too much padding)", where, key);
		clean[m++] = c;
	}
	if (m == 0 || m % 4 != 0)
		return fail(p, "%s.%s: not base64 (length %zu is not a multiple of 4)", where, key,
			    m);
	uint8_t *bytes = arena_alloc(p->a, m / 4 * 3 + 4);
	long len = base64_decode(clean, m, bytes);
	if (len <= 0)
		return fail(p, "%s.%s: not base64", where, key);
	if (memchr(bytes, '\0', (size_t)len) ||
	    !memmem(bytes, (size_t)len, "-----BEGIN ", strlen("-----BEGIN ")))
		return fail(p, "%s.%s: not PEM (expected base64 of a file with -----BEGIN lines)",
			    where, key);
	bytes[len] = '\0';
	*out = (const char *)bytes;
	*out_len = (size_t)len;
	return 0;
}

/*
 * The entry of list @list (e.g. "clusters", items {name, @inner: {...}})
 * named @name. Checks every entry's name (present, unique) as kubectl does
 * when it loads the file. Returns 1 and the entry's inner object when found,
 * 0 when not.
 */
static int find_named(struct kparser *p, const struct jv *root, const char *list, const char *inner,
		      const char *name, const struct jv **body, char **where)
{
	const struct jv *l = jv_get(root, list);
	*body = NULL;
	if (!l || l->type == JV_NULL)
		return 0;
	if (l->type != JV_ARRAY)
		return fail(p, "%s: not a list but %s", list, type_name(l));
	int found = 0;
	for (size_t i = 0; i < l->arr.n; i++) {
		const struct jv *item = l->arr.items[i];
		char *at = arena_printf(p->a, "%s[%zu]", list, i);
		if (item->type != JV_OBJECT)
			return fail(p, "%s: not a map but %s", at, type_name(item));
		const char *n;
		int r = get_str(p, item, at, "name", &n);
		if (r < 0)
			return r;
		if (!n)
			return fail(p, "%s.name: missing", at);
		for (size_t j = 0; j < i; j++)
			if (streq(jv_as_string(jv_get(l->arr.items[j], "name")), n))
				return fail(p, "%s.name: \"%s\" is also the name of %s[%zu]", at, n,
					    list, j);
		if (found || !streq(n, name))
			continue;
		const struct jv *b = jv_get(item, inner);
		if (!b || b->type != JV_OBJECT)
			return fail(p, "%s.%s: %s", at, inner,
				    b ? "not a map" : "missing (the entry has only a name)");
		*body = b;
		*where = arena_printf(p->a, "%s.%s", at, inner);
		found = 1;
	}
	return found;
}

struct unsupported {
	const char *key;
	const char *why;
};

static const struct unsupported user_unsupported[] = {
	{ "exec", "exec credential plugins are not supported (use a client certificate, "
		  "token or tokenFile)" },
	{ "auth-provider", "auth providers are not supported (use a client certificate, token "
			   "or tokenFile)" },
	{ "username", "basic authentication is not supported (use a client certificate, token "
		      "or tokenFile)" },
	{ "password", "basic authentication is not supported (use a client certificate, token "
		      "or tokenFile)" },
	{ "as", "impersonation is not supported" },
	{ "as-uid", "impersonation is not supported" },
	{ "as-groups", "impersonation is not supported" },
	{ "as-user-extra", "impersonation is not supported" },
};

static const struct unsupported cluster_unsupported[] = {
	{ "proxy-url", "proxies are not supported (Brindle connects to the API server directly)" },
};

static int refuse_unsupported(struct kparser *p, const struct jv *obj, const char *where,
			      const struct unsupported *u, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct jv *v = jv_get(obj, u[i].key);
		if (v && v->type != JV_NULL && !(jv_as_string(v) && !*jv_as_string(v)))
			return fail(p, "%s.%s: %s", where, u[i].key, u[i].why);
	}
	return 0;
}

static int parse_server(struct kparser *p, const char *where, const char *s, const char **out)
{
	if (!s)
		return fail(p, "%s.server: missing", where);
	const char *sep = strstr(s, "://");
	char *url;
	if (!sep)
		url = arena_printf(p->a, "https://%s", s); /* as client-go takes "host:port" */
	else if (str_has_prefix(s, "https://") || str_has_prefix(s, "http://"))
		url = arena_strdup(p->a, s);
	else
		return fail(p, "%s.server: \"%s\": the scheme must be https:// or http://", where,
			    s);
	/* trailing slashes off, never into the scheme ("https://" alone is no URL) */
	const char *host = strstr(url, "://") + 3;
	size_t n = strlen(url);
	while (n > (size_t)(host - url) && url[n - 1] == '/')
		url[--n] = '\0';
	if (!*host || *host == '/' || strpbrk(url, " \t\r\n"))
		return fail(p, "%s.server: \"%s\" is not a URL", where, s);
	*out = url;
	return 0;
}

static int parse_cluster(struct kparser *p, const struct jv *c, const char *where,
			 struct kubeconfig *k)
{
	int r = refuse_unsupported(p, c, where, cluster_unsupported,
				   ARRAY_SIZE(cluster_unsupported));
	const char *server;
	if (r < 0 || (r = get_str(p, c, where, "server", &server)) < 0 ||
	    (r = parse_server(p, where, server, &k->server)) < 0 ||
	    (r = get_path(p, c, where, "certificate-authority", &k->ca_file)) < 0 ||
	    (r = get_pem(p, c, where, "certificate-authority-data", &k->ca_data, &k->ca_data_len)) <
		    0 ||
	    (r = get_str(p, c, where, "tls-server-name", &k->tls_server_name)) < 0)
		return r;
	const struct jv *insecure = jv_get(c, "insecure-skip-tls-verify");
	k->insecure = false;
	if (insecure && insecure->type != JV_NULL && !jv_as_bool(insecure, &k->insecure))
		return fail(p, "%s.insecure-skip-tls-verify: not true or false", where);
	if (k->ca_data)
		k->ca_file = NULL; /* as client-go: the data wins */
	if (k->insecure && (k->ca_file || k->ca_data))
		return fail(p,
			    "%s: certificate-authority%s with insecure-skip-tls-verify: a CA "
			    "and no verification contradict each other",
			    where, k->ca_data ? "-data" : "");
	return 0;
}

static int parse_user(struct kparser *p, const struct jv *u, const char *where,
		      struct kubeconfig *k)
{
	int r = refuse_unsupported(p, u, where, user_unsupported, ARRAY_SIZE(user_unsupported));
	if (r < 0 || (r = get_path(p, u, where, "client-certificate", &k->cert_file)) < 0 ||
	    (r = get_pem(p, u, where, "client-certificate-data", &k->cert_data,
			 &k->cert_data_len)) < 0 ||
	    (r = get_path(p, u, where, "client-key", &k->key_file)) < 0 ||
	    (r = get_pem(p, u, where, "client-key-data", &k->key_data, &k->key_data_len)) < 0 ||
	    (r = get_str(p, u, where, "token", &k->token)) < 0 ||
	    (r = get_path(p, u, where, "tokenFile", &k->token_file)) < 0)
		return r;
	if (k->cert_file && k->cert_data)
		return fail(p, "%s: both client-certificate and client-certificate-data", where);
	if (k->key_file && k->key_data)
		return fail(p, "%s: both client-key and client-key-data", where);
	bool cert = k->cert_file || k->cert_data, key = k->key_file || k->key_data;
	if (cert != key)
		return fail(p, "%s: %s without %s", where,
			    cert ? "a client certificate" : "a client key",
			    cert ? "client-key or client-key-data"
				 : "client-certificate or client-certificate-data");
	if (k->token && strpbrk(k->token, "\r\n"))
		return fail(p, "%s.token: contains a line break", where);
	return 0;
}

/* One file's document: its root map, checked to be a Config. */
static int read_root(struct kparser *p, const char *text, size_t len, const struct jv **out)
{
	struct strbuf yerr = STRBUF_INIT;
	sb_init(&yerr);
	struct jv **docs;
	size_t ndocs;
	int r = yaml_parse_all(p->a, text, len, &docs, &ndocs, &yerr);
	if (r < 0) {
		r = fail(p, "%s", sb_str(&yerr));
		sb_free(&yerr);
		return r;
	}
	sb_free(&yerr);
	const struct jv *root = NULL;
	for (size_t i = 0; i < ndocs; i++) {
		if (!docs[i])
			continue;
		if (root)
			return fail(p, "document %zu: a kubeconfig is one document", i + 1);
		root = docs[i];
	}
	if (!root)
		return fail(p, "empty");
	if (root->type != JV_OBJECT)
		return fail(p, "not a map but %s", type_name(root));
	const char *kind;
	if ((r = get_str(p, root, "(top)", "kind", &kind)) < 0)
		return r;
	if (kind && !streq(kind, "Config"))
		return fail(p, "kind: \"%s\", not Config", kind);
	/* kubectl refuses a file with duplicate names in any list. */
	const char *lists[][2] = { { "users", "user" },
				   { "clusters", "cluster" },
				   { "contexts", "context" } };
	for (size_t i = 0; i < ARRAY_SIZE(lists); i++) {
		const struct jv *b;
		char *at;
		if ((r = find_named(p, root, lists[i][0], lists[i][1], "", &b, &at)) < 0)
			return r;
	}
	*out = root;
	return 0;
}

/*
 * The entry @name of list @list in the first of @n files that has one, as
 * kubectl merges them: *@i is its file (@n when none). <0 on an error.
 */
static int find_merged(struct kparser *ps, const struct jv **roots, size_t n, const char *list,
		       const char *inner, const char *name, const struct jv **body, char **at,
		       size_t *i)
{
	for (*i = 0; *i < n; (*i)++) {
		int r = find_named(&ps[*i], roots[*i], list, inner, name, body, at);
		if (r != 0)
			return r;
	}
	return 0;
}

int kubeconfig_parse_files(struct arena *a, const struct kubeconfig_file *files, size_t n,
			   const char *context, struct kubeconfig *out, struct strbuf *err)
{
	if (!n)
		return -EINVAL;
	struct kparser *ps = arena_alloc(a, n * sizeof(*ps));
	const struct jv **roots = arena_alloc(a, n * sizeof(*roots));
	int r;
	for (size_t i = 0; i < n; i++) {
		ps[i] = (struct kparser){ a, files[i].path ? files[i].path : "(unnamed)", err };
		if ((r = read_root(&ps[i], files[i].text, files[i].len, &roots[i])) < 0)
			return r;
	}
	struct kubeconfig k = { 0 };
	if (context && *context) {
		k.context = arena_strdup(a, context);
	} else {
		/* The first file that sets it. */
		for (size_t i = 0; i < n && !k.context; i++)
			if ((r = get_str(&ps[i], roots[i], "(top)", "current-context",
					 &k.context)) < 0)
				return r;
		if (!k.context)
			return fail(&ps[0], "current-context: not set%s, and no context was given",
				    n > 1 ? " in any file of the list" : "");
	}
	const struct jv *ctx, *cluster, *user;
	char *ctx_at, *cluster_at, *user_at;
	size_t fc, fk, fu;
	if ((r = find_merged(ps, roots, n, "contexts", "context", k.context, &ctx, &ctx_at, &fc)) <
	    0)
		return r;
	if (!r)
		return fail(&ps[0], "context \"%s\" is not in contexts%s%s", k.context,
			    n > 1 ? " of any file" : "",
			    context && *context ? "" : " (it is current-context)");
	if ((r = get_str(&ps[fc], ctx, ctx_at, "cluster", &k.cluster)) < 0 ||
	    (r = get_str(&ps[fc], ctx, ctx_at, "user", &k.user)) < 0 ||
	    (r = get_str(&ps[fc], ctx, ctx_at, "namespace", &k.namespace)) < 0)
		return r;
	if (!k.cluster)
		return fail(&ps[fc], "%s.cluster: missing", ctx_at);
	if ((r = find_merged(ps, roots, n, "clusters", "cluster", k.cluster, &cluster, &cluster_at,
			     &fk)) < 0)
		return r;
	if (!r)
		return fail(&ps[fc], "%s.cluster: \"%s\" is not in clusters", ctx_at, k.cluster);
	/* Relative paths are relative to the file the entry is in. */
	if ((r = parse_cluster(&ps[fk], cluster, cluster_at, &k)) < 0)
		return r;
	if (k.user) {
		if ((r = find_merged(ps, roots, n, "users", "user", k.user, &user, &user_at, &fu)) <
		    0)
			return r;
		if (!r)
			return fail(&ps[fc], "%s.user: \"%s\" is not in users", ctx_at, k.user);
		if ((r = parse_user(&ps[fu], user, user_at, &k)) < 0)
			return r;
	} else {
		k.user = "";
	}
	*out = k;
	return 0;
}

int kubeconfig_parse(struct arena *a, const char *path, const char *text, size_t len,
		     const char *context, struct kubeconfig *out, struct strbuf *err)
{
	struct kubeconfig_file f = { path, text, len };
	return kubeconfig_parse_files(a, &f, 1, context, out, err);
}
