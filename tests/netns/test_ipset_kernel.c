/*
 * The kernel ip set backend against the real kernel, in a network namespace
 * of the test's own (unshare): ip sets and iptables rules belong to a
 * namespace, so nothing here touches the machine's, and everything goes with
 * the namespace when the test exits, whatever happens. What the backend lists
 * is compared with `ipset save` run in the same namespace; the packet test
 * holds a second namespace in a child process that dies with the test.
 * Every command runs under timeout(1).
 */
#include "harness.h"

#include <brindle/sys/ipset.h>
#include <brindle/sys/clock.h>

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define N_MEMBERS 10000

static int printf_like(1, 2) sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	char full[1100];
	snprintf(full, sizeof(full), "timeout 20 %s", cmd);
	int r = system(full);
	return WIFEXITED(r) ? WEXITSTATUS(r) : -1;
}

static void printf_like(2, 3) sh_out(struct strbuf *out, const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	char full[1100];
	snprintf(full, sizeof(full), "timeout 20 %s", cmd);
	FILE *f = popen(full, "r");
	assert_non_null(f);
	sb_reset(out);
	char buf[8192];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		sb_add(out, buf, n);
	int r = pclose(f);
	if (!WIFEXITED(r) || WEXITSTATUS(r) != 0)
		fail_msg("%s: exit %d", cmd, WIFEXITED(r) ? WEXITSTATUS(r) : -1);
}

static int cmp_line(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The lines of @text (each ending in a newline), NUL-terminated in place. */
static char **split_lines(char *text, size_t len, size_t *n)
{
	char **v = NULL;
	size_t cap = 0;
	*n = 0;
	for (char *p = text, *end = text + len; p < end;) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			nl = end;
		*nl = '\0';
		GROW(v, cap, *n + 1);
		v[(*n)++] = p;
		p = nl + 1;
	}
	return v;
}

/* The lines of @text sorted, joined again. */
static void sort_lines(struct strbuf *text)
{
	size_t n, len = text->len;
	char *copy = sb_detach(text);
	char **v = split_lines(copy, len, &n);
	qsort(v, n, sizeof(*v), cmp_line);
	sb_init(text);
	for (size_t i = 0; i < n; i++)
		sb_addf(text, "%s\n", v[i]);
	free(v);
	free(copy);
}

/*
 * `ipset save` for the sets starting with @prefix, headers cut down to
 * "create NAME TYPE family F maxelem N" (members when @members), sorted.
 */
static void saved(const char *prefix, bool members, struct strbuf *out)
{
	struct strbuf raw;
	sb_init(&raw);
	sh_out(&raw, "ipset save");
	sb_reset(out);
	size_t n;
	char **lines = split_lines(raw.buf, raw.len, &n);
	for (size_t i = 0; i < n; i++) {
		const char *l = lines[i];
		char verb[8], name[64], type[32], family[16] = "", rest[256] = "";
		unsigned maxelem = 0;
		if (sscanf(l, "%7s %63s %31s", verb, name, type) < 2 ||
		    !str_has_prefix(name, prefix))
			continue;
		if (strcmp(verb, "create") == 0) {
			const char *f = strstr(l, " family "), *m = strstr(l, " maxelem ");
			if (f)
				sscanf(f, " family %15s", family);
			if (m)
				sscanf(m, " maxelem %u", &maxelem);
			sb_addf(out, "create %s %s family %s maxelem %u\n", name, type, family,
				maxelem);
		} else if (members && strcmp(verb, "add") == 0) {
			snprintf(rest, sizeof(rest), "%s", l + strlen("add ") + strlen(name) + 1);
			sb_addf(out, "add %s %s\n", name, rest);
		}
	}
	free(lines);
	sb_free(&raw);
	sort_lines(out);
}

