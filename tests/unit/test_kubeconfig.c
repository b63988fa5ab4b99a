/* kubeconfig files: selecting a context, resolving paths, inline data, and refusals. */
#include "harness.h"

#include <brindle/core/hash.h>
#include <brindle/core/kubeconfig.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#define PEM_CA	 "-----BEGIN CERTIFICATE-----\nMIIBcafake\n-----END CERTIFICATE-----\n"
#define PEM_KEY	 "-----BEGIN EC PRIVATE KEY-----\nMHcCkeyfake\n-----END EC PRIVATE KEY-----\n"
#define PEM_CERT "-----BEGIN CERTIFICATE-----\nMIIBcertfake\n-----END CERTIFICATE-----\n"

static int parse(struct arena *a, const char *path, const char *text, const char *context,
		 struct kubeconfig *k, struct strbuf *err)
{
	sb_reset(err);
	return kubeconfig_parse(a, path, text, strlen(text), context, k, err);
}

static struct kubeconfig parse_ok(struct arena *a, const char *path, const char *text,
				  const char *context)
{
	struct kubeconfig k;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	if (parse(a, path, text, context, &k, &err) < 0)
		fail_msg("unexpected error: %s", sb_str(&err));
	sb_free(&err);
	return k;
}

static const char two_contexts[] =
	"apiVersion: v1\n"
	"kind: Config\n"
	"clusters:\n"
	"- name: prod\n"
	"  cluster:\n"
	"    server: https://10.0.0.1:6443/\n"
	"    certificate-authority: pki/ca.crt\n"
	"- name: lab\n"
	"  cluster: {server: 'lab.example:6443', insecure-skip-tls-verify: "
	"true, tls-server-name: kubernetes.default}\n"
	"users:\n"
	"- name: admin\n"
	"  user:\n"
	"    client-certificate: /abs/admin.crt\n"
	"    client-key: ../keys/admin.key\n"
	"- name: robot\n"
	"  user: {token: abc.def, tokenFile: token}\n"
	"contexts:\n"
	"- name: prod-admin\n"
	"  context: {cluster: prod, user: admin, namespace: shop}\n"
	"- name: lab-robot\n"
	"  context: {cluster: lab, user: robot}\n"
	"- name: anonymous\n"
	"  context: {cluster: lab}\n"
	"current-context: prod-admin\n";

static void test_current_context_and_paths(void **state)
{
	struct arena *a = arena_new();
	struct kubeconfig k = parse_ok(a, "/etc/brindle/admin.kubeconfig", two_contexts, NULL);
	assert_string_equal(k.context, "prod-admin");
	assert_string_equal(k.cluster, "prod");
	assert_string_equal(k.user, "admin");
	assert_string_equal(k.server, "https://10.0.0.1:6443");
	/* Relative to the kubeconfig's directory, as kubectl resolves them. */
	assert_string_equal(k.ca_file, "/etc/brindle/pki/ca.crt");
	assert_string_equal(k.cert_file, "/abs/admin.crt");
	assert_string_equal(k.key_file, "/etc/brindle/../keys/admin.key");
	assert_null(k.ca_data);
	assert_null(k.token);
	assert_null(k.token_file);
	assert_false(k.insecure);
	assert_string_equal(k.namespace, "shop");

	/* A kubeconfig named without a directory: paths stay relative to the working one. */
	k = parse_ok(a, "kubeconfig", two_contexts, NULL);
	assert_string_equal(k.ca_file, "pki/ca.crt");
	k = parse_ok(a, "/kubeconfig", two_contexts, NULL);
	assert_string_equal(k.ca_file, "/pki/ca.crt");
	arena_free(a);
}

static void test_explicit_context(void **state)
{
	struct arena *a = arena_new();
	struct kubeconfig k = parse_ok(a, "/k/config", two_contexts, "lab-robot");
	assert_string_equal(k.context, "lab-robot");
	assert_string_equal(k.server, "https://lab.example:6443"); /* no scheme: https */
	assert_true(k.insecure);
	assert_string_equal(k.tls_server_name, "kubernetes.default");
	assert_string_equal(k.token, "abc.def");
	assert_string_equal(k.token_file, "/k/token");
	assert_null(k.cert_file);
	assert_null(k.namespace);

	k = parse_ok(a, "/k/config", two_contexts, "anonymous");
	assert_string_equal(k.user, "");
	assert_null(k.token);
	assert_null(k.cert_file);
	arena_free(a);
}

static char *b64(const char *s)
{
	return base64_encode(s, strlen(s));
}

