/*
 * IPAM against a real etcd (a fresh one per test): claims and affinities,
 * retried ADDs, borrowing and StrictAffinity, requested addresses, pools that
 * do not serve a node, empty blocks after their grace period, many processes
 * of two nodes allocating at once (compare-and-swap alone keeps them apart:
 * no host lock here), and etcd restarting while they do; overlapping pools and
 * a changed blockSize (no block overlaps another, no address twice).
 *
 * The same tests run against the Kubernetes API (IPAM in Calico's CRDs, no
 * transactions: Calico's write order): see ipam_ds_common.h. Releases,
 * repairs and forced races are in test_ipam_repair.c.
 */
#include "ipam_ds_common.h"

static void test_claim_assign_release(void **state)
{
	struct ds *d = open_ds();
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	add_pool(d, "pool-a", "10.10.0.0/24", 26, NULL);
	struct br_ip ip, again;
	assert_int_equal(assign(d, "node-a", "net.c1", &ip, &err), 0);
	assert_string_equal(addr_text(&ip), "10.10.0.0");
	struct br_blockaffinity *a = get_aff(d, "node-a", "10.10.0.0-26");
	assert_non_null(a);
	assert_string_equal(a->spec.state, "confirmed");
	assert_string_equal(a->spec.cidr, "10.10.0.0/26");
	model_free(&a->o);
	struct br_ipamblock *b = get_block(d, "10.10.0.0-26");
	assert_non_null(b);
	assert_string_equal(b->spec.affinity, "host:node-a");
	assert_int_equal(ipam_block_used(b), 1);
	assert_string_equal(b->spec.attributes[0].handle_id, "net.c1");
	model_free(&b->o);

	/* The same handle again (a retried ADD): the same address, nothing new. */
	struct ipam_request req = { .handle = "net.c1", .node = "node-a" };
	struct ipam_assigned out;
	assert_int_equal(ipam_assign(d, &req, &out, &err), 0);
	assert_true(out.reused);
	assert_true(ip_equal(&out.ips[0], &ip));
	assert_int_equal(assign(d, "node-a", "net.c2", &again, &err), 0);
	assert_string_equal(addr_text(&again), "10.10.0.1");
	/* Another node claims the next block. */
	assert_int_equal(assign(d, "node-b", "net.c3", &again, &err), 0);
	assert_string_equal(addr_text(&again), "10.10.0.64");

	struct br_ip held[4];
	size_t n;
	assert_int_equal(ipam_handle_ips(d, "net.c2", held, 4, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_string_equal(addr_text(&held[0]), "10.10.0.1");

	size_t released;
	assert_int_equal(ipam_release_handle(d, "net.c1", 1000, 0, &released, &err), 0);
	assert_int_equal(released, 1);
	assert_int_equal(ipam_release_handle(d, "net.c1", 1000, 0, &released, &err), 0);
	assert_int_equal(released, 0);
	struct br_object *h;
	assert_int_equal(ds_get(d, model_kind(KIND_IPAMHANDLE), NULL, "net.c1", &h), -ENOENT);
	assert_int_equal(ipam_handle_ips(d, "net.c1", held, 4, &n, &err), 0);
	assert_int_equal(n, 0);

	/* A single address by hand (ipam release --ip). */
	char *hid = NULL;
	struct br_ip two = again;
	assert_int_equal(ipam_release_ip(d, &two, NULL, 1000, &hid, &err), 0);
	assert_string_equal(hid, "net.c3");
	free(hid);
	assert_int_equal(ipam_release_ip(d, &two, NULL, 1000, NULL, &err), -ENOENT);
	assert_int_equal(ds_get(d, model_kind(KIND_IPAMHANDLE), NULL, "net.c3", &h), -ENOENT);
	sb_free(&err);
	ds_close(d);
}

/*
 * IPv6 pools (default block /122) beside IPv4 ones, one handle for both families as a
 * dual-stack ADD asks: each request takes a pool of its family, a retry of either gets its own
 * address back, a pool of the other family named is refused, and the handle's release frees
 * both.
 */
static void test_dual_stack(void **state)
{
	struct ds *d = open_ds();
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	add_pool(d, "pool-4", "10.20.0.0/24", 26, NULL);
	apply(d, "apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: pool-6}\n"
		 "spec: {cidr: 'fd00:20::/120'}\n");
	struct ipam_request r4 = { .handle = "net.ds", .node = "node-a", .now = time(NULL) };
	struct ipam_request r6 = r4;
	r6.family = AF_INET6;
	struct ipam_assigned o4, o6;
	assert_int_equal(ipam_assign(d, &r4, &o4, &err), 0);
	assert_int_equal(ipam_assign(d, &r6, &o6, &err), 0);
	assert_int_equal(o4.n, 1);
	assert_int_equal(o6.n, 1);
	assert_false(o6.reused); /* the handle's IPv4 address is not an IPv6 one */
	assert_string_equal(addr_text(&o4.ips[0]), "10.20.0.0");
	assert_string_equal(addr_text(&o6.ips[0]), "fd00:20::");
	assert_string_equal(o6.pool, "pool-6");
	/* the node's IPv6 block is /122 (Calico's default), affine to it */
	struct br_cidr blk;
	assert_int_equal(
		ipam_pool_block_of(&(struct br_ippool){ .spec = { .cidr = "fd00:20::/120" } },
				   &o6.ips[0], &blk),
		0);
	char name[IPAM_BLOCK_NAME_LEN];
	ipam_block_name(&blk, name);
	struct br_ipamblock *b = get_block(d, name);
	assert_non_null(b);
	assert_string_equal(b->spec.cidr, "fd00:20::/122");
	assert_string_equal(b->spec.affinity, "host:node-a");
	model_free(&b->o);
	/* retries, each family its own */
	struct ipam_assigned again;
	assert_int_equal(ipam_assign(d, &r6, &again, &err), 0);
	assert_true(again.reused);
	assert_true(ip_equal(&again.ips[0], &o6.ips[0]));
	assert_int_equal(ipam_assign(d, &r4, &again, &err), 0);
	assert_true(again.reused);
	assert_true(ip_equal(&again.ips[0], &o4.ips[0]));
	/* a pool of the other family named: refused, with its reason */
	const char *four[] = { "pool-4" };
	struct ipam_request bad = r6;
	bad.handle = "net.bad";
	bad.pools = four;
	bad.n_pools = 1;
	assert_int_equal(ipam_assign(d, &bad, &again, &err), -EINVAL);
	assert_non_null(strstr(sb_str(&err), "is not an IPv6 pool"));
	/* an address of the other family requested: refused */
	struct br_ip v6 = o6.ips[0];
	bad = r4;
	bad.handle = "net.bad";
	bad.ips = &v6;
	bad.n_ips = 1;
	sb_reset(&err);
	assert_int_equal(ipam_assign(d, &bad, &again, &err), -EINVAL);
	assert_non_null(strstr(sb_str(&err), "is not an IPv4 address"));
	/* DEL: both go with the handle */
	struct br_ip held[4];
	size_t n, released;
	assert_int_equal(ipam_handle_ips(d, "net.ds", held, 4, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_int_equal(ipam_release_handle(d, "net.ds", 1000, 0, &released, &err), 0);
	assert_int_equal(released, 2);
	sb_free(&err);
	ds_close(d);
	(void)state;
}

/* The caller's reads of ipam_request.also, and what its prepare makes of them. */
struct prep {
	int calls, err_pool, err_raw, fail;
	bool got_pool;
};

static int prep_pools(void *ctx, const struct ds_read *also, size_t n, struct ipam_request *req)
{
	static const char *b[] = { "pool-b" };
	struct prep *pp = ctx;
	pp->calls++;
	assert_int_equal(n, 2);
	pp->err_pool = also[0].err;
	pp->got_pool = also[0].obj && streq(also[0].obj->meta.name, "pool-b");
	model_free(also[0].obj);
	pp->err_raw = also[1].err;
	if (pp->fail)
		return pp->fail;
	req->pools = b;
	req->n_pools = 1;
	return 0;
}

/*
 * A caller's reads in IPAM's first round (the CNI plugin's pod and namespace): prepare sees
 * them once and may choose the pools; its failure ends the assignment before any write. The
 * block hint: the node's block read with the first round, any hint harmless.
 */
static void test_prepare_and_hint(void **state)
{
	struct ds *d = open_ds();
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	add_pool(d, "pool-a", "10.30.0.0/24", 26, NULL);
	add_pool(d, "pool-b", "10.31.0.0/24", 26, NULL);
	struct arena *a = arena_new();
	struct ds_read also[2] = {
		{ .kind = model_kind(KIND_IPPOOL), .name = "pool-b" },
		{ .path = "/api/v1/namespaces/default", .arena = a },
	};
	struct prep pp = { 0 };
	struct ipam_request req = { .handle = "net.p1",
				    .node = "node-a",
				    .now = time(NULL),
				    .also = also,
				    .n_also = 2,
				    .prepare = prep_pools,
				    .prepare_ctx = &pp };
	struct ipam_assigned out;
	assert_int_equal(ipam_assign(d, &req, &out, &err), 0);
	assert_int_equal(pp.calls, 1); /* once, though the claim was decided from fresh lists */
	assert_int_equal(pp.err_pool, 0);
	assert_true(pp.got_pool);
	/* a document of no kind of ours: the API server's namespace, or not on etcd */
	assert_int_equal(pp.err_raw, kubeconfig ? 0 : -EOPNOTSUPP);
	if (kubeconfig)
		assert_string_equal(jv_as_string(jv_get(jv_get(also[1].doc, "metadata"), "name")),
				    "default");
	assert_string_equal(addr_text(&out.ips[0]), "10.31.0.0");
	assert_string_equal(out.block, "10.31.0.0-26");
	/* the hint of the last assignment; then one of a block that does not exist */
	struct ipam_request next = { .handle = "net.p2",
				     .node = "node-a",
				     .now = time(NULL),
				     .pools = (const char *[]){ "pool-b" },
				     .n_pools = 1,
				     .block_hint = out.block };
	assert_int_equal(ipam_assign(d, &next, &out, &err), 0);
	assert_string_equal(addr_text(&out.ips[0]), "10.31.0.1");
	assert_string_equal(out.block, "10.31.0.0-26");
	next.handle = "net.p3";
	next.block_hint = "10.99.0.0-26";
	assert_int_equal(ipam_assign(d, &next, &out, &err), 0);
	assert_string_equal(addr_text(&out.ips[0]), "10.31.0.2");
	/* another node's block as the hint: node-b claims its own block all the same */
	next.handle = "net.p4";
	next.node = "node-b";
	next.block_hint = "10.31.0.0-26";
	assert_int_equal(ipam_assign(d, &next, &out, &err), 0);
	assert_string_equal(addr_text(&out.ips[0]), "10.31.0.64");
	/* a prepare that fails: its error, no retry, nothing written */
	pp = (struct prep){ .fail = -EPERM };
	req.handle = "net.p5";
	assert_int_equal(ipam_assign(d, &req, &out, &err), -EPERM);
	assert_int_equal(pp.calls, 1);
	assert_null(get_obj(d, KIND_IPAMHANDLE, NULL, "net.p5"));
	arena_free(a);
	sb_free(&err);
	ds_close(d);
	(void)state;
}

/*
 * maxBlocksPerHost caps a node's blocks per family: a node whose one IPv4 block is full gets
 * no second one (and, with StrictAffinity, borrows none), yet still claims its first IPv6 block.
 */
static void test_max_blocks_per_host(void **state)
{
	struct ds *d = open_ds();
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	add_pool(d, "four", "10.50.0.0/28", 30, NULL); /* blocks of 4 */
	apply(d, "apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: six}\n"
		 "spec: {cidr: 'fd00:50::/120'}\n");
	apply(d, "apiVersion: projectcalico.org/v3\nkind: IPAMConfiguration\n"
		 "metadata: {name: default}\nspec: {strictAffinity: true, maxBlocksPerHost: 1}\n");
	struct br_ip ip;
	char h[32];
	for (int i = 0; i < 4; i++) {
		snprintf(h, sizeof(h), "net.m%d", i);
		assert_int_equal(assign(d, "node-a", h, &ip, &err), 0);
	}
	assert_string_equal(addr_text(&ip), "10.50.0.3");
	/* the node's one IPv4 block is full: no second block, no borrowing */
	assert_int_equal(assign(d, "node-a", "net.m4", &ip, &err), -ENOSPC);
	assert_null(get_aff(d, "node-a", "10.50.0.4-30"));
	/* its IPv4 block does not count against its IPv6 ones */
	struct ipam_request r6 = {
		.handle = "net.m6", .node = "node-a", .family = AF_INET6, .now = time(NULL)
	};
	struct ipam_assigned out;
	sb_reset(&err);
	assert_int_equal(ipam_assign(d, &r6, &out, &err), 0);
	assert_string_equal(addr_text(&out.ips[0]), "fd00:50::");
	/* another node is not held back by node-a's blocks */
	assert_int_equal(assign(d, "node-b", "net.b0", &ip, &err), 0);
	assert_string_equal(addr_text(&ip), "10.50.0.4");
	check_invariants(d, "after the limits");
	sb_free(&err);
	ds_close(d);
	(void)state;
}

static void test_borrow_and_strict(void **state)
{
	struct ds *d = open_ds();
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	/* Two blocks of 8. */
	add_pool(d, "small", "10.20.0.0/28", 29, NULL);
	struct br_ip ip;
	char h[32];
	assert_int_equal(assign(d, "node-a", "net.a0", &ip, &err), 0);
	assert_int_equal(assign(d, "node-b", "net.b0", &ip, &err), 0);
	assert_string_equal(addr_text(&ip), "10.20.0.8");
	for (int i = 1; i < 8; i++) {
		snprintf(h, sizeof(h), "net.a%d", i);
		assert_int_equal(assign(d, "node-a", h, &ip, &err), 0);
		assert_true(ip4_u32(&ip) < ip4_u32(&(struct br_ip){ AF_INET, { 10, 20, 0, 8 } }));
	}
	/* node-a's block is full and no block is left: it borrows from node-b's. */
	assert_int_equal(assign(d, "node-a", "net.a8", &ip, &err), 0);
	assert_string_equal(addr_text(&ip), "10.20.0.9");
	struct br_ipamblock *b = get_block(d, "10.20.0.8-29");
	assert_string_equal(b->spec.affinity, "host:node-b"); /* still node-b's */
	model_free(&b->o);

	apply(d, "apiVersion: projectcalico.org/v3\nkind: IPAMConfiguration\n"
		 "metadata: {name: default}\nspec: {strictAffinity: true}\n");
	assert_int_equal(assign(d, "node-a", "net.a9", &ip, &err), -ENOSPC);
	assert_non_null(strstr(sb_str(&err), "StrictAffinity"));
	/* node-b still has room in its own block. */
	assert_int_equal(assign(d, "node-b", "net.b1", &ip, &err), 0);
	assert_string_equal(addr_text(&ip), "10.20.0.10");
	sb_free(&err);
	ds_close(d);
}

static void test_requested_and_pools(void **state)
{
	struct ds *d = open_ds();
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	add_pool(d, "off", "10.30.0.0/24", 26, "disabled: true");
	add_pool(d, "rack1", "10.31.0.0/24", 26, "nodeSelector: rack == 'r1'");
	add_pool(d, "open", "10.32.0.0/24", 26, NULL);
	add_node_labelled(d, "node-r1", "rack: r1");
	struct br_ip ip;
	/* A disabled pool is skipped; a nodeSelector decides per node. */
	assert_int_equal(assign(d, "node-x", "net.x", &ip, &err), 0);
	assert_string_equal(addr_text(&ip), "10.32.0.0");
	struct ipam_request req = { .handle = "net.r", .node = "node-r1" };
	const char *pools[] = { "rack1" };
	req.pools = pools;
	req.n_pools = 1;
	struct ipam_assigned out;
	assert_int_equal(ipam_assign(d, &req, &out, &err), 0);
	assert_string_equal(addr_text(&out.ips[0]), "10.31.0.0");
	assert_string_equal(out.pool, "rack1");
	req.handle = "net.r2";
	req.node = "node-x";
	assert_int_equal(ipam_assign(d, &req, &out, &err), -EINVAL);
	assert_non_null(strstr(sb_str(&err), "does not select"));
	pools[0] = "nope";
	sb_reset(&err);
	assert_int_equal(ipam_assign(d, &req, &out, &err), -EINVAL);
	assert_non_null(strstr(sb_str(&err), "does not exist"));

	/* Requested addresses. */
	struct br_ip want;
	assert_int_equal(ip_parse("10.32.0.77", &want), 0);
	struct ipam_request rq = { .handle = "net.q1", .node = "node-x", .ips = &want, .n_ips = 1 };
	assert_int_equal(ipam_assign(d, &rq, &out, &err), 0);
	assert_string_equal(addr_text(&out.ips[0]), "10.32.0.77");
	/* Its block (10.32.0.64/26) was unclaimed: it is node-x's now. */
	struct br_blockaffinity *a = get_aff(d, "node-x", "10.32.0.64-26");
	assert_non_null(a);
	assert_string_equal(a->spec.state, "confirmed");
	model_free(&a->o);
	rq.handle = "net.q2";
	sb_reset(&err);
	assert_int_equal(ipam_assign(d, &rq, &out, &err), -EADDRINUSE);
	assert_non_null(strstr(sb_str(&err), "already in use (handle net.q1)"));
	assert_int_equal(ip_parse("10.30.0.5", &want), 0);
	sb_reset(&err);
	assert_int_equal(ipam_assign(d, &rq, &out, &err), -EINVAL);
	assert_non_null(strstr(sb_str(&err), "disabled"));
	assert_int_equal(ip_parse("192.168.9.9", &want), 0);
	sb_reset(&err);
	assert_int_equal(ipam_assign(d, &rq, &out, &err), -EINVAL);
	assert_non_null(strstr(sb_str(&err), "in no IP pool"));
	sb_free(&err);
	ds_close(d);
}

static void test_empty_block_grace(void **state)
{
	struct ds *d = open_ds();
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	add_pool(d, "pool", "10.40.0.0/24", 26, NULL);
	struct ipam_request req = { .handle = "net.e1", .node = "node-a", .now = 5000 };
	struct ipam_assigned out;
	assert_int_equal(ipam_assign(d, &req, &out, &err), 0);
	size_t n;
	assert_int_equal(ipam_release_handle(d, "net.e1", 10000, 0, &n, &err), 0);
	struct br_ipamblock *b = get_block(d, "10.40.0.0-26");
	assert_int_equal(ipam_block_empty_since(b), 10000);
	model_free(&b->o);
	/* Within the grace period the node keeps the block. */
	assert_int_equal(sweep(d, "node-a", true, 10299, 300, NULL), 0);
	assert_non_null(b = get_block(d, "10.40.0.0-26"));
	model_free(&b->o);
	/* Another node's sweep does not touch it. */
	assert_int_equal(sweep(d, "node-b", true, 20000, 300, NULL), 0);
	assert_int_equal(sweep(d, "node-a", true, 10300, 300, NULL), 1);
	assert_null(get_block(d, "10.40.0.0-26"));
	assert_null(get_aff(d, "node-a", "10.40.0.0-26"));

	/* A block reused within the grace period is not released. */
	req.now = 20000;
	req.handle = "net.e2";
	assert_int_equal(ipam_assign(d, &req, &out, &err), 0);
	assert_int_equal(ipam_release_handle(d, "net.e2", 20000, 0, &n, &err), 0);
	req.handle = "net.e3";
	assert_int_equal(ipam_assign(d, &req, &out, &err), 0);
	assert_int_equal(sweep(d, NULL, false, 90000, 300, NULL), 0);
	struct br_blockaffinity *a = get_aff(d, "node-a", "10.40.0.0-26");
	assert_string_equal(a->spec.state, "confirmed");
	model_free(&a->o);
	sb_free(&err);
	ds_close(d);
}

/* --- many processes ---------------------------------------------------------------------- */

struct child_result {
	int index;
	int rc;
	char ip[IP_STRLEN];
	int retries;
	char why[200]; /* the last failure's reason */
};

/*
 * Child: assign for handle net.c<i> on node-a/node-b; on failure do what a
 * runtime does (DEL, then ADD again) until it works or @deadline_s passes.
 */
static void child_main(int i, int fd, int deadline_s, bool release_on_error)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	struct child_result res = { .index = i, .rc = -1 };
	char handle[32];
	snprintf(handle, sizeof(handle), "net.c%d", i);
	const char *node = i % 2 ? "node-b" : "node-a";
	time_t end = time(NULL) + deadline_s;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	struct ds *d = NULL;
	/*
	 * With a restart: churn first (assign, release) so the datastore goes away
	 * mid-work. The API server is slower per request than etcd and takes seconds
	 * to come back: fewer rounds, and more time per operation.
	 */
	int rounds = release_on_error ? (kubeconfig ? 5 : 15) : 0;
	long op_ms = release_on_error ? (kubeconfig ? 3000 : 400) : 20000;
	if (connect_ds(1000, &d, &err) == 0) {
		for (int round = 0; round <= rounds && time(NULL) < end;) {
			char h[48];
			if (round < rounds)
				snprintf(h, sizeof(h), "%s.t%d", handle, round);
			else
				snprintf(h, sizeof(h), "%s", handle);
			struct ipam_request req = {
				.handle = h, .node = node, .now = time(NULL), .timeout_ms = op_ms
			};
			struct ipam_assigned out;
			size_t n;
			sb_reset(&err);
			res.rc = ipam_assign(d, &req, &out, &err);
			if (res.rc == 0 && round == rounds) {
				ip_str(&out.ips[0], res.ip);
				break;
			}
			if (res.rc < 0) {
				res.retries++;
				snprintf(res.why, sizeof(res.why), "%s", sb_str(&err));
			}
			/* A failed ADD is followed by a DEL, as runtimes do; a churn round by one
			 * too. */
			sb_reset(&err);
			if (ipam_release_handle(d, h, time(NULL), op_ms, &n, &err) < 0) {
				res.retries++;
				continue;
			}
			if (res.rc == 0)
				round++;
		}
		ds_close(d);
	}
	sb_free(&err);
	ssize_t w = write(fd, &res, sizeof(res));
	(void)w;
	_exit(0);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Run @n children at once; optionally restart etcd while they run. */
static void run_children(int n, bool restart, struct child_result *res)
{
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	pid_t *pids = xcalloc((size_t)n, sizeof(*pids));
	for (int i = 0; i < n; i++) {
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0) {
			close(fds[0]);
			child_main(i, fds[1], kubeconfig ? 180 : 60, restart);
		}
	}
	close(fds[1]);
	if (restart) {
		struct timespec ts = { 0, 100 * 1000000L };
		nanosleep(&ts, NULL);
		if (kubeconfig) {
			/* The API server stopped and started again (etcd keeps its data). */
			char cmd[1200];
			snprintf(cmd, sizeof(cmd),
				 "\"%s/scripts/kube-testenv\" restart-apiserver \"%s\" >&2",
				 getenv("BRINDLE_SOURCE_DIR"), getenv("BRINDLE_TEST_KUBE_DIR"));
			assert_int_equal(system(cmd), 0);
		} else {
			assert_int_equal(etcd_proc_restart(proc), 0);
			nanosleep(&ts, NULL);
			assert_int_equal(etcd_proc_restart(proc), 0);
		}
	}
	for (int i = 0; i < n; i++) {
		struct child_result r;
		assert_int_equal(read(fds[0], &r, sizeof(r)), sizeof(r));
		res[r.index] = r;
	}
	for (int i = 0; i < n; i++)
		waitpid(pids[i], NULL, 0);
	close(fds[0]);
	free(pids);
}

/* Every address distinct, and the blocks hold exactly the children's handles. */
static void check_consistent(struct ds *d, int n, const struct child_result *res)
{
	char **ips = xcalloc((size_t)n, sizeof(*ips));
	for (int i = 0; i < n; i++) {
		if (res[i].rc != 0)
			fail_msg("child %d failed: %d: %s", i, res[i].rc, res[i].why);
		ips[i] = (char *)res[i].ip;
	}
	qsort(ips, (size_t)n, sizeof(*ips), cmp_str);
	for (int i = 1; i < n; i++)
		if (streq(ips[i], ips[i - 1]))
			fail_msg("address %s handed out twice", ips[i]);
	free(ips);

	struct br_object **blocks;
	size_t nb, used = 0;
	assert_int_equal(ds_list(d, model_kind(KIND_IPAMBLOCK), NULL, &blocks, &nb), 0);
	for (size_t k = 0; k < nb; k++) {
		struct br_ipamblock *b = (struct br_ipamblock *)blocks[k];
		assert_int_equal(ipam_block_validate(b, NULL, NULL), 0);
		for (size_t o = 0; o < ipam_block_capacity(b); o++) {
			struct br_ip ip;
			const struct br_ipam_attr *attr;
			if (!ipam_block_ordinal(b, o, &ip, &attr))
				continue;
			used++;
			int idx = atoi(attr->handle_id + strlen("net.c"));
			assert_true(idx >= 0 && idx < n);
			/* The address the child got, and no other (no leak). */
			assert_string_equal(addr_text(&ip), res[idx].ip);
		}
	}
	model_free_all(blocks, nb);
	assert_int_equal(used, (size_t)n);
	struct br_object **handles;
	size_t nh;
	assert_int_equal(ds_list(d, model_kind(KIND_IPAMHANDLE), NULL, &handles, &nh), 0);
	size_t containers = 0;
	for (size_t i = 0; i < nh; i++)
		containers += !streq(handles[i]->meta.name, IPAM_CLAIMS_MARKER);
	assert_int_equal(containers, (size_t)n);
	model_free_all(handles, nh);
}

static void test_parallel_two_nodes(void **state)
{
	struct ds *d = open_ds();
	/* Small blocks, so claims race too. */
	add_pool(d, "par", "10.50.0.0/24", 29, NULL);
	enum {
		N = 40
	};
	struct child_result res[N];
	run_children(N, false, res);
	check_consistent(d, N, res);
	/* Each address sits in a block affine to its own node (room was plenty). */
	for (int i = 0; i < N; i++) {
		struct br_ip ip;
		struct br_cidr c;
		assert_int_equal(ip_parse(res[i].ip, &ip), 0);
		c.ip = ip;
		c.len = 29;
		cidr_mask(&c);
		char name[IPAM_BLOCK_NAME_LEN];
		ipam_block_name(&c, name);
		struct br_blockaffinity *a = get_aff(d, i % 2 ? "node-b" : "node-a", name);
		if (!a)
			fail_msg("%s of child %d is not in a block of its node", res[i].ip, i);
		assert_string_equal(a->spec.state, "confirmed");
		model_free(&a->o);
	}
	ds_close(d);
}

/* The datastore restarted while they allocate: etcd twice, or the Kubernetes API server. */
static void test_datastore_restart(void **state)
{
	if (kubeconfig && (!getenv("BRINDLE_TEST_KUBE_DIR") || !getenv("BRINDLE_SOURCE_DIR")))
		fail_msg("BRINDLE_TEST_KUBE_DIR and BRINDLE_SOURCE_DIR are needed to restart the "
			 "API server (tests/kube/ipam_kdd.sh sets them)");
	struct ds *d = open_ds();
	add_pool(d, "rs", "10.60.0.0/24", 28, NULL);
	ds_close(d);
	enum {
		N = 24
	};
	struct child_result res[N];
	run_children(N, true, res);
	d = open_ds();
	check_consistent(d, N, res);
	int retried = 0;
	for (int i = 0; i < N; i++)
		retried += res[i].retries > 0;
	print_message("%d of %d children retried after a failed assign\n", retried, N);
	/* No pending claim survives. */
	struct br_object **affs;
	size_t na;
	assert_int_equal(ds_list(d, model_kind(KIND_BLOCKAFFINITY), NULL, &affs, &na), 0);
	for (size_t i = 0; i < na; i++) {
		struct br_blockaffinity *a = (struct br_blockaffinity *)affs[i];
		struct br_ipamblock *b = get_block(d, a->o.meta.name);
		if (streq(a->spec.state, "pending"))
			/* Only a claim that lost to the other node may remain pending. */
			assert_true(b && !streq(b->spec.affinity + 5, a->spec.node));
		model_free(b ? &b->o : NULL);
	}
	model_free_all(affs, na);
	ds_close(d);
}

/* --- what else the datastore may hold ------------------------------------------------------- */

/*
 * IPPool assignmentMode Manual (only for those who name the pool) and
 * namespaceSelector (only for pods of the namespaces it selects; when the
 * namespace's labels are unknown, not automatically).
 */
static void test_pool_modes(void **state)
{
	struct ds *d = open_ds();
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	add_pool(d, "man", "10.96.0.0/24", 26, "assignmentMode: Manual");
	add_pool(d, "nsp", "10.97.0.0/24", 26, "namespaceSelector: team == 'a'");
	struct br_ip ip;
	assert_int_equal(assign_in(d, "node-m", "net.m1", NULL, &ip, &err), -ENOSPC);
	assert_non_null(strstr(sb_str(&err), "no IP pool serves node node-m"));
	/* named: a Manual pool serves */
	assert_int_equal(assign_in(d, "node-m", "net.m2", "man", &ip, &err), 0);
	assert_string_equal(addr_text(&ip), "10.96.0.0");
	/* a pod of a namespace the selector selects */
	struct br_labels team_a = { 0 }, team_b = { 0 };
	struct arena *a = arena_new();
	labels_set(a, &team_a, "team", "a");
	labels_set(a, &team_b, "team", "b");
	struct ipam_request req = { .handle = "net.m3",
				    .node = "node-m",
				    .namespace_labels = &team_a,
				    .timeout_ms = 5000 };
	struct ipam_assigned out;
	sb_reset(&err);
	assert_int_equal(ipam_assign(d, &req, &out, &err), 0);
	assert_string_equal(addr_text(&out.ips[0]), "10.97.0.0");
	req.handle = "net.m4";
	req.namespace_labels = &team_b;
	sb_reset(&err);
	assert_int_equal(ipam_assign(d, &req, &out, &err), -ENOSPC);
	arena_free(a);
	sb_free(&err);
	ds_close(d);
}

/*
 * IPReservations: automatic assignment skips reserved addresses and claims no
 * block whose every address is reserved; a requested address is given even
 * when reserved (as in Calico). IPAM reads reservations as it reads pools, from
 * the API server's cache on Kubernetes, so the test waits until the cache has
 * the reservation.
 */
static void test_reservations(void **state)
{
	struct ds *d = open_ds();
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	apply(d, "apiVersion: projectcalico.org/v3\nkind: IPReservation\nmetadata: {name: gw}\n"
		 "spec: {reservedCIDRs: [10.95.0.0/30, 10.95.0.6, 10.95.0.8/29]}\n");
	for (int i = 0;; i++) {
		struct ds_read rd = { .kind = model_kind(KIND_IPRESERVATION), .cached = true };
		ds_read_many(d, &rd, 1);
		size_t n = rd.n;
		model_free_all(rd.objs, rd.n);
		if (rd.err == 0 && n == 1)
			break;
		assert_true(i < 100);
		usleep(50 * 1000);
	}
	add_pool(d, "res", "10.95.0.0/27", 29, NULL);
	const char *want[] = { "10.95.0.4", "10.95.0.5", "10.95.0.7",
			       /* 10.95.0.8/29 is all reserved: the next block is claimed */
			       "10.95.0.16" };
	for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
		char h[32];
		snprintf(h, sizeof(h), "net.res%zu", i);
		struct br_ip ip;
		assert_int_equal(assign_in(d, "node-r", h, "res", &ip, &err), 0);
		assert_string_equal(addr_text(&ip), want[i]);
	}
	struct br_blockaffinity *a = get_aff(d, "node-r", "10.95.0.8-29");
	assert_null(a);
	/* A requested address is given even when reserved. */
	struct br_ip req_ip;
	assert_int_equal(ip_parse("10.95.0.1", &req_ip), 0);
	struct ipam_request rq = {
		.handle = "net.resq", .node = "node-r", .ips = &req_ip, .n_ips = 1
	};
	struct ipam_assigned out;
	assert_int_equal(ipam_assign(d, &rq, &out, &err), 0);
	assert_string_equal(addr_text(&out.ips[0]), "10.95.0.1");
	check_invariants(d, "reservations");
	sb_free(&err);
	ds_close(d);
}

/*
 * Two pools over the same addresses with different block sizes, and a pool
 * whose blockSize is changed under allocated blocks: blocks are chosen
 * clear of every existing block, so 10.250.0.0 is handed out once.
 */
static void test_overlapping_pools(void **state)
{
	struct ds *d = open_ds();
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	add_pool(d, "p26", "10.250.0.0/24", 26, NULL);
	add_pool(d, "p28", "10.250.0.0/24", 28, NULL);
	struct br_ip a, b, c;
	assert_int_equal(assign_in(d, "node-a", "net.a", "p26", &a, &err), 0);
	assert_string_equal(addr_text(&a), "10.250.0.0");
	assert_int_equal(assign_in(d, "node-b", "net.b", "p28", &b, &err), 0);
	assert_string_equal(addr_text(&b), "10.250.0.64"); /* first /28 outside node-a's /26 */
	/* The other way round: a /26 clear of node-b's /28. */
	assert_int_equal(assign_in(d, "node-c", "net.c", "p26", &c, &err), 0);
	assert_string_equal(addr_text(&c), "10.250.0.128");
	check_invariants(d, "overlapping pools");

	/* A requested address: in an existing block of any size, else a block clear of all. */
	struct br_ip want;
	struct ipam_assigned out;
	assert_int_equal(ip_parse("10.250.0.70", &want), 0);
	struct ipam_request rq = { .handle = "net.q1", .node = "node-q", .ips = &want, .n_ips = 1 };
	assert_int_equal(ipam_assign(d, &rq, &out, &err), 0); /* borrowed from node-b's /28 */
	assert_string_equal(addr_text(&out.ips[0]), "10.250.0.70");
	/* 10.250.0.80: p26's block (10.250.0.64/26) would overlap node-b's /28; p28's is free. */
	assert_int_equal(ip_parse("10.250.0.80", &want), 0);
	rq.handle = "net.q2";
	assert_int_equal(ipam_assign(d, &rq, &out, &err), 0);
	struct br_blockaffinity *aff = get_aff(d, "node-q", "10.250.0.80-28");
	assert_non_null(aff);
	assert_string_equal(aff->spec.state, "confirmed");
	model_free(&aff->o);
	check_invariants(d, "requested addresses");

	/* blockSize 26 → 28 under node-x's /26: node-y's /28 must not land inside it. */
	add_pool(d, "grow", "10.251.0.0/24", 26, NULL);
	assert_int_equal(assign_in(d, "node-x", "net.x1", "grow", &a, &err), 0);
	assert_string_equal(addr_text(&a), "10.251.0.0");
	add_pool(d, "grow", "10.251.0.0/24", 28, NULL);
	assert_int_equal(assign_in(d, "node-y", "net.y1", "grow", &b, &err), 0);
	assert_string_equal(addr_text(&b), "10.251.0.64");
	/* node-x keeps using its /26 of the old size. */
	assert_int_equal(assign_in(d, "node-x", "net.x2", "grow", &a, &err), 0);
	assert_string_equal(addr_text(&a), "10.251.0.1");
	check_invariants(d, "blockSize changed");
	sb_free(&err);
	ds_close(d);
}

int main(void)
{
	kubeconfig = getenv("BRINDLE_TEST_KUBECONFIG");
	if (kubeconfig && !*kubeconfig)
		kubeconfig = NULL;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_claim_assign_release, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dual_stack, setup, teardown),
		cmocka_unit_test_setup_teardown(test_prepare_and_hint, setup, teardown),
		cmocka_unit_test_setup_teardown(test_max_blocks_per_host, setup, teardown),
		cmocka_unit_test_setup_teardown(test_borrow_and_strict, setup, teardown),
		cmocka_unit_test_setup_teardown(test_requested_and_pools, setup, teardown),
		cmocka_unit_test_setup_teardown(test_empty_block_grace, setup, teardown),
		cmocka_unit_test_setup_teardown(test_parallel_two_nodes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_datastore_restart, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pool_modes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reservations, setup, teardown),
		cmocka_unit_test_setup_teardown(test_overlapping_pools, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
