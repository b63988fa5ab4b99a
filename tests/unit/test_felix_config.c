/* felix's configuration: defaults < FelixConfiguration default < node.<name> < environment. */
#include "harness.h"

#include "config.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_layering),
		cmocka_unit_test(test_environment),
		cmocka_unit_test(test_bad_environment_ignored),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