/* The same text from what the backend lists. */
static void listed(struct ips *s, const char *prefix, bool members, struct strbuf *out)
{
	struct ips_list l = { 0 };
	int r = members ? ips_list_sets(s, prefix, &l) : ips_list_names(s, prefix, &l);
	if (r < 0)
		fail_msg("list: %s", ips_last_error(s));
	sb_reset(out);
	for (size_t i = 0; i < l.n; i++) {
		const struct ips_info *info = &l.v[i].info;
		const char *type = ips_type_name(info->type);
		sb_addf(out, "create %s %s family %s maxelem %u\n", info->name, type ? type : "?",
			info->family == AF_INET6 ? "inet6" : "inet", info->maxelem);
		if (!members)
			assert_int_equal(l.v[i].n, 0);
		for (size_t j = 0; j < l.v[i].n; j++) {
			sb_addf(out, "add %s %s\n", info->name, l.v[i].members[j]);
			if (j)
				assert_true(strcmp(l.v[i].members[j - 1], l.v[i].members[j]) < 0);
		}
	}
	ips_list_free(&l);
	sort_lines(out);
}

/* Fail at the first line where @got and @want differ. */
static void same_lines(const char *what, const struct strbuf *got, const struct strbuf *want)
{
	const char *g = sb_str(got), *w = sb_str(want), *gend = g + got->len, *wend = w + want->len;
	for (size_t line = 1; g < gend || w < wend; line++) {
		const char *ge = memchr(g, '\n', (size_t)(gend - g)),
			   *we = memchr(w, '\n', (size_t)(wend - w));
		ge = ge ? ge : gend;
		we = we ? we : wend;
		if (ge - g != we - w || memcmp(g, w, (size_t)(ge - g)) != 0)
			fail_msg("%s, line %zu: got \"%.*s\", want \"%.*s\"", what, line,
				 (int)(ge - g), g, (int)(we - w), w);
		g = ge < gend ? ge + 1 : ge;
		w = we < wend ? we + 1 : we;
	}
}

/* list_names says each set's size (felix's drift check relies on it): the members list has. */
static void sizes_agree(struct ips *s, const char *prefix)
{
	struct ips_list full = { 0 }, terse = { 0 };
	assert_int_equal(ips_list_sets(s, prefix, &full), 0);
	assert_int_equal(ips_list_names(s, prefix, &terse), 0);
	assert_int_equal(full.n, terse.n);
	for (size_t i = 0; i < full.n; i++) {
		size_t k = 0;
		while (k < terse.n && strcmp(terse.v[k].info.name, full.v[i].info.name) != 0)
			k++;
		assert_true(k < terse.n);
		assert_int_equal(terse.v[k].entries, full.v[i].n);
		assert_int_equal(full.v[i].entries, full.v[i].n);
	}
	ips_list_free(&full);
	ips_list_free(&terse);
}

/* The backend and `ipset save` agree about the sets starting with @prefix. */
static void agree(struct ips *s, const char *prefix)
{
	sizes_agree(s, prefix);
	struct strbuf got, want;
	sb_init(&got);
	sb_init(&want);
	listed(s, prefix, true, &got);
	saved(prefix, true, &want);
	same_lines("list vs ipset save", &got, &want);
	listed(s, prefix, false, &got);
	saved(prefix, false, &want);
	same_lines("list_names vs ipset save", &got, &want);
	sb_free(&got);
	sb_free(&want);
}

static void apply_ok(struct ips *s, struct ips_batch *b)
{
	size_t n = ips_batch_count(b);
	int *errs = xcalloc(n ? n : 1, sizeof(int));
	int r = ips_apply(s, b, errs);
	if (r != 0) {
		for (size_t i = 0; i < n; i++)
			if (errs[i])
				print_error("%s: %s\n", ips_batch_describe(b, i),
					    strerror(-errs[i]));
		fail_msg("apply: %d: %s", r, ips_last_error(s));
	}
	free(errs);
	ips_batch_reset(b);
}

/* Apply @b and expect these results, one per operation. */
static void apply_expect(struct ips *s, struct ips_batch *b, const int *want)
{
	size_t n = ips_batch_count(b);
	int *errs = xcalloc(n, sizeof(int));
	int failed = 0;
	for (size_t i = 0; i < n; i++)
		failed += want[i] != 0;
	int r = ips_apply(s, b, errs);
	for (size_t i = 0; i < n; i++)
		if (errs[i] != want[i])
			fail_msg("%s: expected %d (%s), got %d (%s)", ips_batch_describe(b, i),
				 want[i], strerror(-want[i]), errs[i], strerror(-errs[i]));
	assert_int_equal(r, failed);
	free(errs);
	ips_batch_reset(b);
}

