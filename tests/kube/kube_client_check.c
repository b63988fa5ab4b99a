/*
 * The Kubernetes API client against the real kube-apiserver (run by
 * tests/kube/kube_client.sh, which starts the control plane in a namespace
 * and runs this inside it). Environment: KUBE_SERVER, KUBE_CA, KUBE_CERT,
 * KUBE_KEY (an admin identity) and KUBE_NOBODY_CERT, KUBE_NOBODY_KEY (an
 * identity without grants).
 *
 * Requests and their errors (exists, conflict, not found, forbidden),
 * pagination across pages, and a watch from a list's resourceVersion seeing
 * every change in order, a list across an etcd compaction.
 */
#include "harness.h"

#include <brindle/core/json.h>
#include <brindle/sys/kube_client.h>
#include <brindle/sys/loop.h>
#include <brindle/sys/clock.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *env(const char *name)
{
	const char *v = getenv(name);
	if (!v || !*v)
		fail_msg("%s is not set (run through tests/kube/kube_client.sh)", name);
	return v;
}

static struct kube_client *client(struct loop *l, const char *cert, const char *key)
{
	struct http_auth auth = { .ca_file = env("KUBE_CA"), .cert_file = cert, .key_file = key };
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	struct kube_client *c;
	if (kube_client_new(l, env("KUBE_SERVER"), &auth, 10000, &c, &err) < 0)
		fail_msg("kube_client_new: %s", sb_str(&err));
	sb_free(&err);
	return c;
}

static struct kube_client *admin(struct loop *l)
{
	return client(l, env("KUBE_CERT"), env("KUBE_KEY"));
}

static int do_json(struct kube_client *c, const char *method, const char *path, const char *json,
		   struct jv **out)
{
	struct strbuf b = STRBUF_INIT;
	sb_init(&b);
	sb_adds(&b, json);
	int r = kube_request(c, method, path, NULL, &b, out);
	sb_free(&b);
	return r;
}

static void make_namespace(struct kube_client *c, const char *ns)
{
	char body[256];
	snprintf(body, sizeof(body),
		 "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"%s\"}}",
		 ns);
	int r = do_json(c, "POST", "/api/v1/namespaces", body, NULL);
	if (r < 0 && r != -EEXIST)
		fail_msg("create namespace %s: %s", ns, kube_last_error(c));
}

static void put_configmap(struct kube_client *c, const char *ns, const char *name, const char *v)
{
	char path[256], body[512];
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/configmaps", ns);
	snprintf(body, sizeof(body),
		 "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\"},"
		 "\"data\":{\"v\":\"%s\"}}",
		 name, v);
	if (do_json(c, "POST", path, body, NULL) < 0)
		fail_msg("create configmap %s: %s", name, kube_last_error(c));
}

static void test_version(void **state)
{
	struct kube_client *c = admin(NULL);
	struct jv *v;
	assert_int_equal(kube_request(c, "GET", "/version", NULL, NULL, &v), 0);
	const char *gv = jv_as_string(jv_get(v, "gitVersion"));
	assert_non_null(gv);
	assert_true(strncmp(gv, "v1.", 3) == 0);
	kube_client_free(c);
}

