/*
 * The CNI documents without a kernel or a datastore: the network
 * configuration (fields, args conventions, prevResult, errors with their
 * codes), CNI_ARGS, the checks ADD makes of the request before it touches
 * IPAM or the dataplane, the names the dataplane contract derives from a
 * pod, and result documents in each spec version.
 */
#include "harness.h"

#include <brindle/core/cni.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

static struct cni_conf *parse_ok(const char *text)
{
	struct cni_conf *c = NULL;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	int code = 0;
	if (cni_conf_parse(text, strlen(text), &c, &code, &err) < 0)
		fail_msg("refused (%d): %s", code, sb_str(&err));
	sb_free(&err);
	return c;
}

static void parse_bad(const char *text, int want_code, const char *want_msg)
{
	struct cni_conf *c = NULL;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	int code = 0;
	assert_int_equal(cni_conf_parse(text, strlen(text), &c, &code, &err), -EINVAL);
	assert_null(c);
	assert_int_equal(code, want_code);
	if (!strstr(sb_str(&err), want_msg))
		fail_msg("message \"%s\" lacks \"%s\"", sb_str(&err), want_msg);
	sb_free(&err);
}

static void test_full_config(void **state)
{
	struct cni_conf *c = parse_ok(
		"{\"cniVersion\": \"1.0.0\", \"name\": \"k8s-pod-network\", \"type\": "
		"\"brindle-cni\","
		" \"mtu\": 1450, \"nodename\": \"node-1\", \"log_level\": \"debug\","
		" \"etcd_endpoints\": \"unix:/run/etcd.sock\", \"runtimeConfig\": {\"ips\": "
		"[\"10.0.0.9/24\"]},"
		" \"somethingTheRuntimeAdds\": {\"x\": 1},"
		" \"ipam\": {\"type\": \"brindle-ipam\", \"ipv4_pools\": [\"a\", \"10.1.0.0/16\"],"
		"   \"empty_block_grace_seconds\": 60, \"ipam_lock_file\": \"\"},"
		" \"args\": {\"cni\": {\"labels\": [{\"key\": \"app\", \"value\": \"web\"}],"
		"   \"ips\": [\"10.0.0.7\", \"10.0.0.9\"]},"
		"  \"brindle\": {\"ports\": [{\"name\": \"http\", \"port\": 80}]}},"
		" \"prevResult\": {\"ips\": [{\"address\": \"10.0.0.7/32\"}]}}");
	assert_string_equal(c->cni_version, "1.0.0");
	assert_string_equal(c->name, "k8s-pod-network");
	assert_int_equal(c->mtu, 1450);
	assert_string_equal(c->nodename, "node-1");
	assert_string_equal(c->etcd_endpoints, "unix:/run/etcd.sock");
	assert_string_equal(c->ipam_type, "brindle-ipam");
	assert_int_equal(c->n_ipv4_pools, 2);
	assert_string_equal(c->ipv4_pools[1], "10.1.0.0/16");
	assert_int_equal(c->empty_block_grace_s, 60);
	assert_string_equal(c->ipam_lock_file, "");
	assert_string_equal(labels_get(&c->labels, "app"), "web");
	/* args and runtimeConfig addresses together, without duplicates */
	assert_int_equal(c->n_ips, 2);
	assert_int_equal(c->n_ports, 1);
	assert_string_equal(c->ports[0].name, "http");
	assert_null(c->ports[0].protocol);
	assert_true(c->has_prev_result);
	assert_int_equal(c->n_prev_ips, 1);
	cni_conf_free(c);

	c = parse_ok("{\"name\": \"n\"}");
	assert_string_equal(c->cni_version, CNI_DEFAULT_VERSION);
	assert_int_equal(c->empty_block_grace_s, 300);
	assert_null(c->ipam_lock_file);
	assert_true(c->assign_ipv4); /* IPv4 only unless asked, as Calico */
	assert_false(c->assign_ipv6);
	assert_false(c->felix_ipv6_support);
	cni_conf_free(c);

	/* dual stack, in Calico's spelling (strings) and as booleans; IPv6 addresses requested */
	c = parse_ok(
		"{\"name\": \"n\", \"ipam\": {\"type\": \"brindle-ipam\", \"assign_ipv4\": "
		"\"true\", \"assign_ipv6\": \"true\", \"ipv6_pools\": [\"fd00:1::/64\", \"p6\"]},"
		" \"args\": {\"cni\": {\"ips\": [\"10.0.0.7\", \"fd00:1::7\"]}}}");
	assert_true(c->assign_ipv4);
	assert_true(c->assign_ipv6);
	assert_int_equal(c->n_ipv6_pools, 2);
	assert_string_equal(c->ipv6_pools[1], "p6");
	assert_int_equal(c->n_ips, 2);
	assert_int_equal(c->ips[1].family, AF_INET6);
	cni_conf_free(c);
	c = parse_ok("{\"name\": \"n\", \"felix_ipv6_support\": true, \"ipam\": {\"assign_ipv4\": "
		     "false, "
		     "\"assign_ipv6\": true}}");
	assert_false(c->assign_ipv4);
	assert_true(c->assign_ipv6);
	assert_true(c->felix_ipv6_support); /* install-cni's word (from FELIX_IPV6SUPPORT) */
	cni_conf_free(c);
}

