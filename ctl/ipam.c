/*
 * brindlectl ipam: what the block IPAM holds, whether it agrees with the
 * endpoints, and releasing by hand.
 *
 *   ipam show [--show-blocks]          per pool (and block): total, in use, free
 *   ipam check                         addresses without an endpoint, endpoints
 *                                      without an address, blocks of missing nodes,
 *                                      handles that hold nothing, claims left pending
 *   ipam release --ip A [--force]      free one address (refused while a live
 *                                      endpoint uses it, unless --force)
 *   ipam release --empty-blocks [--node N] [--grace SECONDS]
 *                                      drop the affinity of blocks empty for longer
 *                                      than the grace period (default 300 s)
 */
#include "ctl.h"

#include <brindle/sys/ipam.h>

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct state {
	struct br_object **pools, **blocks, **affs, **handles, **weps, **nodes;
	size_t n_pools, n_blocks, n_affs, n_handles, n_weps, n_nodes;
};

static void state_free(struct state *s)
{
	model_free_all(s->pools, s->n_pools);
	model_free_all(s->blocks, s->n_blocks);
	model_free_all(s->affs, s->n_affs);
	model_free_all(s->handles, s->n_handles);
	model_free_all(s->weps, s->n_weps);
	model_free_all(s->nodes, s->n_nodes);
}

static int load(struct ds *d, struct state *s, bool all)
{
	struct {
		enum br_kind_id k;
		struct br_object ***v;
		size_t *n;
		bool always;
	} what[] = {
		{ KIND_IPPOOL, &s->pools, &s->n_pools, true },
		{ KIND_IPAMBLOCK, &s->blocks, &s->n_blocks, true },
		{ KIND_BLOCKAFFINITY, &s->affs, &s->n_affs, false },
		{ KIND_IPAMHANDLE, &s->handles, &s->n_handles, false },
		{ KIND_WORKLOADENDPOINT, &s->weps, &s->n_weps, false },
		{ KIND_NODE, &s->nodes, &s->n_nodes, false },
	};
	for (size_t i = 0; i < ARRAY_SIZE(what); i++) {
		if (!all && !what[i].always)
			continue;
		if (ds_list(d, model_kind(what[i].k), NULL, what[i].v, what[i].n) < 0) {
			ctl_error("listing %s: %s", model_kind(what[i].k)->plural,
				  ds_last_error(d));
			return -1;
		}
	}
	return 0;
}

/* --- show ----------------------------------------------------------------------------------- */

struct row {
	const char *cols[6];
};

static void print_rows(const char *const *head, size_t ncol, struct row *rows, size_t n)
{
	size_t w[6] = { 0 };
	for (size_t c = 0; c < ncol; c++) {
		w[c] = strlen(head[c]);
		for (size_t i = 0; i < n; i++)
			w[c] = MAX(w[c], strlen(rows[i].cols[c]));
	}
	for (size_t c = 0; c < ncol; c++)
		printf("%-*s%s", c + 1 < ncol ? (int)w[c] : 0, head[c],
		       c + 1 < ncol ? "   " : "\n");
	for (size_t i = 0; i < n; i++)
		for (size_t c = 0; c < ncol; c++)
			printf("%-*s%s", c + 1 < ncol ? (int)w[c] : 0, rows[i].cols[c],
			       c + 1 < ncol ? "   " : "\n");
}

static char *count_pct(struct arena *a, uint64_t part, uint64_t total)
{
	return arena_printf(a, "%" PRIu64 " (%" PRIu64 "%%)", part,
			    total ? (part * 100 + total / 2) / total : 0);
}

static bool block_in_pool(const struct br_ippool *p, const struct br_cidr *bc)
{
	struct br_cidr pc;
	if (cidr_parse(p->spec.cidr, false, &pc) < 0)
		return false;
	cidr_mask(&pc);
	return cidr_contains(&pc, bc);
}