/* Member @i of a set of type @t: distinct for distinct @i, some of them not yet canonical. */
static void member(enum ips_type t, uint8_t family, unsigned i, char *out, size_t size)
{
	unsigned hi = (i >> 8) & 0xff, lo = i & 0xff;
	static const char *const protos[] = { "tcp", "udp", "sctp" };
	if (family == AF_INET) {
		switch (t) {
		case IPS_HASH_NET:
			if (i % 5 == 0)
				snprintf(out, size, "172.%u.%u.%u/24", (i >> 8) & 0xff, i & 0xff,
					 i % 7);
			else if (i % 5 == 1)
				snprintf(out, size, "10.%u.%u.%u/32", (i >> 16) & 0xff, hi, lo);
			else
				snprintf(out, size, "10.%u.%u.%u", (i >> 16) & 0xff, hi, lo);
			return;
		case IPS_HASH_IP:
			snprintf(out, size, "10.1.%u.%u", hi, lo + (lo == 0));
			if (lo == 0)
				snprintf(out, size, "10.2.%u.1", hi);
			return;
		default:
			snprintf(out, size, "10.3.%u.%u,%s:%u", hi, lo, protos[i % 3],
				 1000 + i / 3);
			if (i % 10 == 0)
				snprintf(out, size, "10.3.%u.%u,%u", hi, lo, 1000 + i / 3);
			if (lo == 0 && hi == 0)
				snprintf(out, size, "10.4.0.1,udp:%u", i);
			return;
		}
	}
	switch (t) {
	case IPS_HASH_NET:
		if (i % 5 == 0)
			snprintf(out, size, "fd01:%x::%x/64", i, i % 7);
		else
			snprintf(out, size, "FD00::%X%s", i + 1, i % 5 == 1 ? "/128" : "");
		return;
	case IPS_HASH_IP:
		snprintf(out, size, "fd00::1:%x", i);
		return;
	default:
		snprintf(out, size, "fd00::%x,%s:%u", i + 1, protos[i % 3], 1000 + i / 3);
		return;
	}
}

static int setup(void **state)
{
	if (unshare(CLONE_NEWNET) < 0) {
		print_error("unshare(CLONE_NEWNET): %s (needs root)\n", strerror(errno));
		return -1;
	}
	return 0;
}

/* Leave the namespace as each test found it (its rules and sets are all tests'). */
static int clean(void **state)
{
	sh("iptables-legacy -w 5 -F");
	sh("ipset destroy");
	return 0;
}

