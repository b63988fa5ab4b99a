/*
 * confd's template sets (naming, partials, strict rendering, file order) and
 * its password sources (environment, files, mounted secrets).
 */
#include "harness.h"

#include "render.h"
#include "secrets.h"

#include <brindle/core/json.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static struct jv *data(struct arena *a, const char *json)
{
	struct jv *v;
	if (json_parse(a, json, strlen(json), &v, NULL) < 0)
		fail_msg("bad JSON in test: %s", json);
	return v;
}

static void test_template_set(void **state)
{
	const struct render_source src[] = {
		{ "bird.conf.mustache", "router id {{id}};\ninclude \"b.conf\";\n" },
		{ "b.conf.mustache", "{{#peers}}\n{{> peer}}\n{{/peers}}\n" },
		{ "a.conf.mustache", "# a\n" },
		{ "_peer.mustache", "protocol bgp {{name}} { neighbor {{ip}} as {{as}}; }\n" },
	};
	struct render_templates *t;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	assert_int_equal(render_templates_compile(src, ARRAY_SIZE(src), &t, &err), 0);
	struct arena *a = arena_new();
	struct render_output out, again;
	assert_int_equal(render_config(t,
				       data(a, "{\"id\":\"1.2.3.4\",\"peers\":[{\"name\":\"x\","
					       "\"ip\":\"10.0.0.2\",\"as\":64512}]}"),
				       &out, &err),
			 0);
	assert_int_equal(out.n, 3);
	/* Includes in name order, the main file last. */
	assert_string_equal(out.files[0].name, "a.conf");
	assert_string_equal(out.files[1].name, "b.conf");
	assert_string_equal(out.files[2].name, "bird.conf");
	assert_string_equal(out.files[1].text.buf,
			    "protocol bgp x { neighbor 10.0.0.2 as 64512; }\n");
	assert_int_equal(render_config(t,
				       data(a, "{\"id\":\"1.2.3.4\",\"peers\":[{\"name\":\"x\","
					       "\"ip\":\"10.0.0.2\",\"as\":64512}]}"),
				       &again, &err),
			 0);
	assert_true(render_output_equal(&out, &again));
	render_output_clear(&again);

	/* Strict: a missing name is an error that names the template; no output. */
	assert_int_equal(render_config(t, data(a, "{\"peers\":[]}"), &again, &err), -ENOENT);
	assert_string_equal(sb_str(&err), "bird.conf.mustache: line 1: \"id\" is not defined");
	sb_reset(&err);
	/* No escaping: BIRD syntax is not HTML. */
	assert_int_equal(
		render_config(t, data(a, "{\"id\":\"a<b>&\\\"\",\"peers\":[]}"), &again, &err), 0);
	assert_string_equal(again.files[2].text.buf, "router id a<b>&\";\ninclude \"b.conf\";\n");
	assert_false(render_output_equal(&out, &again));
	render_output_clear(&again);
	render_output_clear(&out);
	render_templates_free(t);
	arena_free(a);

	const struct render_source no_main[] = { { "x.conf.mustache", "x" } };
	assert_int_equal(render_templates_compile(no_main, 1, &t, &err), -EINVAL);
	assert_string_equal(sb_str(&err), "the templates have no bird.conf.mustache");
	sb_reset(&err);
	const struct render_source broken[] = { { "bird.conf.mustache", "{{#a}}" } };
	assert_int_equal(render_templates_compile(broken, 1, &t, &err), -EINVAL);
	assert_string_equal(sb_str(&err),
			    "bird.conf.mustache: line 1: section \"a\" is not closed");
	sb_reset(&err);
	const struct render_source badname[] = { { "bird.conf", "x" } };
	assert_int_equal(render_templates_compile(badname, 1, &t, &err), -EINVAL);
	sb_free(&err);
}

static void test_secrets(void **state)
{
	char dir[] = "/tmp/brindle-test-secrets-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[256], sdir[256];
	snprintf(path, sizeof(path), "%s/pw", dir);
	FILE *f = fopen(path, "w");
	fputs("from-file\n", f);
	fclose(f);
	snprintf(sdir, sizeof(sdir), "%s/bgp", dir);
	mkdir(sdir, 0700);
	char spath[300];
	snprintf(spath, sizeof(spath), "%s/mesh", sdir);
	f = fopen(spath, "w");
	fputs("from-secret\r\n", f);
	fclose(f);
	setenv("BRINDLE_BGP_PASSWORD_TEST", "from-env", 1);

	struct secrets s = { .dir = dir, .env_prefix = SECRETS_DEFAULT_ENV_PREFIX };
	struct arena *a = arena_new();
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	const char *out;
	struct br_bgp_password p = { .env = "BRINDLE_BGP_PASSWORD_TEST" };
	assert_int_equal(secrets_password(&s, &p, a, &out, &err), 0);
	assert_string_equal(out, "from-env");
	p = (struct br_bgp_password){ .file = path };
	assert_int_equal(secrets_password(&s, &p, a, &out, &err), 0);
	assert_string_equal(out, "from-file");
	struct br_secret_key_ref ref = { "bgp", "mesh" };
	p = (struct br_bgp_password){ .secret_key_ref = &ref };
	assert_int_equal(secrets_password(&s, &p, a, &out, &err), 0);
	assert_string_equal(out, "from-secret");

	ref.key = "..";
	assert_int_equal(secrets_password(&s, &p, a, &out, &err), -EINVAL);
	ref.key = "absent";
	sb_reset(&err);
	assert_int_equal(secrets_password(&s, &p, a, &out, &err), -ENOENT);
	assert_non_null(strstr(sb_str(&err), "/bgp/absent: No such file or directory"));
	p = (struct br_bgp_password){ .env = "BRINDLE_BGP_PASSWORD_UNSET" };
	sb_reset(&err);
	assert_int_equal(secrets_password(&s, &p, a, &out, &err), -ENOENT);
	assert_string_equal(sb_str(&err),
			    "environment variable BRINDLE_BGP_PASSWORD_UNSET is not set");

	f = fopen(path, "w");
	for (int i = 0; i < SECRET_MAX_BYTES + 10; i++)
		fputc('x', f);
	fclose(f);
	p = (struct br_bgp_password){ .file = path };
	assert_int_equal(secrets_password(&s, &p, a, &out, &err), -EFBIG);

	unlink(path);
	unlink(spath);
	rmdir(sdir);
	rmdir(dir);
	arena_free(a);
	sb_free(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_template_set),
		cmocka_unit_test(test_secrets),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
