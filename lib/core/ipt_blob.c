/*
 * A legacy iptables table in the kernel's layout, edited in its own buffer
 * (see <brindle/core/ipt_blob.h> for why). The layout, as the kernel and
 * libiptc have it: each built-in chain is its rules and then its policy (an
 * unconditional standard target, where the table's underflow points); each
 * user chain is an ERROR entry naming it, its rules, and an unconditional
 * RETURN; the table ends with an ERROR entry named "ERROR". A jump is a
 * standard target whose verdict is the offset of the chain's first rule; a
 * rule without a target is a standard target whose verdict is the offset of
 * the next entry.
 */
#include "ipt_rule_internal.h"

#include <brindle/core/arena.h>
#include <brindle/core/hmap.h>
#include <brindle/core/ipt_blob.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NONE		UINT32_MAX
#define STD_TARGET_SIZE XT_ALIGN(sizeof(struct xt_standard_target))
#define ERR_TARGET_SIZE XT_ALIGN(sizeof(struct xt_error_target))

enum {
	J_NONE = -1,	/* not a jump: a verdict, or another target */
	J_NEXT = -2,	/* no target: on to the next entry */
	J_PENDING = -3, /* while parsing: a jump not yet matched to its chain */
};

/* Where an entry of struct ipt_entry or struct ip6t_entry keeps its fields. */
struct geometry {
	size_t entry_size, target_off, next_off;
};

static const struct geometry geo4 = {
	sizeof(struct ipt_entry),
	offsetof(struct ipt_entry, target_offset),
	offsetof(struct ipt_entry, next_offset),
};

static const struct geometry geo6 = {
	sizeof(struct ip6t_entry),
	offsetof(struct ip6t_entry, target_offset),
	offsetof(struct ip6t_entry, next_offset),
};

static const char *const hook_names[IPT_BLOB_HOOKS] = { "PREROUTING", "INPUT", "FORWARD", "OUTPUT",
							"POSTROUTING" };

/* One entry: where it is in the buffer, which entry it was as read, where it jumps. */
struct bref {
	uint32_t off; /* from the entries' start; NONE: made at the layout */
	uint32_t old; /* index as read; NONE for an entry added since */
	int32_t jump; /* a chain's index, or J_* */
};

struct bchain {
	char name[IPT_CHAIN_MAX + 1];
	int hook;		/* NF_INET_* of a built-in chain; -1 for a user chain */
	struct bref head, foot; /* a user chain's ERROR entry; the policy or RETURN */
	struct bref *rules;
	size_t n, cap;
	uint32_t refs;	/* jumps to it */
	uint32_t start; /* the offset of its first rule (as read; then as laid out) */
};

struct ipt_blob {
	int af;
	const struct geometry *g;
	ipt_blob_resize_fn *resize;
	void *ctx;
	uint8_t *buf;
	size_t cap, at, used; /* entries at buf + at, used bytes of them */
	unsigned valid_hooks;
	uint32_t n_read;
	struct bref end;
	struct bchain *chains; /* a deleted chain stays, out of the order and the names */
	size_t n_chains, chains_cap;
	uint32_t *order; /* the chains in the table's order */
	size_t n_order, order_cap;
	struct hmap names; /* chain name → index + 1 */
	bool laid_out;
};

printf_like(3, 4) static int fail(struct strbuf *err, int code, const char *fmt, ...)
{
	va_list ap;
	sb_reset(err);
	va_start(ap, fmt);
	sb_vaddf(err, fmt, ap);
	va_end(ap);
	return code;
}

static uint8_t *entry_at(const struct ipt_blob *b, uint32_t off)
{
	return b->buf + b->at + off;
}

static uint16_t get16(const uint8_t *e, size_t off)
{
	uint16_t v;
	memcpy(&v, e + off, sizeof(v));
	return v;
}

static void put16(uint8_t *e, size_t off, uint16_t v)
{
	memcpy(e + off, &v, sizeof(v));
}

static uint32_t entry_size(const struct ipt_blob *b, const uint8_t *e)
{
	return get16(e, b->g->next_off);
}

static struct xt_entry_target *target_of(const struct ipt_blob *b, uint8_t *e)
{
	return (void *)(e + get16(e, b->g->target_off));
}