static int ipam_show(struct ctl *c, bool blocks)
{
	struct ds *d = ctl_ds(c);
	if (!d)
		return CTL_FAIL;
	struct state s = { 0 };
	if (load(d, &s, false) < 0) {
		state_free(&s);
		return CTL_FAIL;
	}
	struct arena *a = arena_new();
	/* A block shows under every pool that holds it: pools may overlap. */
	size_t max_rows = s.n_pools + 1;
	for (size_t i = 0; i < s.n_pools && blocks; i++)
		max_rows += s.n_blocks;
	struct row *rows = xcalloc(max_rows, sizeof(*rows));
	size_t n = 0;
	for (size_t i = 0; i < s.n_pools; i++) {
		const struct br_ippool *p = (const struct br_ippool *)s.pools[i];
		struct br_cidr pc;
		if (cidr_parse(p->spec.cidr, false, &pc) < 0)
			continue;
		unsigned host_bits = ip_bits(&pc.ip) - pc.len;
		uint64_t total = host_bits >= 63 ? UINT64_MAX : (uint64_t)1 << host_bits;
		uint64_t used = 0;
		size_t pool_row = n++;
		for (size_t k = 0; k < s.n_blocks; k++) {
			const struct br_ipamblock *b = (const struct br_ipamblock *)s.blocks[k];
			struct br_cidr bc;
			if (ipam_block_validate(b, &bc, NULL) < 0 || !block_in_pool(p, &bc))
				continue;
			used += ipam_block_used(b);
			if (!blocks)
				continue;
			char host[256];
			const char *node = ipam_block_host(b, host, sizeof(host));
			uint64_t cap = ipam_block_capacity(b);
			rows[n++] = (struct row){ {
				"Block",
				arena_strdup(a, b->spec.cidr),
				arena_strdup(a, node ? node : "(none)"),
				arena_printf(a, "%" PRIu64, cap),
				count_pct(a, ipam_block_used(b), cap),
				count_pct(a, ipam_block_free_count(b), cap),
			} };
		}
		rows[pool_row] = (struct row){ {
			p->spec.disabled ? "IP Pool (disabled)" : "IP Pool",
			p->spec.cidr,
			"",
			arena_printf(a, "%" PRIu64, total),
			count_pct(a, used, total),
			count_pct(a, total - used, total),
		} };
	}
	static const char *const head[] = { "GROUPING",	 "CIDR",       "NODE",
					    "IPS TOTAL", "IPS IN USE", "IPS FREE" };
	if (!s.n_pools)
		printf("No IP pools.\n");
	else if (blocks)
		print_rows(head, 6, rows, n);
	else {
		for (size_t i = 0; i < n; i++)
			memmove(&rows[i].cols[2], &rows[i].cols[3], 3 * sizeof(char *));
		static const char *const head5[] = { "GROUPING", "CIDR", "IPS TOTAL", "IPS IN USE",
						     "IPS FREE" };
		print_rows(head5, 5, rows, n);
	}
	free(rows);
	arena_free(a);
	state_free(&s);
	return CTL_OK;
}

/* --- check ---------------------------------------------------------------------------------- */

static const struct br_workloadendpoint *wep_with_ip(const struct state *s, const struct br_ip *ip)
{
	for (size_t i = 0; i < s->n_weps; i++) {
		const struct br_workloadendpoint *w =
			(const struct br_workloadendpoint *)s->weps[i];
		for (size_t k = 0; k < w->spec.n_ip_networks; k++) {
			struct br_cidr c;
			if (cidr_parse(w->spec.ip_networks[k], true, &c) == 0 &&
			    ip_equal(&c.ip, ip))
				return w;
		}
	}
	return NULL;
}

static bool node_exists(const struct state *s, const char *node)
{
	for (size_t i = 0; i < s->n_nodes; i++)
		if (streq(s->nodes[i]->meta.name, node))
			return true;
	return false;
}

static const struct br_ipamblock *block_holding(const struct state *s, const struct br_ip *ip,
						const char **handle)
{
	for (size_t i = 0; i < s->n_blocks; i++) {
		const struct br_ipamblock *b = (const struct br_ipamblock *)s->blocks[i];
		struct br_cidr bc;
		if (ipam_block_validate(b, &bc, NULL) < 0 || !cidr_contains_ip(&bc, ip))
			continue;
		*handle = ipam_block_handle_of(b, ip);
		return b;
	}
	*handle = NULL;
	return NULL;
}

