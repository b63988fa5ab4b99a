/*
 * Finding the Kubernetes API: kube_conn_load from a named kubeconfig, from
 * $KUBECONFIG's list, and in-cluster (BRINDLE_KUBE_SA_DIR), with errors that
 * name the file and field; and ds_config_from_env's choice of datastore type
 * and kubeconfig. Files only, no network (the kube tier talks to a server).
 */
#include "harness.h"

#include <brindle/core/hash.h>
#include <brindle/sys/ds.h>
#include <brindle/sys/kube_conn.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define PEM_CA "-----BEGIN CERTIFICATE-----\nMIIBcafake\n-----END CERTIFICATE-----\n"

static char dir[] = "/tmp/brindle-kube-conn-XXXXXX";

static char *at(const char *name)
{
	static char buf[4][512];
	static int i;
	char *b = buf[i++ % 4];
	snprintf(b, sizeof(buf[0]), "%s/%s", dir, name);
	return b;
}

static void write_file(const char *name, const char *text)
{
	FILE *f = fopen(at(name), "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void clear_env(void)
{
	const char *vars[] = { "KUBECONFIG",
			       "BRINDLE_KUBECONFIG",
			       "BRINDLE_KUBE_SA_DIR",
			       "KUBERNETES_SERVICE_HOST",
			       "KUBERNETES_SERVICE_PORT",
			       "DATASTORE_TYPE",
			       "BRINDLE_DATASTORE_TYPE",
			       "CALICO_DATASTORE_TYPE" };
	for (size_t i = 0; i < ARRAY_SIZE(vars); i++)
		unsetenv(vars[i]);
}

static int setup(void **state)
{
	assert_non_null(mkdtemp(dir));
	assert_int_equal(mkdir(at("pki"), 0700), 0);
	assert_int_equal(mkdir(at("sa"), 0700), 0);
	write_file("pki/ca.crt", PEM_CA);
	write_file("pki/admin.crt", PEM_CA);
	write_file("pki/admin.key", "-----BEGIN PRIVATE KEY-----\nx\n-----END PRIVATE KEY-----\n");
	write_file("token", "tok-1\n");
	write_file("files.kubeconfig",
		   "clusters: [{name: c, cluster: {server: 'https://10.0.0.1:6443/', "
		   "certificate-authority: pki/ca.crt}}]\n"
		   "users: [{name: u, user: {client-certificate: pki/admin.crt, client-key: "
		   "pki/admin.key}},\n"
		   "        {name: t, user: {token: fixed, tokenFile: token}},\n"
		   "        {name: lost, user: {client-certificate: pki/admin.crt, client-key: "
		   "pki/missing.key}}]\n"
		   "contexts: [{name: admin, context: {cluster: c, user: u}},\n"
		   "           {name: robot, context: {cluster: c, user: t, namespace: shop}},\n"
		   "           {name: lost, context: {cluster: c, user: lost}}]\n"
		   "current-context: admin\n");
	char *ca = base64_encode(PEM_CA, strlen(PEM_CA));
	struct strbuf sb = STRBUF_INIT;
	sb_init(&sb);
	sb_addf(&sb,
		"clusters: [{name: c, cluster: {server: 'https://k:443', "
		"certificate-authority-data: %s, tls-server-name: kubernetes}}]\n"
		"users: [{name: u, user: {client-certificate-data: %s, client-key-data: %s}}]\n"
		"contexts: [{name: inline, context: {cluster: c, user: u}}]\n"
		"current-context: inline\n",
		ca, ca, ca);
	write_file("inline.kubeconfig", sb.buf);
	sb_free(&sb);
	free(ca);
	clear_env();
	return 0;
}

static int teardown(void **state)
{
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

static void test_files(void **state)
{
	struct kube_conn c;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	assert_int_equal(kube_conn_load(at("files.kubeconfig"), &c, &err), 0);
	assert_string_equal(c.server, "https://10.0.0.1:6443");
	assert_string_equal(c.auth.ca_file, at("pki/ca.crt"));
	assert_string_equal(c.auth.cert_file, at("pki/admin.crt"));
	assert_string_equal(c.auth.key_file, at("pki/admin.key"));
	assert_null(c.auth.token);
	assert_null(c.auth.token_file);
	assert_null(c.auth.ca_pem);
	assert_false(c.auth.insecure);
	assert_string_equal(c.namespace, "default");
	char want[600];
	snprintf(want, sizeof(want), "kubeconfig %s (context admin)", at("files.kubeconfig"));
	assert_string_equal(c.source, want);
	kube_conn_free(&c);
	kube_conn_free(&c); /* zeroed: a second free is harmless */
	kube_conn_free(NULL);

	/* A token file wins over a fixed token (it rotates); the namespace is the context's. */
	assert_int_equal(kube_conn_load_context(at("files.kubeconfig"), "robot", &c, &err), 0);
	assert_null(c.auth.token);
	assert_string_equal(c.auth.token_file, at("token"));
	assert_string_equal(c.namespace, "shop");
	kube_conn_free(&c);

	/* A file the kubeconfig names but which is not there. */
	assert_int_equal(kube_conn_load_context(at("files.kubeconfig"), "lost", &c, &err), -ENOENT);
	snprintf(want, sizeof(want),
		 "kubeconfig %s (context lost): client-key %s: No such file or directory",
		 at("files.kubeconfig"), at("pki/missing.key"));
	assert_string_equal(sb_str(&err), want);

	sb_reset(&err);
	assert_int_equal(kube_conn_load(at("nope"), &c, &err), -ENOENT);
	snprintf(want, sizeof(want), "kubeconfig %s: No such file or directory", at("nope"));
	assert_string_equal(sb_str(&err), want);
	sb_reset(&err);
	assert_int_equal(kube_conn_load(dir, &c, &err), -EISDIR);
	assert_non_null(strstr(sb_str(&err), "not a regular file"));
	sb_free(&err);
}

static void test_inline(void **state)
{
	struct kube_conn c;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	assert_int_equal(kube_conn_load(at("inline.kubeconfig"), &c, &err), 0);
	assert_null(c.auth.ca_file);
	assert_null(c.auth.cert_file);
	assert_string_equal(c.auth.ca_pem, PEM_CA);
	assert_int_equal(c.auth.ca_pem_len, strlen(PEM_CA));
	assert_int_equal(c.auth.cert_pem_len, strlen(PEM_CA));
	assert_int_equal(c.auth.key_pem_len, strlen(PEM_CA));
	assert_string_equal(c.auth.tls_server_name, "kubernetes");
	/* The agent takes the blobs (the kube tier uses them against a real server)... */
	struct http_agent *agent;
	assert_int_equal(http_agent_new(NULL, &c.auth, &agent, &err), 0);
	http_agent_free(agent);
	/* ...but not a certificate without its key. */
	struct http_auth half = c.auth;
	half.key_pem = NULL;
	assert_int_equal(http_agent_new(NULL, &half, &agent, &err), -EINVAL);
	assert_string_equal(sb_str(&err), "a client certificate (PEM) without its key");
	kube_conn_free(&c);
	sb_free(&err);
}

static void test_kubeconfig_env(void **state)
{
	struct kube_conn c;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	/* The files of the list that exist, merged: the first one's current-context wins. */
	char list[1600];
	snprintf(list, sizeof(list), "%s:%s:%s", at("none"), at("inline.kubeconfig"),
		 at("files.kubeconfig"));
	setenv("KUBECONFIG", list, 1);
	assert_int_equal(kube_conn_load(NULL, &c, &err), 0);
	assert_string_equal(c.server, "https://k:443");
	kube_conn_free(&c);
	/* None exists, and not in a cluster. */
	snprintf(list, sizeof(list), "%s:%s", at("none"), at("none2"));
	setenv("KUBECONFIG", list, 1);
	assert_int_equal(kube_conn_load(NULL, &c, &err), -ENOENT);
	assert_non_null(strstr(sb_str(&err), "no Kubernetes API configured: no file of KUBECONFIG "
					     "exists ("));
	assert_non_null(strstr(sb_str(&err), "KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT "
					     "are not both set"));
	unsetenv("KUBECONFIG");
	sb_reset(&err);
	assert_int_equal(kube_conn_load(NULL, &c, &err), -ENOENT);
	assert_non_null(strstr(sb_str(&err), "no kubeconfig given (--kubeconfig or KUBECONFIG)"));
	sb_free(&err);
}

static void test_in_cluster(void **state)
{
	struct kube_conn c;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	setenv("BRINDLE_KUBE_SA_DIR", at("sa"), 1);
	setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	/* The token is not mounted yet. */
	char want[600];
	assert_int_equal(kube_conn_load(NULL, &c, &err), -ENOENT);
	snprintf(want, sizeof(want),
		 "in-cluster: ServiceAccount token %s: No such file or directory", at("sa/token"));
	assert_string_equal(sb_str(&err), want);
	write_file("sa/token", "eyJ.in.cluster\n");
	write_file("sa/ca.crt", PEM_CA);
	assert_int_equal(kube_conn_load(NULL, &c, &err), 0);
	assert_string_equal(c.server, "https://10.96.0.1:443");
	assert_string_equal(c.auth.token_file, at("sa/token"));
	assert_null(c.auth.token);
	assert_string_equal(c.auth.ca_file, at("sa/ca.crt"));
	assert_string_equal(c.namespace, "default"); /* no namespace file */
	assert_string_equal(c.source, "in-cluster");
	kube_conn_free(&c);

	write_file("sa/namespace", "kube-system\n");
	setenv("KUBERNETES_SERVICE_HOST", "fd00:96::1", 1);
	assert_int_equal(kube_conn_load(NULL, &c, &err), 0);
	assert_string_equal(c.server, "https://[fd00:96::1]:443");
	assert_string_equal(c.namespace, "kube-system");
	kube_conn_free(&c);

	sb_reset(&err);
	setenv("KUBERNETES_SERVICE_PORT", "https", 1);
	assert_int_equal(kube_conn_load(NULL, &c, &err), -EINVAL);
	assert_non_null(strstr(sb_str(&err), "do not make an address"));
	sb_reset(&err);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	assert_int_equal(kube_conn_load_context(NULL, "admin", &c, &err), -EINVAL);
	assert_non_null(strstr(sb_str(&err), "in-cluster configuration has no contexts"));
	clear_env();
	sb_free(&err);
}

static void test_ds_config(void **state)
{
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	struct ds_config_storage st = { 0 };
	struct ds_config cfg = { 0 };
	assert_int_equal(ds_config_from_env(&cfg, &st, &err), 0);
	assert_string_equal(cfg.type, "etcdv3");
	assert_null(cfg.kubeconfig);
	ds_config_free_storage(&st);

	/* Calico's variables, in Calico's order, and ours first. */
	setenv("CALICO_DATASTORE_TYPE", "kubernetes", 1);
	memset(&cfg, 0, sizeof(cfg));
	assert_int_equal(ds_config_from_env(&cfg, &st, &err), 0);
	assert_string_equal(cfg.type, "kubernetes");
	assert_null(cfg.kubeconfig); /* in-cluster */
	setenv("DATASTORE_TYPE", "etcdv3", 1);
	memset(&cfg, 0, sizeof(cfg));
	assert_int_equal(ds_config_from_env(&cfg, &st, &err), 0);
	assert_string_equal(cfg.type, "etcdv3");
	setenv("BRINDLE_DATASTORE_TYPE", "kubernetes", 1);
	memset(&cfg, 0, sizeof(cfg));
	char list[1200];
	snprintf(list, sizeof(list), "%s:%s", at("none"), at("files.kubeconfig"));
	setenv("KUBECONFIG", list, 1);
	assert_int_equal(ds_config_from_env(&cfg, &st, &err), 0);
	assert_string_equal(cfg.type, "kubernetes");
	/* KUBECONFIG's list is kube_conn_load's to read (and merge), not one path here. */
	assert_null(cfg.kubeconfig);
	ds_config_free_storage(&st);
	setenv("BRINDLE_KUBECONFIG", "/etc/brindle/kubeconfig", 1);
	memset(&cfg, 0, sizeof(cfg));
	assert_int_equal(ds_config_from_env(&cfg, &st, &err), 0);
	assert_string_equal(cfg.kubeconfig, "/etc/brindle/kubeconfig");
	/* What the caller set (brindlectl's flags) is kept. */
	memset(&cfg, 0, sizeof(cfg));
	cfg.kubeconfig = "/flag";
	assert_int_equal(ds_config_from_env(&cfg, &st, &err), 0);
	assert_string_equal(cfg.kubeconfig, "/flag");
	/* Any other type is an error naming where it came from. */
	clear_env();
	setenv("DATASTORE_TYPE", "etcd", 1);
	memset(&cfg, 0, sizeof(cfg));
	assert_int_equal(ds_config_from_env(&cfg, &st, &err), -EINVAL);
	assert_string_equal(sb_str(&err), "datastore type \"etcd\" (from DATASTORE_TYPE) is not "
					  "supported: etcdv3 or kubernetes");
	sb_reset(&err);
	memset(&cfg, 0, sizeof(cfg));
	cfg.type = "k8s";
	assert_int_equal(ds_config_from_env(&cfg, &st, &err), -EINVAL);
	assert_non_null(strstr(sb_str(&err),
			       "datastore type \"k8s\" is not supported: etcdv3 or kubernetes"));
	clear_env();
	ds_config_free_storage(&st);
	sb_free(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_files),	       cmocka_unit_test(test_inline),
		cmocka_unit_test(test_kubeconfig_env), cmocka_unit_test(test_in_cluster),
		cmocka_unit_test(test_ds_config),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
