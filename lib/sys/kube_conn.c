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

static int load_file(const char *path, const char *context, struct kube_conn *out,
		     struct strbuf *err)
{
	struct strbuf text = STRBUF_INIT;
	sb_init(&text);
	struct stat st;
	int r = stat(path, &st) < 0 ? -errno : 0;
	if (r == 0 && !S_ISREG(st.st_mode))
		r = -EISDIR;
	else if (r == 0 && st.st_size > MAX_KUBECONFIG_BYTES)
		r = -EFBIG;
	if (r == 0)
		r = sb_read_file(&text, path);
	if (r < 0) {
		if (err)
			sb_addf(err, "kubeconfig %s: %s", path,
				r == -EISDIR ? "not a regular file" : strerror(-r));
		sb_free(&text);
		return r;
	}
	struct arena *a = arena_new();
	struct kubeconfig k;
	r = kubeconfig_parse(a, path, text.buf, text.len, context, &k, err);
	sb_free(&text);
	if (r < 0) {
		arena_free(a);
		return r;
	}
	char *source = arena_printf(a, "kubeconfig %s (context %s)", path, k.context);
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
		return load_file(kubeconfig, context, out, err);
	const char *list = env("KUBECONFIG");
	if (list) {
		char *copy = xstrdup(list), *save = NULL;
		for (char *f = strtok_r(copy, ":", &save); f; f = strtok_r(NULL, ":", &save)) {
			if (access(f, F_OK) == 0) {
				int r = load_file(f, context, out, err);
				free(copy);
				return r;
			}
		}
		free(copy);
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
