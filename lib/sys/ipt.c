/*
 * What the iptables backends share: the handle's accessors and the table
 * state they hand out on begin. The backends live in ipt_kernel.c (the kernel's calls)
 * and ipt_record.c (simulated); the rule text in ipt_rule_parse.c and
 * ipt_rule_format.c.
 */
#include <brindle/core/arena.h>
#include <brindle/sys/ipt.h>

#include <stdlib.h>
#include <string.h>

void ipt_close(struct ipt *t)
{
	if (t)
		t->ops->close(t);
}

const char *ipt_last_error(const struct ipt *t)
{
	return sb_str(&t->err);
}

void ipt_table_state_free(struct ipt_table_state *t)
{
	if (!t)
		return;
	free(t->chains);
	arena_free(t->mem);
	memset(t, 0, sizeof(*t));
}

static int cmp_chain(const void *key, const void *elem)
{
	return strcmp(key, ((const struct ipt_chain_state *)elem)->name);
}

/*
 * Built-in chains come first, then user chains in name order (ipt_kernel.c and
 * the recording backend keep them sorted, as libiptc and iptables-restore do): a binary search,
 * with a plain scan behind it for a table some other tool wrote out of order.
 */
const struct ipt_chain_state *ipt_table_state_chain(const struct ipt_table_state *t,
						    const char *name)
{
	size_t b = 0;
	while (b < t->n && t->chains[b].builtin) {
		if (strcmp(t->chains[b].name, name) == 0)
			return &t->chains[b];
		b++;
	}
	if (b == t->n)
		return NULL;
	const struct ipt_chain_state *c =
		bsearch(name, t->chains + b, t->n - b, sizeof(*c), cmp_chain);
	if (c)
		return c;
	for (size_t i = b; i < t->n; i++)
		if (strcmp(t->chains[i].name, name) == 0)
			return &t->chains[i];
	return NULL;
}
