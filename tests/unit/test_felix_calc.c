/* felix's routing calculation over plain data: resources in, desired dataplane out. */
#include "harness.h"

#include "calc/calc.h"
#include "calc/notices.h"
#include "calc/policy.h"

#include <brindle/core/json.h>

#include <stdio.h>
#include <stdlib.h>

static struct br_object *obj(const char *yaml)
{
	struct br_object **objs;
	size_t n;
	struct model_errors errs = { 0 };
	if (model_read("t", yaml, strlen(yaml), NULL, &objs, &n, &errs) < 0)
		fail_msg("bad input: %s", errs.v[0]);
	struct br_object *o = objs[0];
	free(objs);
	return o;
}

/* Internal kinds cannot come from files; decode them as the datastore does. */
static struct br_object *affinity(const char *node, const char *cidr, const char *state)
{
	char buf[512];
	snprintf(buf, sizeof(buf),
		 "{\"apiVersion\":\"projectcalico.org/v3\",\"kind\":\"BlockAffinity\","
		 "\"metadata\":{\"name\":\"x\"},\"spec\":{\"node\":\"%s\",\"cidr\":\"%s\","
		 "\"state\":\"%s\"}}",
		 node, cidr, state);
	struct arena *a = arena_new();
	struct jv *doc;
	assert_int_equal(json_parse(a, buf, strlen(buf), &doc, NULL), 0);
	struct model_errors errs = { 0 };
	struct br_object *o = model_decode_kind(model_kind(KIND_BLOCKAFFINITY), doc, &errs);
	arena_free(a);
	assert_non_null(o);
	return o;
}

static void put(struct calc *c, struct br_object *o, const char *scope, const char *name)
{
	struct ds_update u = { .kind = o->kind, .scope = scope, .name = name, .obj = o };
	calc_update(c, &u);
}

static void del(struct calc *c, enum br_kind_id k, const char *scope, const char *name)
{
	struct ds_update u = { .kind = model_kind(k), .scope = scope, .name = name };
	calc_update(c, &u);
}

static struct br_object *node(const char *name, const char *ip, const char *vtep)
{
	char buf[512];
	snprintf(buf, sizeof(buf),
		 "apiVersion: projectcalico.org/v3\nkind: Node\nmetadata: {name: %s}\n"
		 "spec: {bgp: {ipv4Address: %s}%s%s%s}\n",
		 name, ip, vtep ? ", ipv4VXLANTunnelAddr: " : "", vtep ? vtep : "", "");
	return obj(buf);
}

static struct br_object *pool(const char *cidr, const char *vxlan, const char *ipip)
{
	char buf[512];
	snprintf(buf, sizeof(buf),
		 "apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: p}\n"
		 "spec: {cidr: %s, vxlanMode: %s, ipipMode: %s}\n",
		 cidr, vxlan, ipip);
	return obj(buf);
}

static struct br_object *wep(const char *name, const char *node, const char *iface, const char *ip,
			     const char *mac)
{
	char buf[512];
	snprintf(buf, sizeof(buf),
		 "apiVersion: projectcalico.org/v3\nkind: WorkloadEndpoint\n"
		 "metadata: {name: %s, namespace: default}\n"
		 "spec: {node: %s, interfaceName: %s, ipNetworks: [%s]%s%s%s}\n",
		 name, node, iface, ip, mac ? ", mac: '" : "", mac ? mac : "", mac ? "'" : "");
	return obj(buf);
}

static char *route_str(const struct calc *c, const char *key)
{
	const struct desired_item *it =
		desired_get(calc_desired((struct calc *)c), DESIRED_ROUTE, key);
	if (!it)
		return NULL;
	static char buf[256];
	char gw[IP_STRLEN];
	snprintf(buf, sizeof(buf), "%s%s%s%s%s%s", it->route.blackhole ? "blackhole" : "",
		 it->route.ifname[0] ? "dev " : "", it->route.ifname,
		 it->route.gw.family ? " via " : "",
		 it->route.gw.family ? ip_str(&it->route.gw, gw) : "",
		 it->route.onlink ? " onlink" : (it->route.link_scope ? " scope link" : ""));
	return buf;
}

