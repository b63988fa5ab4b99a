/*
 * What the IPAM datastore may hold besides what IPAM writes, and races: orphan
 * blocks, overlapping blocks and interrupted claims left by older versions or
 * crashes (repaired), an address released by hand after it changed hands
 * (refused). Races are forced, not hoped for: two operations run in child
 * processes, one stopped between two of its steps (ipam_test_hook) while the
 * other runs, for every such pair of steps. On etcd, or on the Kubernetes API
 * (see ipam_ds_common.h).
 */
#include "ipam_ds_common.h"

/* A handle that changed hands between check and release: the release is refused. */
static void test_release_ip_holder(void **state)
{
	struct ds *d = open_ds();
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	add_pool(d, "h", "10.92.0.0/24", 26, NULL);
	struct br_ip ip;
	assert_int_equal(assign_in(d, "node-a", "net.h1", NULL, &ip, &err), 0);
	size_t n;
	assert_int_equal(ipam_release_handle(d, "net.h1", 1000, 0, &n, &err), 0);
	struct ipam_request rq = { .handle = "net.h2", .node = "node-a", .ips = &ip, .n_ips = 1 };
	struct ipam_assigned out;
	assert_int_equal(ipam_assign(d, &rq, &out, &err), 0);
	/* "ipam release" decided on net.h1's address; it is net.h2's now. */
	sb_reset(&err);
	assert_int_equal(ipam_release_ip(d, &ip, "net.h1", 2000, NULL, &err), -EBUSY);
	assert_non_null(strstr(sb_str(&err), "net.h2"));
	struct br_ip held[2];
	assert_int_equal(ipam_handle_ips(d, "net.h2", held, 2, &n, &err), 0);
	assert_int_equal(n, 1);
	/* Its own holder releases it, and the handle goes in the same transaction. */
	char *hid = NULL;
	assert_int_equal(ipam_release_ip(d, &ip, "net.h2", 2000, &hid, &err), 0);
	assert_string_equal(hid, "net.h2");
	free(hid);
	assert_null(get_obj(d, KIND_IPAMHANDLE, NULL, "net.h2"));
	check_invariants(d, "after release --ip");

	/* A handle counts per block CIDR, as Calico's do. */
	assert_int_equal(assign_in(d, "node-a", "net.h3", NULL, &ip, &err), 0);
	struct br_ipamhandle *h =
		(struct br_ipamhandle *)get_obj(d, KIND_IPAMHANDLE, NULL, "net.h3");
	assert_non_null(h);
	assert_int_equal(h->spec.block.n, 1);
	assert_string_equal(h->spec.block.v[0].key, "10.92.0.0/26");
	/* One keyed by block name, as earlier releases wrote it, still leads to its addresses. */
	h->spec.block.v[0].key = "10.92.0.0-26";
	assert_int_equal(ds_update(d, &h->o), 0);
	model_free(&h->o);
	assert_int_equal(ipam_handle_ips(d, "net.h3", held, 2, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(ipam_release_ip(d, &ip, "net.h3", 2000, NULL, &err), 0);
	assert_null(get_obj(d, KIND_IPAMHANDLE, NULL, "net.h3"));
	check_invariants(d, "after a legacy handle's release");
	sb_free(&err);
	ds_close(d);
}

/*
 * Left by older versions or other tools: a block whose node has no affinity
 * for it (an orphan), and an empty block that overlaps another. The sweep
 * brindlectl runs releases an orphan once it is empty, and the empty one of
 * an overlapping pair at once.
 */
static void test_orphans_and_overlaps(void **state)
{
	struct ds *d = open_ds();
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	add_pool(d, "o", "10.90.0.0/24", 26, NULL);
	struct br_ip ip;
	assert_int_equal(assign_in(d, "node-a", "net.o1", NULL, &ip, &err), 0);
	assert_int_equal(ds_delete(d, model_kind(KIND_BLOCKAFFINITY), "node-a", "10.90.0.0-26", 0),
			 0);
	struct ipam_swept sw;
	int64_t now = time(NULL);
	/* In use: kept. */
	sweep(d, NULL, false, now, 300, &sw);
	assert_int_equal(sw.orphans, 0);
	struct br_ipamblock *b = get_block(d, "10.90.0.0-26");
	assert_non_null(b);
	model_free(&b->o);
	size_t n;
	assert_int_equal(ipam_release_handle(d, "net.o1", now, 0, &n, &err), 0);
	/* Another node's sweep leaves node-a's orphan alone; an all-nodes sweep releases it. */
	sweep(d, "node-b", false, now, 300, &sw);
	assert_int_equal(sw.orphans, 0);
	sweep(d, NULL, false, now, 300, &sw);
	assert_int_equal(sw.orphans, 1);
	assert_null(get_block(d, "10.90.0.0-26"));

	/* An overlapping /28 for node-b inside node-a's /26, as an older version could write. */
	assert_int_equal(assign_in(d, "node-a", "net.o2", NULL, &ip, &err), 0);
	struct br_cidr c;
	assert_int_equal(cidr_parse("10.90.0.0/28", false, &c), 0);
	b = (struct br_ipamblock *)model_new(model_kind(KIND_IPAMBLOCK), NULL, "10.90.0.0-28");
	ipam_block_init(b, &c, "node-b", false);
	assert_int_equal(ds_create(d, &b->o), 0);
	model_free(&b->o);
	struct br_blockaffinity *a = (struct br_blockaffinity *)model_new(
		model_kind(KIND_BLOCKAFFINITY), NULL, "10.90.0.0-28");
	a->spec.node = "node-b";
	a->spec.cidr = "10.90.0.0/28";
	a->spec.state = "confirmed";
	assert_int_equal(ds_create(d, &a->o), 0);
	model_free(&a->o);
	/* Never marked empty, well within any grace period: it goes all the same. */
	sweep(d, NULL, false, now, 300, &sw);
	assert_int_equal(sw.empty, 1);
	assert_null(get_block(d, "10.90.0.0-28"));
	assert_null(get_aff(d, "node-b", "10.90.0.0-28"));
	assert_non_null(b = get_block(d, "10.90.0.0-26"));
	model_free(&b->o);
	check_invariants(d, "after the repairs");
	sb_free(&err);
	ds_close(d);
}

/* --- forced interleavings -------------------------------------------------------------------- */

/*
 * A racer is one IPAM operation in a child process. It stops at its k-th
 * step (ipam_test_hook) and tells the parent, which lets it go on when it
 * wants; when done it reports the result.
 */
struct racer_msg {
	char kind; /* 'S' stopped after a step, 'D' done */
	int rc;
	char step[40];
};

struct racer {
	pid_t pid;
	int rd, wr; /* from and to the child */
};

typedef int (*race_op)(struct ds *d);

static int racer_stop_at, racer_steps, racer_rd, racer_wr;

static void racer_hook(const char *step)
{
	if (++racer_steps != racer_stop_at)
		return;
	struct racer_msg m = { .kind = 'S' };
	snprintf(m.step, sizeof(m.step), "%s", step);
	char go;
	if (write(racer_wr, &m, sizeof(m)) != (ssize_t)sizeof(m) || read(racer_rd, &go, 1) != 1)
		_exit(3); /* the parent is gone or killed us on purpose */
}

static void racer_start(struct racer *r, race_op fn, int stop_at)
{
	int up[2], down[2];
	assert_int_equal(pipe(up), 0);
	assert_int_equal(pipe(down), 0);
	r->pid = fork();
	assert_true(r->pid >= 0);
	if (r->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(up[0]);
		close(down[1]);
		racer_rd = down[0];
		racer_wr = up[1];
		racer_stop_at = stop_at;
		racer_steps = 0;
		ipam_test_hook = racer_hook;
		struct ds *d;
		struct strbuf err = STRBUF_INIT;
		sb_init(&err);
		struct racer_msg m = { .kind = 'D', .rc = -EIO };
		if (connect_ds(3000, &d, &err) == 0) {
			m.rc = fn(d);
			ds_close(d);
		}
		sb_free(&err);
		ssize_t w = write(racer_wr, &m, sizeof(m));
		(void)w;
		_exit(0);
	}
	close(up[1]);
	close(down[0]);
	r->rd = up[0];
	r->wr = down[1];
}

static struct racer_msg racer_wait(struct racer *r)
{
	struct pollfd p = { .fd = r->rd, .events = POLLIN };
	struct racer_msg m = { 0 };
	if (poll(&p, 1, 30000) != 1 || read(r->rd, &m, sizeof(m)) != (ssize_t)sizeof(m))
		fail_msg("a racer neither stopped nor finished within 30 s");
	return m;
}

static void racer_go(struct racer *r)
{
	assert_int_equal(write(r->wr, "g", 1), 1);
}

static void racer_end(struct racer *r, bool kill_it)
{
	if (kill_it)
		kill(r->pid, SIGKILL);
	close(r->rd);
	close(r->wr);
	waitpid(r->pid, NULL, 0);
}

struct race {
	void (*setup)(struct ds *d);
	race_op a, b;
	const char *a_name, *b_name;
	void (*verify)(struct ds *d, const char *schedule);
};

/*
 * Every interleaving at the steps: A stopped after its k-th step while B
 * runs whole (j = 0) or up to its j-th step; then A finishes, then B. Both
 * must succeed and leave the datastore consistent. Returns how many
 * interleavings ran.
 */
static int race_all(const struct race *rc)
{
	int runs = 0;
	for (int k = 1; k < 10; k++) {
		for (int j = 0; j < 10; j++) {
			struct ds *d = open_ds();
			wipe(d);
			rc->setup(d);
			struct racer a, b;
			racer_start(&a, rc->a, k);
			struct racer_msg ma = racer_wait(&a);
			if (ma.kind == 'D') {
				/* A has fewer than k steps: every interleaving ran. */
				racer_end(&a, false);
				ds_close(d);
				if (ma.rc != 0)
					fail_msg("%s alone failed: %d", rc->a_name, ma.rc);
				return runs;
			}
			racer_start(&b, rc->b, j);
			struct racer_msg mb = racer_wait(&b);
			char schedule[256];
			snprintf(schedule, sizeof(schedule),
				 "%s stopped after %s (step %d), %s %s%s", rc->a_name, ma.step, k,
				 rc->b_name, mb.kind == 'S' ? "stopped after " : "ran whole",
				 mb.kind == 'S' ? mb.step : "");
			racer_go(&a);
			struct racer_msg ra = racer_wait(&a), rb = mb;
			if (mb.kind == 'S') {
				racer_go(&b);
				rb = racer_wait(&b);
			}
			racer_end(&a, false);
			racer_end(&b, false);
			if (ra.kind != 'D' || rb.kind != 'D' || ra.rc != 0 || rb.rc != 0)
				fail_msg("%s: %s gave %d, %s gave %d", schedule, rc->a_name, ra.rc,
					 rc->b_name, rb.rc);
			print_message("%s: ok\n", schedule);
			rc->verify(d, schedule);
			ds_close(d);
			runs++;
			if (j > 0 && mb.kind == 'D')
				break; /* B has fewer than j steps */
		}
	}
	return runs;
}

/* node-a's block 10.70.0.0/26, empty since long ago. */
static void setup_empty_block(struct ds *d)
{
	add_pool(d, "sw", "10.70.0.0/24", 26, NULL);
	add_node(d, "node-a");
	struct ipam_request req = { .handle = "net.old", .node = "node-a", .now = 1000 };
	struct ipam_assigned out;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	size_t n;
	assert_int_equal(ipam_assign(d, &req, &out, &err), 0);
	assert_int_equal(ipam_release_handle(d, "net.old", 1000, 0, &n, &err), 0);
	sb_free(&err);
}

/* brindlectl ipam release --empty-blocks, every node. */
static int op_sweep_all(struct ds *d)
{
	struct ipam_sweep s = { .now = time(NULL), .grace_s = 300, .timeout_ms = 10000 };
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	int r = ipam_release_empty_blocks(d, &s, NULL, &err);
	sb_free(&err);
	return r;
}

static int op_assign(struct ds *d, const char *node, const char *handle, const char *pool)
{
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	struct br_ip ip;
	const char *pools[] = { pool };
	struct ipam_request req = { .handle = handle,
				    .node = node,
				    .pools = pool ? pools : NULL,
				    .n_pools = pool ? 1 : 0,
				    .now = time(NULL),
				    .timeout_ms = 10000 };
	struct ipam_assigned out;
	int r = ipam_assign(d, &req, &out, &err);
	(void)ip;
	sb_free(&err);
	return r;
}

static int op_add_node_a(struct ds *d)
{
	return op_assign(d, "node-a", "net.new", NULL);
}

static void verify_sweep_and_claim(struct ds *d, const char *schedule)
{
	check_invariants(d, schedule);
	struct br_ip held[2];
	size_t n;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	assert_int_equal(ipam_handle_ips(d, "net.new", held, 2, &n, &err), 0);
	assert_int_equal(n, 1);
	sb_free(&err);
}

/* A pool and node-a, no block yet: node-a's ADD claims one. */
static void setup_no_block(struct ds *d)
{
	add_pool(d, "sw", "10.70.0.0/24", 26, NULL);
	add_node(d, "node-a");
}

/* brindlectl ipam release --empty-blocks --grace 0: a fresh claim counts as stale. */
static int op_sweep_all_now(struct ds *d)
{
	struct ipam_sweep s = { .now = time(NULL), .grace_s = 0, .timeout_ms = 10000 };
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	int r = ipam_release_empty_blocks(d, &s, NULL, &err);
	sb_free(&err);
	return r;
}

/*
 * An empty-block release (brindlectl, another host) racing the node's own
 * claim of that block: never an orphan block (owned by the node, no
 * affinity), whichever runs first and wherever each is stopped. And a
 * release with --grace 0 racing a claim in progress: the claim is withdrawn
 * under it and tries again.
 */
static void test_race_sweep_and_claim(void **state)
{
	struct race r1 = { setup_empty_block,	     op_sweep_all,    op_add_node_a,
			   "release --empty-blocks", "ADD on node-a", verify_sweep_and_claim };
	int n = race_all(&r1);
	struct race r2 = { setup_no_block,
			   op_add_node_a,
			   op_sweep_all_now,
			   "ADD on node-a",
			   "release --empty-blocks --grace 0",
			   verify_sweep_and_claim };
	n += race_all(&r2);
	print_message("%d interleavings\n", n);
	assert_true(n >= 6);
}

static void setup_overlapping_pools(struct ds *d)
{
	add_pool(d, "p26", "10.250.0.0/24", 26, NULL);
	add_pool(d, "p28", "10.250.0.0/24", 28, NULL);
}

static int op_add_a_p26(struct ds *d)
{
	return op_assign(d, "node-a", "net.a", "p26");
}

static int op_add_b_p28(struct ds *d)
{
	return op_assign(d, "node-b", "net.b", "p28");
}

static void verify_overlapping_claims(struct ds *d, const char *schedule)
{
	check_invariants(d, schedule);
}

/*
 * Two nodes claiming at once from overlapping pools (different block
 * sizes, so different keys: an etcd create alone cannot keep them apart).
 */
static void test_race_overlapping_claims(void **state)
{
	struct race r = {
		setup_overlapping_pools, op_add_a_p26,		op_add_b_p28,
		"ADD on node-a (/26)",	 "ADD on node-b (/28)", verify_overlapping_claims
	};
	int n = race_all(&r);
	print_message("%d interleavings\n", n);
	assert_true(n >= 2);
}

static const char *interrupted_node;

static int op_claim_interrupted(struct ds *d)
{
	return op_assign(d, interrupted_node, "net.cut", NULL);
}

/* A claim that stops for good after its pending affinity (the process died). */
static void interrupt_claim(const char *node)
{
	interrupted_node = node;
	struct racer r;
	racer_start(&r, op_claim_interrupted, 2);
	struct racer_msg m = racer_wait(&r);
	assert_int_equal(m.kind, 'S');
	assert_string_equal(m.step, "claim-pending");
	racer_end(&r, true);
}

/*
 * A claim interrupted after its pending affinity is settled by the node's
 * next DEL, or by brindlectl's sweep once the node is gone or the claim is
 * older than the grace period; a fresh one of a live node is left alone (it
 * may be in progress).
 */
static void test_interrupted_claims(void **state)
{
	struct ds *d = open_ds();
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	add_pool(d, "ic", "10.80.0.0/24", 26, NULL);
	add_node(d, "node-x");
	add_node(d, "node-z");
	int64_t now = time(NULL);

	interrupt_claim("node-x");
	struct br_blockaffinity *a = get_aff(d, "node-x", "10.80.0.0-26");
	assert_non_null(a);
	assert_string_equal(a->spec.state, "pending");
	model_free(&a->o);
	assert_null(get_block(d, "10.80.0.0-26"));
	struct ipam_swept sw;
	/* Fresh, its node alive: brindlectl's sweep leaves it. */
	sweep(d, NULL, false, now, 300, &sw);
	assert_int_equal(sw.claims, 0);
	assert_non_null(a = get_aff(d, "node-x", "10.80.0.0-26"));
	model_free(&a->o);
	/* The node's next DEL (of any pod) settles it. */
	size_t n;
	assert_int_equal(ipam_release_handle(d, "net.other", now, 0, &n, &err), 0);
	sweep(d, "node-x", true, now, 300, &sw);
	assert_int_equal(sw.claims, 1);
	assert_null(get_aff(d, "node-x", "10.80.0.0-26"));
	assert_null(get_block(d, "10.80.0.0-26"));

	/* A node removed (no Node resource) with a claim left: brindlectl withdraws it. */
	interrupt_claim("node-y");
	assert_non_null(a = get_aff(d, "node-y", "10.80.0.0-26"));
	model_free(&a->o);
	sweep(d, NULL, false, now, 300, &sw);
	assert_int_equal(sw.claims, 1);
	assert_null(get_aff(d, "node-y", "10.80.0.0-26"));

	/*
	 * A live node's claim pending for longer than the grace period: withdrawn too. Its age
	 * counts from the affinity's creation (a loaded machine may take seconds to get here).
	 */
	interrupt_claim("node-z");
	assert_non_null(a = get_aff(d, "node-z", "10.80.0.0-26"));
	struct tm tm = { 0 };
	const char *end = strptime(a->o.meta.creation_timestamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
	assert_true(end && !*end);
	int64_t born = (int64_t)timegm(&tm);
	model_free(&a->o);
	sweep(d, "node-z", false, born + 299, 300, &sw);
	assert_int_equal(sw.claims, 0);
	sweep(d, "node-z", false, born + 301, 300, &sw);
	assert_int_equal(sw.claims, 1);
	assert_null(get_aff(d, "node-z", "10.80.0.0-26"));
	check_invariants(d, "claims settled");
	/* And the block is anyone's to claim again. */
	struct br_ip ip;
	assert_int_equal(assign_in(d, "node-x", "net.x", NULL, &ip, &err), 0);
	assert_string_equal(addr_text(&ip), "10.80.0.0");
	sb_free(&err);
	ds_close(d);
}

int main(void)
{
	kubeconfig = getenv("BRINDLE_TEST_KUBECONFIG");
	if (kubeconfig && !*kubeconfig)
		kubeconfig = NULL;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_release_ip_holder, setup, teardown),
		cmocka_unit_test_setup_teardown(test_orphans_and_overlaps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_race_sweep_and_claim, setup, teardown),
		cmocka_unit_test_setup_teardown(test_race_overlapping_claims, setup, teardown),
		cmocka_unit_test_setup_teardown(test_interrupted_claims, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
