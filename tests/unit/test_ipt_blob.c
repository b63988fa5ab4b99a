/*
 * A legacy table edited in the kernel's layout (lib/core/ipt_blob.c), without
 * a kernel: a table made as the kernel makes an empty one, edited, laid out,
 * and read back from its own layout, which checks every offset (a jump or a
 * fall-through that points anywhere but where it should does not read back).
 * netns.test_ipt_kernel writes the same way into the kernel and reads it with
 * libiptc and iptables-legacy-save.
 */
#include "harness.h"

#include <brindle/core/ipt_blob.h>
#include <brindle/core/ipt_rule.h>
#include <brindle/testing/ipt_record.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/netfilter.h>
#include <linux/netfilter/x_tables.h>
#include <linux/netfilter_ipv4/ip_tables.h>

#define AT  96 /* where the entries start, as in struct ipt_replace */
#define STD XT_ALIGN(sizeof(struct xt_standard_target))
#define ERR XT_ALIGN(sizeof(struct xt_error_target))

/* Appends an unconditional entry with a standard target of @verdict, or an ERROR target. */
static uint32_t put_entry(uint8_t *buf, uint32_t *size, const char *error_name, int verdict)
{
	uint32_t off = *size;
	struct ipt_entry *e = (void *)(buf + AT + off);
	size_t tsize = error_name ? ERR : STD;
	memset(e, 0, sizeof(*e) + tsize);
	e->target_offset = sizeof(*e);
	e->next_offset = (uint16_t)(sizeof(*e) + tsize);
	struct xt_entry_target *t = (void *)e->elems;
	t->u.user.target_size = (uint16_t)tsize;
	if (error_name) {
		strcpy(t->u.user.name, XT_ERROR_TARGET);
		strcpy(((struct xt_error_target *)t)->errorname, error_name);
	} else {
		((struct xt_standard_target *)t)->verdict = verdict;
	}
	*size += e->next_offset;
	return off;
}

/*
 * The filter table as the kernel starts it (INPUT ACCEPT, FORWARD DROP,
 * OUTPUT ACCEPT), with a rule without a target in FORWARD (a counting rule:
 * its verdict is the next entry's offset) when @counting.
 */
static struct ipt_blob *empty_filter(bool counting, struct ipt_blob_info *info)
{
	size_t cap = 4096;
	uint8_t *buf = calloc(1, cap);
	uint32_t size = 0;
	memset(info, 0, sizeof(*info));
	info->valid_hooks =
		1u << NF_INET_LOCAL_IN | 1u << NF_INET_FORWARD | 1u << NF_INET_LOCAL_OUT;
	info->hook_entry[NF_INET_LOCAL_IN] = info->underflow[NF_INET_LOCAL_IN] =
		put_entry(buf, &size, NULL, -NF_ACCEPT - 1);
	info->hook_entry[NF_INET_FORWARD] = size;
	if (counting) {
		uint32_t here = size;
		put_entry(buf, &size, NULL, 0);
		struct ipt_entry *e = (void *)(buf + AT + here);
		((struct xt_standard_target *)e->elems)->verdict = (int)size;
	}
	info->underflow[NF_INET_FORWARD] = put_entry(buf, &size, NULL, -NF_DROP - 1);
	info->hook_entry[NF_INET_LOCAL_OUT] = info->underflow[NF_INET_LOCAL_OUT] =
		put_entry(buf, &size, NULL, -NF_ACCEPT - 1);
	put_entry(buf, &size, "ERROR", 0);
	info->size = size;
	info->num_entries = counting ? 5 : 4;
	struct ipt_blob *b = NULL;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	int r = ipt_blob_parse(AF_INET, ipt_blob_malloc_resize, NULL, buf, cap, AT, info, &b, &err);
	if (r)
		fail_msg("parse: %s", sb_str(&err));
	sb_free(&err);
	return b;
}

