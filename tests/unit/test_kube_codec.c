/* The pure half of the Kubernetes API client: paths, Status errors, list pages, watch events. */
#include "harness.h"

#include <brindle/core/json.h>
#include <brindle/core/kube_codec.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

static struct jv *parse(struct arena *a, const char *text)
{
	struct jv *v;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	if (json_parse(a, text, strlen(text), &v, &err) < 0)
		fail_msg("json: %s", sb_str(&err));
	sb_free(&err);
	return v;
}

static void test_paths(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	sb_init(&sb);
	kube_path(&sb, "v1", "kube-system", "pods", "coredns-1");
	assert_string_equal(sb_str(&sb), "/api/v1/namespaces/kube-system/pods/coredns-1");
	sb_reset(&sb);
	kube_path(&sb, "crd.projectcalico.org/v1", NULL, "ippools", NULL);
	assert_string_equal(sb_str(&sb), "/apis/crd.projectcalico.org/v1/ippools");
	sb_reset(&sb);
	kube_query_escape(&sb, "eyJ2Ijo+/=~_.-");
	assert_string_equal(sb_str(&sb), "eyJ2Ijo%2B%2F%3D~_.-");
	sb_free(&sb);
	(void)state;
}

static void test_status(void **state)
{
	struct arena *a = arena_new();
	struct strbuf msg = STRBUF_INIT;
	sb_init(&msg);
	struct {
		long code;
		const char *reason;
		int want;
	} cases[] = {
		{ 404, "NotFound", -ENOENT },
		{ 409, "AlreadyExists", -EEXIST },
		{ 409, "Conflict", -ECANCELED },
		{ 410, "Expired", -ESTALE },
		{ 403, "Forbidden", -EACCES },
		{ 401, "Unauthorized", -EACCES },
		{ 422, "Invalid", -EINVAL },
		{ 429, "TooManyRequests", -EAGAIN },
		{ 503, "ServiceUnavailable", -EAGAIN },
		{ 418, "Teapot", -EIO },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char text[256];
		snprintf(text, sizeof(text),
			 "{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":\"m%zu\","
			 "\"reason\":\"%s\",\"code\":%ld}",
			 i, cases[i].reason, cases[i].code);
		assert_int_equal(kube_status_errno(cases[i].code, parse(a, text), &msg),
				 cases[i].want);
		char want[64];
		snprintf(want, sizeof(want), "m%zu (HTTP %ld %s)", i, cases[i].code,
			 cases[i].reason);
		assert_string_equal(sb_str(&msg), want);
	}
	/* Not a Status (a proxy's page): the HTTP code alone. */
	assert_int_equal(kube_status_errno(502, NULL, &msg), -EAGAIN);
	assert_string_equal(sb_str(&msg), "HTTP 502");
	assert_int_equal(kube_status_errno(404, parse(a, "[1]"), &msg), -ENOENT);
	sb_free(&msg);
	arena_free(a);
	(void)state;
}

static void test_list(void **state)
{
	struct arena *a = arena_new();
	struct kube_list_page p;
	assert_int_equal(
		kube_decode_list(parse(a, "{\"kind\":\"PodList\",\"metadata\":{"
					  "\"resourceVersion\":\"12\",\"continue\":\"abc\"},"
					  "\"items\":[{\"metadata\":{\"name\":\"x\"}},{}]}"),
				 &p, NULL),
		0);
	assert_int_equal(p.n, 2);
	assert_string_equal(p.resource_version, "12");
	assert_string_equal(p.cont, "abc");
	assert_string_equal(kube_meta_str(p.items[0], "name"), "x");
	assert_string_equal(kube_meta_str(p.items[1], "name"), "");
	assert_int_equal(kube_decode_list(parse(a, "{\"items\":null}"), &p, NULL), 0);
	assert_int_equal(p.n, 0);
	assert_string_equal(p.cont, "");
	static const char *const bad[] = { "[]", "{\"items\":{}}", "{\"items\":[1]}",
					   "{\"metadata\":[]}" };
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		if (kube_decode_list(parse(a, bad[i]), &p, NULL) != -EPROTO)
			fail_msg("accepted %s", bad[i]);
	arena_free(a);
	(void)state;
}

static void test_events(void **state)
{
	struct arena *a = arena_new();
	struct strbuf msg = STRBUF_INIT;
	sb_init(&msg);
	struct kube_event e;
	assert_int_equal(
		kube_decode_event(parse(a, "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":"
					   "{\"name\":\"p\",\"resourceVersion\":\"9\"}}}"),
				  &e, &msg),
		0);
	assert_int_equal(e.type, KUBE_EVENT_MODIFIED);
	assert_string_equal(e.resource_version, "9");
	assert_int_equal(
		kube_decode_event(parse(a, "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":"
					   "{\"resourceVersion\":\"15\"}}}"),
				  &e, &msg),
		0);
	assert_int_equal(e.type, KUBE_EVENT_BOOKMARK);
	assert_string_equal(e.resource_version, "15");
	assert_int_equal(
		kube_decode_event(parse(a, "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\","
					   "\"message\":\"too old resource version: 1 (41)\","
					   "\"reason\":\"Expired\",\"code\":410}}"),
				  &e, &msg),
		0);
	assert_int_equal(e.type, KUBE_EVENT_ERROR);
	assert_int_equal(e.error, -ESTALE);
	assert_int_equal(e.code, 410);
	assert_non_null(strstr(sb_str(&msg), "too old resource version"));
	static const char *const bad[] = {
		"[]",
		"{\"object\":{}}",
		"{\"type\":\"ADDED\"}",
		"{\"type\":\"ADDED\",\"object\":[]}",
		"{\"type\":\"ADDED\",\"object\":{\"metadata\":{}}}",
		"{\"type\":\"RENAMED\",\"object\":{\"metadata\":{\"resourceVersion\":\"1\"}}}",
		"{\"type\":\"ERROR\",\"object\":{\"code\":\"x\"}}",
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		if (kube_decode_event(parse(a, bad[i]), &e, &msg) != -EPROTO)
			fail_msg("accepted %s", bad[i]);
	sb_free(&msg);
	arena_free(a);
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_paths),
		cmocka_unit_test(test_status),
		cmocka_unit_test(test_list),
		cmocka_unit_test(test_events),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
