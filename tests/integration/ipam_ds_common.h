/*
 * What the IPAM datastore tests share (test_ipam_ds.c: assigning; test_ipam_repair.c:
 * releases, repairs and forced races): the datastore to test against (a fresh etcd per test,
 * or the Kubernetes API when BRINDLE_TEST_KUBECONFIG names an admin kubeconfig with Brindle's
 * CRDs: tests/kube/ipam_kdd.sh runs both that way), the fixtures, and the invariants every
 * test ends with. Each test program has its own copy: functions are static inline.
 */
#ifndef BRINDLE_TEST_IPAM_DS_COMMON_H
#define BRINDLE_TEST_IPAM_DS_COMMON_H

#include "harness.h"
#include "etcd_harness.h"

#include <brindle/core/arena.h>
#include <brindle/core/labels.h>
#include <brindle/sys/ds.h>
#include <brindle/sys/ipam.h>
#include <brindle/sys/kube_client.h>
#include <brindle/sys/kube_conn.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static struct etcd_proc *proc;
static const char *kubeconfig; /* BRINDLE_TEST_KUBECONFIG: the Kubernetes API instead */

static inline void wipe(struct ds *d);
static inline void add_node_labelled(struct ds *d, const char *name, const char *label);

static inline int connect_ds(long timeout_ms, struct ds **out, struct strbuf *err)
{
	const char *ep = proc ? etcd_proc_endpoint(proc) : NULL;
	struct ds_config cfg = { .type = "etcdv3",
				 .etcd_endpoints = &ep,
				 .n_etcd_endpoints = 1,
				 .timeout_ms = timeout_ms };
	if (kubeconfig)
		cfg = (struct ds_config){ .type = "kubernetes",
					  .kubeconfig = kubeconfig,
					  .timeout_ms = timeout_ms };
	return ds_open(&cfg, out, err);
}

static inline struct ds *open_ds(void)
{
	struct ds *d;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	if (connect_ds(3000, &d, &err) < 0)
		fail_msg("ds_open: %s", sb_str(&err));
	sb_free(&err);
	return d;
}

/* One admin request to the Kubernetes API (core Nodes, which the datastore does not write). */
static inline int kube_admin(const char *method, const char *path, const char *body)
{
	struct kube_conn conn;
	struct kube_client *c = NULL;
	struct strbuf err = STRBUF_INIT, b = STRBUF_INIT;
	sb_init(&err);
	sb_init(&b);
	if (kube_conn_load(kubeconfig, &conn, &err) < 0 ||
	    kube_client_new(NULL, conn.server, &conn.auth, 5000, &c, &err) < 0)
		fail_msg("%s: %s", kubeconfig, sb_str(&err));
	if (body)
		sb_adds(&b, body);
	int r = kube_request(c, method, path, NULL, body ? &b : NULL, NULL);
	if (r < 0 && r != -EEXIST && r != -ENOENT)
		fail_msg("%s %s: %s", method, path, kube_last_error(c));
	kube_client_free(c);
	kube_conn_free(&conn);
	sb_free(&err);
	sb_free(&b);
	return r;
}

static inline void apply(struct ds *d, const char *yaml)
{
	struct br_object **objs;
	size_t n;
	struct model_errors errs = { 0 };
	if (model_read("t", yaml, strlen(yaml), NULL, &objs, &n, &errs) < 0)
		fail_msg("bad test input: %s", errs.n ? errs.v[0] : "");
	for (size_t i = 0; i < n; i++) {
		bool created, changed;
		if (ds_apply(d, objs[i], &created, &changed) < 0)
			fail_msg("apply: %s", ds_last_error(d));
	}
	model_free_all(objs, n);
}

/*
 * Pools as the datastore may hold them: overlapping, or with a blockSize changed
 * under allocated blocks (written before Brindle refused both, or by a
 * migration), so IPAM's handling of them is tested.
 */
static inline void add_pool(struct ds *d, const char *name, const char *cidr, int bs,
			    const char *extra)
{
	ds_keep_pools(d, true);
	char buf[512];
	snprintf(buf, sizeof(buf),
		 "apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: %s}\n"
		 "spec: {cidr: %s, blockSize: %d%s%s}\n",
		 name, cidr, bs, extra ? ", " : "", extra ? extra : "");
	apply(d, buf);
}

static inline int assign(struct ds *d, const char *node, const char *handle, struct br_ip *ip,
			 struct strbuf *err)
{
	struct ipam_request req = { .handle = handle, .node = node, .now = time(NULL) };
	struct ipam_assigned out;
	sb_reset(err);
	int r = ipam_assign(d, &req, &out, err);
	if (r == 0) {
		assert_int_equal(out.n, 1);
		*ip = out.ips[0];
	}
	return r;
}