static void test_config_errors(void **state)
{
	parse_bad("{\"cniVersion\": \"1.0.0\", \"name\": ", CNI_ERR_DECODE, "not JSON");
	parse_bad("[]", CNI_ERR_DECODE, "JSON object");
	parse_bad("{\"cniVersion\": \"2.0.0\", \"name\": \"n\"}", CNI_ERR_INCOMPATIBLE_VERSION,
		  "not supported");
	parse_bad("{\"cniVersion\": \"1.0.0\"}", CNI_ERR_INVALID_CONFIG, "name: required");
	parse_bad("{\"name\": \"n\", \"mtu\": \"1500\"}", CNI_ERR_INVALID_CONFIG, "mtu: must be");
	parse_bad("{\"name\": \"n\", \"mtu\": 20}", CNI_ERR_INVALID_CONFIG, "at least 68");
	parse_bad("{\"name\": \"a/b\"}", CNI_ERR_INVALID_CONFIG, "'/'");
	parse_bad("{\"name\": \"n\", \"args\": {\"cni\": {\"ips\": [\"10.0.0.300\"]}}}",
		  CNI_ERR_INVALID_CONFIG, "args.cni.ips[0]");
	parse_bad("{\"name\": \"n\", \"args\": {\"cni\": {\"ips\": [\"fd00::1\"]}}}",
		  CNI_ERR_INVALID_CONFIG, "an IPv6 address, but ipam.assign_ipv6 is not true");
	parse_bad("{\"name\": \"n\", \"ipam\": {\"type\": \"brindle-ipam\", \"assign_ipv4\": "
		  "\"false\", \"assign_ipv6\": true}, \"args\": {\"cni\": {\"ips\": "
		  "[\"10.0.0.1\"]}}}",
		  CNI_ERR_INVALID_CONFIG, "an IPv4 address, but ipam.assign_ipv4 is not true");
	parse_bad("{\"name\": \"n\", \"args\": {\"cni\": {\"labels\": [{\"key\": \"a\"}]}}}",
		  CNI_ERR_INVALID_CONFIG, "args.cni.labels[0]");
	parse_bad("{\"name\": \"n\", \"args\": {\"brindle\": {\"ports\": [{\"name\": \"x\", "
		  "\"port\": 70000}]}}}",
		  CNI_ERR_INVALID_CONFIG, "args.brindle.ports[0].port");
	parse_bad("{\"name\": \"n\", \"ipam\": {\"type\": \"brindle-ipam\", \"assign_ipv6\": "
		  "\"yes\"}}",
		  CNI_ERR_INVALID_CONFIG, "ipam.assign_ipv6: must be true or false");
	parse_bad("{\"name\": \"n\", \"felix_ipv6_support\": 1}", CNI_ERR_INVALID_CONFIG,
		  "felix_ipv6_support: must be true or false");
	parse_bad(
		"{\"name\": \"n\", \"ipam\": {\"type\": \"brindle-ipam\", \"assign_ipv4\": false}}",
		CNI_ERR_INVALID_CONFIG, "both false");
	parse_bad("{\"name\": \"n\", \"ipam\": {\"ipv6_pools\": [\"\"]}}", CNI_ERR_INVALID_CONFIG,
		  "ipam.ipv6_pools[0]: must be a pool name or CIDR");
	parse_bad("{\"name\": \"n\", \"ipam\": []}", CNI_ERR_INVALID_CONFIG,
		  "ipam: must be an object");
}

