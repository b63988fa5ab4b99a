/* The datastore's backends and what they share. Private to lib/ds*.c. */
#ifndef BRINDLE_DS_INTERNAL_H
#define BRINDLE_DS_INTERNAL_H

#include <brindle/sys/ds.h>

struct ds_backend_ops {
	void (*close)(struct ds *d);
	int (*get)(struct ds *d, const struct br_kind *k, const char *scope, const char *name,
		   struct br_object **out);
	int (*list)(struct ds *d, const struct br_kind *k, const char *scope,
		    struct br_object ***out, size_t *n);
	/* Reads at once (ds_read_many); NULL: one after another through get and list. */
	int (*read_many)(struct ds *d, struct ds_read *r, size_t n);
	int (*create)(struct ds *d, struct br_object *o);
	int (*update)(struct ds *d, struct br_object *o);
	int (*del)(struct ds *d, const struct br_kind *k, const char *scope, const char *name,
		   int64_t revision);
	/* All of @w in one transaction; NULL when the backend has none (ds_write_seq). */
	int (*write_all)(struct ds *d, struct ds_write *w, size_t n);
	/*
	 * Whether an update of @cur to @o would write nothing (ds_apply's
	 * "unchanged"); NULL: model_same_content. For a backend that stores
	 * only part of a kind.
	 */
	bool (*same_content)(const struct br_object *cur, const struct br_object *o);
	/* The migration lock; NULL when the backend has none (-EOPNOTSUPP). */
	int (*set_locked)(struct ds *d, bool locked, bool *changed);
	int (*is_locked)(struct ds *d, bool *locked);
	int (*syncer_start)(struct ds *d, struct loop *l, const struct ds_watch_spec *specs,
			    size_t n, const struct ds_syncer_ops *ops, void *ctx,
			    struct ds_syncer **out);
	void (*syncer_stop)(struct ds_syncer *s);
	enum ds_sync_status (*syncer_status)(const struct ds_syncer *s);
	const char *(*syncer_why)(const struct ds_syncer *s);
};

/* Every backend's syncer starts with this. */
struct ds_syncer {
	const struct ds_backend_ops *ops;
};

struct ds {
	const struct ds_backend_ops *ops;
	const char *type; /* the backend's type name */
	struct strbuf err;
	void *priv;
	bool dry_run; /* ds_set_dry_run (backends with dry runs only) */
	bool keep_pools; /* ds_keep_pools: IP pools written as they are */
};

/* Sets the last error text; returns @ret. */
int ds_fail(struct ds *d, int ret, const char *fmt, ...) printf_like(3, 4);

/* A backend: its type name and how it opens (filling d->ops and d->priv). */
struct ds_backend {
	const char *type;
	int (*open)(const struct ds_config *cfg, struct ds *d, struct strbuf *err);
};
/* The backend of @type (ds_backends.c), or NULL. */
const struct ds_backend *ds_backend_find(const char *type);

int ds_etcd_open(const struct ds_config *cfg, struct ds *d, struct strbuf *err);
int ds_kube_open(const struct ds_config *cfg, struct ds *d, struct strbuf *err);
/* The Kubernetes datastore's syncer (ds_kube_sync.c), started by ds_kube.c's backend. */
struct http_auth;
int ds_kube_syncer_start(struct ds *d, const char *server, const struct http_auth *auth,
			 long timeout_ms, struct loop *l, const struct ds_watch_spec *specs,
			 size_t n, const struct ds_syncer_ops *ops, void *ctx,
			 const struct ds_backend_ops *backend, struct ds_syncer **out);
void ds_kube_syncer_stop(struct ds_syncer *s);
enum ds_sync_status ds_kube_syncer_status(const struct ds_syncer *s);
const char *ds_kube_syncer_why(const struct ds_syncer *s);

/* Fill uid and creationTimestamp of a resource about to be created. */
void ds_stamp_new(struct br_object *o);

#endif