static bool is_standard(const struct xt_entry_target *t)
{
	return t->u.user.name[0] == 0 && t->u.target_size == STD_TARGET_SIZE;
}

static int verdict_of(const struct xt_entry_target *t)
{
	int v;
	memcpy(&v, (const uint8_t *)t + offsetof(struct xt_standard_target, verdict), sizeof(v));
	return v;
}

static void set_verdict(struct xt_entry_target *t, int v)
{
	memcpy((uint8_t *)t + offsetof(struct xt_standard_target, verdict), &v, sizeof(v));
}

/* A standard target's verdict as iptables names it; QUEUE too, which rules of ours never use. */
static const char *verdict_name(int v)
{
	const char *name = ipt_verdict_name(v);
	return name ? name : v == -NF_QUEUE - 1 ? "QUEUE" : "";
}

static int find(const struct ipt_blob *b, const char *name)
{
	return (int)(uintptr_t)hmap_get(&b->names, name) - 1;
}

static uint32_t add_chain(struct ipt_blob *b, const char *name, int hook)
{
	GROW(b->chains, b->chains_cap, b->n_chains + 1);
	uint32_t i = (uint32_t)b->n_chains++;
	struct bchain *c = &b->chains[i];
	memset(c, 0, sizeof(*c));
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->hook = hook;
	c->head = c->foot = (struct bref){ NONE, NONE, J_NONE };
	hmap_put(&b->names, c->name, (void *)(uintptr_t)(i + 1));
	return i;
}

static void order_insert(struct ipt_blob *b, size_t pos, uint32_t chain)
{
	GROW(b->order, b->order_cap, b->n_order + 1);
	memmove(b->order + pos + 1, b->order + pos, (b->n_order - pos) * sizeof(*b->order));
	b->order[pos] = chain;
	b->n_order++;
}

/* Room for @more bytes of entries. */
static int reserve(struct ipt_blob *b, size_t more)
{
	size_t need = b->at + b->used + more;
	if (need <= b->cap)
		return 0;
	size_t cap = MAX(need, b->cap + b->cap / 2);
	uint8_t *p = b->resize(b->ctx, b->buf, b->cap, cap);
	if (!p)
		return -ENOMEM;
	b->buf = p;
	b->cap = cap;
	return 0;
}

void ipt_blob_free(struct ipt_blob *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->n_chains; i++)
		free(b->chains[i].rules);
	free(b->chains);
	free(b->order);
	hmap_clear(&b->names);
	if (b->buf)
		b->resize(b->ctx, b->buf, b->cap, 0);
	free(b);
}

uint8_t *ipt_blob_buffer(const struct ipt_blob *b)
{
	return b->buf;
}

uint32_t ipt_blob_entries_read(const struct ipt_blob *b)
{
	return b->n_read;
}

/* --- reading ---------------------------------------------------------------------- */

struct start {
	uint32_t off, chain;
};

static int cmp_start(const void *a, const void *b)
{
	uint32_t x = ((const struct start *)a)->off, y = ((const struct start *)b)->off;
	return x < y ? -1 : x > y;
}

/* A user chain's last entry is its RETURN: it becomes the foot. */
static int close_user_chain(struct ipt_blob *b, struct bchain *c, struct strbuf *err)
{
	if (!c->n)
		return fail(err, -EPROTO, "chain %s has no end", c->name);
	struct bref r = c->rules[--c->n];
	struct xt_entry_target *t = target_of(b, entry_at(b, r.off));
	if (!is_standard(t) || verdict_of(t) != XT_RETURN)
		return fail(err, -EPROTO, "chain %s does not end in RETURN", c->name);
	c->foot = r;
	return 0;
}

/* Checks the entry at @off; says what starts there: a hook's chain (its number), or -1 (or an
 * error below -1, with its message). */
