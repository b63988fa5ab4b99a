/*
 * The recording iptables backend: a simulated set of legacy tables for unit
 * tests. Rules are kept as text; every rule written goes through
 * ipt_rule_parse and ipt_rule_format and is refused unless the text comes
 * back unchanged, so a test catches text that iptables-save would print
 * differently from what felix rendered. The kernel's answers are simulated
 * where they matter: unknown chains and positions, jumps to missing chains,
 * deleting a referenced, non-empty or built-in chain, loops (at commit), and
 * targets outside their table (MASQUERADE in nat, REJECT in filter). Set
 * names get indexes from an ipt_set_table; any name is a set here.
 *
 * A session edits a copy of one table; commit swaps it in, abort drops it.
 */
#include <brindle/core/arena.h>
#include <brindle/core/hash.h>
#include <brindle/sys/ipt.h>
#include <brindle/testing/ipt_record.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/netfilter/x_tables.h>
#include <linux/netfilter_ipv4/ip_tables.h>

struct rec_rule {
	char *text;
	char *target; /* "ACCEPT", a chain, "MARK" */
	bool jump;    /* target is a chain */
};

struct rec_chain {
	char name[IPT_CHAIN_MAX + 1];
	bool builtin;
	struct rec_rule *rules;
	size_t n, cap;
};

struct rec_table {
	const char *name;
	struct rec_chain *chains; /* built-ins first, then user chains by name */
	size_t n, cap;
	unsigned commits;
};

struct ipt_record {
	struct ipt ipt;
	struct rec_table tables[4];
	struct ipt_set_table sets;
	struct rec_table *cur; /* the session's table, or NULL */
	struct rec_table work; /* the session's copy */
};

static const struct {
	const char *name;
	const char *chains[5];
} layout[4] = {
	{ "filter", { "INPUT", "FORWARD", "OUTPUT" } },
	{ "nat", { "PREROUTING", "INPUT", "OUTPUT", "POSTROUTING" } },
	{ "mangle", { "PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING" } },
	{ "raw", { "PREROUTING", "OUTPUT" } },
};

static struct ipt_record *record_of(struct ipt *t)
{
	return container_of(t, struct ipt_record, ipt);
}

printf_like(3, 4) static int err(struct ipt_record *r, int code, const char *fmt, ...)
{
	va_list ap;
	sb_reset(&r->ipt.err);
	va_start(ap, fmt);
	sb_vaddf(&r->ipt.err, fmt, ap);
	va_end(ap);
	return code;
}

static void rule_free(struct rec_rule *x)
{
	free(x->text);
	free(x->target);
}

static void chain_clear(struct rec_chain *c)
{
	for (size_t i = 0; i < c->n; i++)
		rule_free(&c->rules[i]);
	free(c->rules);
	c->rules = NULL;
	c->n = c->cap = 0;
}

static void table_clear(struct rec_table *t)
{
	for (size_t i = 0; i < t->n; i++)
		chain_clear(&t->chains[i]);
	free(t->chains);
	t->chains = NULL;
	t->n = t->cap = 0;
}

static void table_copy(struct rec_table *dst, const struct rec_table *src)
{
	dst->name = src->name;
	dst->n = dst->cap = src->n;
	dst->chains = xcalloc(src->n ? src->n : 1, sizeof(*dst->chains));
	for (size_t i = 0; i < src->n; i++) {
		const struct rec_chain *s = &src->chains[i];
		struct rec_chain *d = &dst->chains[i];
		memcpy(d->name, s->name, sizeof(d->name));
		d->builtin = s->builtin;
		d->n = d->cap = s->n;
		d->rules = s->n ? xcalloc(s->n, sizeof(*d->rules)) : NULL;
		for (size_t k = 0; k < s->n; k++) {
			d->rules[k].text = xstrdup(s->rules[k].text);
			d->rules[k].target = xstrdup(s->rules[k].target);
			d->rules[k].jump = s->rules[k].jump;
		}
	}
}

static struct rec_chain *find_chain(struct rec_table *t, const char *name)
{
	for (size_t i = 0; i < t->n; i++)
		if (strcmp(t->chains[i].name, name) == 0)
			return &t->chains[i];
	return NULL;
}

static int session(struct ipt_record *r)
{
	if (!r->cur)
		return err(r, -EINVAL, "no session: call begin first");
	return 0;
}

static int session_chain(struct ipt_record *r, const char *name, struct rec_chain **out)
{
	int e = session(r);
	if (e)
		return e;
	*out = find_chain(&r->work, name);
	if (!*out)
		return err(r, -ENOENT, "no chain %s in table %s", name, r->work.name);
	return 0;
}

