/*
 * IPAM against a real etcd (a fresh one per test): claims and affinities,
 * retried ADDs, borrowing and StrictAffinity, requested addresses, pools that
 * do not serve a node, empty blocks after their grace period, many processes
 * of two nodes allocating at once (compare-and-swap alone keeps them apart:
 * no host lock here), and etcd restarting while they do.
 */
#include "harness.h"
#include "etcd_harness.h"

#include <brindle/sys/ds.h>
#include <brindle/sys/ipam.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static struct etcd_proc *proc;

static struct ds *open_ds(void)
{
	const char *ep = etcd_proc_endpoint(proc);
	struct ds_config cfg = {
		.type = "etcdv3", .etcd_endpoints = &ep, .n_etcd_endpoints = 1, .timeout_ms = 3000
	};
	struct ds *d;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	if (ds_open(&cfg, &d, &err) < 0)
		fail_msg("ds_open: %s", sb_str(&err));
	sb_free(&err);
	return d;
}

static void apply(struct ds *d, const char *yaml)
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

static void add_pool(struct ds *d, const char *name, const char *cidr, int bs, const char *extra)
{
	char buf[512];
	snprintf(buf, sizeof(buf),
		 "apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: %s}\n"
		 "spec: {cidr: %s, blockSize: %d%s%s}\n",
		 name, cidr, bs, extra ? ", " : "", extra ? extra : "");
	apply(d, buf);
}

static int assign(struct ds *d, const char *node, const char *handle, struct br_ip *ip,
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

static const char *addr_text(const struct br_ip *ip)
{
	static char buf[8][IP_STRLEN];
	static int i;
	return ip_str(ip, buf[i++ % 8]);
}

static struct br_blockaffinity *get_aff(struct ds *d, const char *node, const char *block)
{
	struct br_object *o;
	int r = ds_get(d, model_kind(KIND_BLOCKAFFINITY), node, block, &o);
	return r == 0 ? (struct br_blockaffinity *)o : NULL;
}

static struct br_ipamblock *get_block(struct ds *d, const char *name)
{
	struct br_object *o;
	int r = ds_get(d, model_kind(KIND_IPAMBLOCK), NULL, name, &o);
	return r == 0 ? (struct br_ipamblock *)o : NULL;
}

static int setup(void **state)
{
	return etcd_proc_start(NULL, &proc) < 0 ? -1 : 0;
}

static int teardown(void **state)
{
	etcd_proc_destroy(proc);
	proc = NULL;
	return 0;
}

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
	assert_int_equal(ipam_release_ip(d, &two, 1000, &hid, &err), 0);
	assert_string_equal(hid, "net.c3");
	free(hid);
	assert_int_equal(ipam_release_ip(d, &two, 1000, NULL, &err), -ENOENT);
	assert_int_equal(ds_get(d, model_kind(KIND_IPAMHANDLE), NULL, "net.c3", &h), -ENOENT);
	sb_free(&err);
	ds_close(d);
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
	apply(d, "apiVersion: projectcalico.org/v3\nkind: Node\n"
		 "metadata: {name: node-r1, labels: {rack: r1}}\nspec: {}\n");
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
	assert_int_equal(ipam_release_empty_blocks(d, "node-a", 10299, 300, &n, &err), 0);
	assert_int_equal(n, 0);
	assert_non_null(b = get_block(d, "10.40.0.0-26"));
	model_free(&b->o);
	/* Another node's sweep does not touch it. */
	assert_int_equal(ipam_release_empty_blocks(d, "node-b", 20000, 300, &n, &err), 0);
	assert_int_equal(n, 0);
	assert_int_equal(ipam_release_empty_blocks(d, "node-a", 10300, 300, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_null(get_block(d, "10.40.0.0-26"));
	assert_null(get_aff(d, "node-a", "10.40.0.0-26"));

	/* A block reused within the grace period is not released. */
	req.now = 20000;
	req.handle = "net.e2";
	assert_int_equal(ipam_assign(d, &req, &out, &err), 0);
	assert_int_equal(ipam_release_handle(d, "net.e2", 20000, 0, &n, &err), 0);
	req.handle = "net.e3";
	assert_int_equal(ipam_assign(d, &req, &out, &err), 0);
	assert_int_equal(ipam_release_empty_blocks(d, NULL, 90000, 300, &n, &err), 0);
	assert_int_equal(n, 0);
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
	const char *ep = etcd_proc_endpoint(proc);
	struct ds_config cfg = {
		.type = "etcdv3", .etcd_endpoints = &ep, .n_etcd_endpoints = 1, .timeout_ms = 1000
	};
	struct ds *d = NULL;
	/* With a restart: churn first (assign, release) so etcd goes away mid-work. */
	int rounds = release_on_error ? 15 : 0;
	if (ds_open(&cfg, &d, &err) == 0) {
		for (int round = 0; round <= rounds && time(NULL) < end;) {
			char h[48];
			if (round < rounds)
				snprintf(h, sizeof(h), "%s.t%d", handle, round);
			else
				snprintf(h, sizeof(h), "%s", handle);
			struct ipam_request req = { .handle = h,
						    .node = node,
						    .now = time(NULL),
						    .timeout_ms = release_on_error ? 400 : 20000 };
			struct ipam_assigned out;
			size_t n;
			sb_reset(&err);
			res.rc = ipam_assign(d, &req, &out, &err);
			if (res.rc == 0 && round == rounds) {
				ip_str(&out.ips[0], res.ip);
				break;
			}
			if (res.rc < 0)
				res.retries++;
			/* A failed ADD is followed by a DEL, as runtimes do; a churn round by one
			 * too. */
			sb_reset(&err);
			if (ipam_release_handle(d, h, time(NULL), 400, &n, &err) < 0) {
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
			child_main(i, fds[1], 60, restart);
		}
	}
	close(fds[1]);
	if (restart) {
		struct timespec ts = { 0, 100 * 1000000L };
		nanosleep(&ts, NULL);
		assert_int_equal(etcd_proc_restart(proc), 0);
		nanosleep(&ts, NULL);
		assert_int_equal(etcd_proc_restart(proc), 0);
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
			fail_msg("child %d failed: %d", i, res[i].rc);
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
	assert_int_equal(nh, (size_t)n);
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

static void test_etcd_restart(void **state)
{
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_claim_assign_release, setup, teardown),
		cmocka_unit_test_setup_teardown(test_borrow_and_strict, setup, teardown),
		cmocka_unit_test_setup_teardown(test_requested_and_pools, setup, teardown),
		cmocka_unit_test_setup_teardown(test_empty_block_grace, setup, teardown),
		cmocka_unit_test_setup_teardown(test_parallel_two_nodes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_etcd_restart, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