static inline const char *addr_text(const struct br_ip *ip)
{
	static char buf[8][IP_STRLEN];
	static int i;
	return ip_str(ip, buf[i++ % 8]);
}

static inline struct br_blockaffinity *get_aff(struct ds *d, const char *node, const char *block)
{
	struct br_object *o;
	int r = ds_get(d, model_kind(KIND_BLOCKAFFINITY), node, block, &o);
	return r == 0 ? (struct br_blockaffinity *)o : NULL;
}

static inline struct br_ipamblock *get_block(struct ds *d, const char *name)
{
	struct br_object *o;
	int r = ds_get(d, model_kind(KIND_IPAMBLOCK), NULL, name, &o);
	return r == 0 ? (struct br_ipamblock *)o : NULL;
}

static inline int setup(void **state)
{
	if (!kubeconfig)
		return etcd_proc_start(NULL, &proc) < 0 ? -1 : 0;
	struct ds *d = open_ds();
	wipe(d);
	ds_close(d);
	return 0;
}

static inline int teardown(void **state)
{
	etcd_proc_destroy(proc);
	proc = NULL;
	return 0;
}

static inline struct br_object *get_obj(struct ds *d, enum br_kind_id k, const char *scope,
					const char *name)
{
	struct br_object *o;
	return ds_get(d, model_kind(k), scope, name, &o) == 0 ? o : NULL;
}

/* What ipam_release_empty_blocks does for brindlectl (@node NULL: all) or a node's DEL. */
static inline size_t sweep(struct ds *d, const char *node, bool by_node, int64_t now, int64_t grace,
			   struct ipam_swept *out)
{
	struct ipam_sweep s = {
		.node = node, .by_node = by_node, .now = now, .grace_s = grace, .timeout_ms = 5000
	};
	struct ipam_swept n;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	if (ipam_release_empty_blocks(d, &s, &n, &err) < 0)
		fail_msg("sweep: %s", sb_str(&err));
	sb_free(&err);
	if (out)
		*out = n;
	return n.empty + n.orphans + n.claims;
}

static inline int assign_in(struct ds *d, const char *node, const char *handle, const char *pool,
			    struct br_ip *ip, struct strbuf *err)
{
	const char *pools[] = { pool };
	struct ipam_request req = { .handle = handle,
				    .node = node,
				    .pools = pool ? pools : NULL,
				    .n_pools = pool ? 1 : 0,
				    .now = time(NULL),
				    .timeout_ms = 5000 };
	struct ipam_assigned out;
	sb_reset(err);
	int r = ipam_assign(d, &req, &out, err);
	if (r == 0)
		*ip = out.ips[0];
	return r;
}

/*
 * The datastore after every operation finished: each block is backed by a
 * confirmed affinity of its node (no orphan) and each confirmed affinity by
 * its block, no two blocks overlap, no address is held twice, no claim is
 * left half-done (a pending affinity is allowed only for a block another
 * node won), and every handle leads to exactly the addresses it holds.
 */
