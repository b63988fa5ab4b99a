/*
 * IPAM's operations (lib/sys/ipam.c, ipam_claim.c, ipam_release.c) share this: the attempt
 * loop's context (deadline, backoff, the last error), the datastore reads and writes every
 * attempt makes, and the handle's bookkeeping of its blocks. Below all three, calling none of
 * them.
 */
#include <brindle/sys/ds.h>
#include <brindle/sys/ipam.h>
#include <brindle/sys/clock.h>
#include "ipam_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_TIMEOUT_MS 30000
#define MAX_ATTEMPTS	   200

void (*ipam_test_hook)(const char *step);

void ipam_step_done(const char *step)
{
	if (ipam_test_hook)
		ipam_test_hook(step);
}

void ipam_op_init(struct ipam_op *op, struct ds *d, long timeout_ms, struct strbuf *err)
{
	op->d = d;
	op->err = err;
	op->deadline = now_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : DEFAULT_TIMEOUT_MS);
	op->attempt = 0;
	op->fresh = false;
	op->stop = false;
	op->seed = (unsigned)(now_ns() ^ (uint64_t)getpid() << 16);
}

/* Worth another attempt: the datastore was unreachable, or someone wrote first. */
static bool retryable(int r)
{
	switch (r) {
	case -ECANCELED:
	case -EEXIST:
	case -ENOENT:
	case -EAGAIN:
	case -ECONNREFUSED:
	case -ECONNRESET:
	case -ETIMEDOUT:
	case -EIO:
	case -EPROTO:
		return true;
	default:
		return false;
	}
}

static bool conflict(int r)
{
	return r == -ECANCELED || r == -EEXIST || r == -ENOENT || r == -EAGAIN;
}

static long backoff_ms(int attempt)
{
	/* Conflicts and outages both end up here; 10 ms doubling to 1 s. */
	long ms = 10L << (attempt < 7 ? attempt : 7);
	return ms > 1000 ? 1000 : ms;
}

/*
 * After a failed attempt: wait and return true to try again, or false when
 * out of time or attempts. The error text of the last failure is kept.
 */
bool ipam_op_again(struct ipam_op *op, int r)
{
	if (!retryable(r))
		return false;
	op->attempt++;
	uint64_t now = now_ms();
	if (now >= op->deadline || op->attempt >= MAX_ATTEMPTS)
		return false;
	long ms;
	if (conflict(r))
		ms = 1 + (long)(rand_r(&op->seed) % 20); /* jitter spreads racing writers */
	else
		ms = backoff_ms(op->attempt) / 2 +
		     (long)(rand_r(&op->seed) % (backoff_ms(op->attempt) / 2 + 1));
	if ((uint64_t)ms > op->deadline - now)
		ms = (long)(op->deadline - now);
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
	return true;
}

int ipam_op_give_up(struct ipam_op *op, int r, const char *what)
{
	if (retryable(r)) {
		sb_reset(op->err);
		sb_addf(op->err, "%s: gave up after %d attempts: %s", what, op->attempt,
			ds_last_error(op->d));
		return conflict(r) ? -EAGAIN : -ETIMEDOUT;
	}
	return r;
}

int ipam_op_ds_error(struct ipam_op *op, int r)
{
	sb_reset(op->err);
	sb_adds(op->err, ds_last_error(op->d));
	return r;
}

/* --- reading ------------------------------------------------------------------------------- */

int ipam_get_block(struct ipam_op *op, const char *name, struct br_ipamblock **out)
{
	struct br_object *o;
	int r = ds_get(op->d, model_kind(KIND_IPAMBLOCK), NULL, name, &o);
	if (r < 0)
		return ipam_op_ds_error(op, r);
	struct br_ipamblock *b = (struct br_ipamblock *)o;
	sb_reset(op->err);
	if (ipam_block_validate(b, NULL, op->err) < 0) {
		model_free(o);
		return -EUCLEAN;
	}
	*out = b;
	return 0;
}

int ipam_get_handle(struct ipam_op *op, const char *handle, struct br_ipamhandle **out)
{
	struct br_object *o;
	int r = ds_get(op->d, model_kind(KIND_IPAMHANDLE), NULL, handle, &o);
	if (r < 0)
		return r == -ENOENT ? r : ipam_op_ds_error(op, r);
	*out = (struct br_ipamhandle *)o;
	return 0;
}

void ipam_objs_free(struct ipam_objs *l)
{
	model_free_all(l->v, l->n);
	l->v = NULL;
	l->n = 0;
}

int ipam_list(struct ipam_op *op, enum br_kind_id k, const char *scope, struct ipam_objs *out)
{
	int r = ds_list(op->d, model_kind(k), scope, &out->v, &out->n);
	return r < 0 ? ipam_op_ds_error(op, r) : 0;
}

/* --- handles ------------------------------------------------------------------------------ */

/*
 * A handle counts its addresses per block keyed by the block's CIDR
 * ("10.244.0.0/26"), as Calico keys them; earlier Brindle releases keyed
 * them by block name ("10.244.0.0-26"), which is still read. @block is a
 * block name.
 */
static bool handle_key_is(const char *key, const char *block)
{
	const char *dash = strrchr(block, '-');
	size_t at = dash ? (size_t)(dash - block) : 0;
	return streq(key, block) || (dash && strncmp(key, block, at) == 0 && key[at] == '/' &&
				     streq(key + at + 1, dash + 1));
}

/* The block name of a handle's key, in @buf. */
const char *ipam_handle_key_block(const char *key, char buf[IPAM_BLOCK_NAME_LEN])
{
	snprintf(buf, IPAM_BLOCK_NAME_LEN, "%s", key);
	char *slash = strrchr(buf, '/');
	if (slash)
		*slash = '-';
	return buf;
}

int64_t ipam_handle_count(const struct br_ipamhandle *h, const char *block)
{
	for (size_t i = 0; i < h->spec.block.n; i++)
		if (handle_key_is(h->spec.block.v[i].key, block))
			return h->spec.block.v[i].value;
	return -1;
}

void ipam_handle_set(struct br_ipamhandle *h, const char *block, int64_t count)
{
	struct arena *a = h->o.arena;
	size_t n = h->spec.block.n, m = 0;
	__typeof__(h->spec.block.v) v = arena_alloc(a, sizeof(*v) * (n + 1));
	bool done = false;
	for (size_t i = 0; i < n; i++) {
		if (handle_key_is(h->spec.block.v[i].key, block)) {
			done = true;
			if (count <= 0)
				continue;
			v[m] = h->spec.block.v[i];
			v[m++].value = count;
		} else {
			v[m++] = h->spec.block.v[i];
		}
	}
	if (!done && count > 0) {
		char *key = arena_strdup(a, block);
		char *dash = strrchr(key, '-');
		if (dash)
			*dash = '/';
		v[m].key = key;
		v[m++].value = count;
	}
	h->spec.block.v = (void *)v;
	h->spec.block.n = m;
}

int ipam_commit_block(struct ipam_op *op, struct br_ipamblock *b)
{
	int r = ds_update(op->d, &b->o);
	return r < 0 ? ipam_op_ds_error(op, r) : 0;
}