static void test_args_and_names(void **state)
{
	struct arena *a = arena_new();
	struct br_labels l;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	assert_int_equal(
		cni_args_parse(a, "IgnoreUnknown=1;K8S_POD_NAMESPACE=shop;K8S_POD_NAME=web-1;;", &l,
			       &err),
		0);
	assert_string_equal(labels_get(&l, "K8S_POD_NAME"), "web-1");
	struct cni_identity id;
	cni_identity(a, &l, "abc", &id);
	assert_string_equal(id.orchestrator, "k8s");
	assert_string_equal(id.namespace, "shop");
	assert_string_equal(id.pod, "web-1");
	assert_int_equal(cni_args_parse(a, "", &l, &err), 0);
	cni_identity(a, &l, "abc", &id);
	assert_string_equal(id.orchestrator, "cni");
	assert_string_equal(id.namespace, "default");
	assert_string_equal(id.pod, "abc");
	assert_int_equal(cni_args_parse(a, "A=1;junk", &l, &err), -EINVAL);
	assert_non_null(strstr(sb_str(&err), "junk"));

	/* Calico's own example: default/nginx-1 → cali7fcc33642a0. */
	char veth[16];
	cni_host_veth_name("default", "nginx-1", veth);
	assert_string_equal(veth, "cali7fcc33642a0");
	assert_string_equal(cni_wep_name(a, "node-1", "k8s", "my-pod", "eth0"),
			    "node--1-k8s-my--pod-eth0");
	assert_string_equal(cni_handle_id(a, "net", "c1"), "net.c1");
	sb_free(&err);
	arena_free(a);
}

static void identity_bad(const char *args, const char *ifname, const char *want)
{
	struct arena *a = arena_new();
	struct br_labels l;
	struct cni_identity id;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	assert_int_equal(cni_args_parse(a, args, &l, &err), 0);
	cni_identity(a, &l, "0123abcd", &id);
	assert_int_equal(cni_identity_check(&id, ifname, &err), -EINVAL);
	if (!strstr(sb_str(&err), want))
		fail_msg("message \"%s\" lacks \"%s\"", sb_str(&err), want);
	sb_free(&err);
	arena_free(a);
}