static int ipam_check(struct ctl *c)
{
	struct ds *d = ctl_ds(c);
	if (!d)
		return CTL_FAIL;
	struct state s = { 0 };
	if (load(d, &s, true) < 0) {
		state_free(&s);
		return CTL_FAIL;
	}
	size_t problems = 0, allocated = 0;
	char ip[IP_STRLEN], host[256];
	printf("Checking %zu block(s), %zu handle(s), %zu endpoint(s), %zu node(s).\n", s.n_blocks,
	       s.n_handles, s.n_weps, s.n_nodes);
	for (size_t i = 0; i < s.n_blocks; i++) {
		const struct br_ipamblock *b = (const struct br_ipamblock *)s.blocks[i];
		struct strbuf why = STRBUF_INIT;
		sb_init(&why);
		if (ipam_block_validate(b, NULL, &why) < 0) {
			printf("damaged block: %s\n", sb_str(&why));
			problems++;
			sb_free(&why);
			continue;
		}
		sb_free(&why);
		const char *node = ipam_block_host(b, host, sizeof(host));
		if (node && !node_exists(&s, node)) {
			printf("block %s belongs to node %s, which does not exist\n", b->spec.cidr,
			       node);
			problems++;
		}
		for (size_t o = 0; o < ipam_block_capacity(b); o++) {
			struct br_ip addr;
			const struct br_ipam_attr *attr;
			if (!ipam_block_ordinal(b, o, &addr, &attr))
				continue;
			allocated++;
			if (!wep_with_ip(&s, &addr)) {
				printf("address %s (handle %s) has no endpoint\n",
				       ip_str(&addr, ip), attr->handle_id);
				problems++;
			}
		}
	}
	for (size_t i = 0; i < s.n_weps; i++) {
		const struct br_workloadendpoint *w = (const struct br_workloadendpoint *)s.weps[i];
		for (size_t k = 0; k < w->spec.n_ip_networks; k++) {
			struct br_cidr cidr;
			const char *handle;
			if (cidr_parse(w->spec.ip_networks[k], true, &cidr) < 0)
				continue;
			if (!block_holding(&s, &cidr.ip, &handle) || !handle) {
				printf("endpoint %s/%s has %s, which IPAM has not assigned\n",
				       w->o.meta.namespace, w->o.meta.name, w->spec.ip_networks[k]);
				problems++;
			} else if (w->spec.container_id &&
				   !str_has_suffix(handle, w->spec.container_id)) {
				printf("endpoint %s/%s has %s, which IPAM holds for handle %s\n",
				       w->o.meta.namespace, w->o.meta.name, w->spec.ip_networks[k],
				       handle);
				problems++;
			}
		}
	}
	for (size_t i = 0; i < s.n_handles; i++) {
		const struct br_ipamhandle *h = (const struct br_ipamhandle *)s.handles[i];
		if (streq(h->o.meta.name, IPAM_CLAIMS_MARKER))
			continue;
		size_t held = 0;
		for (size_t k = 0; k < s.n_blocks; k++) {
			const struct br_ipamblock *b = (const struct br_ipamblock *)s.blocks[k];
			if (ipam_block_validate(b, NULL, NULL) == 0)
				held += ipam_block_ips_of(b, h->spec.handle_id, NULL, 0);
		}
		if (!held) {
			printf("handle %s holds no address\n", h->spec.handle_id);
			problems++;
		}
	}
	for (size_t i = 0; i < s.n_affs; i++) {
		const struct br_blockaffinity *a = (const struct br_blockaffinity *)s.affs[i];
		if (!streq(a->spec.state, "confirmed")) {
			printf("affinity of node %s for %s is %s\n", a->spec.node, a->spec.cidr,
			       a->spec.state);
			problems++;
		}
		if (!node_exists(&s, a->spec.node)) {
			printf("node %s, which does not exist, has an affinity for %s\n",
			       a->spec.node, a->spec.cidr);
			problems++;
		}
	}
	printf("%zu address(es) allocated; %zu problem(s) found.\n", allocated, problems);
	state_free(&s);
	return problems ? CTL_FAIL : CTL_OK;
}

/* --- release -------------------------------------------------------------------------------- */