static int rec_begin(struct ipt *t, const char *table, struct ipt_table_state *out)
{
	struct ipt_record *r = record_of(t);
	struct rec_table *tab = NULL;
	if (r->cur)
		return err(r, -EINPROGRESS, "a session on table %s is open", r->cur->name);
	for (size_t i = 0; i < ARRAY_SIZE(r->tables); i++)
		if (strcmp(r->tables[i].name, table) == 0)
			tab = &r->tables[i];
	if (!tab)
		return err(r, -ENOENT, "no table %s", table);
	table_copy(&r->work, tab);
	r->cur = tab;

	struct ipt_table_state st = { .mem = arena_new(), .n = tab->n };
	st.chains = xcalloc(tab->n, sizeof(*st.chains));
	for (size_t i = 0; i < tab->n; i++) {
		const struct rec_chain *c = &tab->chains[i];
		struct ipt_chain_state *s = &st.chains[i];
		memcpy(s->name, c->name, sizeof(s->name));
		s->builtin = c->builtin;
		s->n = c->n;
		s->ids = arena_alloc(st.mem, sizeof(*s->ids) * (c->n ? c->n : 1));
		s->targets = arena_new_array(st.mem, char *, c->n ? c->n : 1);
		for (size_t k = 0; k < c->n; k++) {
			if (!ipt_rule_text_id(c->rules[k].text, s->ids[k]))
				s->ids[k][0] = 0;
			s->targets[k] = arena_strdup(st.mem, c->rules[k].target);
		}
	}
	*out = st;
	return 0;
}

static int rec_new_chain(struct ipt *t, const char *chain)
{
	struct ipt_record *r = record_of(t);
	int e = session(r);
	if (e)
		return e;
	if (!ipt_chain_name_valid(chain))
		return err(r, -EINVAL, "not a valid chain name: \"%s\"", chain);
	if (find_chain(&r->work, chain))
		return err(r, -EEXIST, "chain %s exists", chain);
	struct rec_table *w = &r->work;
	size_t at = 0;
	while (at < w->n && (w->chains[at].builtin || strcmp(w->chains[at].name, chain) < 0))
		at++;
	GROW(w->chains, w->cap, w->n + 1);
	memmove(&w->chains[at + 1], &w->chains[at], sizeof(*w->chains) * (w->n - at));
	memset(&w->chains[at], 0, sizeof(w->chains[at]));
	snprintf(w->chains[at].name, sizeof(w->chains[at].name), "%s", chain);
	w->n++;
	return 0;
}

static int rec_flush_chain(struct ipt *t, const char *chain)
{
	struct ipt_record *r = record_of(t);
	struct rec_chain *c;
	int e = session_chain(r, chain, &c);
	if (e)
		return e;
	chain_clear(c);
	return 0;
}

static size_t references(const struct rec_table *w, const char *chain)
{
	size_t refs = 0;
	for (size_t i = 0; i < w->n; i++)
		for (size_t k = 0; k < w->chains[i].n; k++)
			refs += w->chains[i].rules[k].jump &&
				strcmp(w->chains[i].rules[k].target, chain) == 0;
	return refs;
}

static int rec_delete_chain(struct ipt *t, const char *chain)
{
	struct ipt_record *r = record_of(t);
	struct rec_chain *c;
	int e = session_chain(r, chain, &c);
	if (e)
		return e;
	if (c->builtin)
		return err(r, -EINVAL, "chain %s is built in", chain);
	if (references(&r->work, chain))
		return err(r, -EMLINK, "chain %s is referenced", chain);
	if (c->n)
		return err(r, -ENOTEMPTY, "chain %s is not empty", chain);
	struct rec_table *w = &r->work;
	size_t at = (size_t)(c - w->chains);
	chain_clear(c);
	memmove(&w->chains[at], &w->chains[at + 1], sizeof(*w->chains) * (w->n - at - 1));
	w->n--;
	return 0;
}

