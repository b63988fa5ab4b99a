/* confd's in-memory copy of the datastore (see store.h). */
#include "store.h"

#include <stdio.h>
#include <stdlib.h>

static void key_of(char *buf, size_t size, const char *scope, const char *name)
{
	snprintf(buf, size, "%s/%s", scope ? scope : "", name);
}

bool store_put(struct store *s, const struct br_kind *k, const char *scope, const char *name,
	       struct br_object *o)
{
	char key[1024];
	key_of(key, sizeof(key), scope, name);
	struct br_object *old =
		o ? hmap_put(&s->kinds[k->id], key, o) : hmap_del(&s->kinds[k->id], key);
	bool changed = o || old;
	if (old && o && model_equal(old, o))
		changed = false;
	model_free(old);
	return changed;
}

size_t store_count(const struct store *s, enum br_kind_id k)
{
	return s->kinds[k].n;
}

void store_clear(struct store *s)
{
	for (size_t k = 0; k < KIND_COUNT; k++) {
		for (struct hmap_iter it = hmap_iter(&s->kinds[k]); hmap_next(&it);)
			model_free(it.value);
		hmap_clear(&s->kinds[k]);
	}
}

static const void **array_of(const struct store *s, enum br_kind_id k, size_t *n)
{
	const void **v = xcalloc(s->kinds[k].n + 1, sizeof(void *));
	*n = 0;
	for (struct hmap_iter it = hmap_iter(&s->kinds[k]); hmap_next(&it);)
		v[(*n)++] = it.value;
	return v;
}

void store_input(const struct store *s, struct bgp_input *in)
{
	in->nodes = (const struct br_node *const *)array_of(s, KIND_NODE, &in->n_nodes);
	in->configs = (const struct br_bgpconfig *const *)array_of(s, KIND_BGPCONFIGURATION,
								   &in->n_configs);
	in->peers = (const struct br_bgppeer *const *)array_of(s, KIND_BGPPEER, &in->n_peers);
	in->pools = (const struct br_ippool *const *)array_of(s, KIND_IPPOOL, &in->n_pools);
	in->affinities = (const struct br_blockaffinity *const *)array_of(s, KIND_BLOCKAFFINITY,
									  &in->n_affinities);
	in->services = (const struct br_service *const *)array_of(s, KIND_SERVICE, &in->n_services);
	in->slices = (const struct br_endpointslice *const *)array_of(s, KIND_ENDPOINTSLICE,
								      &in->n_slices);
	in->filters =
		(const struct br_bgpfilter *const *)array_of(s, KIND_BGPFILTER, &in->n_filters);
}

void store_input_free(struct bgp_input *in)
{
	free((void *)in->nodes);
	free((void *)in->configs);
	free((void *)in->peers);
	free((void *)in->pools);
	free((void *)in->affinities);
	free((void *)in->services);
	free((void *)in->slices);
	free((void *)in->filters);
}
