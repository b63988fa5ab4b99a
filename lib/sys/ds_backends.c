/*
 * The datastore backends, by type name (BRINDLE_DATASTORE_TYPE). A new
 * backend adds its line here and its open function; ds.c's logic does not
 * change.
 */
#include "ds_internal.h"

static const struct ds_backend backends[] = {
	{ "etcdv3", ds_etcd_open },
	{ "kubernetes", ds_kube_open },
};

const struct ds_backend *ds_backend_find(const char *type)
{
	for (size_t i = 0; i < ARRAY_SIZE(backends); i++)
		if (streq(backends[i].type, type))
			return &backends[i];
	return NULL;
}