/* Parses and re-formats @text; fills @out when it comes back unchanged. */
static int make_rule(struct ipt_record *r, const char *text, struct rec_rule *out)
{
	struct strbuf msg = STRBUF_INIT, back = STRBUF_INIT;
	void *entry = NULL;
	size_t len;
	int e;
	sb_init(&msg);
	sb_init(&back);
	e = ipt_rule_parse(AF_INET, text, &r->sets.sets, &entry, &len, &msg);
	if (e) {
		e = err(r, e, "%s: %s", text, sb_str(&msg));
		goto out;
	}
	ipt_rule_format(AF_INET, entry, NULL, &r->sets.sets, &back);
	if (strcmp(sb_str(&back), text) != 0) {
		e = err(r, -EINVAL,
			"rule text is not as iptables-save prints it:\n  given:   %s\n  printed: "
			"%s",
			text, sb_str(&back));
		goto out;
	}
	const struct ipt_entry *en = entry;
	const struct xt_entry_target *tg = (const void *)((const char *)entry + en->target_offset);
	const char *name = tg->u.user.name;
	bool standard = tg->u.target_size == XT_ALIGN(sizeof(struct xt_standard_target)) &&
			strcmp(name, "ACCEPT") != 0 && strcmp(name, "DROP") != 0 &&
			strcmp(name, "RETURN") != 0 && strcmp(name, "MARK") != 0 &&
			strcmp(name, "MASQUERADE") != 0 && strcmp(name, "REJECT") != 0 &&
			strcmp(name, "LOG") != 0 && strcmp(name, "NFLOG") != 0;
	if (standard && !find_chain(&r->work, name)) {
		e = err(r, -ENOENT, "%s: no chain %s to jump to", text, name);
		goto out;
	}
	if ((strcmp(name, "MASQUERADE") == 0 && strcmp(r->work.name, "nat") != 0) ||
	    (strcmp(name, "REJECT") == 0 && strcmp(r->work.name, "filter") != 0)) {
		e = err(r, -EINVAL, "%s: target %s is not valid in table %s", text, name,
			r->work.name);
		goto out;
	}
	out->text = xstrdup(text);
	out->target = xstrdup(name);
	out->jump = standard;
out:
	free(entry);
	sb_free(&msg);
	sb_free(&back);
	return e;
}

static int rec_insert(struct ipt *t, const char *chain, size_t pos, const char *rule)
{
	struct ipt_record *r = record_of(t);
	struct rec_chain *c;
	struct rec_rule x;
	int e = session_chain(r, chain, &c);
	if (e)
		return e;
	if (pos > c->n)
		return err(r, -ENOENT, "no position %zu in chain %s (%zu rules)", pos, chain, c->n);
	e = make_rule(r, rule, &x);
	if (e)
		return e;
	GROW(c->rules, c->cap, c->n + 1);
	memmove(&c->rules[pos + 1], &c->rules[pos], sizeof(*c->rules) * (c->n - pos));
	c->rules[pos] = x;
	c->n++;
	return 0;
}

static int rec_append(struct ipt *t, const char *chain, const char *rule)
{
	struct ipt_record *r = record_of(t);
	struct rec_chain *c;
	int e = session_chain(r, chain, &c);
	if (e)
		return e;
	return rec_insert(t, chain, c->n, rule);
}

static int rec_replace(struct ipt *t, const char *chain, size_t pos, const char *rule)
{
	struct ipt_record *r = record_of(t);
	struct rec_chain *c;
	struct rec_rule x;
	int e = session_chain(r, chain, &c);
	if (e)
		return e;
	if (pos >= c->n)
		return err(r, -ENOENT, "no rule %zu in chain %s (%zu rules)", pos, chain, c->n);
	e = make_rule(r, rule, &x);
	if (e)
		return e;
	rule_free(&c->rules[pos]);
	c->rules[pos] = x;
	return 0;
}

static int rec_delete(struct ipt *t, const char *chain, size_t pos)
{
	struct ipt_record *r = record_of(t);
	struct rec_chain *c;
	int e = session_chain(r, chain, &c);
	if (e)
		return e;
	if (pos >= c->n)
		return err(r, -ENOENT, "no rule %zu in chain %s (%zu rules)", pos, chain, c->n);
	rule_free(&c->rules[pos]);
	memmove(&c->rules[pos], &c->rules[pos + 1], sizeof(*c->rules) * (c->n - pos - 1));
	c->n--;
	return 0;
}

/* Depth-first over jumps: 0 unvisited, 1 on the path, 2 done. */
static bool loops_from(struct rec_table *w, size_t i, uint8_t *state, const char **where)
{
	state[i] = 1;
	for (size_t k = 0; k < w->chains[i].n; k++) {
		const struct rec_rule *x = &w->chains[i].rules[k];
		if (!x->jump)
			continue;
		struct rec_chain *to = find_chain(w, x->target);
		size_t j = (size_t)(to - w->chains);
		if (state[j] == 1 || (state[j] == 0 && loops_from(w, j, state, where))) {
			if (!*where)
				*where = w->chains[i].name;
			return true;
		}
	}
	state[i] = 2;
	return false;
}