static void one_type(struct ips *s, struct ips_batch *b, enum ips_type t, uint8_t family)
{
	char name[32], tmp[32], m[64], canon[64];
	snprintf(name, sizeof(name), "cali%c0s:%s", family == AF_INET ? '4' : '6',
		 ips_type_name(t));
	snprintf(tmp, sizeof(tmp), "cali%ct0", family == AF_INET ? '4' : '6');
	struct ips_info info = { .type = t, .family = family };
	snprintf(info.name, sizeof(info.name), "%s", name);
	ips_batch_create(b, &info);
	for (unsigned i = 0; i < N_MEMBERS; i++) {
		member(t, family, i, m, sizeof(m));
		ips_batch_add(b, name, m);
	}
	uint64_t t0 = now_ns();
	apply_ok(s, b);
	print_message("%s %s: %u members in %.1f ms\n", ips_type_name(t),
		      family == AF_INET ? "inet" : "inet6", N_MEMBERS, (now_ns() - t0) / 1e6);
	agree(s, "cali");

	struct ips_list l = { 0 };
	assert_int_equal(ips_list_sets(s, name, &l), 0);
	assert_int_equal(l.n, 1);
	assert_int_equal(l.v[0].n, N_MEMBERS);
	assert_int_equal(l.v[0].info.type, t);
	assert_int_equal(l.v[0].info.family, family);
	assert_int_equal(l.v[0].info.maxelem, IPS_MAXELEM_DEFAULT);

	/* Delete every third (as written, not canonical); again: no error. */
	for (int pass = 0; pass < 2; pass++) {
		for (unsigned i = 0; i < N_MEMBERS; i += 3) {
			member(t, family, i, m, sizeof(m));
			ips_batch_del(b, name, m);
		}
		apply_ok(s, b);
	}
	assert_int_equal(ips_list_sets(s, name, &l), 0);
	assert_int_equal(l.v[0].n, N_MEMBERS - (N_MEMBERS + 2) / 3);
	member(t, family, 1, m, sizeof(m));
	assert_int_equal(ips_member_canonical(t, family, m, canon, sizeof(canon)), 0);
	bool found = false;
	for (size_t j = 0; j < l.v[0].n; j++)
		found |= strcmp(l.v[0].members[j], canon) == 0;
	assert_true(found);
	agree(s, "cali");

	/* A temporary set filled and swapped in; the old contents go with the temporary. */
	info.maxelem = 4096;
	snprintf(info.name, sizeof(info.name), "%s", tmp);
	ips_batch_create(b, &info);
	for (unsigned i = 0; i < 10; i++) {
		member(t, family, N_MEMBERS + i, m, sizeof(m));
		ips_batch_add(b, tmp, m);
	}
	ips_batch_swap(b, name, tmp);
	apply_ok(s, b);
	assert_int_equal(ips_list_sets(s, name, &l), 0);
	assert_int_equal(l.v[0].n, 10);
	assert_int_equal(l.v[0].info.maxelem, 4096);
	assert_int_equal(ips_list_sets(s, tmp, &l), 0);
	assert_int_equal(l.v[0].n, N_MEMBERS - (N_MEMBERS + 2) / 3);
	agree(s, "cali");

	/* Flush one, destroy the other. */
	ips_batch_flush(b, name);
	ips_batch_destroy(b, tmp);
	apply_ok(s, b);
	assert_int_equal(ips_list_sets(s, "cali", &l), 0);
	assert_int_equal(l.n, 1);
	assert_int_equal(l.v[0].n, 0);
	agree(s, "cali");
	ips_batch_destroy(b, name);
	apply_ok(s, b);
	assert_int_equal(ips_list_names(s, "", &l), 0);
	assert_int_equal(l.n, 0);
	ips_list_free(&l);
}

static void test_each_type(void **state)
{
	struct ips *s;
	assert_int_equal(ips_open_kernel(&s), 0);
	struct ips_batch *b = ips_batch_new();
	const enum ips_type types[] = { IPS_HASH_NET, IPS_HASH_IP, IPS_HASH_IP_PORT };
	for (size_t i = 0; i < ARRAY_SIZE(types); i++) {
		one_type(s, b, types[i], AF_INET);
		one_type(s, b, types[i], AF_INET6);
	}
	ips_batch_free(b);
	ips_close(s);
}

static void test_foreign_sets(void **state)
{
	/* Someone else's sets, and one under our prefix of a type we do not manage. */
	assert_int_equal(sh("ipset create kube-foo hash:net && ipset add kube-foo 10.0.0.0/8"), 0);
	assert_int_equal(sh("ipset create cali40x list:set && ipset add cali40x kube-foo"), 0);
	assert_int_equal(
		sh("ipset create cali40p hash:net,port && ipset add cali40p 10.0.0.0/8,80"), 0);
	struct ips *s;
	assert_int_equal(ips_open_kernel(&s), 0);
	struct ips_batch *b = ips_batch_new();
	struct ips_info ours = { "cali40s:mine", IPS_HASH_NET, AF_INET, 0 };
	ips_batch_create(b, &ours);
	ips_batch_add(b, ours.name, "10.0.0.1");
	apply_ok(s, b);

	struct ips_list l = { 0 };
	assert_int_equal(ips_list_sets(s, "cali", &l), 0);
	assert_int_equal(l.n, 3);
	assert_string_equal(l.v[0].info.name, "cali40p");
	assert_int_equal(l.v[0].info.type, IPS_OTHER);
	assert_int_equal(l.v[0].info.family, AF_INET);
	assert_int_equal(l.v[0].n, 1);
	assert_string_equal(l.v[0].members[0], "10.0.0.0/8,tcp:80");
	assert_string_equal(l.v[1].info.name, "cali40s:mine");
	assert_string_equal(l.v[2].info.name, "cali40x");
	assert_int_equal(l.v[2].info.type, IPS_OTHER);
	assert_int_equal(l.v[2].info.family, 0);
	assert_int_equal(l.v[2].n, 1);
	assert_string_equal(l.v[2].members[0], "kube-foo");
	assert_int_equal(ips_list_names(s, "cali", &l), 0);
	assert_int_equal(l.n, 3);
	assert_int_equal(l.v[0].info.type, IPS_OTHER);
	assert_int_equal(l.v[1].info.type, IPS_HASH_NET);
	assert_int_equal(l.v[1].info.maxelem, IPS_MAXELEM_DEFAULT);

	/* We write no members into a type we do not manage, but can destroy it. */
	ips_batch_add(b, "cali40p", "10.0.0.1");
	ips_batch_destroy(b, "cali40x");
	ips_batch_destroy(b, "cali40p");
	apply_expect(s, b, (int[]){ -EINVAL, 0, 0 });
	assert_int_equal(ips_list_sets(s, "cali", &l), 0);
	assert_int_equal(l.n, 1);

	/* The foreign set is untouched and never listed under our prefix. */
	struct strbuf out;
	sb_init(&out);
	sh_out(&out, "ipset save kube-foo");
	assert_non_null(strstr(sb_str(&out), "add kube-foo 10.0.0.0/8\n"));
	assert_int_equal(ips_list_sets(s, "", &l), 0);
	assert_int_equal(l.n, 2);
	assert_string_equal(l.v[1].info.name, "kube-foo");
	assert_int_equal(ips_list_sets(s, "kube-foo-", &l), 0);
	assert_int_equal(l.n, 0);

	sb_free(&out);
	ips_list_free(&l);
	ips_batch_free(b);
	ips_close(s);
}

