/*
 * Fill a datastore (BRINDLE_ETCD_ENDPOINTS) for felix's scale benchmarks:
 *   felix_populate NODES LOCAL_ENDPOINTS [REMOTE_ENDPOINTS POLICIES]
 * A VXLAN pool; nodes node1..NODES, each with an address, a VTEP and one
 * confirmed block; LOCAL_ENDPOINTS endpoints on node1 using interfaces
 * cali00000000000.. (the benchmark script makes them).
 * With REMOTE_ENDPOINTS and POLICIES, the endpoints are instead those of
 * policy_scenario.h (namespaces, LOCAL endpoints on node1 using interfaces
 * policy_scenario_iface(0..), REMOTE ones on node2..node41, POLICIES
 * NetworkPolicies).
 *   felix_populate --ifaces N   prints the first N of those interface names
 */
#include <brindle/sys/ds.h>
#include <brindle/sys/log.h>
#include <brindle/core/net.h>

#include "policy_scenario.h"

#include <stdio.h>
#include <stdlib.h>

static void create(struct ds *d, struct br_object *o)
{
	if (ds_create(d, o) < 0) {
		fprintf(stderr, "create %s %s: %s\n", o->kind->kind, o->meta.name,
			ds_last_error(d));
		exit(1);
	}
	model_free(o);
}

static const char *dup(struct br_object *o, const char *s)
{
	return arena_strdup(o->arena, s);
}

static void create_cb(struct br_object *o, void *ctx)
{
	create(ctx, o);
}

int main(int argc, char **argv)
{
	if (argc == 3 && streq(argv[1], "--ifaces")) {
		char name[16];
		for (int i = 0; i < atoi(argv[2]); i++) {
			policy_scenario_iface(i, name);
			printf("%s\n", name);
		}
		return 0;
	}
	if (argc != 3 && argc != 5) {
		fprintf(stderr, "usage: %s NODES LOCAL_ENDPOINTS [REMOTE_ENDPOINTS POLICIES]\n",
			argv[0]);
		return 2;
	}
	int nodes = atoi(argv[1]), local = atoi(argv[2]);
	struct ds_config cfg = { 0 };
	struct ds_config_storage st = { 0 };
	struct ds *d;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	if (ds_config_from_env(&cfg, &st, &err) < 0 || ds_open(&cfg, &d, &err) < 0) {
		fprintf(stderr, "%s\n", sb_str(&err));
		return 1;
	}
	struct br_object *o;
	if (nodes > 0) { /* NODES 0: only endpoints (and policies), into a cluster that exists */
		o = model_new(model_kind(KIND_IPPOOL), NULL, "pool");
		struct br_ippool *p = (struct br_ippool *)o;
		p->spec.cidr = dup(o, "10.0.0.0/8");
		p->spec.vxlan_mode = "Always";
		create(d, o);
	}
	char buf[128];
	for (int i = 1; i <= nodes; i++) {
		/* Node i: 172.16.x.y/12, block 10.<i>/26, VTEP at the block's first address. */
		uint32_t block = 0x0a000000u + (uint32_t)i * 64;
		struct br_ip bip = ip4_from_u32(block), vtep = ip4_from_u32(block + 1);
		struct br_ip nip = ip4_from_u32(0xac100000u + (uint32_t)i);
		char a[IP_STRLEN], b[IP_STRLEN], n[IP_STRLEN], name[32];
		snprintf(name, sizeof(name), "node%d", i);
		o = model_new(model_kind(KIND_NODE), NULL, name);
		struct br_node *nd = (struct br_node *)o;
		nd->spec.bgp = arena_alloc(o->arena, sizeof(*nd->spec.bgp));
		snprintf(buf, sizeof(buf), "%s/12", ip_str(&nip, n));
		nd->spec.bgp->ipv4_address = dup(o, buf);
		nd->spec.ipv4_vxlan_tunnel_addr = dup(o, ip_str(&vtep, a));
		create(d, o);
		snprintf(buf, sizeof(buf), "%s-26", ip_str(&bip, b));
		o = model_new(model_kind(KIND_BLOCKAFFINITY), NULL, buf);
		struct br_blockaffinity *af = (struct br_blockaffinity *)o;
		af->spec.node = dup(o, name);
		snprintf(buf, sizeof(buf), "%s/26", b);
		af->spec.cidr = dup(o, buf);
		af->spec.state = "confirmed";
		create(d, o);
	}
	if (argc == 5) {
		policy_scenario(local, atoi(argv[3]), atoi(argv[4]), create_cb, d);
		local = 0;
	}
	for (int i = 0; i < local; i++) {
		char name[32], iface[16];
		snprintf(name, sizeof(name), "pod%d", i);
		snprintf(iface, sizeof(iface), "cali%011d", i);
		o = model_new(model_kind(KIND_WORKLOADENDPOINT), "default", name);
		struct br_workloadendpoint *w = (struct br_workloadendpoint *)o;
		w->spec.node = "node1";
		w->spec.interface_name = dup(o, iface);
		struct br_ip ip = ip4_from_u32(0x0a000000u + 64 + 2 + (uint32_t)i % 60 +
					       (uint32_t)(i / 60) * 0x100000);
		char a[IP_STRLEN];
		snprintf(buf, sizeof(buf), "%s/32", ip_str(&ip, a));
		w->spec.ip_networks = arena_alloc(o->arena, sizeof(char *));
		w->spec.ip_networks[0] = dup(o, buf);
		w->spec.n_ip_networks = 1;
		w->spec.mac = "0a:00:00:00:00:01";
		create(d, o);
	}
	ds_close(d);
	ds_config_free_storage(&st);
	sb_free(&err);
	return 0;
}