/* The desired FDB key of @mac behind @dst on @dev ("dev|mac|dst", as desired.c makes it). */
static const char *fdb_key(const char *dev, const uint8_t mac[6], const char *dst)
{
	static char buf[96];
	snprintf(buf, sizeof(buf), "%s|%02x:%02x:%02x:%02x:%02x:%02x|%s", dev, mac[0], mac[1],
		 mac[2], mac[3], mac[4], mac[5], dst);
	return buf;
}

static bool dirty(struct calc *c, enum desired_kind k, const char *key)
{
	return hmap_has(&calc_desired(c)->dirty[k], key);
}

static void test_local_endpoints(void **state)
{
	struct calc *c = calc_new("node1", false);
	put(c, wep("a", "node1", "calia", "10.244.1.7/32", "0a:58:0a:f4:01:07"), "default",
	    "node1-k8s-a-eth0");
	put(c, wep("b", "node2", "calib", "10.244.2.7/32", NULL), "default", "node2-k8s-b-eth0");
	assert_string_equal(route_str(c, "10.244.1.7/32"), "dev calia scope link");
	assert_null(route_str(c, "10.244.2.7/32")); /* another node's endpoint */
	const struct desired_item *n =
		desired_get(calc_desired(c), DESIRED_NEIGH, "calia|10.244.1.7");
	assert_non_null(n);
	assert_int_equal(n->neigh.mac[5], 0x07);
	assert_non_null(desired_get(calc_desired(c), DESIRED_IFACE, "calia"));
	assert_int_equal(calc_local_endpoints(c), 1);
	assert_true(dirty(c, DESIRED_ROUTE, "10.244.1.7/32"));

	/* Deleting the endpoint retracts exactly its items. */
	desired_clear_dirty(calc_desired(c), DESIRED_ROUTE);
	del(c, KIND_WORKLOADENDPOINT, "default", "node1-k8s-a-eth0");
	assert_null(route_str(c, "10.244.1.7/32"));
	assert_true(dirty(c, DESIRED_ROUTE, "10.244.1.7/32"));
	assert_null(desired_get(calc_desired(c), DESIRED_NEIGH, "calia|10.244.1.7"));
	assert_int_equal(calc_local_endpoints(c), 0);
	assert_int_equal(calc_desired(c)->entries[DESIRED_ROUTE].n, 0);

	/* An endpoint that moves to this node gets its route. */
	put(c, wep("b", "node1", "calib", "10.244.2.7/32", NULL), "default", "node2-k8s-b-eth0");
	assert_string_equal(route_str(c, "10.244.2.7/32"), "dev calib scope link");

	/* Every network of an endpoint is routed, however many it has (with a MAC: a
	 * neighbour each too). */
	char nets[1024] = "", key[32];
	for (int i = 0; i < 20; i++)
		snprintf(nets + strlen(nets), sizeof(nets) - strlen(nets), "%s10.244.3.%d/32",
			 i ? ", " : "", i + 1);
	put(c, wep("m", "node1", "calim", nets, "0a:58:0a:f4:03:01"), "default", "m");
	for (int i = 0; i < 20; i++) {
		snprintf(key, sizeof(key), "10.244.3.%d/32", i + 1);
		assert_string_equal(route_str(c, key), "dev calim scope link");
		snprintf(key, sizeof(key), "calim|10.244.3.%d", i + 1);
		assert_non_null(desired_get(calc_desired(c), DESIRED_NEIGH, key));
	}
	calc_free(c);
}

