/*
 * brindlectl lab export-clab: a lab topology as a containerlab topology.
 * Pure: the document is built as a jv tree and written with yaml_write, so
 * every value is quoted as a YAML reader needs. What each node does is
 * carried in environment variables that lab/clab-entrypoint.sh reads:
 *
 *   etcd    BRINDLE_ROLE=etcd, BRINDLE_ETCD_LISTEN, BRINDLE_RESOURCES (YAML)
 *   fabric  BRINDLE_ROLE=fabric, BRINDLE_BRIDGES ("brI GATEWAY/LEN IFACE...; ...")
 *   node    BRINDLE_ROLE=node, NODENAME, BRINDLE_ETCD_ENDPOINTS, BRINDLE_ADDRESS,
 *           BRINDLE_GATEWAY, BRINDLE_SERVE ("PROTO:PORT,..."), BRINDLE_PODS
 *           ("NS/POD IP LABELS PORTS SERVE; ...": LABELS "k=v,...", PORTS
 *           "NAME:PROTO:PORT,...", SERVE "PROTO:PORT,...", "-" for an empty
 *           field, IP "-" for any, "host" for a hostNetwork pod) and felix's
 *           own FELIX_* settings.
 *
 * Interfaces: a node's uplink is eth1 (eth0 is containerlab's management
 * network), the fabric's end of it n<i> as in the lab's fabric namespace.
 */
#include "clab.h"

#include <brindle/core/json.h>
#include <brindle/core/jv.h>
#include <brindle/core/net.h>
#include <brindle/core/yaml.h>

#include <errno.h>
#include <string.h>

static const char *ipstr(struct arena *a, const struct br_ip *ip)
{
	char buf[IP_STRLEN];
	return arena_strdup(a, ip_str(ip, buf));
}

static void put(struct arena *a, struct jv *obj, const char *key, const char *value)
{
	jv_add(a, obj, key, jv_string(a, value));
}

/* "PROTO:PORT,..." (with "NAME:" in front for declared ports), "-" when empty. */
static const char *ports_field(struct arena *a, const struct lab_port *v, size_t n, bool named)
{
	struct strbuf sb = STRBUF_INIT;
	sb_init(&sb);
	for (size_t i = 0; i < n; i++) {
		sb_adds(&sb, i ? "," : "");
		if (named && v[i].name)
			sb_addf(&sb, "%s:", v[i].name);
		else if (named)
			sb_adds(&sb, "-:");
		sb_addf(&sb, "%s:%u", lab_proto_name(v[i].proto), v[i].port);
	}
	const char *s = arena_strdup(a, n ? sb_str(&sb) : "-");
	sb_free(&sb);
	return s;
}

static const char *pods_field(struct arena *a, const struct lab_topology *t, size_t node)
{
	struct strbuf sb = STRBUF_INIT;
	sb_init(&sb);
	for (size_t i = 0; i < t->n_pods; i++) {
		const struct lab_pod *p = &t->pods[i];
		if (p->node != node)
			continue;
		sb_addf(&sb, "%s%s/%s %s ", sb.len ? "; " : "", p->namespace, p->name,
			p->host_network ? "host"
			: p->has_ip	? ipstr(a, &p->ip)
					: "-");
		for (size_t k = 0; k < p->labels.n; k++)
			sb_addf(&sb, "%s%s=%s", k ? "," : "", p->labels.v[k].key,
				p->labels.v[k].value);
		sb_addf(&sb, "%s %s %s", p->labels.n ? "" : "-",
			ports_field(a, p->ports, p->n_ports, true),
			ports_field(a, p->serve, p->n_serve, false));
	}
	const char *s = arena_strdup(a, sb_str(&sb));
	sb_free(&sb);
	return s;
}

static struct jv *clab_node(struct arena *a, const char *image, const char *role,
			    const char *mgmt_ip)
{
	struct jv *n = jv_object(a), *env = jv_object(a), *binds = jv_array(a);
	put(a, n, "kind", "linux");
	put(a, n, "image", image);
	put(a, n, "entrypoint", LAB_CLAB_ENTRYPOINT);
	put(a, n, "mgmt-ipv4", mgmt_ip);
	/* iptables and ipset may need to load modules of the host's kernel */
	jv_push(a, binds, jv_string(a, "/lib/modules:/lib/modules:ro"));
	jv_add(a, n, "binds", binds);
	put(a, env, "BRINDLE_ROLE", role);
	jv_add(a, n, "env", env);
	return n;
}

