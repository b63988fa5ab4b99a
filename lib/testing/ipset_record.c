/*
 * The recording ip set backend: a simulated kernel for unit tests. It keeps
 * sets (type, family, maxelem, canonical members) and answers every
 * operation the way lib/ipset_kernel.c reports the kernel's answer (the codes
 * in include/brindle/ipset.h): -exist semantics for add, del, create and
 * destroy, swap only between sets of the same type and family, maxelem
 * enforced, destroy refused for a set marked in use. Every applied operation
 * is logged in ips_batch_describe form; failed ones are not.
 */
#include "ipset_internal.h"

#include <brindle/core/hmap.h>
#include <brindle/testing/ipset_record.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

struct rec_set {
	struct ips_info info;
	struct hmap members; /* canonical text -> non-NULL */
};

struct ips_record {
	struct ips ips;
	struct hmap sets;   /* name -> struct rec_set */
	struct hmap in_use; /* name -> non-NULL */
	char **log;
	size_t nlog, logcap;
	char *fail_what;
	int fail_err;
};

static const struct ips_ops record_ops;

static struct ips_record *record_of(struct ips *s)
{
	return container_of(s, struct ips_record, ips);
}

static void set_free(struct rec_set *set)
{
	if (set)
		hmap_clear(&set->members);
	free(set);
}

static int canonical_of(const struct rec_set *set, const char *member, char *out)
{
	return ips_member_canonical(set->info.type, set->info.family, member, out, IPS_MEMBER_MAX);
}

static int do_create(struct ips_record *r, const struct ips_info *info)
{
	int err = ips_info_check(info);
	if (err < 0)
		return err;
	struct rec_set *cur = hmap_get(&r->sets, info->name);
	if (cur)
		return ips_info_same_header(&cur->info, info) ? 0 : -EEXIST;
	struct rec_set *set = xcalloc(1, sizeof(*set));
	set->info = *info;
	set->info.maxelem = ips_maxelem(info);
	hmap_put(&r->sets, info->name, set);
	return 0;
}

static int do_add_del(struct ips_record *r, const struct ips_op *op)
{
	struct rec_set *set = hmap_get(&r->sets, op->set);
	if (!set)
		return -ENOENT;
	char m[IPS_MEMBER_MAX];
	if (canonical_of(set, op->arg, m) < 0)
		return -EINVAL;
	if (op->kind == IPS_OP_DEL) {
		hmap_del(&set->members, m);
		return 0;
	}
	if (hmap_has(&set->members, m))
		return 0;
	if (set->members.n >= set->info.maxelem)
		return -ENOSPC;
	hmap_put(&set->members, m, (void *)1);
	return 0;
}

static int do_swap(struct ips_record *r, const struct ips_op *op)
{
	int err = ips_name_check(op->arg);
	if (err < 0)
		return err;
	struct rec_set *a = hmap_get(&r->sets, op->set), *b = hmap_get(&r->sets, op->arg);
	if (!a || !b)
		return -ENOENT;
	if (a->info.type != b->info.type || a->info.family != b->info.family)
		return -EINVAL;
	/* The contents change places; the names (and what refers to them) stay. */
	struct rec_set tmp = *a;
	a->info = b->info;
	a->members = b->members;
	b->info = tmp.info;
	b->members = tmp.members;
	snprintf(a->info.name, sizeof(a->info.name), "%s", op->set);
	snprintf(b->info.name, sizeof(b->info.name), "%s", op->arg);
	return 0;
}

static int do_op(struct ips_record *r, const struct ips_op *op)
{
	if (op->kind == IPS_OP_CREATE)
		return do_create(r, op->info);
	int err = ips_name_check(op->set);
	if (err < 0)
		return err;
	struct rec_set *set;
	switch (op->kind) {
	case IPS_OP_ADD:
	case IPS_OP_DEL:
		return do_add_del(r, op);
	case IPS_OP_FLUSH:
		set = hmap_get(&r->sets, op->set);
		if (!set)
			return -ENOENT;
		hmap_clear(&set->members);
		return 0;
	case IPS_OP_SWAP:
		return do_swap(r, op);
	case IPS_OP_DESTROY:
		if (!hmap_has(&r->sets, op->set))
			return 0;
		if (hmap_has(&r->in_use, op->set))
			return -EBUSY;
		set_free(hmap_del(&r->sets, op->set));
		return 0;
	default:
		return -EINVAL;
	}
}