static void test_conflicting_endpoints(void **state)
{
	/* Two endpoints claim one address: the winner does not depend on arrival order. */
	for (int order = 0; order < 2; order++) {
		struct calc *c = calc_new("node1", false);
		struct br_object *x = wep("x", "node1", "calix", "10.244.1.9/32", NULL);
		struct br_object *y = wep("y", "node1", "caliy", "10.244.1.9/32", NULL);
		if (order) {
			put(c, y, "default", "y");
			put(c, x, "default", "x");
		} else {
			put(c, x, "default", "x");
			put(c, y, "default", "y");
		}
		assert_string_equal(route_str(c, "10.244.1.9/32"), "dev calix scope link");
		del(c, KIND_WORKLOADENDPOINT, "default", "x");
		assert_string_equal(route_str(c, "10.244.1.9/32"), "dev caliy scope link");
		calc_free(c);
	}
}

static void test_blocks_and_vxlan(void **state)
{
	struct calc *c = calc_new("node1", false);
	/* Updates in an awkward order: affinities before the pool and the nodes. */
	put(c, affinity("node1", "10.244.1.0/26", "confirmed"), "node1", "10.244.1.0-26");
	put(c, affinity("node1", "10.244.1.64/26", "pending"), "node1", "10.244.1.64-26");
	put(c, affinity("node2", "10.244.2.0/26", "confirmed"), "node2", "10.244.2.0-26");
	put(c, affinity("node3", "10.244.3.0/26", "confirmed"), "node3", "10.244.3.0-26");
	assert_int_equal(calc_desired(c)->entries[DESIRED_ROUTE].n, 0); /* no pool yet */
	put(c, pool("10.244.0.0/16", "Always", "Never"), NULL, "p");
	assert_string_equal(route_str(c, "10.244.1.0/26"), "blackhole");
	assert_null(route_str(c, "10.244.1.64/26")); /* pending is not ours yet */
	assert_null(route_str(c, "10.244.2.0/26"));  /* node2 unknown */
	put(c, node("node1", "192.168.100.11/24", "10.244.1.1"), NULL, "node1");
	put(c, node("node2", "192.168.100.12/24", "10.244.2.1"), NULL, "node2");
	put(c, node("node3", "192.168.200.13/24", NULL), NULL, "node3");
	assert_string_equal(route_str(c, "10.244.2.0/26"),
			    "dev vxlan.calico via 10.244.2.1 onlink");
	assert_null(route_str(c, "10.244.3.0/26")); /* node3 has no VTEP address */
	const struct desired *d = calc_desired(c);
	assert_true(d->vxlan.wanted);
	assert_int_equal(d->vxlan.vni, 4096);
	assert_int_equal(d->vxlan.port, 4789);
	char ip[IP_STRLEN];
	assert_string_equal(ip_str(&d->vxlan.local, ip), "192.168.100.11");
	assert_string_equal(ip_str(&d->vxlan.addr.ip, ip), "10.244.1.1");
	uint8_t mac[6];
	calc_vtep_mac("node1", AF_INET, mac);
	assert_memory_equal(d->vxlan.mac, mac, 6);
	assert_true(mac[0] & 0x02);
	const struct desired_item *n = desired_get(d, DESIRED_NEIGH, "vxlan.calico|10.244.2.1");
	assert_non_null(n);
	calc_vtep_mac("node2", AF_INET, mac);
	assert_memory_equal(n->neigh.mac, mac, 6);
	assert_non_null(
		desired_get(d, DESIRED_FDB, fdb_key("vxlan.calico", mac, "192.168.100.12")));

	/* node3 gets a VTEP: its block follows. */
	put(c, node("node3", "192.168.200.13/24", "10.244.3.1"), NULL, "node3");
	assert_string_equal(route_str(c, "10.244.3.0/26"),
			    "dev vxlan.calico via 10.244.3.1 onlink");

	/* CrossSubnet: only node3, in another subnet, is reached through the tunnel. */
	put(c, pool("10.244.0.0/16", "CrossSubnet", "Never"), NULL, "p");
	assert_null(route_str(c, "10.244.2.0/26")); /* same subnet: BIRD's plain route */
	assert_string_equal(route_str(c, "10.244.3.0/26"),
			    "dev vxlan.calico via 10.244.3.1 onlink");

	/* No encapsulation: no remote routes, no VXLAN device, blackholes stay. */
	put(c, pool("10.244.0.0/16", "Never", "Never"), NULL, "p");
	assert_null(route_str(c, "10.244.3.0/26"));
	assert_false(calc_desired(c)->vxlan.wanted);
	assert_string_equal(route_str(c, "10.244.1.0/26"), "blackhole");
	assert_null(desired_get(calc_desired(c), DESIRED_NEIGH, "vxlan.calico|10.244.2.1"));

	/* /32 blocks get no blackhole. */
	put(c, affinity("node1", "10.244.9.9/32", "confirmed"), "node1", "10.244.9.9-32");
	assert_null(route_str(c, "10.244.9.9/32"));
	/* The affinity goes: its blackhole goes. */
	del(c, KIND_BLOCKAFFINITY, "node1", "10.244.1.0-26");
	assert_null(route_str(c, "10.244.1.0/26"));
	calc_free(c);
}