static void test_inline_data(void **state)
{
	struct arena *a = arena_new();
	char *ca = b64(PEM_CA), *cert = b64(PEM_CERT), *key = b64(PEM_KEY);
	/* Line breaks inside the base64 are allowed (Go's decoder skips them too). */
	char *text = arena_printf(a,
				  "clusters:\n"
				  "- name: c\n"
				  "  cluster:\n"
				  "    server: http://127.0.0.1:8080\n"
				  "    certificate-authority: ignored.crt\n"
				  "    certificate-authority-data: %s\n"
				  "users:\n"
				  "- name: u\n"
				  "  user:\n"
				  "    client-certificate-data: %s\n"
				  "    client-key-data: \"%.20s\\n%s\"\n"
				  "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
				  "current-context: x\n",
				  ca, cert, key, key + 20);
	struct kubeconfig k = parse_ok(a, "/x", text, NULL);
	assert_string_equal(k.server, "http://127.0.0.1:8080");
	assert_null(k.ca_file); /* the data wins, as in client-go */
	assert_string_equal(k.ca_data, PEM_CA);
	assert_int_equal(k.ca_data_len, strlen(PEM_CA));
	assert_string_equal(k.cert_data, PEM_CERT);
	assert_int_equal(k.cert_data_len, strlen(PEM_CERT));
	assert_string_equal(k.key_data, PEM_KEY);
	assert_int_equal(k.key_data_len, strlen(PEM_KEY));
	assert_null(k.cert_file);
	assert_null(k.key_file);
	free(ca);
	free(cert);
	free(key);
	arena_free(a);
}

#define HEAD                                                      \
	"clusters: [{name: c, cluster: {server: https://h:1}}]\n" \
	"contexts: [{name: x, context: {cluster: c, user: u}}]\n" \
	"current-context: x\n"