static void test_request_checks(void **state)
{
	assert_true(cni_container_id_valid("c1aaaa"));
	assert_true(cni_container_id_valid("My_Container.1-x"));
	assert_false(cni_container_id_valid(NULL));
	assert_false(cni_container_id_valid(""));
	assert_false(cni_container_id_valid("a/b"));
	assert_false(cni_container_id_valid("a b"));
	assert_false(cni_container_id_valid("a\nb"));
	char long_id[130];
	memset(long_id, 'a', 129);
	long_id[129] = '\0';
	assert_false(cni_container_id_valid(long_id));
	long_id[128] = '\0';
	assert_true(cni_container_id_valid(long_id));

	assert_true(cni_ifname_valid("eth0"));
	assert_true(cni_ifname_valid("net1"));
	assert_true(cni_ifname_valid("eth0.100"));
	assert_true(cni_ifname_valid("abcdefghijklmno")); /* 15 */
	assert_false(cni_ifname_valid("abcdefghijklmnop"));
	assert_false(cni_ifname_valid(""));
	assert_false(cni_ifname_valid(NULL));
	assert_false(cni_ifname_valid("."));
	assert_false(cni_ifname_valid(".."));
	assert_false(cni_ifname_valid("eth/0"));
	assert_false(cni_ifname_valid("eth:0"));
	assert_false(cni_ifname_valid("eth 0"));
	assert_false(cni_ifname_valid("eth0\n"));

	struct arena *a = arena_new();
	struct br_labels l;
	struct cni_identity id;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	assert_int_equal(cni_args_parse(a, "K8S_POD_NAMESPACE=shop;K8S_POD_NAME=web-1.x", &l, &err),
			 0);
	cni_identity(a, &l, "0123abcd", &id);
	assert_int_equal(cni_identity_check(&id, "eth0", &err), 0);
	assert_int_equal(cni_identity_check(&id, "net1.5", &err), 0);
	/* A plain runtime: the container ID is the pod name. */
	assert_int_equal(cni_args_parse(a, "", &l, &err), 0);
	cni_identity(a, &l, "0123abcd", &id);
	assert_int_equal(cni_identity_check(&id, "eth0", &err), 0);
	cni_identity(a, &l, "Upper_Case", &id);
	assert_int_equal(cni_identity_check(&id, "eth0", &err), -EINVAL);
	assert_non_null(strstr(sb_str(&err), "CNI_CONTAINERID \"Upper_Case\""));
	assert_non_null(strstr(sb_str(&err), "without K8S_POD_NAME"));
	sb_free(&err);
	arena_free(a);

	/* The value is quoted as JSON: a newline cannot start a new log line. */
	identity_bad("K8S_POD_NAMESPACE=shop;K8S_POD_NAME=web-1\nx", "eth0",
		     "K8S_POD_NAME \"web-1\\nx\" is not a pod name");
	identity_bad("K8S_POD_NAMESPACE=shop;K8S_POD_NAME=Web 1", "eth0", "K8S_POD_NAME");
	identity_bad("K8S_POD_NAMESPACE=shop;K8S_POD_NAME=web_1", "eth0", "K8S_POD_NAME");
	identity_bad("K8S_POD_NAMESPACE=shop;K8S_POD_NAME=-web", "eth0", "K8S_POD_NAME");
	identity_bad("K8S_POD_NAMESPACE=shop;K8S_POD_NAME=web-", "eth0", "K8S_POD_NAME");
	identity_bad("K8S_POD_NAMESPACE=shop;K8S_POD_NAME=web..1", "eth0", "K8S_POD_NAME");
	identity_bad("K8S_POD_NAMESPACE=shop;K8S_POD_NAME=web-.1", "eth0", "K8S_POD_NAME");
	identity_bad("K8S_POD_NAMESPACE=Shop;K8S_POD_NAME=web", "eth0", "K8S_POD_NAMESPACE");
	identity_bad("K8S_POD_NAMESPACE=sh.op;K8S_POD_NAME=web", "eth0", "K8S_POD_NAMESPACE");
	identity_bad("K8S_POD_NAMESPACE=shop;K8S_POD_NAME=web", "eth_1", "CNI_IFNAME");
	identity_bad("K8S_POD_NAMESPACE=shop;K8S_POD_NAME=web", "Eth1", "CNI_IFNAME");
	identity_bad("K8S_POD_NAMESPACE=shop;K8S_POD_NAME=web", "eth0.", "CNI_IFNAME");
	char name[300] = "K8S_POD_NAMESPACE=shop;K8S_POD_NAME=";
	size_t at = strlen(name);
	memset(name + at, 'a', 254);
	name[at + 254] = '\0';
	identity_bad(name, "eth0", "1-253");
	char ns[100] = "K8S_POD_NAME=web;K8S_POD_NAMESPACE=";
	at = strlen(ns);
	memset(ns + at, 'a', 64);
	ns[at + 64] = '\0';
	identity_bad(ns, "eth0", "1-63");
}