static int check_entry(const struct ipt_blob *b, const struct ipt_blob_info *info, uint32_t off,
		       struct strbuf *err)
{
	const struct geometry *g = b->g;
	const uint8_t *e = entry_at(b, off);
	if (info->size - off < g->entry_size)
		return fail(err, -EPROTO, "entry at %u overruns the table", off);
	uint16_t toff = get16(e, g->target_off), next = get16(e, g->next_off);
	if (next < g->entry_size || next > info->size - off || next % 8 || toff % 8 ||
	    toff < g->entry_size || toff > next - sizeof(struct xt_entry_target))
		return fail(err, -EPROTO, "entry at %u has a bad size", off);
	const struct xt_entry_target *t = (const void *)(e + toff);
	if (t->u.target_size < sizeof(*t) || t->u.target_size > next - toff)
		return fail(err, -EPROTO, "entry at %u has a bad target", off);
	int hook = -1;
	for (int h = 0; h < IPT_BLOB_HOOKS; h++)
		if ((info->valid_hooks & (1u << h)) && info->hook_entry[h] == off) {
			if (hook >= 0)
				return fail(err, -EPROTO, "two hooks start at %u", off);
			hook = h;
		}
	return hook;
}

static int read_entries(struct ipt_blob *b, const struct ipt_blob_info *info, struct strbuf *err)
{
	int cur = -1, r;
	uint32_t idx = 0;
	bool ended = false;
	for (uint32_t off = 0; off < info->size; idx++) {
		if (ended)
			return fail(err, -EPROTO, "entries after the table's end at %u", off);
		int hook = check_entry(b, info, off, err);
		if (hook < -1)
			return hook;
		uint8_t *e = entry_at(b, off);
		uint32_t next = entry_size(b, e);
		struct xt_entry_target *t = target_of(b, e);
		struct bref ref = { off, idx, J_NONE };
		bool error = strncmp(t->u.user.name, XT_ERROR_TARGET, sizeof(t->u.user.name)) == 0;
		if (hook >= 0 || error) { /* a chain starts, so the last one ends */
			if (cur >= 0 && b->chains[cur].hook >= 0)
				return fail(err, -EPROTO, "chain %s has no policy",
					    b->chains[cur].name);
			if (cur >= 0 && (r = close_user_chain(b, &b->chains[cur], err)))
				return r;
			cur = -1;
		}
		off += next;
		if (error) {
			if (hook >= 0 || t->u.target_size < ERR_TARGET_SIZE)
				return fail(err, -EPROTO, "bad chain head at %u", ref.off);
			if (off == info->size) {
				b->end = ref;
				ended = true;
				continue;
			}
			const struct xt_error_target *et = (const void *)t;
			char name[IPT_CHAIN_MAX + 1];
			snprintf(name, sizeof(name), "%.*s", IPT_CHAIN_MAX, et->errorname);
			if (find(b, name) >= 0)
				return fail(err, -EPROTO, "chain %s twice", name);
			cur = (int)add_chain(b, name, -1);
			b->chains[cur].head = ref;
			b->chains[cur].start = off;
			order_insert(b, b->n_order, (uint32_t)cur);
			continue;
		}
		if (hook >= 0) {
			cur = (int)add_chain(b, hook_names[hook], hook);
			b->chains[cur].start = ref.off;
			order_insert(b, b->n_order, (uint32_t)cur);
		}
		if (cur < 0)
			return fail(err, -EPROTO, "entry at %u belongs to no chain", ref.off);
		if (is_standard(t) && verdict_of(t) >= 0)
			ref.jump = (uint32_t)verdict_of(t) == off ? J_NEXT : J_PENDING;
		struct bchain *c = &b->chains[cur];
		if (c->hook >= 0 && ref.off == info->underflow[c->hook]) {
			c->foot = ref;
			cur = -1;
			continue;
		}
		GROW(c->rules, c->cap, c->n + 1);
		c->rules[c->n++] = ref;
	}
	if (!ended)
		return fail(err, -EPROTO, "the table has no end");
	for (int h = 0; h < IPT_BLOB_HOOKS; h++)
		if ((info->valid_hooks & (1u << h)) && find(b, hook_names[h]) < 0)
			return fail(err, -EPROTO, "hook %s starts at no entry", hook_names[h]);
	b->n_read = idx;
	return 0;
}