static void test_errors(void **state)
{
	struct ips *s;
	assert_int_equal(ips_open_kernel(&s), 0);
	struct ips_batch *b = ips_batch_new();
	struct ips_info n4 = { "cali40s:e", IPS_HASH_NET, AF_INET, 0 };
	struct ips_info i4 = { "cali40i:e", IPS_HASH_IP, AF_INET, 0 };
	struct ips_info n6 = { "cali60s:e", IPS_HASH_NET, AF_INET6, 0 };
	ips_batch_create(b, &n4);
	ips_batch_create(b, &i4);
	ips_batch_create(b, &n6);
	ips_batch_add(b, n4.name, "10.0.0.1");
	ips_batch_add(b, n4.name, "10.0.0.1");	 /* already there */
	ips_batch_add(b, n4.name, "10.0.0.300"); /* bad member */
	ips_batch_add(b, n4.name, "fd00::1");	 /* wrong family */
	ips_batch_add(b, n4.name, "10.0.0.2");	 /* still goes in */
	ips_batch_add(b, "cali40s:missing", "10.0.0.1");
	ips_batch_add(b, "cali40s:missing", "10.0.0.2");
	ips_batch_add(b, i4.name, "10.0.0.0/24"); /* a prefix in hash:ip */
	ips_batch_del(b, n4.name, "10.9.9.9");	  /* not a member */
	ips_batch_del(b, "cali40s:missing", "10.0.0.1");
	ips_batch_swap(b, n4.name, i4.name); /* types differ */
	ips_batch_swap(b, n4.name, n6.name); /* families differ */
	ips_batch_swap(b, n4.name, "cali40s:missing");
	ips_batch_swap(b, "cali40s:missing", n4.name);
	ips_batch_flush(b, "cali40s:missing");
	ips_batch_destroy(b, "cali40s:missing"); /* not an error */
	ips_batch_add(b, "cali40s:this-name-is-longer-than-31", "10.0.0.1");
	ips_batch_add(b, "has space", "10.0.0.1");
	ips_batch_create(b, &n4); /* the same header: fine */
	struct ips_info other = n4;
	other.maxelem = 65536;
	ips_batch_create(b, &other);
	other.maxelem = 0;
	other.type = IPS_HASH_IP;
	ips_batch_create(b, &other);
	ips_batch_add(b, n4.name, "10.0.0.3");
	apply_expect(s, b, (int[]){ 0,	     0,	      0,       0,	0, -EINVAL,	  -EINVAL,
				    0,	     -ENOENT, -ENOENT, -EINVAL, 0, -ENOENT,	  -EINVAL,
				    -EINVAL, -ENOENT, -ENOENT, -ENOENT, 0, -ENAMETOOLONG, -EINVAL,
				    0,	     -EEXIST, -EEXIST, 0 });
	assert_string_equal(
		ips_last_error(s),
		"add cali40s:e 10.0.0.300: not a member of a hash:net set of family inet");
	struct ips_list l = { 0 };
	assert_int_equal(ips_list_sets(s, n4.name, &l), 0);
	assert_int_equal(l.v[0].n, 3);

	/* The kernel's own words reach the caller. */
	ips_batch_swap(b, n4.name, i4.name);
	apply_expect(s, b, (int[]){ -EINVAL });
	assert_string_equal(ips_last_error(s), "swap cali40s:e cali40i:e: The sets cannot be "
					       "swapped: their type does not match");
	ips_batch_add(b, "cali40s:missing", "10.0.0.1");
	apply_expect(s, b, (int[]){ -ENOENT });
	assert_string_equal(ips_last_error(s), "add cali40s:missing 10.0.0.1: The set with the "
					       "given name does not exist");

	/*
	 * maxelem: a full set refuses new members but still "adds" existing ones.
	 * In one message the kernel stops at the first refusal; every member after
	 * it still gets its own answer.
	 */
	struct ips_info small = { "cali40s:small", IPS_HASH_NET, AF_INET, 5 };
	ips_batch_create(b, &small);
	for (int i = 1; i <= 5; i++) {
		char m[32];
		snprintf(m, sizeof(m), "10.5.0.%d", i);
		ips_batch_add(b, small.name, m);
	}
	apply_ok(s, b);
	int want[200];
	for (int i = 0; i < 200; i++) {
		char m[32];
		snprintf(m, sizeof(m), "10.5.%d.%d", i % 2 ? 0 : 1, i % 2 ? i % 5 + 1 : i);
		ips_batch_add(b, small.name, m);
		want[i] = i % 2 ? 0 : -ENOSPC;
	}
	apply_expect(s, b, want);
	assert_non_null(strstr(ips_last_error(s), "Hash is full"));
	/* Room again after a del in the same batch. */
	ips_batch_add(b, small.name, "10.6.0.1");
	ips_batch_del(b, small.name, "10.5.0.1");
	ips_batch_add(b, small.name, "10.6.0.1");
	ips_batch_add(b, small.name, "10.6.0.2");
	apply_expect(s, b, (int[]){ -ENOSPC, 0, 0, -ENOSPC });

	/* Many failures across message boundaries: the rest still go in. */
	struct ips_info big = { "cali40s:big", IPS_HASH_NET, AF_INET, 1000 };
	ips_batch_create(b, &big);
	apply_ok(s, b);
	int *want2 = xcalloc(3000, sizeof(int));
	for (int i = 0; i < 3000; i++) {
		char m[32];
		snprintf(m, sizeof(m), "10.7.%d.%d", i / 250, i % 250);
		ips_batch_add(b, big.name, m);
		want2[i] = i < 1000 ? 0 : -ENOSPC;
	}
	uint64_t t0 = now_ns();
	apply_expect(s, b, want2);
	print_message("3000 adds, 2000 refused: %.1f ms\n", (now_ns() - t0) / 1e6);
	free(want2);
	assert_int_equal(ips_list_names(s, big.name, &l), 0);
	assert_int_equal(ips_list_sets(s, big.name, &l), 0);
	assert_int_equal(l.v[0].n, 1000);

	ips_list_free(&l);
	ips_batch_free(b);
	ips_close(s);
}