static struct br_object *node_dual(const char *name, const char *ip, const char *ip6,
				   const char *vtep6)
{
	char buf[512];
	snprintf(buf, sizeof(buf),
		 "apiVersion: projectcalico.org/v3\nkind: Node\nmetadata: {name: %s}\n"
		 "spec: {bgp: {ipv4Address: %s, ipv6Address: '%s'}%s%s%s}\n",
		 name, ip, ip6, vtep6 ? ", ipv6VXLANTunnelAddr: '" : "", vtep6 ? vtep6 : "",
		 vtep6 ? "'" : "");
	return obj(buf);
}

static void test_vxlan_v6(void **state)
{
	struct calc *c = calc_new("node1", true);
	struct felix_config cfg;
	felix_config_defaults(&cfg);
	cfg.ipv6_support = true;
	cfg.vxlan_mtu_v6 = 1380;
	calc_set_config(c, &cfg);
	/* IPv4 is routed plainly (BGP), IPv6 goes through vxlan-v6.calico. */
	put(c, pool("10.244.0.0/16", "Never", "Never"), NULL, "p");
	put(c,
	    obj("apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: p6}\n"
		"spec: {cidr: 'fd00:10:244::/48', vxlanMode: CrossSubnet}\n"),
	    NULL, "p6");
	put(c, node_dual("node1", "192.168.100.11/24", "fd00:100::11/64", "fd00:10:244:0:1::"),
	    NULL, "node1");
	put(c, node_dual("node2", "192.168.100.12/24", "fd00:200::12/64", "fd00:10:244:0:2::"),
	    NULL, "node2");
	put(c, node_dual("node3", "192.168.100.13/24", "fd00:100::13/64", "fd00:10:244:0:3::"),
	    NULL, "node3");
	put(c, affinity("node2", "fd00:10:244:0:2::/122", "confirmed"), "node2", "b2");
	put(c, affinity("node3", "fd00:10:244:0:3::/122", "confirmed"), "node3", "b3");
	put(c, affinity("node1", "fd00:10:244:0:1::/122", "confirmed"), "node1", "b1");
	const struct desired *d = calc_desired(c);
	/* node2's IPv6 address is in another subnet, node3's in ours (the IPv4 ones agree) */
	assert_string_equal(route_str(c, "fd00:10:244:0:2::/122"),
			    "dev vxlan-v6.calico via fd00:10:244:0:2:: onlink");
	assert_null(route_str(c, "fd00:10:244:0:3::/122"));
	assert_string_equal(route_str(c, "fd00:10:244:0:1::/122"), "blackhole");
	assert_false(d->vxlan.wanted); /* no IPv4 pool uses VXLAN */
	assert_true(d->vxlan6.wanted);
	char ip[IP_STRLEN], cidr[CIDR_STRLEN];
	assert_string_equal(ip_str(&d->vxlan6.local, ip), "fd00:100::11");
	assert_string_equal(cidr_str(&d->vxlan6.addr, cidr), "fd00:10:244:0:1::/128");
	assert_int_equal(d->vxlan6.mtu, 1380);
	uint8_t mac[6], mac4[6];
	calc_vtep_mac("node1", AF_INET6, mac);
	calc_vtep_mac("node1", AF_INET, mac4);
	assert_memory_equal(d->vxlan6.mac, mac, 6);
	assert_memory_not_equal(mac, mac4, 6);
	assert_true((mac[0] & 0x03) == 0x02); /* unicast, locally administered */
	/* node2's VTEP: its MAC behind its tunnel address, and where to send that MAC */
	const struct desired_item *n =
		desired_get(d, DESIRED_NEIGH, "vxlan-v6.calico|fd00:10:244:0:2::");
	assert_non_null(n);
	calc_vtep_mac("node2", AF_INET6, mac);
	assert_memory_equal(n->neigh.mac, mac, 6);
	assert_non_null(
		desired_get(d, DESIRED_FDB, fdb_key("vxlan-v6.calico", mac, "fd00:200::12")));
	assert_null(desired_get(d, DESIRED_NEIGH, "vxlan.calico|fd00:10:244:0:2::"));

	/* Always: node3 too; a MAC the Node names wins over the derived one. */
	put(c,
	    obj("apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: p6}\n"
		"spec: {cidr: 'fd00:10:244::/48', vxlanMode: Always}\n"),
	    NULL, "p6");
	assert_string_equal(route_str(c, "fd00:10:244:0:3::/122"),
			    "dev vxlan-v6.calico via fd00:10:244:0:3:: onlink");
	put(c,
	    obj("apiVersion: projectcalico.org/v3\nkind: Node\nmetadata: {name: node3}\n"
		"spec: {bgp: {ipv6Address: 'fd00:100::13/64'}, ipv6VXLANTunnelAddr: "
		"'fd00:10:244:0:3::', vxlanTunnelMACAddrV6: '66:00:00:00:00:03'}\n"),
	    NULL, "node3");
	n = desired_get(d, DESIRED_NEIGH, "vxlan-v6.calico|fd00:10:244:0:3::");
	assert_non_null(n);
	assert_int_equal(n->neigh.mac[0], 0x66);
	assert_int_equal(n->neigh.mac[5], 0x03);
	assert_non_null(
		desired_get(d, DESIRED_FDB, "vxlan-v6.calico|66:00:00:00:00:03|fd00:100::13"));

	/* Without IPv6 support felix leaves IPv6 alone: no device, routes or VTEPs. */
	cfg.ipv6_support = false;
	calc_set_config(c, &cfg);
	assert_false(d->vxlan6.wanted);
	assert_null(route_str(c, "fd00:10:244:0:2::/122"));
	assert_null(desired_get(d, DESIRED_NEIGH, "vxlan-v6.calico|fd00:10:244:0:2::"));
	calc_free(c);
}

