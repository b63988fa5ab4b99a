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

struct node_env {
	/* The environment (getenv, or a test's table). */
	const char *(*get)(const char *name);
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
