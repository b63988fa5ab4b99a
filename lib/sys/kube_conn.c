/*
 * Finding the Kubernetes API (see kube_conn.h): which configuration applies,
 * reading it, and checking that every file it names can be read, so that a
 * mistake is reported once, at start, naming the kubeconfig and the field,
 * rather than as a TLS failure on the first request.
 */
#include <brindle/core/arena.h>
#include <brindle/core/kubeconfig.h>
#include <brindle/sys/kube_conn.h>
#include <brindle/sys/strbuf_file.h>

#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_KUBECONFIG_BYTES (4u * 1024 * 1024)

static const char *env(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

/* -errno when @path cannot be read, with "@what: PATH: reason" after @prefix. */
static int check_readable(const char *prefix, const char *what, const char *path,
			  struct strbuf *err)
{
	if (!path || access(path, R_OK) == 0)
		return 0;
	int e = errno;
	if (err)
		sb_addf(err, "%s: %s %s: %s", prefix, what, path, strerror(e));
	return -e;
}

/* @path's text into @text (a regular file of at most MAX_KUBECONFIG_BYTES). */
static int read_kubeconfig(const char *path, struct strbuf *text, struct strbuf *err)
{
	struct stat st;
	int r = stat(path, &st) < 0 ? -errno : 0;
	if (r == 0 && !S_ISREG(st.st_mode))
		r = -EISDIR;
	else if (r == 0 && st.st_size > MAX_KUBECONFIG_BYTES)
		r = -EFBIG;
	if (r == 0)
		r = sb_read_file(text, path);
	if (r < 0 && err)
		sb_addf(err, "kubeconfig %s: %s", path,
			r == -EISDIR ? "not a regular file" : strerror(-r));
	return r;
}

/* @n kubeconfig files, merged as kubectl merges KUBECONFIG's list. */
static int load_files(const char *const *paths, size_t n, const char *context,
		      struct kube_conn *out, struct strbuf *err)
{
	struct strbuf *texts = xcalloc(n, sizeof(*texts));
	struct kubeconfig_file *files = xcalloc(n, sizeof(*files));
	int r = 0;
	for (size_t i = 0; i < n && r == 0; i++) {
		sb_init(&texts[i]);
		r = read_kubeconfig(paths[i], &texts[i], err);
		files[i] = (struct kubeconfig_file){ paths[i], texts[i].buf, texts[i].len };
	}
	struct arena *a = arena_new();
	struct kubeconfig k;
	if (r == 0)
		r = kubeconfig_parse_files(a, files, n, context, &k, err);
	for (size_t i = 0; i < n; i++)
		sb_free(&texts[i]);
	free(texts);
	free(files);
	if (r < 0) {
		arena_free(a);
		return r;
	}
	struct strbuf list = STRBUF_INIT;
	sb_init(&list);
	for (size_t i = 0; i < n; i++)
		sb_addf(&list, "%s%s", i ? ":" : "", paths[i]);
	char *source = arena_printf(a, "kubeconfig %s (context %s)", sb_str(&list), k.context);
	sb_free(&list);
	if ((r = check_readable(source, "certificate-authority", k.ca_file, err)) < 0 ||
	    (r = check_readable(source, "client-certificate", k.cert_file, err)) < 0 ||
	    (r = check_readable(source, "client-key", k.key_file, err)) < 0 ||
	    (r = check_readable(source, "tokenFile", k.token_file, err)) < 0) {
		arena_free(a);
		return r;
	}
	struct kube_conn c = { 0 };
	c.arena = a;
	c.server = arena_strdup(a, k.server);
	c.namespace = arena_strdup(a, k.namespace ? k.namespace : "default");
	c.source = source;
	c.auth.ca_file = k.ca_file;
	c.auth.ca_pem = k.ca_data;
	c.auth.ca_pem_len = k.ca_data_len;
	c.auth.cert_file = k.cert_file;
	c.auth.key_file = k.key_file;
	c.auth.cert_pem = k.cert_data;
	c.auth.cert_pem_len = k.cert_data_len;
	c.auth.key_pem = k.key_data;
	c.auth.key_pem_len = k.key_data_len;
	/* A token file rotates; it wins over a fixed token, as in client-go. */
	c.auth.token = k.token_file ? NULL : k.token;
	c.auth.token_file = k.token_file;
	c.auth.insecure = k.insecure;
	c.auth.tls_server_name = k.tls_server_name;
	*out = c;
	return 0;
}

static int load_in_cluster(struct kube_conn *out, struct strbuf *err)
{
	const char *host = env("KUBERNETES_SERVICE_HOST"), *port = env("KUBERNETES_SERVICE_PORT");
	const char *dir = env("BRINDLE_KUBE_SA_DIR") ? env("BRINDLE_KUBE_SA_DIR") : KUBE_SA_DIR;
	if (strpbrk(host, "/[]@ ") || strspn(port, "0123456789") != strlen(port)) {
		if (err)
			sb_addf(err,
				"in-cluster: KUBERNETES_SERVICE_HOST \"%s\" and "
				"KUBERNETES_SERVICE_PORT \"%s\" do not make an address",
				host, port);
		return -EINVAL;
	}
	struct arena *a = arena_new();
	struct kube_conn c = { 0 };
	c.arena = a;
	c.source = arena_strdup(a, "in-cluster");
	c.server = strchr(host, ':') ? arena_printf(a, "https://[%s]:%s", host, port)
				     : arena_printf(a, "https://%s:%s", host, port);
	char *token = arena_printf(a, "%s/token", dir), *ca = arena_printf(a, "%s/ca.crt", dir);
	int r;
	if ((r = check_readable("in-cluster", "ServiceAccount token", token, err)) < 0 ||
	    (r = check_readable("in-cluster", "CA", ca, err)) < 0) {
		arena_free(a);
		return r;
	}
	c.auth.token_file = token;
	c.auth.ca_file = ca;
	/* The pod's own namespace, as kubectl in a pod defaults to it. */
	struct strbuf ns = STRBUF_INIT;
	sb_init(&ns);
	char *ns_file = arena_printf(a, "%s/namespace", dir);
	if (sb_read_file(&ns, ns_file) == 0) {
		while (ns.len && strchr(" \t\r\n", ns.buf[ns.len - 1]))
			sb_truncate(&ns, ns.len - 1);
	}
	c.namespace = arena_strdup(a, ns.len && !strpbrk(ns.buf, "/ \t\r\n") ? ns.buf : "default");
	sb_free(&ns);
	*out = c;
	return 0;
}

int kube_conn_load_context(const char *kubeconfig, const char *context, struct kube_conn *out,
			   struct strbuf *err)
{
	if (kubeconfig && *kubeconfig)
		return load_files(&kubeconfig, 1, context, out, err);
	const char *list = env("KUBECONFIG");
	if (list) {
		/* Every file of the list that exists, merged (kubectl skips the missing ones). */
		char *copy = xstrdup(list), *save = NULL;
		const char **paths = xcalloc(strlen(list) / 2 + 2, sizeof(*paths));
		size_t n = 0;
		for (char *f = strtok_r(copy, ":", &save); f; f = strtok_r(NULL, ":", &save))
			if (access(f, F_OK) == 0)
				paths[n++] = f;
		int r = n ? load_files(paths, n, context, out, err) : 0;
		free(paths);
		free(copy);
		if (n)
			return r;
	}
	if (!env("KUBERNETES_SERVICE_HOST") || !env("KUBERNETES_SERVICE_PORT")) {
		if (err)
			sb_addf(err,
				"no Kubernetes API configured: %s%s%s, and not in a cluster "
				"(KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not "
				"both set)",
				list ? "no file of KUBECONFIG exists (" : "no kubeconfig given",
				list ? list : " (--kubeconfig or KUBECONFIG)", list ? ")" : "");
		return -ENOENT;
	}
	if (context && *context) {
		if (err)
			sb_addf(err,
				"context \"%s\" was asked for, but there is no kubeconfig "
				"(in-cluster configuration has no contexts)",
				context);
		return -EINVAL;
	}
	return load_in_cluster(out, err);
}

int kube_conn_load(const char *kubeconfig, struct kube_conn *out, struct strbuf *err)
{
	return kube_conn_load_context(kubeconfig, NULL, out, err);
}

void kube_conn_free(struct kube_conn *c)
{
	if (!c)
		return;
	if (c->arena && c->auth.key_pem) /* a private key: not left behind in freed memory */
		explicit_bzero((char *)c->auth.key_pem, c->auth.key_pem_len);
	arena_free(c->arena);
	memset(c, 0, sizeof(*c));
}