static void test_ipip(void **state)
{
	struct calc *c = calc_new("node1", false);
	put(c, pool("10.244.0.0/16", "Never", "CrossSubnet"), NULL, "p");
	put(c, node("node1", "192.168.100.11/24", NULL), NULL, "node1");
	put(c, node("node2", "192.168.100.12/24", NULL), NULL, "node2");
	put(c, node("node3", "192.168.200.13/24", NULL), NULL, "node3");
	put(c, affinity("node2", "10.244.2.0/26", "confirmed"), "node2", "10.244.2.0-26");
	put(c, affinity("node3", "10.244.3.0/26", "confirmed"), "node3", "10.244.3.0-26");
	assert_null(route_str(c, "10.244.2.0/26"));
	assert_string_equal(route_str(c, "10.244.3.0/26"), "dev tunl0 via 192.168.200.13 onlink");
	assert_true(calc_desired(c)->ipip.wanted);
	assert_string_equal(calc_desired(c)->ipip.wanted_by, "p");
	/* node3 moves into our subnet: no tunnel any more. */
	put(c, node("node3", "192.168.100.13/24", NULL), NULL, "node3");
	assert_null(route_str(c, "10.244.3.0/26"));
	/* We move to node3's old subnet instead: node2 now needs the tunnel. */
	put(c, node("node1", "192.168.200.11/24", NULL), NULL, "node1");
	assert_string_equal(route_str(c, "10.244.2.0/26"), "dev tunl0 via 192.168.100.12 onlink");
	calc_free(c);
}

