/*
 * What lib/sys/ipam.c (reading, handles, claims, assigning) shares with
 * lib/sys/ipam_release.c (releasing, empty blocks, orphans): the attempt loop
 * of every operation (ipam.c's comment at the top tells it) and the reads and
 * writes both sides make. Not for use outside these two files.
 */
#ifndef BRINDLE_IPAM_INTERNAL_H
#define BRINDLE_IPAM_INTERNAL_H

#include <brindle/sys/ds.h>
#include <brindle/sys/ipam.h>

struct ipam_op {
	struct ds *d;
	struct strbuf *err;
	uint64_t deadline;
	int attempt;
	bool fresh; /* read nothing from the API server's cache (ds_read.cached) */
	bool stop;  /* the caller's prepare failed: no retry */
	unsigned seed;
};

/* An operation's deadline and error text, for @timeout_ms (0: 30 s). */
void ipam_op_init(struct ipam_op *op, struct ds *d, long timeout_ms, struct strbuf *err);
/* After a failed attempt: wait and true to try again, false when out of time or attempts. */
bool ipam_op_again(struct ipam_op *op, int r);
/* The operation's error once it gives up: -EAGAIN (contended), -ETIMEDOUT, or @r. */
int ipam_op_give_up(struct ipam_op *op, int r, const char *what);
/* @r, with the datastore's last error as the operation's text. */
int ipam_op_ds_error(struct ipam_op *op, int r);
/* Tell ipam_test_hook (tests force interleavings with it) that @step is done. */
void ipam_step_done(const char *step);

struct ipam_objs {
	struct br_object **v;
	size_t n;
};

void ipam_objs_free(struct ipam_objs *l);
int ipam_list(struct ipam_op *op, enum br_kind_id k, const char *scope, struct ipam_objs *out);
/* A block, checked (-EUCLEAN when damaged: ipam check reports it). */
int ipam_get_block(struct ipam_op *op, const char *name, struct br_ipamblock **out);
int ipam_get_handle(struct ipam_op *op, const char *handle, struct br_ipamhandle **out);
int ipam_commit_block(struct ipam_op *op, struct br_ipamblock *b);

/* A handle's count of addresses in block @block (a block name); -1 when none. */
int64_t ipam_handle_count(const struct br_ipamhandle *h, const char *block);
/* Set it (0 or less: the key goes). */
void ipam_handle_set(struct br_ipamhandle *h, const char *block, int64_t count);
/* The block name of a handle's key, in @buf. */
const char *ipam_handle_key_block(const char *key, char buf[IPAM_BLOCK_NAME_LEN]);

int ipam_set_affinity_state(struct ipam_op *op, struct br_blockaffinity *a, const char *state);
/* Delete affinity @a if unchanged. */
int ipam_withdraw(struct ipam_op *op, struct br_blockaffinity *a);

#endif
