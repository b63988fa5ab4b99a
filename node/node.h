/*
 * brindle-node: the node bootstrap (startup.c) that runs once before the
 * daemons, as calico-node's startup does. docs/install.md.
 */
#ifndef BRINDLE_NODE_H
#define BRINDLE_NODE_H

#include <brindle/core/arena.h>
#include <brindle/core/model.h>
#include <brindle/core/strbuf.h>
#include <brindle/sys/ds.h>

#include <stdbool.h>
#include <sys/types.h>

/* The environment variable @name, or @def when it is unset or empty. */
const char *node_env_or(const char *name, const char *def);
/*
 * @len bytes to @path through @path.tmp, fsync and a rename, with @mode: a
 * reader sees the old file or the new one, never half; its directory made
 * when missing. Logs why it failed.
 */
int node_write_file(const char *path, const void *data, size_t len, mode_t mode);

/* Where startup writes what brindle-cni and the next start read. */
struct node_env {
	const char *nodename_file; /* BRINDLE_NODENAME_FILE, default /var/lib/brindle/nodename */
	const char *mtu_file;	   /* BRINDLE_MTU_FILE, default /var/lib/brindle/mtu */
};

/* One run of startup.c: what each step needs. */
struct node_run {
	const struct node_env *env;
	struct arena *a;
	struct ds *ds;
	bool kube;
	const char *name;
	struct strbuf err;
};

/* Every step of startup.c; 0, or a negative errno after logging why. */
int node_startup(const struct node_env *e);
/* Everything of Brindle's removed from this node's kernel (cleanup.c); 0 or a negative errno. */
int node_cleanup(void);
/* The CNI plugin installed on the host (install_cni.c); with @watch its token kept fresh. */
int node_install_cni(bool watch);

#endif