static void test_results(void **state)
{
	struct cni_result r = { .n_ifaces = 2, .ip_iface = 1, .gateway = true, .n_ips = 1 };
	snprintf(r.ifaces[0].name, sizeof(r.ifaces[0].name), "cali7fcc33642a0");
	snprintf(r.ifaces[0].mac, sizeof(r.ifaces[0].mac), "ee:ee:ee:ee:ee:ee");
	snprintf(r.ifaces[1].name, sizeof(r.ifaces[1].name), "eth0");
	r.ifaces[1].sandbox = "/var/run/netns/x";
	assert_int_equal(ip_parse("10.0.0.5", &r.ips[0]), 0);
	struct strbuf sb = STRBUF_INIT;
	sb_init(&sb);
	cni_result_write(&sb, "1.0.0", &r);
	assert_string_equal(
		sb_str(&sb),
		"{\"cniVersion\":\"1.0.0\",\"interfaces\":[{\"name\":\"cali7fcc33642a0\","
		"\"mac\":\"ee:ee:ee:ee:ee:ee\"},{\"name\":\"eth0\",\"sandbox\":"
		"\"/var/run/netns/x\"}],\"ips\":[{\"address\":\"10.0.0.5/32\","
		"\"gateway\":\"169.254.1.1\",\"interface\":1}],\"routes\":[{\"dst\":"
		"\"0.0.0.0/0\",\"gw\":\"169.254.1.1\"}],\"dns\":{}}\n");
	sb_reset(&sb);
	cni_result_write(&sb, "0.3.1", &r);
	assert_non_null(
		strstr(sb_str(&sb), "\"ips\":[{\"version\":\"4\",\"address\":\"10.0.0.5/32\""));
	sb_reset(&sb);
	cni_result_write(&sb, "0.2.0", &r);
	assert_string_equal(sb_str(&sb),
			    "{\"cniVersion\":\"0.2.0\",\"ip4\":{\"ip\":\"10.0.0.5/32\",\"gateway\":"
			    "\"169.254.1.1\",\"routes\":[{\"dst\":\"0.0.0.0/0\",\"gw\":"
			    "\"169.254.1.1\"}]},\"dns\":{}}\n");
	/* dual stack: each address with its family's gateway, a default route per family */
	r.n_ips = 2;
	assert_int_equal(ip_parse("fd00::5", &r.ips[1]), 0);
	sb_reset(&sb);
	cni_result_write(&sb, "1.0.0", &r);
	assert_non_null(strstr(
		sb_str(&sb),
		"{\"address\":\"fd00::5/128\",\"gateway\":\"fe80::ecee:eeff:feee:eeee\","
		"\"interface\":1}],\"routes\":[{\"dst\":\"0.0.0.0/0\",\"gw\":\"169.254.1.1\"},"
		"{\"dst\":\"::/0\",\"gw\":\"fe80::ecee:eeff:feee:eeee\"}]"));
	sb_reset(&sb);
	cni_result_write(&sb, "0.4.0", &r);
	assert_non_null(strstr(sb_str(&sb), "{\"version\":\"6\",\"address\":\"fd00::5/128\""));
	sb_reset(&sb);
	cni_result_write(&sb, "0.2.0", &r);
	assert_non_null(strstr(sb_str(&sb),
			       ",\"ip6\":{\"ip\":\"fd00::5/128\",\"gateway\":"
			       "\"fe80::ecee:eeff:feee:eeee\",\"routes\":[{\"dst\":\"::/0\""));
	/* IPv6 only */
	r.ips[0] = r.ips[1];
	r.n_ips = 1;
	sb_reset(&sb);
	cni_result_write(&sb, "1.0.0", &r);
	assert_non_null(strstr(sb_str(&sb), "\"routes\":[{\"dst\":\"::/0\",\"gw\":"));
	assert_null(strstr(sb_str(&sb), "0.0.0.0/0"));
	sb_reset(&sb);
	cni_error_write(&sb, "0.4.0", 7, "bad \"config\"", NULL);
	assert_string_equal(
		sb_str(&sb),
		"{\"cniVersion\":\"0.4.0\",\"code\":7,\"msg\":\"bad \\\"config\\\"\"}\n");
	sb_reset(&sb);
	cni_version_write(&sb, NULL);
	assert_non_null(strstr(sb_str(&sb), "\"cniVersion\":\"1.0.0\",\"supportedVersions\""));
	assert_true(cni_version_cmp("0.4.0", "1.0.0") < 0);
	assert_true(cni_version_cmp("0.10.0", "0.4.0") > 0);
	assert_int_equal(cni_version_cmp("1.0.0", "1.0.0"), 0);
	sb_free(&sb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full_config),    cmocka_unit_test(test_config_errors),
		cmocka_unit_test(test_args_and_names), cmocka_unit_test(test_request_checks),
		cmocka_unit_test(test_results),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
