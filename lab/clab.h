/*
 * A lab's topology as a containerlab topology (brindlectl lab export-clab,
 * docs/lab.md): pure, a parsed lab_topology in and YAML text out. The lab's
 * namespaces become linux-kind nodes running the Brindle node image
 * (scripts/image) with its entrypoint for containerlab
 * (lab/clab-entrypoint.sh, installed as LAB_CLAB_ENTRYPOINT), configured
 * through environment variables: one `etcd` node holding the datastore and writing
 * the lab's resources, one `fabric` node with a bridge per subnet (as the
 * lab's fabric namespace), and one node per topology node with its uplink
 * `eth1` linked to the fabric and its pods.
 */
#ifndef BRINDLE_LAB_CLAB_H
#define BRINDLE_LAB_CLAB_H

#include "topology.h"

#include <brindle/core/arena.h>
#include <brindle/core/strbuf.h>
#include <brindle/version.h>

/* the tag scripts/image gives the node image */
#define LAB_CLAB_IMAGE	     "localhost/brindle-node:" BRINDLE_VERSION
#define LAB_CLAB_ENTRYPOINT  "/usr/libexec/brindle/clab-entrypoint"
#define LAB_CLAB_MGMT_SUBNET "172.31.254.0/24"

struct lab_clab_options {
	const char *image;	 /* container image of every node */
	const char *mgmt_subnet; /* containerlab's management network (etcd is reached over it) */
};


/*
 * The containerlab topology of @t into @out. Fails with -EINVAL and a
 * message in @err when @t has parts the export does not cover (external
 * hosts, BGP peers) or @o's management subnet is bad or too small.
 */
int lab_clab_export(struct arena *a, const struct lab_topology *t, const struct lab_clab_options *o,
		    struct strbuf *out, struct strbuf *err) must_check;

#endif