static void test_config_changes_tunnels(void **state)
{
	struct calc *c = calc_new("node1", false);
	put(c, pool("10.244.0.0/16", "Always", "Never"), NULL, "p");
	put(c, node("node1", "192.168.100.11/24", "10.244.1.1"), NULL, "node1");
	calc_desired(c)->tunnels_dirty = false;
	struct felix_config cfg;
	felix_config_defaults(&cfg);
	cfg.vxlan_vni = 5000;
	cfg.vxlan_mtu = 1400;
	calc_set_config(c, &cfg);
	assert_true(calc_desired(c)->tunnels_dirty);
	assert_int_equal(calc_desired(c)->vxlan.vni, 5000);
	assert_int_equal(calc_desired(c)->vxlan.mtu, 1400);
	calc_free(c);
}

static void test_unchanged_update_is_not_dirty(void **state)
{
	struct calc *c = calc_new("node1", false);
	put(c, wep("a", "node1", "calia", "10.244.1.7/32", NULL), "default", "a");
	desired_clear_dirty(calc_desired(c), DESIRED_ROUTE);
	desired_clear_dirty(calc_desired(c), DESIRED_IFACE);
	/* A resync delivering the same endpoint again changes nothing. */
	put(c, wep("a", "node1", "calia", "10.244.1.7/32", NULL), "default", "a");
	assert_int_equal(calc_desired(c)->dirty[DESIRED_ROUTE].n, 0);
	assert_int_equal(calc_desired(c)->dirty[DESIRED_IFACE].n, 0);
	calc_free(c);
}

static size_t pol_endpoints(struct calc *c)
{
	struct pol_stats st;
	pol_stats(calc_policy(c), &st);
	return st.endpoints;
}

static void collect_notice(void *ctx, const struct notice *n)
{
	sb_addf(ctx, "%d %s\n", (int)n->level, n->text);
}

static struct strbuf notices_text;

/* The notices since the last call, one a line ("<level> <text>"). */
static char *notices_of(struct calc *c)
{
	sb_free(&notices_text);
	sb_init(&notices_text);
	calc_drain_notices(c, collect_notice, &notices_text);
	return notices_text.buf;
}

/*
 * The review's node takeover: a WorkloadEndpoint naming a host interface or
 * claiming more than its own addresses. Nothing of it reaches routing or
 * policy; a configuration that allows wider networks admits it again, and a
 * stricter one retracts it.
 */
