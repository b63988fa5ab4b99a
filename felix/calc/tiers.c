/*
 * Tiers as felix orders and ends them (the Tier resources, else Calico's
 * defaults). Pure; below the rest of the policy core, which only asks.
 */
#include "policy_internal.h"

#include <brindle/core/util.h>

#include <math.h>
#include <stdlib.h>

struct ptier pol_tier(const struct pol *p, const char *name)
{
	const struct ptier *t = hmap_get(&p->tiers, name);
	if (t)
		return *t;
	return (struct ptier){ streq(name, "default") ? MODEL_TIER_DEFAULT_ORDER : INFINITY,
			       false };
}

/* A tier changes the order and the ends of every endpoint's chains that use it: render all. */
void tiers_update(struct pol *p, const char *name, const struct br_tier *t)
{
	free(hmap_del(&p->tiers, name));
	if (t) {
		struct ptier *pt = xcalloc(1, sizeof(*pt));
		pt->order = t->spec.order.set ? t->spec.order.v : INFINITY;
		pt->pass = t->spec.default_action && streq(t->spec.default_action, "Pass");
		hmap_put(&p->tiers, name, pt);
	}
	p->dirty_all = true;
}

void tiers_free(struct pol *p)
{
	for (struct hmap_iter it = hmap_iter(&p->tiers); hmap_next(&it);)
		free(it.value);
	hmap_clear(&p->tiers);
}
