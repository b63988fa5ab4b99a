/* felix's configuration: defaults < FelixConfiguration default < node.<name> < environment. */
#include "harness.h"

#include "config.h"

#include <stdio.h>
#include <stdlib.h>

static struct br_felixconfig *fc(const char *yaml)
{
	struct br_object **objs;
	size_t n;
	struct model_errors errs = { 0 };
	if (model_read("t", yaml, strlen(yaml), NULL, &objs, &n, &errs) < 0)
		fail_msg("bad input: %s", errs.v[0]);
	struct br_object *o = objs[0];
	free(objs);
	return (struct br_felixconfig *)o;
}

static void test_defaults(void **state)
{
	struct felix_config c;
	struct model_errors errs = { 0 };
	char *env[] = { NULL };
	felix_config_compute(&c, NULL, NULL, env, &errs);
	assert_int_equal(errs.n, 0);
	assert_int_equal(c.n_prefixes, 1);
	assert_string_equal(c.prefixes[0], "cali");
	assert_true(c.health_enabled);
	assert_string_equal(c.health_host, "localhost");
	assert_int_equal(c.health_port, 9099);
	assert_false(c.metrics_enabled);
	assert_int_equal(c.metrics_port, 9091);
	assert_int_equal(c.route_refresh_ms, 90000);
	assert_int_equal(c.vxlan_vni, 4096);
	assert_int_equal(c.vxlan_port, 4789);
	assert_int_equal(c.vxlan_mtu, 0); /* derived from the host */
	assert_true(c.mark_mask == 0xffff0000u);
	assert_string_equal(c.endpoint_to_host_action, "Drop");
	assert_int_equal(c.n_failsafe_in, 9);
	assert_string_equal(c.failsafe_in[0].protocol, "TCP");
	assert_int_equal(c.failsafe_in[0].port, 22);
	assert_int_equal(c.n_failsafe_out, 9);
	assert_int_equal(c.route_grace_ms, 10000);
	assert_false(c.ipv6_support); /* no IPv6 policy yet: routing IPv6 to pods would fail open */
}

/* The rule backend: nftablesMode Enabled/Disabled decides, else iptablesBackend; each of the
 * two from its own sources (the environment over the FelixConfigurations), as in Calico. */
static void test_rule_backend(void **state)
{
	struct felix_config c;
	struct model_errors errs = { 0 };
	char *none[] = { NULL };
	felix_config_compute(&c, NULL, NULL, none, &errs);
	assert_string_equal(c.rule_backend, "Auto");
	struct br_felixconfig *g = fc("apiVersion: projectcalico.org/v3\nkind: FelixConfiguration\n"
				      "metadata: {name: default}\nspec: {nftablesMode: Enabled}\n");
	/* the lab passes FELIX_IPTABLESBACKEND=Auto: nftablesMode still decides */
	char *auto_env[] = { "FELIX_IPTABLESBACKEND=Auto", NULL };
	felix_config_compute(&c, g, NULL, auto_env, &errs);
	assert_string_equal(c.rule_backend, "NFT");
	char *off[] = { "FELIX_NFTABLESMODE=disabled", NULL };
	felix_config_compute(&c, g, NULL, off, &errs);
	assert_string_equal(c.rule_backend, "Legacy");
	struct br_felixconfig *n = fc(
		"apiVersion: projectcalico.org/v3\nkind: FelixConfiguration\n"
		"metadata: {name: node.node1}\nspec: {iptablesBackend: NFT, nftablesMode: Auto}\n");
	felix_config_compute(&c, NULL, n, none, &errs);
	assert_string_equal(c.rule_backend, "NFT");
	char *legacy[] = { "FELIX_IPTABLESBACKEND=legacy", NULL };
	felix_config_compute(&c, NULL, n, legacy, &errs);
	assert_string_equal(c.rule_backend, "Legacy");
	assert_int_equal(errs.n, 0);
	char *bad[] = { "FELIX_NFTABLESMODE=maybe", NULL };
	felix_config_compute(&c, NULL, NULL, bad, &errs);
	assert_int_equal(errs.n, 1);
	assert_string_equal(
		errs.v[0],
		"FELIX_NFTABLESMODE: \"maybe\" is not one of Enabled, Disabled or Auto; ignored");
	model_errors_clear(&errs);
	model_free(&g->o);
	model_free(&n->o);
	(void)state;
}