static inline void check_invariants(struct ds *d, const char *when)
{
	struct br_object **blocks, **affs, **handles;
	size_t nb, na, nh;
	assert_int_equal(ds_list(d, model_kind(KIND_IPAMBLOCK), NULL, &blocks, &nb), 0);
	assert_int_equal(ds_list(d, model_kind(KIND_BLOCKAFFINITY), NULL, &affs, &na), 0);
	assert_int_equal(ds_list(d, model_kind(KIND_IPAMHANDLE), NULL, &handles, &nh), 0);
	struct br_cidr *cidrs = xcalloc(nb + 1, sizeof(*cidrs));
	char host[256];
	for (size_t i = 0; i < nb; i++) {
		struct br_ipamblock *b = (struct br_ipamblock *)blocks[i];
		assert_int_equal(ipam_block_validate(b, &cidrs[i], NULL), 0);
		const char *node = ipam_block_host(b, host, sizeof(host));
		struct br_blockaffinity *a = node ? get_aff(d, node, b->o.meta.name) : NULL;
		if (!a || !streq(a->spec.state, "confirmed"))
			fail_msg("%s: block %s of node %s has %s affinity (an orphan)", when,
				 b->spec.cidr, node ? node : "(none)", a ? a->spec.state : "no");
		model_free(&a->o);
	}
	struct ipam_pair *pairs;
	size_t np = ipam_overlaps(cidrs, nb, &pairs);
	if (np)
		fail_msg("%s: blocks %s and %s overlap", when,
			 ((struct br_ipamblock *)blocks[pairs[0].i])->spec.cidr,
			 ((struct br_ipamblock *)blocks[pairs[0].j])->spec.cidr);
	free(pairs);
	for (size_t i = 0; i < na; i++) {
		struct br_blockaffinity *a = (struct br_blockaffinity *)affs[i];
		struct br_ipamblock *b = get_block(d, a->o.meta.name);
		const char *owner = b ? ipam_block_host(b, host, sizeof(host)) : NULL;
		if (streq(a->spec.state, "pending") ? !owner || streq(owner, a->spec.node)
						    : !streq(owner, a->spec.node))
			fail_msg("%s: affinity of %s for %s is %s, block %s", when, a->spec.node,
				 a->o.meta.name, a->spec.state, owner ? owner : "missing");
		model_free(b ? &b->o : NULL);
	}
	/* Every allocated address once; each handle finds its own through its blocks. */
	size_t total = 0, via_handles = 0;
	struct br_ip *all = NULL;
	for (size_t i = 0; i < nb; i++) {
		struct br_ipamblock *b = (struct br_ipamblock *)blocks[i];
		for (size_t o = 0; o < ipam_block_capacity(b); o++) {
			struct br_ip ip;
			if (!ipam_block_ordinal(b, o, &ip, NULL))
				continue;
			for (size_t k = 0; k < total; k++)
				if (ip_equal(&all[k], &ip))
					fail_msg("%s: %s is held twice", when, addr_text(&ip));
			all = xrealloc(all, (total + 1) * sizeof(*all));
			all[total++] = ip;
		}
	}
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	for (size_t i = 0; i < nh; i++) {
		if (streq(handles[i]->meta.name, IPAM_CLAIMS_MARKER))
			continue;
		struct br_ip held[16];
		size_t n;
		assert_int_equal(ipam_handle_ips(d, handles[i]->meta.name, held, 16, &n, &err), 0);
		if (!n)
			fail_msg("%s: handle %s holds nothing", when, handles[i]->meta.name);
		via_handles += n;
	}
	if (via_handles != total)
		fail_msg("%s: %zu addresses held, %zu through handles", when, total, via_handles);
	sb_free(&err);
	free(all);
	free(cidrs);
	model_free_all(blocks, nb);
	model_free_all(affs, na);
	model_free_all(handles, nh);
}

/* A Node with one label (@label "key: value", or NULL); a core Node on Kubernetes. */
static inline void add_node_labelled(struct ds *d, const char *name, const char *label)
{
	char buf[256], k[64] = "", v[64] = "";
	if (label && sscanf(label, "%63[^:]: %63s", k, v) != 2)
		fail_msg("bad test label %s", label);
	if (kubeconfig) {
		snprintf(buf, sizeof(buf),
			 "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\","
			 "\"labels\":{%s%s%s%s%s}}}",
			 name, label ? "\"" : "", k, label ? "\":\"" : "", v, label ? "\"" : "");
		kube_admin("POST", "/api/v1/nodes", buf);
		return;
	}
	snprintf(
		buf, sizeof(buf),
		"apiVersion: projectcalico.org/v3\nkind: Node\nmetadata: {name: %s, labels: {%s}}\n"
		"spec: {}\n",
		name, label ? label : "");
	apply(d, buf);
}

static inline void add_node(struct ds *d, const char *name)
{
	add_node_labelled(d, name, NULL);
}

/* Everything IPAM and the pools gone, for the next interleaving. */
static inline void wipe(struct ds *d)
{
	static const enum br_kind_id kinds[] = { KIND_IPAMBLOCK,  KIND_BLOCKAFFINITY,
						 KIND_IPAMHANDLE, KIND_IPPOOL,
						 KIND_NODE,	  KIND_IPAMCONFIGURATION };
	for (size_t k = 0; k < ARRAY_SIZE(kinds); k++) {
		struct br_object **v;
		size_t n;
		assert_int_equal(ds_list(d, model_kind(kinds[k]), NULL, &v, &n), 0);
		for (size_t i = 0; i < n; i++) {
			const char *scope = kinds[k] == KIND_BLOCKAFFINITY
						    ? ((struct br_blockaffinity *)v[i])->spec.node
						    : NULL;
			if (kubeconfig && kinds[k] == KIND_NODE) {
				char path[300];
				snprintf(path, sizeof(path), "/api/v1/nodes/%s", v[i]->meta.name);
				kube_admin("DELETE", path, NULL);
				continue;
			}
			assert_int_equal(ds_delete(d, v[i]->kind, scope, v[i]->meta.name, 0), 0);
		}
		model_free_all(v, n);
	}
}

#endif
