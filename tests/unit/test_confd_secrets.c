/*
 * Where confd may read BGP passwords from (confd/secrets.c), on a private
 * temporary directory: the trust review read /etc/machine-id and a datastore
 * credential through BGPPeer password.file / password.env, and hung on a
 * FIFO. Plus what BIRD and the kernel can take as a password.
 */
#include "harness.h"

#include "bgp_view.h"
#include "secrets.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[256], secrets_dir[300];

static void put_file(const char *rel, const char *content)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(content, f);
	fclose(f);
}

static int setup(void **state)
{
	snprintf(dir, sizeof(dir), "/tmp/brindle-secrets-XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(secrets_dir, sizeof(secrets_dir), "%s/secrets", dir);
	char p[512];
	const char *dirs[] = { "secrets", "secrets/peers", "secrets/s", "secrets/s/..2026_1" };
	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, dirs[i]);
		assert_int_equal(mkdir(p, 0700), 0);
	}
	put_file("secrets/peers/tor", "file-secret\n");
	put_file("secrets/s/..2026_1/key", "mounted");
	put_file("outside", "OUTSIDE");
	snprintf(p, sizeof(p), "%s/secrets/s/..data", dir);
	assert_int_equal(symlink("..2026_1", p), 0);
	snprintf(p, sizeof(p), "%s/secrets/s/key", dir);
	assert_int_equal(symlink("..data/key", p), 0);
	char target[300];
	snprintf(target, sizeof(target), "%s/outside", dir);
	snprintf(p, sizeof(p), "%s/secrets/link", dir);
	assert_int_equal(symlink(target, p), 0);
	snprintf(p, sizeof(p), "%s/secrets/rel-link", dir);
	assert_int_equal(symlink("../outside", p), 0);
	snprintf(p, sizeof(p), "%s/secrets/proc", dir);
	assert_int_equal(symlink("/proc/self/environ", p), 0);
	snprintf(p, sizeof(p), "%s/secrets/fifo", dir);
	assert_int_equal(mkfifo(p, 0600), 0);
	char big[5000];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	put_file("secrets/big", big);
	return 0;
}

static int teardown(void **state)
{
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
	return 0;
}

/* Read the password of @p; its value into @out (NULL on failure), the error text into @why. */
static int read_pw(const struct br_bgp_password *p, const char *prefix, char *out, char *why)
{
	struct secrets s = { .dir = secrets_dir, .env_prefix = prefix };
	struct arena *a = arena_new();
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	const char *v = NULL;
	int r = secrets_password(&s, p, a, &v, &err);
	snprintf(out, 256, "%s", r == 0 ? v : "");
	snprintf(why, 512, "%s", sb_str(&err));
	sb_free(&err);
	arena_free(a);
	return r;
}

static int file_pw(const char *file, char *out, char *why)
{
	struct br_bgp_password p = { .file = file };
	return read_pw(&p, SECRETS_DEFAULT_ENV_PREFIX, out, why);
}

static void test_files_inside_only(void **state)
{
	char v[256], why[512], abs[512];
	assert_int_equal(file_pw("peers/tor", v, why), 0);
	assert_string_equal(v, "file-secret");
	snprintf(abs, sizeof(abs), "%s/peers/tor", secrets_dir);
	assert_int_equal(file_pw(abs, v, why), 0);
	assert_string_equal(v, "file-secret");
	/* A Secret volume's symbolic links stay inside: followed. */
	struct br_secret_key_ref ref = { .name = "s", .key = "key" };
	struct br_bgp_password p = { .secret_key_ref = &ref };
	assert_int_equal(read_pw(&p, "", v, why), 0);
	assert_string_equal(v, "mounted");

	/* Outside, however it is named: refused, nothing read. */
	assert_int_equal(file_pw("/etc/machine-id", v, why), -EPERM);
	assert_non_null(strstr(why, "is not inside the secrets directory"));
	assert_int_equal(file_pw("peers/../../outside", v, why), -EPERM);
	assert_int_equal(file_pw("link", v, why), -EPERM);
	assert_non_null(strstr(why, "leads outside the secrets directory"));
	assert_int_equal(file_pw("rel-link", v, why), -EPERM);
	assert_int_equal(file_pw("proc", v, why), -EPERM);
	snprintf(abs, sizeof(abs), "%s/secrets-other/x", dir);
	assert_int_equal(file_pw(abs, v, why), -EPERM);
	assert_string_equal(v, "");

	/* Not a regular file, or too big: refused without blocking. */
	alarm(5);
	assert_int_equal(file_pw("fifo", v, why), -EINVAL);
	alarm(0);
	assert_non_null(strstr(why, "not a regular file"));
	assert_int_equal(file_pw("peers", v, why), -EINVAL);
	assert_int_equal(file_pw("big", v, why), -EFBIG);
}