static void test_in_use(void **state)
{
	struct ips *s;
	assert_int_equal(ips_open_kernel(&s), 0);
	struct ips_batch *b = ips_batch_new();
	struct ips_info used = { "cali40s:used", IPS_HASH_NET, AF_INET, 0 };
	struct ips_info spare = { "cali4t1", IPS_HASH_NET, AF_INET, 0 };
	ips_batch_create(b, &used);
	ips_batch_create(b, &spare);
	ips_batch_add(b, spare.name, "10.0.0.1");
	apply_ok(s, b);
	assert_int_equal(
		sh("iptables-legacy -w 5 -A INPUT -m set --match-set cali40s:used src -j DROP"), 0);

	ips_batch_destroy(b, used.name);
	apply_expect(s, b, (int[]){ -EBUSY });
	assert_string_equal(ips_last_error(s), "destroy cali40s:used: Set cannot be destroyed: it "
					       "is in use by a kernel component");

	/* Swapped, the reference stays with the name: the spare can go, the other not. */
	ips_batch_swap(b, used.name, spare.name);
	ips_batch_destroy(b, spare.name);
	ips_batch_destroy(b, used.name);
	apply_expect(s, b, (int[]){ 0, 0, -EBUSY });
	struct ips_list l = { 0 };
	assert_int_equal(ips_list_sets(s, "cali", &l), 0);
	assert_int_equal(l.n, 1);
	assert_int_equal(l.v[0].n, 1);

	assert_int_equal(
		sh("iptables-legacy -w 5 -D INPUT -m set --match-set cali40s:used src -j DROP"), 0);
	ips_batch_destroy(b, used.name);
	apply_ok(s, b);
	ips_list_free(&l);
	ips_batch_free(b);
	ips_close(s);
}