int lab_clab_export(struct arena *a, const struct lab_topology *t, const struct lab_clab_options *o,
		    struct strbuf *out, struct strbuf *err)
{
	const char *image = o && o->image ? o->image : LAB_CLAB_IMAGE;
	const char *mgmt = o && o->mgmt_subnet ? o->mgmt_subnet : LAB_CLAB_MGMT_SUBNET;
	if (t->n_externals || t->n_peers || t->kubernetes) {
		sb_addf(err, "%s not exported yet",
			t->kubernetes	 ? "datastore: kubernetes is"
			: t->n_externals ? "externalHosts are"
					 : "bgpPeers are");
		return -EINVAL;
	}
	for (size_t i = 0; i < t->n_nodes; i++)
		if (streq(t->nodes[i].name, "etcd") || streq(t->nodes[i].name, "fabric")) {
			sb_addf(err, "nodes[%zu]: \"%s\" is the name of a node the export adds", i,
				t->nodes[i].name);
			return -EINVAL;
		}
	struct br_cidr m;
	if (cidr_parse(mgmt, false, &m) < 0 || ip_bits(&m.ip) != 32 || !cidr_is_network(&m)) {
		sb_addf(err, "management subnet \"%s\" is not an IPv4 network", mgmt);
		return -EINVAL;
	}
	/* etcd .2, fabric .3, nodes from .10; the last address is the broadcast */
	if (m.len > 30 || (1ull << (32 - m.len)) < 10 + t->n_nodes + 1) {
		sb_addf(err, "management subnet %s has no room for %zu nodes", mgmt, t->n_nodes);
		return -EINVAL;
	}
	char cb[CIDR_STRLEN];
	struct br_ip etcd_ip = ip_add(&m.ip, 2), fabric_ip = ip_add(&m.ip, 3);
	const char *etcd_ep = arena_printf(a, "http://%s:2379", ipstr(a, &etcd_ip));

	struct jv *doc = jv_object(a), *mg = jv_object(a), *topo = jv_object(a);
	struct jv *nodes = jv_object(a), *links = jv_array(a);
	put(a, doc, "name", t->name);
	put(a, mg, "network", arena_printf(a, "brindle-%s", t->name));
	put(a, mg, "ipv4-subnet", cidr_str(&m, cb));
	jv_add(a, doc, "mgmt", mg);

	struct jv *n = clab_node(a, image, "etcd", ipstr(a, &etcd_ip));
	struct jv *env = jv_get(n, "env");
	put(a, env, "BRINDLE_ETCD_LISTEN", etcd_ep);
	struct strbuf res = STRBUF_INIT;
	sb_init(&res);
	lab_resources_yaml(t, &res);
	put(a, env, "BRINDLE_RESOURCES", sb_str(&res));
	sb_free(&res);
	jv_add(a, nodes, "etcd", n);

	struct strbuf bridges = STRBUF_INIT;
	sb_init(&bridges);
	for (size_t s = 0; s < t->n_subnets; s++) {
		sb_addf(&bridges, "%sbr%zu %s/%u", s ? "; " : "", s,
			ipstr(a, &t->subnets[s].gateway), t->subnets[s].cidr.len);
		for (size_t i = 0; i < t->n_nodes; i++)
			if (t->nodes[i].subnet == s)
				sb_addf(&bridges, " n%zu", i);
	}
	n = clab_node(a, image, "fabric", ipstr(a, &fabric_ip));
	put(a, jv_get(n, "env"), "BRINDLE_BRIDGES", sb_str(&bridges));
	sb_free(&bridges);
	jv_add(a, nodes, "fabric", n);

	for (size_t i = 0; i < t->n_nodes; i++) {
		const struct lab_node *ln = &t->nodes[i];
		const struct lab_subnet *s = &t->subnets[ln->subnet];
		struct br_ip mip = ip_add(&m.ip, 10 + i);
		n = clab_node(a, image, "node", ipstr(a, &mip));
		env = jv_get(n, "env");
		put(a, env, "NODENAME", ln->name);
		put(a, env, "BRINDLE_ETCD_ENDPOINTS", etcd_ep);
		put(a, env, "BRINDLE_ADDRESS",
		    arena_printf(a, "%s/%u", ipstr(a, &ln->ip), s->cidr.len));
		put(a, env, "BRINDLE_GATEWAY", ipstr(a, &s->gateway));
		put(a, env, "BRINDLE_SERVE", ports_field(a, ln->serve, ln->n_serve, false));
		put(a, env, "BRINDLE_PODS", pods_field(a, t, i));
		put(a, env, "FELIX_PROMETHEUSMETRICSENABLED", "true");
		put(a, env, "FELIX_DEFAULTENDPOINTTOHOSTACTION", "Accept");
		jv_add(a, nodes, ln->name, n);

		struct jv *link = jv_object(a), *ends = jv_array(a);
		jv_push(a, ends, jv_string(a, arena_printf(a, "%s:eth1", ln->name)));
		jv_push(a, ends, jv_string(a, arena_printf(a, "fabric:n%zu", i)));
		jv_add(a, link, "endpoints", ends);
		jv_push(a, links, link);
	}
	jv_add(a, topo, "nodes", nodes);
	jv_add(a, topo, "links", links);
	jv_add(a, doc, "topology", topo);

	sb_addf(out,
		"# containerlab topology of Brindle lab \"%s\", written by brindlectl lab "
		"export-clab.\n"
		"# Build the node image (scripts/image), load it (docker load -i), then:\n"
		"# containerlab deploy -t THIS_FILE\n",
		t->name);
	yaml_write(out, doc);
	return 0;
}