/* Each jump's verdict (an offset) to the chain that starts there. */
static int resolve_jumps(struct ipt_blob *b, struct strbuf *err)
{
	struct start *starts = xmalloc(sizeof(*starts) * (b->n_chains ? b->n_chains : 1));
	for (uint32_t i = 0; i < b->n_chains; i++)
		starts[i] = (struct start){ b->chains[i].start, i };
	qsort(starts, b->n_chains, sizeof(*starts), cmp_start);
	int r = 0;
	for (size_t i = 0; i < b->n_chains && !r; i++) {
		struct bchain *c = &b->chains[i];
		for (size_t j = 0; j < c->n; j++) {
			struct bref *ref = &c->rules[j];
			if (ref->jump != J_PENDING)
				continue;
			struct start key = {
				(uint32_t)verdict_of(target_of(b, entry_at(b, ref->off))), 0
			};
			const struct start *s =
				bsearch(&key, starts, b->n_chains, sizeof(*starts), cmp_start);
			if (!s || b->chains[s->chain].hook >= 0) {
				r = fail(err, -EPROTO,
					 "a rule of %s jumps to %u, where no chain starts", c->name,
					 key.off);
				break;
			}
			ref->jump = (int32_t)s->chain;
			b->chains[s->chain].refs++;
		}
	}
	free(starts);
	return r;
}

int ipt_blob_parse(int af, ipt_blob_resize_fn *resize, void *ctx, uint8_t *buf, size_t cap,
		   size_t at, const struct ipt_blob_info *info, struct ipt_blob **out,
		   struct strbuf *err)
{
	struct ipt_blob *b = xcalloc(1, sizeof(*b));
	b->af = af;
	b->g = af == AF_INET6 ? &geo6 : &geo4;
	b->resize = resize;
	b->ctx = ctx;
	b->buf = buf;
	b->cap = cap;
	b->at = at;
	b->used = info->size;
	b->valid_hooks = info->valid_hooks;
	int r = at + info->size > cap ? fail(err, -EPROTO, "the table overruns its buffer")
				      : read_entries(b, info, err);
	if (!r)
		r = resolve_jumps(b, err);
	if (!r && b->n_read != info->num_entries)
		r = fail(err, -EPROTO, "%u entries, the header says %u", b->n_read,
			 info->num_entries);
	if (r) {
		ipt_blob_free(b);
		return r;
	}
	*out = b;
	return 0;
}

void ipt_blob_state(const struct ipt_blob *b, struct ipt_table_state *out)
{
	struct ipt_table_state st = { .mem = arena_new() };
	st.chains = xcalloc(b->n_order ? b->n_order : 1, sizeof(*st.chains));
	for (size_t i = 0; i < b->n_order; i++) {
		const struct bchain *c = &b->chains[b->order[i]];
		struct ipt_chain_state *s = &st.chains[st.n++];
		snprintf(s->name, sizeof(s->name), "%s", c->name);
		s->builtin = c->hook >= 0;
		s->n = c->n;
		s->ids = arena_alloc(st.mem, sizeof(*s->ids) * (c->n ? c->n : 1));
		s->targets = arena_new_array(st.mem, char *, c->n ? c->n : 1);
		for (size_t j = 0; j < c->n; j++) {
			uint8_t *e = entry_at(b, c->rules[j].off);
			if (!ipt_rule_entry_id(b->af, e, s->ids[j]))
				s->ids[j][0] = 0;
			const struct xt_entry_target *t = target_of(b, e);
			int32_t jump = c->rules[j].jump;
			char module[sizeof(t->u.user.name) + 1];
			snprintf(module, sizeof(module), "%.*s", (int)sizeof(t->u.user.name),
				 t->u.user.name);
			const char *name = jump >= 0	    ? b->chains[jump].name
					   : jump == J_NEXT ? ""
					   : is_standard(t) ? verdict_name(verdict_of(t))
							    : module;
			s->targets[j] = arena_strdup(st.mem, name);
		}
	}
	*out = st;
}

/* --- edits ------------------------------------------------------------------------ */

static int editable(const struct ipt_blob *b, const char *chain, struct strbuf *err)
{
	if (b->laid_out)
		return fail(err, -EINVAL, "the table was laid out already");
	int i = find(b, chain);
	if (i < 0)
		return fail(err, -ENOENT, "no chain %s", chain);
	return i;
}