static void test_layering(void **state)
{
	struct br_felixconfig *global =
		fc("apiVersion: projectcalico.org/v3\nkind: FelixConfiguration\n"
		   "metadata: {name: default}\n"
		   "spec: {logSeverityScreen: Debug, routeRefreshInterval: 30s, vxlanMTU: 1400,"
		   " healthPort: 9100, interfacePrefix: 'cali,tap', failsafeInboundHostPorts: []}\n");
	struct br_felixconfig *node =
		fc("apiVersion: projectcalico.org/v3\nkind: FelixConfiguration\n"
		   "metadata: {name: node.node1}\n"
		   "spec: {routeRefreshInterval: 45s, healthPort: 9200}\n");
	char *env[] = { "FELIX_HEALTHPORT=9300", "felix_vxlanvni=5000", "PATH=/bin", NULL };
	struct felix_config c;
	struct model_errors errs = { 0 };
	felix_config_compute(&c, global, node, env, &errs);
	assert_int_equal(errs.n, 0);
	assert_int_equal(c.log_severity, LOG_DEBUG);   /* global */
	assert_int_equal(c.route_refresh_ms, 45000);   /* node over global */
	assert_int_equal(c.health_port, 9300);	       /* environment over both */
	assert_int_equal(c.vxlan_vni, 5000);	       /* names are case-insensitive */
	assert_int_equal(c.vxlan_mtu, 1400);	       /* only global sets it */
	assert_int_equal(c.n_failsafe_in, 0);	       /* "[]" turns failsafe ports off */
	assert_int_equal(c.n_prefixes, 2);
	assert_true(felix_is_workload_iface(&c, "tap0123"));
	assert_true(felix_is_workload_iface(&c, "cali0123"));
	assert_false(felix_is_workload_iface(&c, "eth0"));
	model_free(&global->o);
	model_free(&node->o);
}

static void test_environment(void **state)
{
	char *env[] = {
		"FELIX_ROUTEREFRESHINTERVAL=2",
		"FELIX_IPTABLESREFRESHINTERVAL=1m30s",
		"FELIX_DEFAULTENDPOINTTOHOSTACTION=ACCEPT",
		"FELIX_PROMETHEUSMETRICSENABLED=true",
		"FELIX_IPTABLESMARKMASK=0xff000000",
		"FELIX_FAILSAFEINBOUNDHOSTPORTS=tcp:22,udp:68,tcp:10.0.0.0/8:443",
		"FELIX_FAILSAFEOUTBOUNDHOSTPORTS=none",
		"FELIX_LOGSEVERITYSCREEN=warning",
		"FELIX_IPV6SUPPORT=true",
		NULL,
	};
	struct felix_config c;
	struct model_errors errs = { 0 };
	felix_config_compute(&c, NULL, NULL, env, &errs);
	assert_int_equal(errs.n, 0);
	assert_int_equal(c.route_refresh_ms, 2000); /* seconds, as Felix takes them */
	assert_int_equal(c.iptables_refresh_ms, 90000);
	assert_string_equal(c.endpoint_to_host_action, "Accept");
	assert_true(c.metrics_enabled);
	assert_true(c.mark_mask == 0xff000000u);
	assert_int_equal(c.n_failsafe_in, 3);
	assert_string_equal(c.failsafe_in[2].net, "10.0.0.0/8");
	assert_int_equal(c.failsafe_in[2].port, 443);
	assert_int_equal(c.n_failsafe_out, 0);
	assert_int_equal(c.log_severity, LOG_WARNING);
	assert_true(c.ipv6_support);
}