static int r_apply(struct ips *s, struct ips_batch *b, int *errs)
{
	struct ips_record *r = record_of(s);
	int failed = 0;
	for (size_t i = 0; i < ips_batch_count(b); i++) {
		const char *desc = ips_batch_describe(b, i);
		if (r->fail_what && strstr(desc, r->fail_what)) {
			errs[i] = r->fail_err;
			free(r->fail_what);
			r->fail_what = NULL;
		} else {
			errs[i] = do_op(r, ips_batch_op(b, i));
		}
		if (errs[i] == 0) {
			GROW(r->log, r->logcap, r->nlog + 1);
			r->log[r->nlog++] = xstrdup(desc);
			continue;
		}
		if (failed++ == 0)
			sb_addf(&s->err, "%s: %s", desc, strerror(-errs[i]));
	}
	return failed;
}

static int list(struct ips *s, const char *prefix, struct ips_list *out, bool members)
{
	struct ips_record *r = record_of(s);
	for (struct hmap_iter it = hmap_iter(&r->sets); hmap_next(&it);) {
		if (!str_has_prefix(it.key, prefix))
			continue;
		const struct rec_set *set = it.value;
		struct ips_set *o = ips_list_push(out, &set->info);
		o->entries = set->members.n;
		if (!members)
			continue;
		for (struct hmap_iter m = hmap_iter(&set->members); hmap_next(&m);)
			ips_set_push_member(o, xstrdup(m.key));
	}
	return 0;
}

static int r_list(struct ips *s, const char *prefix, struct ips_list *out)
{
	return list(s, prefix, out, true);
}

static int r_list_names(struct ips *s, const char *prefix, struct ips_list *out)
{
	return list(s, prefix, out, false);
}

static void r_close(struct ips *s)
{
	struct ips_record *r = record_of(s);
	for (struct hmap_iter it = hmap_iter(&r->sets); hmap_next(&it);)
		set_free(it.value);
	hmap_clear(&r->sets);
	hmap_clear(&r->in_use);
	for (size_t i = 0; i < r->nlog; i++)
		free(r->log[i]);
	free(r->log);
	free(r->fail_what);
	sb_free(&s->err);
	free(r);
}

static const struct ips_ops record_ops = {
	.list = r_list,
	.list_names = r_list_names,
	.apply = r_apply,
	.close = r_close,
};

struct ips *ips_open_recording(void)
{
	struct ips_record *r = xcalloc(1, sizeof(*r));
	r->ips.ops = &record_ops;
	sb_init(&r->ips.err);
	return &r->ips;
}

static struct ips_record *recording(const struct ips *s)
{
	return s && s->ops == &record_ops ? container_of(s, struct ips_record, ips) : NULL;
}

size_t ips_record_count(const struct ips *s)
{
	const struct ips_record *r = recording(s);
	return r ? r->nlog : 0;
}

const char *ips_record_entry(const struct ips *s, size_t i)
{
	const struct ips_record *r = recording(s);
	return r && i < r->nlog ? r->log[i] : NULL;
}

void ips_record_clear_log(struct ips *s)
{
	struct ips_record *r = recording(s);
	if (!r)
		return;
	for (size_t i = 0; i < r->nlog; i++)
		free(r->log[i]);
	r->nlog = 0;
}

void ips_record_fail_next(struct ips *s, const char *what, int err)
{
	struct ips_record *r = recording(s);
	if (!r)
		return;
	free(r->fail_what);
	r->fail_what = xstrdup(what);
	r->fail_err = err;
}

void ips_record_set_in_use(struct ips *s, const char *name, bool in_use)
{
	struct ips_record *r = recording(s);
	if (!r)
		return;
	if (in_use)
		hmap_put(&r->in_use, name, (void *)1);
	else
		hmap_del(&r->in_use, name);
}