static void test_crud_errors(void **state)
{
	struct kube_client *c = admin(NULL);
	make_namespace(c, "crud");
	const char *coll = "/api/v1/namespaces/crud/configmaps";
	const char *obj = "/api/v1/namespaces/crud/configmaps/one";
	const char *doc = "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
			  "\"metadata\":{\"name\":\"one\"},\"data\":{\"a\":\"1\"}}";
	struct jv *v;
	assert_int_equal(do_json(c, "POST", coll, doc, &v), 0);
	char rv[64];
	snprintf(rv, sizeof(rv), "%s", kube_meta_str(v, "resourceVersion"));
	assert_true(rv[0] != '\0');
	assert_int_equal(do_json(c, "POST", coll, doc, NULL), -EEXIST);
	assert_non_null(strstr(kube_last_error(c), "already exists"));

	/* An update at the version read succeeds; at an older one it is a conflict. */
	char body[512];
	snprintf(body, sizeof(body),
		 "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"one\","
		 "\"resourceVersion\":\"%s\"},\"data\":{\"a\":\"2\"}}",
		 rv);
	assert_int_equal(do_json(c, "PUT", obj, body, &v), 0);
	assert_string_equal(jv_as_string(jv_get(jv_get(v, "data"), "a")), "2");
	assert_int_equal(do_json(c, "PUT", obj, body, NULL), -ECANCELED);

	assert_int_equal(kube_request(c, "DELETE", obj, NULL, NULL, NULL), 0);
	assert_int_equal(kube_request(c, "GET", obj, NULL, NULL, &v), -ENOENT);
	assert_int_equal(kube_request(c, "DELETE", obj, NULL, NULL, NULL), -ENOENT);

	/* A field the server refuses: the message names it. */
	assert_int_equal(do_json(c, "POST", coll,
				 "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
				 "\"metadata\":{\"name\":\"Not_A_Name\"}}",
				 NULL),
			 -EINVAL);
	assert_non_null(strstr(kube_last_error(c), "metadata.name"));

	/* An identity without grants. */
	struct kube_client *nobody = client(NULL, env("KUBE_NOBODY_CERT"), env("KUBE_NOBODY_KEY"));
	assert_int_equal(kube_request(nobody, "GET", coll, NULL, NULL, &v), -EACCES);
	assert_non_null(strstr(kube_last_error(nobody), "forbidden"));
	kube_client_free(nobody);
	kube_client_free(c);
}

struct collect {
	size_t n, restarts;
	bool compact; /* compact etcd after the first page */
};

static void compact_etcd(void);

static int count_item(void *ctx, const struct jv *obj)
{
	struct collect *col = ctx;
	if (strncmp(kube_meta_str(obj, "name"), "cm-", 3) == 0)
		col->n++;
	if (col->compact && col->n == 5) {
		col->compact = false;
		compact_etcd();
	}
	return 0;
}

static void restart(void *ctx)
{
	struct collect *col = ctx;
	col->n = 0;
	col->restarts++;
}

static void test_pages(void **state)
{
	struct kube_client *c = admin(NULL);
	make_namespace(c, "pages");
	for (int i = 0; i < 23; i++) {
		char name[32];
		snprintf(name, sizeof(name), "cm-%02d", i);
		put_configmap(c, "pages", name, "x");
	}
	struct collect col = { 0 };
	struct strbuf rv = STRBUF_INIT;
	sb_init(&rv);
	assert_int_equal(kube_list(c, "/api/v1/namespaces/pages/configmaps", 5, count_item, restart,
				   &col, &rv),
			 0);
	assert_int_equal(col.n, 23);
	assert_int_equal(col.restarts, 0);
	assert_true(rv.len > 0);

	/*
	 * etcd compacted between two pages: the list completes (this server
	 * serves continued lists from its cache's snapshot; one that answers 410
	 * makes kube_list start again, counted in restarts).
	 */
	struct collect again = { .compact = true };
	assert_int_equal(kube_list(c, "/api/v1/namespaces/pages/configmaps", 5, count_item, restart,
				   &again, &rv),
			 0);
	assert_int_equal(again.n, 23);
	fprintf(stderr, "restarts after compaction: %zu\n", again.restarts);
	sb_free(&rv);
	kube_client_free(c);
}

struct watch_rec {
	char log[1024];
	int ended_err;
	bool ended;
	char last_rv[64];
};

static void on_event(void *ctx, const struct kube_event *e)
{
	struct watch_rec *r = ctx;
	static const char *const names[] = { "ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR" };
	snprintf(r->last_rv, sizeof(r->last_rv), "%s", e->resource_version);
	/* The root-CA publisher adds its ConfigMap to every namespace, in its own time. */
	if (e->type == KUBE_EVENT_BOOKMARK ||
	    strcmp(kube_meta_str(e->object, "name"), "kube-root-ca.crt") == 0)
		return;
	size_t len = strlen(r->log);
	snprintf(r->log + len, sizeof(r->log) - len, "%s %s=%s;", names[e->type],
		 kube_meta_str(e->object, "name"),
		 jv_as_string(jv_get(jv_get(e->object, "data"), "v")) ?: "");
}