static int rec_commit(struct ipt *t)
{
	struct ipt_record *r = record_of(t);
	int e = session(r);
	if (e)
		return e;
	uint8_t *state = xcalloc(r->work.n ? r->work.n : 1, 1);
	const char *where = NULL;
	bool loop = false;
	for (size_t i = 0; i < r->work.n && !loop; i++)
		if (!state[i])
			loop = loops_from(&r->work, i, state, &where);
	free(state);
	if (loop) {
		e = err(r, -ELOOP, "jumps loop through chain %s", where);
		t->ops->abort(t);
		return e;
	}
	unsigned commits = r->cur->commits + 1;
	table_clear(r->cur);
	*r->cur = r->work;
	r->cur->commits = commits;
	memset(&r->work, 0, sizeof(r->work));
	r->cur = NULL;
	return 0;
}

static void rec_abort(struct ipt *t)
{
	struct ipt_record *r = record_of(t);
	table_clear(&r->work);
	r->cur = NULL;
}

static struct rec_table *table_named(struct ipt_record *r, const char *table);

/* The table as ipt_record_save prints it, hashed (counters are always 0 here); the header
 * digest is the number of rules and chains. */
static int rec_fingerprint(struct ipt *t, const char *table, bool rules, uint64_t *out)
{
	struct rec_table *tab = table_named(record_of(t), table);
	if (!tab)
		return err(record_of(t), -ENOENT, "no table %s", table);
	if (!rules) {
		uint64_t n = tab->n;
		for (size_t i = 0; i < tab->n; i++)
			n += (uint64_t)tab->chains[i].n << 20;
		*out = n;
		return 0;
	}
	struct strbuf sb = STRBUF_INIT;
	sb_init(&sb);
	ipt_record_save(t, table, &sb);
	*out = hash_fnv1a64(sb.buf, sb.len);
	sb_free(&sb);
	return 0;
}

static void rec_close(struct ipt *t)
{
	struct ipt_record *r = record_of(t);
	rec_abort(t);
	for (size_t i = 0; i < ARRAY_SIZE(r->tables); i++)
		table_clear(&r->tables[i]);
	ipt_set_table_free(&r->sets);
	sb_free(&r->ipt.err);
	free(r);
}

static const struct ipt_ops record_ops = {
	.begin = rec_begin,
	.new_chain = rec_new_chain,
	.flush_chain = rec_flush_chain,
	.delete_chain = rec_delete_chain,
	.insert = rec_insert,
	.append = rec_append,
	.replace = rec_replace,
	.delete = rec_delete,
	.commit = rec_commit,
	.fingerprint = rec_fingerprint,
	.abort = rec_abort,
	.close = rec_close,
};

struct ipt *ipt_open_recording(void)
{
	struct ipt_record *r = xcalloc(1, sizeof(*r));
	r->ipt.ops = &record_ops;
	sb_init(&r->ipt.err);
	ipt_set_table_init(&r->sets);
	r->ipt.sets = &r->sets.sets;
	for (size_t i = 0; i < ARRAY_SIZE(layout); i++) {
		struct rec_table *t = &r->tables[i];
		t->name = layout[i].name;
		for (size_t k = 0; k < ARRAY_SIZE(layout[i].chains) && layout[i].chains[k]; k++) {
			GROW(t->chains, t->cap, t->n + 1);
			struct rec_chain *c = &t->chains[t->n++];
			memset(c, 0, sizeof(*c));
			snprintf(c->name, sizeof(c->name), "%s", layout[i].chains[k]);
			c->builtin = true;
		}
	}
	return &r->ipt;
}

static struct rec_table *table_named(struct ipt_record *r, const char *table)
{
	for (size_t i = 0; i < ARRAY_SIZE(r->tables); i++)
		if (strcmp(r->tables[i].name, table) == 0)
			return &r->tables[i];
	return NULL;
}

void ipt_record_save(struct ipt *t, const char *table, struct strbuf *out)
{
	struct rec_table *tab = table_named(record_of(t), table);
	if (!tab)
		return;
	sb_addf(out, "*%s\n", tab->name);
	for (size_t i = 0; i < tab->n; i++)
		sb_addf(out, ":%s %s [0:0]\n", tab->chains[i].name,
			tab->chains[i].builtin ? "ACCEPT" : "-");
	for (size_t i = 0; i < tab->n; i++)
		for (size_t k = 0; k < tab->chains[i].n; k++)
			sb_addf(out, "-A %s %s\n", tab->chains[i].name,
				tab->chains[i].rules[k].text);
	sb_adds(out, "COMMIT\n");
}

unsigned ipt_record_commits(struct ipt *t, const char *table)
{
	struct rec_table *tab = table_named(record_of(t), table);
	return tab ? tab->commits : 0;
}

void *ipt_blob_malloc_resize(void *ctx, void *buf, size_t old_cap, size_t new_cap)
{
	(void)ctx;
	(void)old_cap;
	if (!new_cap) {
		free(buf);
		return NULL;
	}
	return realloc(buf, new_cap);
}