static void test_bad_environment_ignored(void **state)
{
	struct br_felixconfig *global =
		fc("apiVersion: projectcalico.org/v3\nkind: FelixConfiguration\n"
		   "metadata: {name: default}\nspec: {healthPort: 9100}\n");
	char *env[] = { "FELIX_HEALTHPORT=99999", "FELIX_HEALTHENABLED=maybe",
			"FELIX_ROUTEREFRESHINTERVAL=soon", "FELIX_DEFAULTENDPOINTTOHOSTACTION=Reject",
			"FELIX_FAILSAFEINBOUNDHOSTPORTS=tcp:0", NULL };
	struct felix_config c;
	struct model_errors errs = { 0 };
	felix_config_compute(&c, global, NULL, env, &errs);
	assert_int_equal(errs.n, 5);
	assert_string_equal(errs.v[0], "FELIX_HEALTHENABLED: \"maybe\" is not true or false; "
				       "ignored");
	assert_string_equal(errs.v[1], "FELIX_HEALTHPORT: \"99999\" is not a number in range; "
				       "ignored");
	/* The next source's value stands. */
	assert_int_equal(c.health_port, 9100);
	assert_true(c.health_enabled);
	assert_int_equal(c.route_refresh_ms, 90000);
	assert_string_equal(c.endpoint_to_host_action, "Drop");
	assert_int_equal(c.n_failsafe_in, 9);
	model_errors_clear(&errs);
	model_free(&global->o);
}

static void compute(struct felix_config *c, const char *yaml, char **env, struct model_errors *errs)
{
	struct br_felixconfig *g = yaml ? fc(yaml) : NULL;
	felix_config_compute(c, g, NULL, env, errs);
	if (g)
		model_free(&g->o);
}

/*
 * The trust review: a FelixConfiguration (anyone who can write one resource)
 * made felix create and append to any file as root. Now the event log stays
 * in the directory the environment names; the datastore picks only a name.
 */
static void test_event_log_stays_in_its_directory(void **state)
{
	struct felix_config c;
	struct model_errors errs = { 0 };
	char *none[] = { NULL };
	compute(&c, NULL, none, &errs);
	assert_string_equal(c.event_log_dir, "/var/log/brindle");
	assert_string_equal(c.event_log_file, "policy-events.log");
	/* A name, or a path inside the directory: taken. */
	compute(&c,
		"apiVersion: projectcalico.org/v3\nkind: FelixConfiguration\n"
		"metadata: {name: default}\nspec: {policyEventLogFile: denied.log}\n",
		none, &errs);
	assert_int_equal(errs.n, 0);
	assert_string_equal(c.event_log_file, "denied.log");
	compute(&c,
		"apiVersion: projectcalico.org/v3\nkind: FelixConfiguration\n"
		"metadata: {name: default}\n"
		"spec: {policyEventLogFile: /var/log/brindle/x.log}\n",
		none, &errs);
	assert_int_equal(errs.n, 0);
	assert_string_equal(c.event_log_file, "x.log");
	/* Anywhere else: refused with a message, the default stands. */
	const char *bad[] = { "/etc/cron.d/x", "/var/log/brindle2/x", "/var/log/brindle/sub/x",
			      "/root/.ssh/authorized_keys" };
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		char yaml[256];
		snprintf(yaml, sizeof(yaml),
			 "apiVersion: projectcalico.org/v3\nkind: FelixConfiguration\n"
			 "metadata: {name: default}\nspec: {policyEventLogFile: '%s'}\n",
			 bad[i]);
		compute(&c, yaml, none, &errs);
		assert_int_equal(errs.n, 1);
		assert_non_null(strstr(errs.v[0], "outside the event log directory"));
		assert_string_equal(c.event_log_dir, "/var/log/brindle");
		assert_string_equal(c.event_log_file, "policy-events.log");
		model_errors_clear(&errs);
	}
	/* The model refuses relative paths and dot segments before felix sees them. */
	struct br_object **objs;
	size_t n;
	const char *rel = "apiVersion: projectcalico.org/v3\nkind: FelixConfiguration\n"
			  "metadata: {name: default}\nspec: {policyEventLogFile: ../../etc/x}\n";
	assert_true(model_read("t", rel, strlen(rel), NULL, &objs, &n, &errs) < 0);
	model_errors_clear(&errs);
	/* The operator's environment may put it anywhere. */
	char *env[] = { "FELIX_POLICYEVENTLOGFILE=/tmp/t/ev.log", NULL };
	compute(&c, NULL, env, &errs);
	assert_int_equal(errs.n, 0);
	assert_string_equal(c.event_log_dir, "/tmp/t");
	assert_string_equal(c.event_log_file, "ev.log");
	char *env2[] = { "FELIX_POLICYEVENTLOGDIR=/srv/logs/", NULL };
	compute(&c,
		"apiVersion: projectcalico.org/v3\nkind: FelixConfiguration\n"
		"metadata: {name: default}\n"
		"spec: {policyEventLogFile: /srv/logs/a.log}\n",
		env2, &errs);
	assert_int_equal(errs.n, 0);
	assert_string_equal(c.event_log_dir, "/srv/logs");
	assert_string_equal(c.event_log_file, "a.log");
	char *env3[] = { "FELIX_POLICYEVENTLOGDIR=relative", NULL };
	compute(&c, NULL, env3, &errs);
	assert_int_equal(errs.n, 1);
	assert_string_equal(c.event_log_dir, "/var/log/brindle");
	model_errors_clear(&errs);
	/* the xtables lock: the machine's by default, an absolute file from the environment */
	assert_string_equal(c.iptables_lock_path, "/run/xtables.lock");
	char *env4[] = { "FELIX_IPTABLESLOCKFILEPATH=/run/node1/xtables.lock", NULL };
	compute(&c, NULL, env4, &errs);
	assert_int_equal(errs.n, 0);
	assert_string_equal(c.iptables_lock_path, "/run/node1/xtables.lock");
	char *env5[] = { "FELIX_IPTABLESLOCKFILEPATH=xtables.lock", NULL };
	compute(&c, NULL, env5, &errs);
	assert_int_equal(errs.n, 1);
	assert_string_equal(c.iptables_lock_path, "/run/xtables.lock");
	model_errors_clear(&errs);
}