static int ipam_release_one(struct ctl *c, const char *text, bool force)
{
	struct br_ip ip;
	if (ip_parse(text, &ip) < 0) {
		ctl_error("\"%s\" is not an IP address", text);
		return CTL_USAGE;
	}
	struct ds *d = ctl_ds(c);
	if (!d)
		return CTL_FAIL;
	struct state s = { 0 };
	if (ds_list(d, model_kind(KIND_WORKLOADENDPOINT), NULL, &s.weps, &s.n_weps) < 0) {
		ctl_error("listing endpoints: %s", ds_last_error(d));
		return CTL_FAIL;
	}
	const struct br_workloadendpoint *w = wep_with_ip(&s, &ip);
	if (w && !force) {
		ctl_error("%s is used by endpoint %s/%s (container %s); use --force to release "
			  "it anyway",
			  text, w->o.meta.namespace, w->o.meta.name,
			  w->spec.container_id ? w->spec.container_id : "?");
		state_free(&s);
		return CTL_FAIL;
	}
	state_free(&s);
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	char *handle = NULL;
	int r = ipam_release_ip(d, &ip, NULL, time(NULL), &handle, &err);
	if (r < 0) {
		ctl_error("%s", sb_str(&err));
		sb_free(&err);
		return CTL_FAIL;
	}
	printf("Released %s (handle %s)\n", text, handle);
	free(handle);
	sb_free(&err);
	return CTL_OK;
}

static int ipam_release_blocks(struct ctl *c, const char *node, int64_t grace)
{
	struct ds *d = ctl_ds(c);
	if (!d)
		return CTL_FAIL;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	struct ipam_sweep s = { .node = node, .now = time(NULL), .grace_s = grace };
	struct ipam_swept n;
	int r = ipam_release_empty_blocks(d, &s, &n, &err);
	if (r < 0) {
		ctl_error("%s", sb_str(&err));
		sb_free(&err);
		return CTL_FAIL;
	}
	sb_free(&err);
	printf("Released %zu empty block(s) and %zu orphan block(s); settled %zu pending "
	       "claim(s)\n",
	       n.empty, n.orphans, n.claims);
	return CTL_OK;
}

static void ipam_usage(FILE *f)
{
	fprintf(f, "Usage:\n"
		   "  brindlectl ipam show [--show-blocks]\n"
		   "  brindlectl ipam check\n"
		   "  brindlectl ipam release --ip ADDRESS [--force]\n"
		   "  brindlectl ipam release --empty-blocks [--node NODE] [--grace SECONDS]\n");
}

int cmd_ipam(struct ctl *c, int argc, char **argv)
{
	if (argc < 2) {
		ipam_usage(stderr);
		return CTL_USAGE;
	}
	const char *sub = argv[1];
	bool show_blocks = false, force = false, empty = false;
	const char *ip = NULL, *node = NULL, *grace = NULL;
	struct ctl_args a = { argc, argv, 2 };
	for (; a.i < argc; a.i++) {
		bool bad = false;
		if (ctl_flag_bool(&a, "--show-blocks", NULL))
			show_blocks = true;
		else if (ctl_flag_bool(&a, "--force", NULL))
			force = true;
		else if (ctl_flag_bool(&a, "--empty-blocks", NULL))
			empty = true;
		else if (ctl_flag_value(&a, "--ip", NULL, &ip, &bad) ||
			 ctl_flag_value(&a, "--node", NULL, &node, &bad) ||
			 ctl_flag_value(&a, "--grace", NULL, &grace, &bad)) {
			if (bad)
				return CTL_USAGE;
		} else if (streq(argv[a.i], "-h") || streq(argv[a.i], "--help")) {
			ipam_usage(stdout);
			return CTL_OK;
		} else {
			ctl_error("ipam %s: unexpected argument \"%s\"", sub, argv[a.i]);
			return CTL_USAGE;
		}
	}
	if (streq(sub, "show"))
		return ipam_show(c, show_blocks);
	if (streq(sub, "check"))
		return ipam_check(c);
	if (streq(sub, "release")) {
		if (ip && !empty)
			return ipam_release_one(c, ip, force);
		if (empty && !ip) {
			char *end = NULL;
			long long g = grace ? strtoll(grace, &end, 10) : IPAM_DEFAULT_EMPTY_GRACE_S;
			if (grace && (*end || g < 0)) {
				ctl_error("--grace takes a number of seconds");
				return CTL_USAGE;
			}
			return ipam_release_blocks(c, node, g);
		}
		ctl_error("ipam release needs --ip ADDRESS or --empty-blocks");
		return CTL_USAGE;
	}
	ctl_error("unknown ipam command \"%s\"", sub);
	ipam_usage(stderr);
	return CTL_USAGE;
}
