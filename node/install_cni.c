/*
 * brindle-node install-cni: what the DaemonSet's init container does on each
 * node (docs/install.md), as Calico's install-cni does:
 *   1. brindle-cni and brindle-ipam copied into CNI_BIN_DIR (through a
 *      temporary file and a rename: a runtime never runs half a binary;
 *      unchanged ones are left alone);
 *   2. a kubeconfig for the CNI plugin's own identity: a token for the
 *      ServiceAccount BRINDLE_CNI_SERVICEACCOUNT (default brindle-cni, in the
 *      pod's namespace) from the TokenRequest API, asked as the pod's own
 *      account, with the cluster's address and CA, written 0600 to
 *      CNI_NET_DIR/brindle-kubeconfig;
 *   3. the network configuration last (a runtime sees the network as ready
 *      once it is there): CNI_NETWORK_CONFIG, or the built-in one, with
 *      __KUBECONFIG_FILEPATH__ replaced by the kubeconfig's path on the host
 *      (BRINDLE_CNI_HOST_NET_DIR, default /etc/cni/net.d), checked to be JSON,
 *      written to CNI_NET_DIR/CNI_CONF_NAME.
 * With --watch it stays and writes a new token before the old one has used
 * two thirds of its life (BRINDLE_CNI_TOKEN_REFRESH: every that many seconds
 * instead, for tests).
 */
#include "node.h"

#include <brindle/core/cni.h>
#include <brindle/core/hash.h>
#include <brindle/core/json.h>
#include <brindle/paths.h>
#include <brindle/sys/install.h>
#include <brindle/sys/kube_client.h>
#include <brindle/sys/kube_conn.h>
#include <brindle/sys/log.h>
#include <brindle/sys/strbuf_file.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TOKEN_SECONDS 86400

static const char default_conflist[] = CNI_DEFAULT_CONFLIST("");