static void test_refusals(void **state)
{
	char *notpem = b64("hello, not a certificate");
	char *good = b64(PEM_CERT);
	struct {
		const char *text;
		const char *want;
	} cases[] = {
		{ HEAD "users: [{name: u, user: {client-certificate: a, client-key-data: "
		       "'!!notbase64'}}]\n",
		  "kubeconfig /x: users[0].user.client-key-data: not base64 (character 1)" },
		{ HEAD "users: [{name: u, user: {client-certificate: a, client-key-data: "
		       "'QUJD'}}]\n",
		  "kubeconfig /x: users[0].user.client-key-data: not PEM" },
		{ HEAD "users: [{name: u, user: {client-certificate: a, client-key-data: "
		       "'QUJDRA'}}]\n",
		  "users[0].user.client-key-data: not base64 (length 6 is not a multiple of 4)" },
		{ HEAD "users: [{name: u, user: {client-certificate: a, client-key-data: "
		       "'QU=JD'}}]\n",
		  "users[0].user.client-key-data: not base64 (character 4)" },
		{ HEAD "users: [{name: u, user: {exec: {command: aws}}}]\n",
		  "kubeconfig /x: users[0].user.exec: exec credential plugins are not supported" },
		{ HEAD "users: [{name: u, user: {auth-provider: {name: gcp}}}]\n",
		  "users[0].user.auth-provider: auth providers are not supported" },
		{ HEAD "users: [{name: u, user: {username: bob, password: secret}}]\n",
		  "users[0].user.username: basic authentication is not supported" },
		{ HEAD "users: [{name: u, user: {token: t, as: admin}}]\n",
		  "users[0].user.as: impersonation is not supported" },
		{ HEAD "users: [{name: u, user: {client-certificate: a.crt}}]\n",
		  "users[0].user: a client certificate without client-key or client-key-data" },
		{ HEAD "users: [{name: u, user: {client-key: a.key}}]\n",
		  "users[0].user: a client key without client-certificate or "
		  "client-certificate-data" },
		{ HEAD "users: [{name: u, user: {client-certificate: a, client-key: b, "
		       "client-key-data: LS0tLS1CRUdJTiBYLS0tLS0K}}]\n",
		  "users[0].user: both client-key and client-key-data" },
		{ HEAD "users: [{name: v, user: {}}]\n",
		  "contexts[0].context.user: \"u\" is not in users" },
		{ HEAD "users: [{name: u, user: {}}, {name: u, user: {}}]\n",
		  "users[1].name: \"u\" is also the name of users[0]" },
		{ HEAD "users: [{user: {}}]\n", "users[0].name: missing" },
		{ HEAD "users: {u: {}}\n", "kubeconfig /x: users: not a list but map" },
		{ HEAD "users: [{name: u}]\n", "users[0].user: missing" },
		{ HEAD "users: [{name: u, user: {token: [a]}}]\n",
		  "users[0].user.token: not a string but list" },
		{ "clusters: [{name: c, cluster: {server: https://h:1, proxy-url: "
		  "http://p:3128}}]\n"
		  "contexts: [{name: x, context: {cluster: c}}]\ncurrent-context: x\n",
		  "clusters[0].cluster.proxy-url: proxies are not supported" },
		{ "clusters: [{name: c, cluster: {server: https://h:1, insecure-skip-tls-verify: "
		  "true, certificate-authority: ca.crt}}]\n"
		  "contexts: [{name: x, context: {cluster: c}}]\ncurrent-context: x\n",
		  "clusters[0].cluster: certificate-authority with insecure-skip-tls-verify" },
		{ "clusters: [{name: c, cluster: {server: https://h:1, insecure-skip-tls-verify: "
		  "perhaps}}]\n"
		  "contexts: [{name: x, context: {cluster: c}}]\ncurrent-context: x\n",
		  "clusters[0].cluster.insecure-skip-tls-verify: not true or false" },
		{ "clusters: [{name: c, cluster: {certificate-authority: ca.crt}}]\n"
		  "contexts: [{name: x, context: {cluster: c}}]\ncurrent-context: x\n",
		  "kubeconfig /x: clusters[0].cluster.server: missing" },
		{ "clusters: [{name: c, cluster: {server: 'ftp://h'}}]\n"
		  "contexts: [{name: x, context: {cluster: c}}]\ncurrent-context: x\n",
		  "clusters[0].cluster.server: \"ftp://h\": the scheme must be https:// or "
		  "http://" },
		{ "clusters: [{name: c, cluster: {server: 'https:///api'}}]\n"
		  "contexts: [{name: x, context: {cluster: c}}]\ncurrent-context: x\n",
		  "clusters[0].cluster.server: \"https:///api\" is not a URL" },
		/* a scheme alone (the fuzzer's find: the slashes were taken into the scheme) */
		{ "clusters: [{name: c, cluster: {server: 'https://'}}]\n"
		  "contexts: [{name: x, context: {cluster: c}}]\ncurrent-context: x\n",
		  "clusters[0].cluster.server: \"https://\" is not a URL" },
		{ "clusters: [{name: c, cluster: {server: {host: h}}}]\n"
		  "contexts: [{name: x, context: {cluster: c}}]\ncurrent-context: x\n",
		  "clusters[0].cluster.server: not a string but map" },
		{ "clusters: [{name: d, cluster: {server: https://h}}]\n"
		  "contexts: [{name: x, context: {cluster: c}}]\ncurrent-context: x\n",
		  "contexts[0].context.cluster: \"c\" is not in clusters" },
		{ "clusters: [{name: c, cluster: {server: https://h}}]\n"
		  "contexts: [{name: x, context: {user: u}}]\ncurrent-context: x\n",
		  "contexts[0].context.cluster: missing" },
		{ "clusters: [{name: c, cluster: {server: https://h}}]\n"
		  "contexts: [{name: x, context: {cluster: c}}]\ncurrent-context: y\n",
		  "kubeconfig /x: context \"y\" is not in contexts (it is current-context)" },
		{ "clusters: [{name: c, cluster: {server: https://h}}]\n"
		  "contexts: [{name: x, context: {cluster: c}}]\n",
		  "kubeconfig /x: current-context: not set, and no context was given" },
		{ "kind: Pod\n", "kubeconfig /x: kind: \"Pod\", not Config" },
		{ "", "kubeconfig /x: empty" },
		{ "- a\n", "kubeconfig /x: not a map but list" },
		{ "a: 1\n---\nb: 2\n", "kubeconfig /x: document 2: a kubeconfig is one document" },
		{ "clusters: [\n", "kubeconfig /x: document 1: line" },
		{ "clusters: [{name: c, cluster: {server: \"https://h\\0x\"}}]\n"
		  "contexts: [{name: x, context: {cluster: c}}]\ncurrent-context: x\n",
		  "kubeconfig /x: document 1: line 1: NUL character" },
	};
	struct arena *a = arena_new();
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct kubeconfig k;
		memset(&k, 0x5a, sizeof(k));
		int r = parse(a, "/x", cases[i].text, NULL, &k, &err);
		if (r != -EINVAL || !strstr(sb_str(&err), cases[i].want))
			fail_msg("case %zu: got %d \"%s\", want \"%s\"", i, r, sb_str(&err),
				 cases[i].want);
		assert_int_equal(((unsigned char *)&k)[0], 0x5a); /* out untouched */
	}
	/* Not PEM, though valid base64; and a good one in the CA's place works. */
	char *text =
		arena_printf(a,
			     "clusters: [{name: c, cluster: {server: https://h, "
			     "certificate-authority-data: %s}}]\n"
			     "contexts: [{name: x, context: {cluster: c}}]\ncurrent-context: x\n",
			     notpem);
	struct kubeconfig k;
	assert_int_equal(parse(a, "/x", text, NULL, &k, &err), -EINVAL);
	assert_non_null(strstr(sb_str(&err), "clusters[0].cluster.certificate-authority-data: "
					     "not PEM"));
	text = arena_printf(a,
			    "clusters: [{name: c, cluster: {server: https://h, "
			    "certificate-authority-data: %s}}]\n"
			    "contexts: [{name: x, context: {cluster: c}}]\ncurrent-context: x\n",
			    good);
	assert_int_equal(parse(a, "/x", text, NULL, &k, &err), 0);
	/* An explicit context that is missing says so without "current-context". */
	assert_int_equal(parse(a, "/x", two_contexts, "staging", &k, &err), -EINVAL);
	assert_string_equal(sb_str(&err), "kubeconfig /x: context \"staging\" is not in contexts");
	sb_free(&err);
	free(notpem);
	free(good);
	arena_free(a);
}