#define EDIT(call)                                                      \
	do {                                                            \
		int r_ = (call);                                        \
		if (r_)                                                 \
			fail_msg("%s: %d %s", #call, r_, sb_str(&err)); \
	} while (0)

static struct strbuf err = STRBUF_INIT;

static int write_rule(struct ipt_blob *b, enum ipt_blob_write op, const char *chain, size_t pos,
		      const char *text)
{
	void *e;
	size_t len;
	int r = ipt_rule_parse(AF_INET, text, NULL, &e, &len, &err);
	if (r)
		fail_msg("%s: %s", text, sb_str(&err));
	r = ipt_blob_write(b, op, chain, pos, e, len, &err);
	free(e);
	return r;
}

/* Lays @b out and reads the result back as a table of its own (freeing @b). */
static struct ipt_blob *relay(struct ipt_blob *b, struct ipt_blob_info *info, uint32_t **old_of)
{
	EDIT(ipt_blob_layout(b, info, old_of, &err));
	size_t cap = AT + info->size;
	uint8_t *copy = malloc(cap);
	memcpy(copy, ipt_blob_buffer(b), cap);
	ipt_blob_free(b);
	struct ipt_blob *out = NULL;
	EDIT(ipt_blob_parse(AF_INET, ipt_blob_malloc_resize, NULL, copy, cap, AT, info, &out,
			    &err));
	return out;
}

/* "CHAIN: target target ...; " for every chain, in the table's order. */
static void describe(const struct ipt_blob *b, struct strbuf *out)
{
	struct ipt_table_state st;
	ipt_blob_state(b, &st);
	sb_reset(out);
	for (size_t i = 0; i < st.n; i++) {
		sb_addf(out, "%s%s:", st.chains[i].name, st.chains[i].builtin ? "*" : "");
		for (size_t j = 0; j < st.chains[i].n; j++)
			sb_addf(out, " %s%s%s",
				st.chains[i].targets[j][0] ? st.chains[i].targets[j] : "-",
				st.chains[i].ids[j][0] ? "/" : "",
				st.chains[i].ids[j][0] ? st.chains[i].ids[j] + 5 : "");
		sb_adds(out, "; ");
	}
	ipt_table_state_free(&st);
}

#define ID(x) "-m comment --comment \"cali:" x "\" "

static void test_first_program(void **state)
{
	(void)state;
	struct ipt_blob_info info;
	struct ipt_blob *b = empty_filter(true, &info);
	struct strbuf got = STRBUF_INIT;
	sb_init(&got);
	sb_init(&err);
	describe(b, &got);
	assert_string_equal(sb_str(&got), "INPUT*:; FORWARD*: -; OUTPUT*:; ");

	/* Chains made out of order land in name order; a hook's rule is moved to the front. */
	EDIT(ipt_blob_new_chain(b, "cali-b", &err));
	EDIT(ipt_blob_new_chain(b, "cali-a", &err));
	EDIT(write_rule(b, IPT_BLOB_APPEND, "cali-a", 0, ID("aaaaaaaaaaaaaaaa") "-j ACCEPT"));
	EDIT(write_rule(b, IPT_BLOB_APPEND, "cali-b", 0, ID("bbbbbbbbbbbbbbbb") "-j cali-a"));
	EDIT(write_rule(b, IPT_BLOB_APPEND, "cali-b", 0, ID("cccccccccccccccc") "-g cali-a"));
	EDIT(write_rule(b, IPT_BLOB_INSERT, "FORWARD", 0, ID("ffffffffffffffff") "-j cali-b"));
	uint32_t *old_of = NULL;
	b = relay(b, &info, &old_of);
	describe(b, &got);
	assert_string_equal(sb_str(&got),
			    "INPUT*:; FORWARD*: cali-b/ffffffffffffffff -; OUTPUT*:; "
			    "cali-a: ACCEPT/aaaaaaaaaaaaaaaa; "
			    "cali-b: cali-a/bbbbbbbbbbbbbbbb cali-a/cccccccccccccccc; ");
	/* INPUT policy, FORWARD's new rule, the counting rule, the policy, OUTPUT... */
	assert_int_equal(info.num_entries, 13);
	assert_int_equal(old_of[0], 0);
	assert_int_equal(old_of[1], UINT32_MAX);
	assert_int_equal(old_of[2], 1);
	assert_int_equal(old_of[3], 2);
	assert_int_equal(old_of[4], 3);
	assert_int_equal(old_of[12], 4);
	for (int i = 5; i < 12; i++)
		assert_int_equal(old_of[i], UINT32_MAX);
	assert_int_equal(info.hook_entry[NF_INET_FORWARD], sizeof(struct ipt_entry) + STD);
	free(old_of);

	/* The result read back is a table to edit again: an insert before old rules, a chain
	 * that sorts first, a replace, a delete; a referenced or non-empty chain stays. */
	EDIT(ipt_blob_new_chain(b, "cali-0", &err));
	EDIT(write_rule(b, IPT_BLOB_APPEND, "cali-0", 0, ID("0000000000000000") "-j DROP"));
	EDIT(write_rule(b, IPT_BLOB_INSERT, "cali-a", 0, ID("dddddddddddddddd") "-j cali-0"));
	EDIT(write_rule(b, IPT_BLOB_REPLACE, "cali-b", 1, ID("eeeeeeeeeeeeeeee") "-j RETURN"));
	EDIT(ipt_blob_delete(b, "cali-b", 0, &err));
	assert_int_equal(ipt_blob_delete_chain(b, "cali-a", &err), -ENOTEMPTY);
	assert_int_equal(ipt_blob_delete_chain(b, "cali-0", &err), -EMLINK);
	assert_int_equal(ipt_blob_delete_chain(b, "cali-b", &err), -EMLINK);
	EDIT(ipt_blob_delete(b, "FORWARD", 0, &err));
	assert_int_equal(ipt_blob_delete_chain(b, "cali-b", &err), -ENOTEMPTY);
	EDIT(ipt_blob_flush_chain(b, "cali-b", &err));
	EDIT(ipt_blob_delete_chain(b, "cali-b", &err));
	b = relay(b, &info, &old_of);
	describe(b, &got);
	assert_string_equal(sb_str(&got),
			    "INPUT*:; FORWARD*: -; OUTPUT*:; cali-0: DROP/0000000000000000; "
			    "cali-a: cali-0/dddddddddddddddd ACCEPT/aaaaaaaaaaaaaaaa; ");
	/* The counting rule and cali-a's ACCEPT kept their counters' places. */
	assert_int_equal(old_of[1], 2);
	assert_int_equal(old_of[9], 6);
	assert_int_equal(old_of[10], 7);
	free(old_of);
	ipt_blob_free(b);
	sb_free(&got);
	sb_free(&err);
}

static void test_edit_errors(void **state)
{
	(void)state;
	struct ipt_blob_info info;
	struct ipt_blob *b = empty_filter(false, &info);
	sb_init(&err);
	EDIT(ipt_blob_new_chain(b, "cali-x", &err));
	assert_int_equal(ipt_blob_new_chain(b, "cali-x", &err), -EEXIST);
	assert_int_equal(ipt_blob_new_chain(b, "FORWARD", &err), -EEXIST);
	assert_int_equal(ipt_blob_new_chain(b, "PREROUTING", &err), -EINVAL);
	assert_int_equal(ipt_blob_new_chain(b, "ACCEPT", &err), -EINVAL);
	assert_int_equal(ipt_blob_new_chain(b, "a b", &err), -EINVAL);
	assert_int_equal(ipt_blob_flush_chain(b, "cali-nope", &err), -ENOENT);
	assert_int_equal(ipt_blob_delete_chain(b, "INPUT", &err), -EINVAL);
	assert_int_equal(write_rule(b, IPT_BLOB_INSERT, "cali-nope", 0, "-j ACCEPT"), -ENOENT);
	assert_int_equal(write_rule(b, IPT_BLOB_INSERT, "cali-x", 1, "-j ACCEPT"), -ENOENT);
	assert_int_equal(write_rule(b, IPT_BLOB_INSERT, "cali-x", 0, "-j cali-nope"), -ENOENT);
	assert_string_equal(sb_str(&err), "no chain cali-nope to jump to");
	assert_int_equal(write_rule(b, IPT_BLOB_INSERT, "cali-x", 0, "-j INPUT"), -EINVAL);
	assert_int_equal(write_rule(b, IPT_BLOB_REPLACE, "cali-x", 0, "-j ACCEPT"), -ENOENT);
	assert_int_equal(ipt_blob_delete(b, "cali-x", 0, &err), -ENOENT);
	assert_int_equal(ipt_blob_write(b, IPT_BLOB_INSERT, "cali-x", 0, "short", 5, &err),
			 -EINVAL);
	uint32_t *old_of = NULL;
	EDIT(ipt_blob_layout(b, &info, &old_of, &err));
	free(old_of);
	assert_int_equal(ipt_blob_new_chain(b, "cali-y", &err), -EINVAL);
	assert_int_equal(ipt_blob_layout(b, &info, &old_of, &err), -EINVAL);
	ipt_blob_free(b);
	sb_free(&err);
}

/* Tables that cannot be followed are refused, naming what is wrong. */
static void test_bad_tables(void **state)
{
	(void)state;
	struct ipt_blob_info good;
	struct ipt_blob *b = empty_filter(true, &good);
	uint32_t *old_of;
	sb_init(&err);
	EDIT(ipt_blob_layout(b, &good, &old_of, &err));
	free(old_of);
	size_t cap = AT + good.size;
	struct {
		const char *what;
		void (*spoil)(uint8_t *entries, struct ipt_blob_info *info);
	} cases[] = {
		{ "overruns", NULL },
		{ "entries, the header says", NULL },
		{ "where no chain starts", NULL },
		{ "bad size", NULL },
		{ "belongs to no chain", NULL },
	};
	for (size_t c = 0; c < ARRAY_SIZE(cases); c++) {
		struct ipt_blob_info info = good;
		uint8_t *buf = malloc(cap);
		memcpy(buf, ipt_blob_buffer(b), cap);
		struct ipt_entry *counting = (void *)(buf + AT + info.hook_entry[NF_INET_FORWARD]);
		switch (c) {
		case 0:
			info.size += 8;
			break;
		case 1:
			info.num_entries++;
			break;
		case 2:
			((struct xt_standard_target *)counting->elems)->verdict = 8;
			break;
		case 3:
			counting->next_offset = 3;
			break;
		case 4:
			info.hook_entry[NF_INET_LOCAL_OUT] += 8;
			break;
		}
		struct ipt_blob *bad = NULL;
		int r = ipt_blob_parse(AF_INET, ipt_blob_malloc_resize, NULL, buf, cap, AT, &info,
				       &bad, &err);
		assert_int_equal(r, -EPROTO);
		assert_null(bad);
		if (!strstr(sb_str(&err), cases[c].what))
			fail_msg("case %zu: %s", c, sb_str(&err));
	}
	ipt_blob_free(b);
	sb_free(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_first_program),
		cmocka_unit_test(test_edit_errors),
		cmocka_unit_test(test_bad_tables),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