static void test_workload_prefix_lengths_and_metrics_host(void **state)
{
	struct felix_config c;
	struct model_errors errs = { 0 };
	char *none[] = { NULL };
	compute(&c, NULL, none, &errs);
	assert_int_equal(c.wep_min_prefix_v4, 32);
	assert_int_equal(c.wep_min_prefix_v6, 128);
	assert_string_equal(c.metrics_host, "");
	compute(&c,
		"apiVersion: projectcalico.org/v3\nkind: FelixConfiguration\n"
		"metadata: {name: default}\n"
		"spec: {workloadIPv4MinPrefixLength: 28, workloadIPv6MinPrefixLength: 120,"
		" prometheusMetricsHost: 127.0.0.1}\n",
		none, &errs);
	assert_int_equal(errs.n, 0);
	assert_int_equal(c.wep_min_prefix_v4, 28);
	assert_int_equal(c.wep_min_prefix_v6, 120);
	assert_string_equal(c.metrics_host, "127.0.0.1");
	char *env[] = { "FELIX_WORKLOADIPV4MINPREFIXLENGTH=0",
			"FELIX_WORKLOADIPV6MINPREFIXLENGTH=64", NULL };
	compute(&c, NULL, env, &errs);
	assert_int_equal(errs.n, 1); /* 0 would allow a default route */
	assert_int_equal(c.wep_min_prefix_v4, 32);
	assert_int_equal(c.wep_min_prefix_v6, 64);
	model_errors_clear(&errs);
	/* The model: a length of 0 or an address that is not one is refused. */
	struct br_object **objs;
	size_t n;
	const char *bad[] = { "{workloadIPv4MinPrefixLength: 0}",
			      "{workloadIPv4MinPrefixLength: 33}",
			      "{prometheusMetricsHost: 'example.com'}" };
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		char yaml[256];
		snprintf(yaml, sizeof(yaml),
			 "apiVersion: projectcalico.org/v3\nkind: FelixConfiguration\n"
			 "metadata: {name: default}\nspec: %s\n",
			 bad[i]);
		assert_true(model_read("t", yaml, strlen(yaml), NULL, &objs, &n, &errs) < 0);
		model_errors_clear(&errs);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_layering),
		cmocka_unit_test(test_rule_backend),
		cmocka_unit_test(test_environment),
		cmocka_unit_test(test_bad_environment_ignored),
		cmocka_unit_test(test_event_log_stays_in_its_directory),
		cmocka_unit_test(test_workload_prefix_lengths_and_metrics_host),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