int ipt_blob_new_chain(struct ipt_blob *b, const char *chain, struct strbuf *err)
{
	if (b->laid_out)
		return fail(err, -EINVAL, "the table was laid out already");
	if (!ipt_chain_name_valid(chain))
		return fail(err, -EINVAL, "not a valid chain name: \"%s\"", chain);
	if (find(b, chain) >= 0)
		return fail(err, -EEXIST, "chain %s exists", chain);
	for (int h = 0; h < IPT_BLOB_HOOKS; h++)
		if (strcmp(chain, hook_names[h]) == 0)
			return fail(err, -EINVAL, "%s is a built-in chain's name", chain);
	/* Where a sorted table would have it, as libiptc keeps user chains (it reads tables
	 * that are not in order, only more slowly): the first user chain after it. */
	size_t lo = 0, hi = b->n_order;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct bchain *c = &b->chains[b->order[mid]];
		if (c->hook >= 0 || strcmp(c->name, chain) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	order_insert(b, lo, add_chain(b, chain, -1));
	return 0;
}

static void unref(struct ipt_blob *b, const struct bref *r)
{
	if (r->jump >= 0)
		b->chains[r->jump].refs--;
}

int ipt_blob_flush_chain(struct ipt_blob *b, const char *chain, struct strbuf *err)
{
	int i = editable(b, chain, err);
	if (i < 0)
		return i;
	struct bchain *c = &b->chains[i];
	for (size_t j = 0; j < c->n; j++)
		unref(b, &c->rules[j]);
	c->n = 0;
	return 0;
}

int ipt_blob_delete_chain(struct ipt_blob *b, const char *chain, struct strbuf *err)
{
	int i = editable(b, chain, err);
	if (i < 0)
		return i;
	struct bchain *c = &b->chains[i];
	if (c->hook >= 0)
		return fail(err, -EINVAL, "%s is a built-in chain", chain);
	if (c->refs)
		return fail(err, -EMLINK, "chain %s is jumped to by %u rules", chain, c->refs);
	if (c->n)
		return fail(err, -ENOTEMPTY, "chain %s has %zu rules", chain, c->n);
	for (size_t k = 0; k < b->n_order; k++)
		if (b->order[k] == (uint32_t)i) {
			memmove(b->order + k, b->order + k + 1,
				(b->n_order - k - 1) * sizeof(*b->order));
			b->n_order--;
			break;
		}
	hmap_del(&b->names, chain);
	return 0;
}

/*
 * Copies @entry into the buffer as *@ref: a standard target named by a
 * verdict gets the verdict, one named by a chain becomes a jump to it.
 */
static int add_entry(struct ipt_blob *b, const void *entry, size_t len, struct bref *ref,
		     struct strbuf *err)
{
	const struct geometry *g = b->g;
	if (len < g->entry_size || len > UINT16_MAX || len % 8 ||
	    get16(entry, g->next_off) != len ||
	    get16(entry, g->target_off) + sizeof(struct xt_entry_target) > len)
		return fail(err, -EINVAL, "not an entry of %zu bytes", len);
	int32_t jump = J_NONE;
	const struct xt_entry_target *t =
		(const void *)((const uint8_t *)entry + get16(entry, g->target_off));
	const char *name = t->u.user.name;
	int verdict = strcmp(name, "ACCEPT") == 0   ? -NF_ACCEPT - 1
		      : strcmp(name, "DROP") == 0   ? -NF_DROP - 1
		      : strcmp(name, "RETURN") == 0 ? XT_RETURN
		      : strcmp(name, "QUEUE") == 0  ? -NF_QUEUE - 1
						    : 0;
	bool standard = t->u.target_size == STD_TARGET_SIZE &&
			(verdict || !name[0] || ipt_chain_name_valid(name));
	if (standard && !verdict && name[0]) {
		jump = find(b, name);
		if (jump < 0)
			return fail(err, -ENOENT, "no chain %s to jump to", name);
		if (b->chains[jump].hook >= 0)
			return fail(err, -EINVAL, "cannot jump to built-in chain %s", name);
	}
	int r = reserve(b, len);
	if (r)
		return fail(err, r, "no memory for the table");
	uint8_t *e = entry_at(b, (uint32_t)b->used);
	memcpy(e, entry, len);
	if (standard) {
		struct xt_entry_target *et = target_of(b, e);
		memset(et->u.user.name, 0, sizeof(et->u.user.name));
		et->u.user.revision = 0;
		set_verdict(et, verdict);
		if (!name[0] && !verdict)
			jump = J_NEXT;
	}
	*ref = (struct bref){ (uint32_t)b->used, NONE, jump };
	b->used += len;
	if (jump >= 0)
		b->chains[jump].refs++;
	return 0;
}

int ipt_blob_write(struct ipt_blob *b, enum ipt_blob_write op, const char *chain, size_t pos,
		   const void *entry, size_t len, struct strbuf *err)
{
	int i = editable(b, chain, err);
	if (i < 0)
		return i;
	struct bchain *c = &b->chains[i];
	bool replace = op == IPT_BLOB_REPLACE;
	if (op == IPT_BLOB_APPEND)
		pos = c->n;
	if (replace ? pos >= c->n : pos > c->n)
		return fail(err, -ENOENT, "no %s %zu in %s (%zu rules)",
			    replace ? "rule" : "position", pos, chain, c->n);
	struct bref ref;
	int r = add_entry(b, entry, len, &ref, err);
	if (r)
		return r;
	if (replace) {
		unref(b, &c->rules[pos]);
		c->rules[pos] = ref;
		return 0;
	}
	GROW(c->rules, c->cap, c->n + 1);
	memmove(c->rules + pos + 1, c->rules + pos, (c->n - pos) * sizeof(*c->rules));
	c->rules[pos] = ref;
	c->n++;
	return 0;
}

int ipt_blob_delete(struct ipt_blob *b, const char *chain, size_t pos, struct strbuf *err)
{
	int i = editable(b, chain, err);
	if (i < 0)
		return i;
	struct bchain *c = &b->chains[i];
	if (pos >= c->n)
		return fail(err, -ENOENT, "no rule %zu in %s (%zu rules)", pos, chain, c->n);
	unref(b, &c->rules[pos]);
	memmove(c->rules + pos, c->rules + pos + 1, (c->n - pos - 1) * sizeof(*c->rules));
	c->n--;
	return 0;
}

/* --- the layout ------------------------------------------------------------------- */

enum item_kind {
	IN_BUFFER, /* where it is, to be moved into place */
	ASIDE,	   /* copied aside first, at src of the side buffer */
	MAKE_HEAD, /* a new chain's ERROR entry */
	MAKE_FOOT, /* a new chain's RETURN */
};

struct item {
	uint32_t src, dst, size, old;
	int32_t jump;
	uint32_t chain;
	uint8_t kind;
};

struct layout {
	struct item *v;
	size_t n, cap;
	uint32_t size;
};

static void add_item(struct layout *l, const struct ipt_blob *b, const struct bref *r,
		     uint32_t chain, enum item_kind make)
{
	GROW(l->v, l->cap, l->n + 1);
	struct item *it = &l->v[l->n++];
	*it = (struct item){ .src = r->off,
			     .dst = l->size,
			     .old = r->old,
			     .jump = r->jump,
			     .chain = chain,
			     .kind = IN_BUFFER };
	if (r->off == NONE) {
		it->kind = (uint8_t)make;
		it->size = (uint32_t)(b->g->entry_size +
				      (make == MAKE_HEAD ? ERR_TARGET_SIZE : STD_TARGET_SIZE));
	} else {
		it->size = entry_size(b, entry_at(b, r->off));
	}
	l->size += it->size;
}

/* The entries in their new order, with their new offsets; the header's hooks. */
static void plan(struct ipt_blob *b, struct layout *l, struct ipt_blob_info *info)
{
	memset(info, 0, sizeof(*info));
	info->valid_hooks = b->valid_hooks;
	for (size_t k = 0; k < b->n_order; k++) {
		uint32_t ci = b->order[k];
		struct bchain *c = &b->chains[ci];
		if (c->hook < 0)
			add_item(l, b, &c->head, ci, MAKE_HEAD);
		c->start = l->size;
		for (size_t j = 0; j < c->n; j++)
			add_item(l, b, &c->rules[j], ci, MAKE_FOOT);
		if (c->hook >= 0) {
			info->hook_entry[c->hook] = c->start;
			info->underflow[c->hook] = l->size;
		}
		add_item(l, b, &c->foot, ci, MAKE_FOOT);
	}
	add_item(l, b, &b->end, 0, MAKE_HEAD);
	info->num_entries = (unsigned)l->n;
	info->size = l->size;
}

/*
 * Marks the entries that stay in the buffer: a longest run, in the new order,
 * of entries whose places in the buffer increase (so each can be moved there
 * without overwriting one not yet moved). The rest are copied aside.
 */
static size_t keep_increasing(struct layout *l, bool *keep)
{
	uint32_t *tail = xmalloc(sizeof(*tail) * (l->n + 1));
	uint32_t *prev = xmalloc(sizeof(*prev) * (l->n + 1));
	size_t len = 0;
	for (uint32_t i = 0; i < l->n; i++) {
		if (l->v[i].kind != IN_BUFFER)
			continue;
		size_t lo = 0, hi = len;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (l->v[tail[mid]].src < l->v[i].src)
				lo = mid + 1;
			else
				hi = mid;
		}
		prev[i] = lo ? tail[lo - 1] : NONE;
		tail[lo] = i;
		if (lo == len)
			len++;
	}
	for (uint32_t i = len ? tail[len - 1] : NONE; i != NONE; i = prev[i])
		keep[i] = true;
	free(tail);
	free(prev);
	return len;
}