static void test_wep_trust_gate(void **state)
{
	struct calc *c = calc_new("node1", false);
	/* The model refuses a default route outright: brindlectl apply stops it first. */
	struct br_object **objs;
	size_t n;
	struct model_errors errs = { 0 };
	const char *attack = "apiVersion: projectcalico.org/v3\nkind: WorkloadEndpoint\n"
			     "metadata: {name: x, namespace: default}\n"
			     "spec: {node: node1, interfaceName: eth0, ipNetworks: [0.0.0.0/0]}\n";
	assert_true(model_read("t", attack, strlen(attack), NULL, &objs, &n, &errs) < 0);
	assert_non_null(strstr(errs.v[0], "default route"));
	model_errors_clear(&errs);
	const char *lo =
		"apiVersion: projectcalico.org/v3\nkind: WorkloadEndpoint\n"
		"metadata: {name: x, namespace: default}\n"
		"spec: {node: node1, interfaceName: vxlan.calico, ipNetworks: [10.0.0.1]}\n";
	assert_true(model_read("t", lo, strlen(lo), NULL, &objs, &n, &errs) < 0);
	model_errors_clear(&errs);

	/* A host interface: refused whatever its networks. */
	put(c, wep("h", "node1", "eth0", "192.168.1.1/32", "0a:58:0a:f4:01:07"), "default", "h");
	assert_null(route_str(c, "192.168.1.1/32"));
	assert_null(desired_get(calc_desired(c), DESIRED_IFACE, "eth0"));
	assert_null(desired_get(calc_desired(c), DESIRED_NEIGH, "eth0|192.168.1.1"));
	assert_null(pol_endpoint_of_iface(calc_policy(c), "eth0"));
	assert_int_equal(pol_endpoints(c), 0);
	/* Said once, as an error naming the endpoint: the pure core queues it for the log. */
	char *said = notices_of(c);
	assert_non_null(strstr(said, "2 WorkloadEndpoint default/h refused: interface \"eth0\""));

	/* A workload interface with a network wider than a host route: refused whole. */
	put(c, wep("w", "node1", "caliw", "10.244.1.7/32, 10.0.0.0/8", NULL), "default", "w");
	assert_null(route_str(c, "10.244.1.7/32"));
	assert_null(route_str(c, "10.0.0.0/8"));
	assert_null(desired_get(calc_desired(c), DESIRED_IFACE, "caliw"));
	assert_null(pol_endpoint_of_iface(calc_policy(c), "caliw"));
	/* Another node's endpoint claiming a /16 fills no ip set either. */
	put(c, wep("r", "node2", "calir", "10.1.0.0/16", NULL), "default", "r");
	assert_int_equal(pol_endpoints(c), 0);
	/* An honest one next to them is programmed. */
	put(c, wep("a", "node1", "calia", "10.244.1.8/32", NULL), "default", "a");
	assert_string_equal(route_str(c, "10.244.1.8/32"), "dev calia scope link");
	assert_int_equal(pol_endpoints(c), 1);

	/* The operator allows /8 and wider-than-host networks: both come in. */
	struct felix_config cfg;
	felix_config_defaults(&cfg);
	cfg.wep_min_prefix_v4 = 8;
	calc_set_config(c, &cfg);
	assert_string_equal(route_str(c, "10.0.0.0/8"), "dev caliw scope link");
	assert_non_null(pol_endpoint_of_iface(calc_policy(c), "caliw"));
	assert_int_equal(pol_endpoints(c), 3);
	assert_null(route_str(c, "192.168.1.1/32")); /* eth0 never */

	assert_non_null(strstr(notices_of(c), "WorkloadEndpoint default/w is accepted now"));
	/* Back to host routes only: retracted again, from routing and from policy. */
	felix_config_defaults(&cfg);
	calc_set_config(c, &cfg);
	assert_null(route_str(c, "10.0.0.0/8"));
	assert_null(route_str(c, "10.244.1.7/32"));
	assert_null(pol_endpoint_of_iface(calc_policy(c), "caliw"));
	assert_int_equal(pol_endpoints(c), 1);

	/* A prefix that covers felix's own devices still cannot take them. */
	char why[300];
	struct br_workloadendpoint t = { .spec = { .node = "node1", .interface_name = "tunl0" } };
	snprintf(cfg.prefixes[0], sizeof(cfg.prefixes[0]), "tun");
	assert_true(calc_wep_refused(&cfg, &t, true, why, sizeof(why)));
	assert_non_null(strstr(why, "tunl0"));
	t.spec.interface_name = "tun5";
	assert_false(calc_wep_refused(&cfg, &t, true, why, sizeof(why)));

	/* Deleting the refused ones leaves nothing behind. */
	del(c, KIND_WORKLOADENDPOINT, "default", "h");
	del(c, KIND_WORKLOADENDPOINT, "default", "w");
	del(c, KIND_WORKLOADENDPOINT, "default", "r");
	assert_int_equal(calc_local_endpoints(c), 1);
	assert_int_equal(pol_endpoints(c), 1);
	sb_free(&notices_text);
	calc_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_local_endpoints),
		cmocka_unit_test(test_conflicting_endpoints),
		cmocka_unit_test(test_blocks_and_vxlan),
		cmocka_unit_test(test_vxlan_v6),
		cmocka_unit_test(test_ipip),
		cmocka_unit_test(test_config_changes_tunnels),
		cmocka_unit_test(test_unchanged_update_is_not_dirty),
		cmocka_unit_test(test_wep_trust_gate),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