static void on_ended(void *ctx, int err, const char *why)
{
	struct watch_rec *r = ctx;
	r->ended = true;
	r->ended_err = err;
	fprintf(stderr, "watch ended: %d %s\n", err, why);
}

static const struct kube_watch_ops watch_ops = { on_event, on_ended };

/* Turns the loop until @log has @want or @secs pass. */
static void run_until(struct loop *l, struct watch_rec *r, const char *want, int secs)
{
	uint64_t deadline = now_ms() + (uint64_t)secs * 1000;
	while (!strstr(r->log, want) && !r->ended && now_ms() < deadline)
		loop_run_once(l, 100);
}

/* Compacts the control plane's etcd at its current revision (KUBE_ETCD_URL). */
static void compact_etcd(void)
{
	struct http_agent *a;
	struct strbuf err = STRBUF_INIT, url = STRBUF_INIT;
	sb_init(&err);
	sb_init(&url);
	if (http_agent_new(NULL, NULL, &a, &err) < 0)
		fail_msg("agent: %s", sb_str(&err));
	const char *range = "{\"key\":\"AA==\"}";
	sb_addf(&url, "%s/v3/kv/range", env("KUBE_ETCD_URL"));
	struct http_request hr = { .method = "POST",
				   .url = sb_str(&url),
				   .content_type = "application/json",
				   .body = range,
				   .body_len = strlen(range),
				   .timeout_ms = 5000 };
	struct http_result res;
	if (http_agent_perform(a, &hr, &res) < 0 || res.status != 200)
		fail_msg("etcd range: %s", res.why);
	const char *p = strstr(sb_str(&res.body), "\"revision\":\"");
	assert_non_null(p);
	long long rev = atoll(p + strlen("\"revision\":\""));
	http_result_clear(&res);
	char body[64];
	snprintf(body, sizeof(body), "{\"revision\":\"%lld\",\"physical\":true}", rev);
	sb_reset(&url);
	sb_addf(&url, "%s/v3/kv/compaction", env("KUBE_ETCD_URL"));
	hr.url = sb_str(&url);
	hr.body = body;
	hr.body_len = strlen(body);
	if (http_agent_perform(a, &hr, &res) < 0 || res.status != 200)
		fail_msg("etcd compaction: %s %s", res.why, sb_str(&res.body));
	http_result_clear(&res);
	http_agent_free(a);
	sb_free(&err);
	sb_free(&url);
}

static void test_watch(void **state)
{
	struct loop *l = loop_new();
	struct kube_client *c = admin(NULL), *lc = admin(l);
	make_namespace(c, "watch");
	put_configmap(c, "watch", "before", "0");
	struct collect col = { 0 };
	struct strbuf rv = STRBUF_INIT;
	sb_init(&rv);
	assert_int_equal(
		kube_list(c, "/api/v1/namespaces/watch/configmaps", 0, count_item, NULL, &col, &rv),
		0);
	struct watch_rec rec = { 0 };
	struct kube_watch *w;
	assert_int_equal(kube_watch_start(lc, "/api/v1/namespaces/watch/configmaps", sb_str(&rv),
					  60, &watch_ops, &rec, &w),
			 0);
	put_configmap(c, "watch", "a", "1");
	struct strbuf patch = STRBUF_INIT;
	sb_init(&patch);
	sb_adds(&patch, "{\"data\":{\"v\":\"2\"}}");
	assert_int_equal(kube_request(c, "PATCH", "/api/v1/namespaces/watch/configmaps/a",
				      "application/merge-patch+json", &patch, NULL),
			 0);
	sb_free(&patch);
	assert_int_equal(kube_request(c, "DELETE", "/api/v1/namespaces/watch/configmaps/a", NULL,
				      NULL, NULL),
			 0);
	run_until(l, &rec, "DELETED a", 20);
	/* "before" came with the list, not the watch. */
	assert_string_equal(rec.log, "ADDED a=1;MODIFIED a=2;DELETED a=2;");
	assert_false(rec.ended);
	kube_watch_stop(w);

	sb_free(&rv);
	kube_client_free(lc);
	kube_client_free(c);
	loop_free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_version),
		cmocka_unit_test(test_crud_errors),
		cmocka_unit_test(test_pages),
		cmocka_unit_test(test_watch),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