static void make_entry(const struct ipt_blob *b, uint8_t *e, const struct item *it)
{
	const struct geometry *g = b->g;
	memset(e, 0, it->size);
	put16(e, g->target_off, (uint16_t)g->entry_size);
	put16(e, g->next_off, (uint16_t)it->size);
	struct xt_entry_target *t = (void *)(e + g->entry_size);
	t->u.user.target_size = (uint16_t)(it->size - g->entry_size);
	if (it->kind == MAKE_HEAD) {
		struct xt_error_target *et = (void *)t;
		snprintf(t->u.user.name, sizeof(t->u.user.name), "%s", XT_ERROR_TARGET);
		snprintf(et->errorname, sizeof(et->errorname), "%s", b->chains[it->chain].name);
	} else {
		set_verdict(t, XT_RETURN);
	}
}

int ipt_blob_layout(struct ipt_blob *b, struct ipt_blob_info *info, uint32_t **old_of,
		    struct strbuf *err)
{
	if (b->laid_out)
		return fail(err, -EINVAL, "the table was laid out already");
	struct layout l = { 0 };
	plan(b, &l, info);
	b->laid_out = true;

	bool *keep = xcalloc(l.n ? l.n : 1, sizeof(*keep));
	keep_increasing(&l, keep);
	size_t aside_size = 0;
	for (size_t i = 0; i < l.n; i++)
		if (l.v[i].kind == IN_BUFFER && !keep[i])
			aside_size += l.v[i].size;
	uint8_t *aside = xmalloc(aside_size ? aside_size : 1);
	aside_size = 0;
	for (size_t i = 0; i < l.n; i++)
		if (l.v[i].kind == IN_BUFFER && !keep[i]) {
			memcpy(aside + aside_size, entry_at(b, l.v[i].src), l.v[i].size);
			l.v[i].kind = ASIDE;
			l.v[i].src = (uint32_t)aside_size;
			aside_size += l.v[i].size;
		}
	int r = 0;
	if (l.size > b->used)
		r = reserve(b, l.size - b->used);
	if (!r) {
		/* Leftwards in order, then rightwards in reverse: with both the old and the
		 * new places increasing, no entry lands on one that has not moved yet. */
		for (size_t i = 0; i < l.n; i++)
			if (keep[i] && l.v[i].dst < l.v[i].src)
				memmove(entry_at(b, l.v[i].dst), entry_at(b, l.v[i].src),
					l.v[i].size);
		for (size_t i = l.n; i-- > 0;)
			if (keep[i] && l.v[i].dst > l.v[i].src)
				memmove(entry_at(b, l.v[i].dst), entry_at(b, l.v[i].src),
					l.v[i].size);
		*old_of = xmalloc(sizeof(**old_of) * (l.n ? l.n : 1));
		for (size_t i = 0; i < l.n; i++) {
			struct item *it = &l.v[i];
			uint8_t *e = entry_at(b, it->dst);
			if (it->kind == ASIDE)
				memcpy(e, aside + it->src, it->size);
			else if (it->kind == MAKE_HEAD || it->kind == MAKE_FOOT)
				make_entry(b, e, it);
			if (it->jump >= 0)
				set_verdict(target_of(b, e), (int)b->chains[it->jump].start);
			else if (it->jump == J_NEXT)
				set_verdict(target_of(b, e), (int)(it->dst + it->size));
			(*old_of)[i] = it->old;
		}
		b->used = l.size;
	} else {
		r = fail(err, r, "no memory to lay the table out (%u bytes)", l.size);
	}
	free(aside);
	free(keep);
	free(l.v);
	return r;
}