/* 1. */
static int copy_plugins(struct arena *a)
{
	const char *src = getenv("BRINDLE_CNI_SRC_DIR");
	if (!src || !*src)
		src = install_in_build_tree(a) ? arena_printf(a, "%s/cni", BRINDLE_BUILD_DIR)
					       : install_find(a, BRINDLE_INSTALL_CNI_BIN_DIR, X_OK);
	const char *dst = node_env_or("CNI_BIN_DIR", "/host/opt/cni/bin");
	static const char *const plugins[] = { "brindle-cni", "brindle-ipam" };
	for (size_t i = 0; i < ARRAY_SIZE(plugins); i++) {
		const char *from = arena_printf(a, "%s/%s", src, plugins[i]);
		const char *to = arena_printf(a, "%s/%s", dst, plugins[i]);
		struct strbuf have = STRBUF_INIT, want = STRBUF_INIT;
		sb_init(&have);
		sb_init(&want);
		int r = sb_read_file(&want, from);
		if (r < 0)
			log_error("%s: %s (BRINDLE_CNI_SRC_DIR names where the plugins are)", from,
				  strerror(-r));
		bool same = r == 0 && sb_read_file(&have, to) == 0 && have.len == want.len &&
			    memcmp(have.buf, want.buf, want.len) == 0;
		if (r == 0 && !same && (r = node_write_file(to, want.buf, want.len, 0755)) == 0)
			log_info("installed %s", to);
		sb_free(&have);
		sb_free(&want);
		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * 2. A token for the plugin's account (TokenRequest, as the pod's own
 * account), and the kubeconfig around it. *expires_in: the token's life.
 */
static int write_kubeconfig(struct arena *a, long *expires_in)
{
	struct kube_conn conn = { 0 };
	struct strbuf err = STRBUF_INIT, body = STRBUF_INIT, path = STRBUF_INIT, out = STRBUF_INIT;
	sb_init(&err);
	sb_init(&body);
	sb_init(&path);
	sb_init(&out);
	struct kube_client *kc = NULL;
	int r = kube_conn_load(NULL, &conn, &err);
	if (r == 0)
		r = kube_client_new(NULL, conn.server, &conn.auth, 10000, &kc, &err);
	const char *sa = node_env_or("BRINDLE_CNI_SERVICEACCOUNT", "brindle-cni");
	struct jv *answer = NULL;
	if (r == 0) {
		sb_addf(&body,
			"{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"TokenRequest\","
			"\"spec\":{\"expirationSeconds\":%d}}",
			TOKEN_SECONDS);
		sb_addf(&path, "/api/v1/namespaces/%s/serviceaccounts/%s/token", conn.namespace,
			sa);
		if ((r = kube_request(kc, "POST", sb_str(&path), NULL, &body, &answer)) < 0)
			sb_addf(&err, "a token for ServiceAccount %s/%s: %s", conn.namespace, sa,
				kube_last_error(kc));
	}
	const char *token = r == 0 ? jv_as_string(jv_get(jv_get(answer, "status"), "token")) : NULL;
	if (r == 0 && (!token || !*token)) {
		sb_adds(&err, "the TokenRequest answer has no status.token");
		r = -EPROTO;
	}
	struct strbuf ca = STRBUF_INIT;
	sb_init(&ca);
	if (r == 0 && conn.auth.ca_file && (r = sb_read_file(&ca, conn.auth.ca_file)) < 0)
		sb_addf(&err, "%s: %s", conn.auth.ca_file, strerror(-r));
	if (r == 0) {
		char *ca64 = ca.len ? base64_encode(ca.buf, ca.len) : NULL;
		sb_addf(&out,
			"# Written by brindle-node install-cni for the CNI plugin (ServiceAccount "
			"%s/%s); rewritten before the token expires.\n"
			"apiVersion: v1\nkind: Config\nclusters:\n- name: local\n  cluster:\n"
			"    server: %s\n",
			conn.namespace, sa, conn.server);
		if (ca64)
			sb_addf(&out, "    certificate-authority-data: %s\n", ca64);
		sb_addf(&out,
			"users:\n- name: %s\n  user:\n    token: %s\ncontexts:\n- name: brindle\n"
			"  context: {cluster: local, user: %s}\ncurrent-context: brindle\n",
			sa, token, sa);
		free(ca64);
		const char *file = arena_printf(a, "%s/brindle-kubeconfig",
						node_env_or("CNI_NET_DIR", "/host/etc/cni/net.d"));
		if ((r = node_write_file(file, out.buf, out.len, 0600)) == 0)
			log_info("wrote %s (ServiceAccount %s/%s, a token for %d s)", file,
				 conn.namespace, sa, TOKEN_SECONDS);
		*expires_in = TOKEN_SECONDS;
	}
	if (r < 0 && err.len)
		log_error("the CNI plugin's kubeconfig: %s", sb_str(&err));
	sb_free(&ca);
	kube_client_free(kc);
	kube_conn_free(&conn);
	sb_free(&err);
	sb_free(&body);
	sb_free(&path);
	sb_free(&out);
	return r;
}

/* FELIX_IPV6SUPPORT as felix reads it (true, 1, yes, on): felix on this node polices IPv6. */
static bool felix_ipv6_support(void)
{
	static const char *const yes[] = { "true", "1", "yes", "on" };
	const char *v = getenv("FELIX_IPV6SUPPORT");
	for (size_t i = 0; v && i < ARRAY_SIZE(yes); i++)
		if (strcasecmp(v, yes[i]) == 0)
			return true;
	return false;
}

/*
 * brindle-cni gives pods IPv6 addresses only where felix polices IPv6: with the
 * ConfigMap's FELIX_IPV6SUPPORT (felix's own setting) true, every brindle-cni
 * entry of the configuration says so (felix_ipv6_support), so that a manifest
 * made for Calico (assign_ipv6 in cni_network_config) works unchanged.
 */
static void mark_ipv6_policed(struct arena *a, struct jv *doc)
{
	const struct jv *plugins = jv_get(doc, "plugins");
	size_t n = plugins && plugins->type == JV_ARRAY ? plugins->arr.n : 1;
	for (size_t i = 0; i < n; i++) {
		struct jv *p = plugins && plugins->type == JV_ARRAY ? plugins->arr.items[i] : doc;
		const char *type =
			p && p->type == JV_OBJECT ? jv_as_string(jv_get(p, "type")) : NULL;
		if (type && streq(type, "brindle-cni") && !jv_get(p, "felix_ipv6_support"))
			jv_add(a, p, "felix_ipv6_support", jv_bool(a, true));
	}
}

/* 3. */
static int write_conflist(struct arena *a)
{
	const char *tmpl = node_env_or("CNI_NETWORK_CONFIG", default_conflist);
	const char *kubeconfig =
		arena_printf(a, "%s/brindle-kubeconfig",
			     node_env_or("BRINDLE_CNI_HOST_NET_DIR", "/etc/cni/net.d"));
	struct strbuf conf = STRBUF_INIT, err = STRBUF_INIT;
	sb_init(&conf);
	sb_init(&err);
	static const char key[] = "__KUBECONFIG_FILEPATH__";
	for (const char *p = tmpl, *q; *p; p = q + strlen(key)) {
		if (!(q = strstr(p, key))) {
			sb_adds(&conf, p);
			break;
		}
		sb_add(&conf, p, (size_t)(q - p));
		sb_adds(&conf, kubeconfig);
	}
	struct jv *doc;
	int r = json_parse(a, conf.buf, conf.len, &doc, &err);
	if (r < 0 || doc->type != JV_OBJECT) {
		log_error("CNI_NETWORK_CONFIG is not a JSON object%s%s; nothing written",
			  err.len ? ": " : "", sb_str(&err));
		r = -EINVAL;
	} else {
		if (felix_ipv6_support()) {
			mark_ipv6_policed(a, doc);
			sb_reset(&conf);
			json_write(&conf, doc, true);
			sb_addc(&conf, '\n');
		}
		const char *file =
			arena_printf(a, "%s/%s", node_env_or("CNI_NET_DIR", "/host/etc/cni/net.d"),
				     node_env_or("CNI_CONF_NAME", "10-brindle.conflist"));
		if ((r = node_write_file(file, conf.buf, conf.len, 0644)) == 0)
			log_info("wrote %s", file);
	}
	sb_free(&conf);
	sb_free(&err);
	return r;
}

static volatile sig_atomic_t stop;
static void on_term(int signo)
{
	(void)signo;
	stop = 1;
}

int node_install_cni(bool watch)
{
	struct arena *a = arena_new();
	long life = 0;
	/* the conflist last: the node's network is ready only when all of it is there */
	int r = copy_plugins(a);
	if (r == 0)
		r = write_kubeconfig(a, &life);
	if (r == 0)
		r = write_conflist(a);
	if (r < 0 || !watch) {
		arena_free(a);
		return r;
	}
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	long every = atol(node_env_or("BRINDLE_CNI_TOKEN_REFRESH", "0"));
	for (;;) {
		/* a new token before the old one has used two thirds of its life */
		long wait = every > 0 ? every : life * 2 / 3;
		for (long s = 0; s < wait && !stop; s++)
			sleep(1);
		if (stop)
			break;
		if (write_kubeconfig(a, &life) < 0)
			life = 90; /* try again soon: the old token still has a third of its life */
	}
	arena_free(a);
	return 0;
}
