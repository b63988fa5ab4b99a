/* IPAM garbage collection: the decision (ipam_gc.h). */
#include <brindle/core/ipam_gc.h>
#include <brindle/sys/ipam.h>

#include <stdlib.h>
#include <string.h>

const char *ipam_gc_reason(enum gc_reason r)
{
	static const char *const names[] = {
		[GC_POD_GONE] = "pod-gone",
		[GC_POD_MOVED] = "pod-moved",
		[GC_IP_NOT_POD] = "ip-not-pod",
		[GC_TUNNEL_NODE_GONE] = "tunnel-node-gone",
	};
	return names[r];
}

struct pod_ref {
	const char *key; /* "ns/name" */
	const struct gc_pod *pod;
};

static int by_key(const void *pa, const void *pb)
{
	return strcmp(((const struct pod_ref *)pa)->key, ((const struct pod_ref *)pb)->key);
}

static int by_str(const void *pa, const void *pb)
{
	return strcmp(*(const char *const *)pa, *(const char *const *)pb);
}

static bool node_exists(const char *const *nodes, size_t n, const char *node)
{
	return node && bsearch(&node, nodes, n, sizeof(*nodes), by_str);
}

/* The node of a tunnel address, or NULL when @attr is not one. */
static const char *tunnel_node(const struct br_ipam_attr *attr)
{
	const char *type = labels_get(&attr->secondary, "type");
	if (type && strstr(type, "TunnelAddress"))
		return labels_get(&attr->secondary, IPAM_ATTR_NODE);
	static const char *const prefixes[] = { "ipip-tunnel-addr-", "vxlan-tunnel-addr-",
						"vxlan-v6-tunnel-addr-", "wireguard-tunnel-addr-",
						"wireguard-v6-tunnel-addr-" };
	for (size_t i = 0; attr->handle_id && i < ARRAY_SIZE(prefixes); i++)
		if (str_has_prefix(attr->handle_id, prefixes[i]))
			return attr->handle_id + strlen(prefixes[i]);
	return NULL;
}

void ipam_gc_scan(struct arena *a, const struct gc_input *in, struct gc_leak **out, size_t *n)
{
	struct pod_ref *pods = arena_new_array(a, struct pod_ref, in->n_pods + 1);
	for (size_t i = 0; i < in->n_pods; i++)
		pods[i] = (struct pod_ref){
			arena_printf(a, "%s/%s", in->pods[i].ns, in->pods[i].name), &in->pods[i]
		};
	qsort(pods, in->n_pods, sizeof(*pods), by_key);
	const char **nodes = arena_new_array(a, const char *, in->n_nodes + 1);
	memcpy(nodes, in->nodes, in->n_nodes * sizeof(*nodes));
	qsort(nodes, in->n_nodes, sizeof(*nodes), by_str);

	size_t cap = 16, k = 0;
	struct gc_leak *v = arena_new_array(a, struct gc_leak, cap);
	for (size_t b = 0; b < in->n_blocks; b++) {
		const struct br_ipamblock *blk = in->blocks[b];
		for (size_t o = 0; o < blk->spec.allocations.n; o++) {
			struct br_ip ip;
			const struct br_ipam_attr *attr;
			if (!ipam_block_ordinal(blk, o, &ip, &attr) || !attr)
				continue;
			struct gc_leak l = { .ip = ip, .handle = attr->handle_id };
			const char *tnode = tunnel_node(attr);
			const char *ns = labels_get(&attr->secondary, IPAM_ATTR_NAMESPACE);
			const char *pod = labels_get(&attr->secondary, IPAM_ATTR_POD);
			l.node = labels_get(&attr->secondary, IPAM_ATTR_NODE);
			if (tnode) {
				if (node_exists(nodes, in->n_nodes, tnode))
					continue;
				l.why = GC_TUNNEL_NODE_GONE;
				l.owner = tnode;
				l.node = tnode;
			} else if (ns && pod && *ns && *pod) {
				struct pod_ref key = { arena_printf(a, "%s/%s", ns, pod), NULL };
				const struct pod_ref *p =
					bsearch(&key, pods, in->n_pods, sizeof(*pods), by_key);
				l.owner = key.key;
				if (!p) {
					l.why = GC_POD_GONE;
				} else if (l.node && p->pod->node && *p->pod->node &&
					   !streq(l.node, p->pod->node)) {
					l.why = GC_POD_MOVED;
				} else {
					bool listed = p->pod->n_ips == 0;
					for (size_t j = 0; j < p->pod->n_ips && !listed; j++)
						listed = ip_equal(&p->pod->ips[j], &ip);
					if (listed)
						continue;
					l.why = GC_IP_NOT_POD;
				}
			} else {
				continue; /* no owner we can judge */
			}
			l.node_gone = !node_exists(nodes, in->n_nodes, l.node);
			if (k == cap) {
				struct gc_leak *w = arena_new_array(a, struct gc_leak, cap * 2);
				memcpy(w, v, cap * sizeof(*v));
				v = w;
				cap *= 2;
			}
			v[k++] = l;
		}
	}
	*out = v;
	*n = k;
}
