/* CalicoNodeStatus: this node's BIRD status, written into the resources that ask for it. */
#ifndef BRINDLE_CONFD_NODE_STATUS_H
#define BRINDLE_CONFD_NODE_STATUS_H

#include <brindle/core/model.h>
#include <brindle/sys/bird_ctl.h>
#include <brindle/sys/ds.h>
#include <brindle/sys/loop.h>

/*
 * The status for @spec's classes from BIRD's replies to `show status`,
 * `show protocols` and `show route` (each NULL when BIRD did not answer),
 * stamped @now (RFC 3339). Pure; strings in @a.
 */
void node_status_fill(struct arena *a, const struct br_cns_spec *spec,
		      const struct bird_reply *show_status, const struct bird_reply *protocols,
		      const struct bird_reply *routes, const char *now, struct br_cns_status *out);

struct node_status;
/* Writes the status of @node's CalicoNodeStatus resources from @l's timer. */
struct node_status *node_status_new(struct loop *l, struct ds *d, const char *node,
				    const char *bird_socket);
/* A CalicoNodeStatus from the datastore (created, changed, deleted). */
void node_status_update(struct node_status *s, const struct ds_update *u);
void node_status_free(struct node_status *s);

#endif