static void test_environment_prefix(void **state)
{
	char v[256], why[512];
	setenv("BRINDLE_BGP_PASSWORD_TOR", "env-secret", 1);
	setenv("BRINDLE_ETCD_KEY_FOR_TEST", "credential", 1);
	struct br_bgp_password ok = { .env = "BRINDLE_BGP_PASSWORD_TOR" };
	struct br_bgp_password bad = { .env = "BRINDLE_ETCD_KEY_FOR_TEST" };
	assert_int_equal(read_pw(&ok, SECRETS_DEFAULT_ENV_PREFIX, v, why), 0);
	assert_string_equal(v, "env-secret");
	assert_int_equal(read_pw(&bad, SECRETS_DEFAULT_ENV_PREFIX, v, why), -EPERM);
	assert_non_null(strstr(why, "is not allowed"));
	assert_string_equal(v, "");
	/* An empty prefix: no passwords from the environment at all. */
	assert_int_equal(read_pw(&ok, "", v, why), -EPERM);
	assert_non_null(strstr(why, "are off"));
}

static void test_relative_paths(void **state)
{
	struct arena *a = arena_new();
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	const char *d = "/etc/brindle/secrets/";
	assert_string_equal(secrets_relative(d, "a/b", a, &err), "a/b");
	assert_string_equal(secrets_relative(d, "/etc/brindle/secrets/a", a, &err), "a");
	const char *bad[] = { "/etc/brindle/secretsX/a",
			      "/etc/brindle/secrets",
			      "a//b",
			      "./a",
			      "a/.",
			      "..",
			      "a/../b",
			      "",
			      "a/",
			      "/etc/brindle/secrets/" };
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		sb_reset(&err);
		assert_null(secrets_relative(d, bad[i], a, &err));
		assert_true(err.len > 0);
	}
	sb_free(&err);
	arena_free(a);
}

static void test_password_limits(void **state)
{
	char pw[100];
	memset(pw, 'k', sizeof(pw));
	pw[80] = '\0';
	assert_null(bgp_password_problem(pw));
	pw[80] = 'k';
	pw[81] = '\0';
	assert_non_null(strstr(bgp_password_problem(pw), "80 bytes"));
	assert_non_null(bgp_password_problem(""));
	assert_non_null(bgp_password_problem("a\"b"));
	assert_non_null(bgp_password_problem("a\nb"));
	assert_non_null(bgp_password_problem("a\tb"));
	assert_non_null(bgp_password_problem("a\x1b[2Jb"));
	assert_null(bgp_password_problem("with spaces and 'quotes' and \\"));
}

static void test_communities(void **state)
{
	const char *good[] = { "65000:100", "0:0", "65535:65535", "4294967295:1:4294967295" };
	const char *bad[] = { "99999999999:1",
			      "65536:1",
			      "65000:1;",
			      "1:2:3:4",
			      "4294967296:1:1",
			      ":1",
			      "1:",
			      "a:b",
			      "1",
			      "",
			      "+1:2",
			      "1: 2" };
	for (size_t i = 0; i < ARRAY_SIZE(good); i++)
		assert_true(community_valid(good[i]));
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		assert_false(community_valid(bad[i]));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_files_inside_only, setup, teardown),
		cmocka_unit_test(test_environment_prefix),
		cmocka_unit_test(test_relative_paths),
		cmocka_unit_test(test_password_limits),
		cmocka_unit_test(test_communities),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
