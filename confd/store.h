/*
 * confd's copy of the datastore: every object the syncer delivered, by kind
 * and "<scope>/<name>", and the arrays the BGP view reads. Owns the objects.
 */
#ifndef BRINDLE_CONFD_STORE_H
#define BRINDLE_CONFD_STORE_H

#include "bgp_view.h"

#include <brindle/core/hmap.h>
#include <brindle/core/model.h>

struct store {
	struct hmap kinds[KIND_COUNT];
};

/* Takes ownership of @o (NULL deletes). Returns true when something changed. */
bool store_put(struct store *s, const struct br_kind *k, const char *scope, const char *name,
	       struct br_object *o);
size_t store_count(const struct store *s, enum br_kind_id k);
void store_clear(struct store *s);

/* Fill the resource arrays of @in (node name, passwords untouched); free with store_input_free. */
void store_input(const struct store *s, struct bgp_input *in);
void store_input_free(struct bgp_input *in);

#endif