static pid_t peer = -1;

static int kill_peer(void **state)
{
	if (peer > 0) {
		kill(peer, SIGKILL);
		waitpid(peer, NULL, 0);
		peer = -1;
	}
	return clean(state);
}

static void test_packets(void **state)
{
	/* A child holds a second namespace at the far end of a veth pair. */
	int pipefd[2];
	assert_int_equal(pipe(pipefd), 0);
	peer = fork();
	assert_true(peer >= 0);
	if (peer == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (unshare(CLONE_NEWNET) < 0)
			_exit(1);
		ssize_t w = write(pipefd[1], "x", 1);
		(void)w;
		pause();
		_exit(0);
	}
	close(pipefd[1]);
	struct pollfd pfd = { .fd = pipefd[0], .events = POLLIN };
	assert_int_equal(poll(&pfd, 1, 5000), 1);
	char c;
	assert_int_equal(read(pipefd[0], &c, 1), 1);
	close(pipefd[0]);

	assert_int_equal(sh("ip link set lo up && ip link add veth0 type veth peer name veth1 && "
			    "ip link set veth1 netns %d && ip addr add 10.99.0.1/24 dev veth0 && "
			    "ip link set veth0 up",
			    peer),
			 0);
	assert_int_equal(sh("nsenter -t %d -n sh -c 'ip link set lo up && "
			    "ip addr add 10.99.0.2/24 dev veth1 && ip addr add 10.99.0.3/24 dev "
			    "veth1 && ip link set veth1 up'",
			    peer),
			 0);
	/* Both answer before the rule. */
	assert_int_equal(sh("ping -c 1 -W 2 10.99.0.2 >/dev/null"), 0);
	assert_int_equal(sh("ping -c 1 -W 2 10.99.0.3 >/dev/null"), 0);

	struct ips *s;
	assert_int_equal(ips_open_kernel(&s), 0);
	struct ips_batch *b = ips_batch_new();
	struct ips_info drop = { "cali40s:drop", IPS_HASH_NET, AF_INET, 0 };
	ips_batch_create(b, &drop);
	ips_batch_add(b, drop.name, "10.99.0.2/32");
	ips_batch_add(b, drop.name, "10.98.0.0/16");
	apply_ok(s, b);
	assert_int_equal(
		sh("iptables-legacy -w 5 -A OUTPUT -m set --match-set cali40s:drop dst -j DROP"),
		0);
	assert_int_not_equal(sh("ping -c 1 -W 1 10.99.0.2 >/dev/null 2>&1"), 0);
	assert_int_equal(sh("ping -c 1 -W 2 10.99.0.3 >/dev/null"), 0);

	/* Membership changes take effect on the next packet. */
	ips_batch_del(b, drop.name, "10.99.0.2");
	ips_batch_add(b, drop.name, "10.99.0.3");
	apply_ok(s, b);
	assert_int_equal(sh("ping -c 1 -W 2 10.99.0.2 >/dev/null"), 0);
	assert_int_not_equal(sh("ping -c 1 -W 1 10.99.0.3 >/dev/null 2>&1"), 0);

	ips_batch_free(b);
	ips_close(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_each_type, clean),
		cmocka_unit_test_teardown(test_foreign_sets, clean),
		cmocka_unit_test_teardown(test_errors, clean),
		cmocka_unit_test_teardown(test_in_use, clean),
		cmocka_unit_test_teardown(test_packets, kill_peer),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