/*
 * KUBECONFIG's list, merged as kubectl merges it: current-context from the
 * first file that sets it, each named entry from the first file that has
 * it (its relative paths against that file's directory), a file invalid on
 * its own refused whole.
 */
static void test_merged_files(void **state)
{
	static const char mine[] =
		"apiVersion: v1\nkind: Config\n"
		"current-context: dev\n"
		"users:\n- name: me\n  user: {tokenFile: tok}\n"
		"contexts:\n- name: dev\n  context: {cluster: shared, user: me}\n";
	static const char team[] = "apiVersion: v1\nkind: Config\n"
				   "current-context: prod-admin\n"
				   "clusters:\n- name: shared\n  cluster:\n"
				   "    server: https://10.9.0.1:6443\n"
				   "    certificate-authority: ca.crt\n"
				   "users:\n- name: me\n  user: {token: not-this-one}\n"
				   "contexts:\n- name: dev\n  context: {cluster: nowhere}\n"
				   "- name: ops\n  context: {cluster: shared, namespace: ops}\n";
	struct kubeconfig_file files[] = { { "/home/me/.kube/config", mine, strlen(mine) },
					   { "/etc/team/kubeconfig", team, strlen(team) } };
	struct arena *a = arena_new();
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	struct kubeconfig k;
	if (kubeconfig_parse_files(a, files, 2, NULL, &k, &err) < 0)
		fail_msg("%s", sb_str(&err));
	assert_string_equal(k.context, "dev");
	assert_string_equal(k.server, "https://10.9.0.1:6443");
	assert_string_equal(k.ca_file, "/etc/team/ca.crt");
	assert_string_equal(k.token_file, "/home/me/.kube/tok");
	assert_null(k.token);
	/* A context only the second file has. */
	assert_int_equal(kubeconfig_parse_files(a, files, 2, "ops", &k, &err), 0);
	assert_string_equal(k.namespace, "ops");
	assert_string_equal(k.user, "");
	/* A name in no file. */
	sb_reset(&err);
	assert_int_equal(kubeconfig_parse_files(a, files, 2, "qa", &k, &err), -EINVAL);
	assert_non_null(strstr(sb_str(&err), "context \"qa\" is not in contexts of any file"));
	/* A broken file spoils the list, naming it. */
	static const char broken[] = "apiVersion: v1\nkind: Config\nusers: 7\n";
	struct kubeconfig_file three[] = { files[0],
					   files[1],
					   { "/tmp/broken", broken, sizeof(broken) - 1 } };
	sb_reset(&err);
	assert_int_equal(kubeconfig_parse_files(a, three, 3, NULL, &k, &err), -EINVAL);
	assert_non_null(strstr(sb_str(&err), "kubeconfig /tmp/broken: users: not a list"));
	sb_free(&err);
	arena_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_current_context_and_paths),
		cmocka_unit_test(test_explicit_context),
		cmocka_unit_test(test_inline_data),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_merged_files),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
