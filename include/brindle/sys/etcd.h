/*
 * etcd v3 client over etcd's JSON gateway (/v3/kv/..., /v3/watch, /v3/lease/...),
 * over HTTP (lib/http.c, libcurl; a client keeps its connection open between
 * calls).
 *
 * Endpoints are URLs: http://host:port, https://host:port, or unix:PATH
 * (also unix://PATH; unixs:PATH for TLS) for etcd listening on a unix socket.
 * Calls try the last endpoint that worked first and fail over to the others
 * on connection errors (not on etcd-level errors): always while the request
 * was not sent yet, and for idempotent calls (get, list, keepalive, revoke,
 * compact) also when the connection broke after sending. Every call has one
 * timeout that covers all endpoints tried. Proxy environment variables are
 * ignored. TLS verifies the server's certificate (against ca_file, else the
 * system store) and its host name or address. A client is not thread-safe.
 *
 * Keys and values are byte strings; the gateway's base64 is hidden here.
 * Errors are negative errno values:
 *   -ENOENT      key not found (etcd_get); unknown lease (revoke, put with a lease)
 *   -ECONNREFUSED no endpoint reachable (refused, unresolvable, TLS handshake failed)
 *   -ETIMEDOUT   the call timed out on every endpoint tried
 *   -ECONNRESET  a write's connection broke after the request was sent: it
 *                may or may not have been applied (not retried elsewhere)
 *   -ESTALE      the requested revision was compacted
 *   -ERANGE      the requested revision is above the store's (a store that went back)
 *   -EPROTO      etcd answered with something we could not read (also an
 *                answer over the size limits: 32 KiB of headers, 64 MiB of body)
 *   -EIO         etcd answered with an error (text in etcd_last_error)
 * etcd_last_error() describes the most recent failure on that client.
 */
#ifndef BRINDLE_ETCD_H
#define BRINDLE_ETCD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <brindle/core/etcd_codec.h>
#include <brindle/core/strbuf.h>
#include <brindle/core/util.h>

struct loop;

struct etcd_config {
	const char *const *endpoints; /* at least one */
	size_t n_endpoints;
	const char *ca_file;	 /* TLS: CA bundle to verify the server */
	const char *cert_file;	 /* TLS: client certificate */
	const char *key_file;	 /* TLS: client key */
	long timeout_ms;	 /* per call; 0 = 5000 */
	long connect_timeout_ms; /* per endpoint attempt; 0 = 1000 */
};

struct etcd;

/* Copies what it needs from @cfg. Does not connect. */
int etcd_new(const struct etcd_config *cfg, struct etcd **out, struct strbuf *err) must_check;
void etcd_free(struct etcd *e);
const char *etcd_last_error(const struct etcd *e);
/*
 * Split "a,b,c" into endpoints (for BRINDLE_ETCD_ENDPOINTS); caller frees *out
 * and each item. Spaces around items are trimmed; an empty item or an unknown
 * scheme gives -EINVAL.
 */
int etcd_parse_endpoints(const char *list, char ***out, size_t *n) must_check;

void etcd_kv_clear(struct etcd_kv *kv);

struct etcd_range {
	struct etcd_kv *kvs;
	size_t n;
	int64_t revision; /* store revision the range was read at */
};

void etcd_range_clear(struct etcd_range *r);

int etcd_get(struct etcd *e, const char *key, struct etcd_kv *out) must_check;
/*
 * Every key under @prefix, read at one revision (@revision, or the current one
 * when 0), fetched in pages of @page_size keys (0 = 1000) transparently.
 */
int etcd_list(struct etcd *e, const char *prefix, int64_t revision, size_t page_size,
	      struct etcd_range *out) must_check;
/*
 * The list of etcd_list, from a loop, never blocking it: @page sees each page's keys
 * as it arrives (valid during the call; a negative return stops the list
 * with that error, ETCD_LIST_STOP ends it there), then @done runs once with
 * 0 and the header of the snapshot (the revision the pages were read at, the
 * cluster that answered) and its key count,
 * or a negative errno (etcd_last_error has the reason). Each page has the
 * client's timeout and fails over to the next endpoint like a blocking read;
 * a page from another cluster than the first fails the list (-EIO).
 * etcd_list_cancel stops it without further callbacks (also from inside
 * @page). A client serves one loop; it must outlive its lists.
 *
 * Lists of either kind are paged by bytes as well as keys: a page over the
 * body limit is asked again with fewer keys, and page sizes follow the
 * sizes seen (etcd_page_size_next), so a kind of any total size completes.
 */
struct etcd_list_end {
	struct etcd_header hdr; /* of the first page */
	int64_t count;		/* keys in the range at that revision (the first page's count) */
};
/* A @page return that ends the list early, successfully. */
#define ETCD_LIST_STOP 1
struct etcd_list_op;
int etcd_list_start(struct etcd *e, struct loop *l, const char *prefix, int64_t revision,
		    size_t page_size, int (*page)(void *ctx, const struct etcd_kv *kvs, size_t n),
		    void (*done)(void *ctx, int err, const struct etcd_list_end *end), void *ctx,
		    struct etcd_list_op **out) must_check;
void etcd_list_cancel(struct etcd_list_op *op);
/*
 * Lets go of the loop the client's lists ran in (its connections and timer
 * there), so the loop may be freed before the client. No list may be running.
 */
void etcd_loop_release(struct etcd *e);

/* Unconditional put; *rev (optional) gets the new store revision. */
int etcd_put(struct etcd *e, const char *key, const char *value, size_t len, int64_t lease,
	     int64_t *rev) must_check;
/* Deletes one key; *deleted (optional) says whether it existed. */
int etcd_delete(struct etcd *e, const char *key, bool *deleted, int64_t *rev) must_check;

enum etcd_cmp_target {
	ETCD_CMP_VERSION,
	ETCD_CMP_CREATE,
	ETCD_CMP_MOD,
	ETCD_CMP_VALUE
};
enum etcd_cmp_result {
	ETCD_CMP_EQUAL,
	ETCD_CMP_NOT_EQUAL,
	ETCD_CMP_LESS,
	ETCD_CMP_GREATER
};

struct etcd_cmp {
	const char *key;
	enum etcd_cmp_target target;
	enum etcd_cmp_result result;
	int64_t revision;  /* VERSION, CREATE, MOD */
	const char *value; /* VALUE */
	size_t value_len;
};

enum etcd_op_type {
	ETCD_OP_PUT,
	ETCD_OP_DELETE,
	ETCD_OP_GET
};

struct etcd_op {
	enum etcd_op_type type;
	const char *key;
	const char *value; /* PUT */
	size_t value_len;
	int64_t lease; /* PUT */
};

struct etcd_txn_result {
	bool succeeded;
	int64_t revision;
	/* One entry per op of the branch taken; GET ops fill kv (others leave it empty). */
	struct etcd_kv *kvs;
	bool *found;
	size_t n;
};

void etcd_txn_result_clear(struct etcd_txn_result *r);

/*
 * If every comparison holds, run @success, else @failure. A failed comparison
 * is not an error: it returns 0 with res->succeeded false.
 */
int etcd_txn(struct etcd *e, const struct etcd_cmp *cmps, size_t n_cmps,
	     const struct etcd_op *success, size_t n_success, const struct etcd_op *failure,
	     size_t n_failure, struct etcd_txn_result *res) must_check;

int etcd_lease_grant(struct etcd *e, int64_t ttl_s, int64_t *id, int64_t *granted_ttl) must_check;
/* One keep-alive round trip; *ttl_left is 0 when the lease has expired. */
int etcd_lease_keepalive(struct etcd *e, int64_t id, int64_t *ttl_left) must_check;
int etcd_lease_revoke(struct etcd *e, int64_t id) must_check;

/* Request compaction up to @revision (tests and operators). */
int etcd_compact(struct etcd *e, int64_t revision) must_check;

/*
 * Watches run inside a struct loop: each watch's connection is a non-blocking
 * socket in the loop's epoll, so a daemon stays single-threaded.
 */

enum etcd_watch_reset_reason {
	ETCD_WATCH_COMPACTED,	    /* the revision to resume from was compacted away */
	ETCD_WATCH_BEHIND,	    /* the store is below a revision already delivered */
	ETCD_WATCH_CLUSTER_CHANGED, /* another cluster answered (an ID other than the first) */
	ETCD_WATCH_TOO_LARGE,	    /* a message over the limit (etcd ignored "fragment") */
};

struct etcd_watch_reset {
	enum etcd_watch_reset_reason reason;
	int64_t revision;    /* COMPACTED: the compact revision; else the store's */
	uint64_t cluster_id; /* the cluster that answered (0: not said) */
	const char *why;     /* one line, for logs; valid during the call */
};

struct etcd_watch_ops {
	/*
	 * A batch of events, in order; @revision is the mod_revision of the
	 * last one (so the owner has seen everything up to it). @evs and the
	 * strings in it are valid during the call only. Never called with
	 * n == 0: progress notifications only move etcd_watch_next_revision.
	 */
	void (*events)(void *ctx, const struct etcd_event *evs, size_t n, int64_t revision);
	/*
	 * The watch cannot go on from where it is (see etcd_watch_reset). It has
	 * stopped (it still needs etcd_watch_stop); the owner re-lists and
	 * starts a new watch. May be NULL.
	 */
	void (*reset)(void *ctx, const struct etcd_watch_reset *r);
	/*
	 * Connection state changes (for health reporting): true once etcd
	 * confirms the watch, false (with @why) once when an attempt fails or
	 * the stream breaks, not again until the next true. May be NULL.
	 */
	void (*state)(void *ctx, bool connected, const char *why);
};

struct etcd_watch;

/*
 * Watch every key under @prefix from @start_revision (inclusive). After a
 * disconnect the watch reconnects (with backoff, failing over endpoints) and
 * resumes after the last revision it delivered, so no event is lost or
 * repeated. The watch keeps its own connection settings copied from @e; it
 * starts connecting here but calls no callback before the loop runs.
 * @start_revision 0 means "from now" (the revision etcd reports when the
 * watch is created). Backoff between attempts: 100 ms doubling to 5 s, reset
 * once a watch is created; each retry goes to the next endpoint. An attempt
 * that gets no answer within the client's timeout is abandoned. An endpoint
 * given by host name (not address) is resolved while the loop waits, for at
 * most the connect timeout. The loop must outlive the watch.
 *
 * @cluster_id is the cluster @start_revision belongs to (from the list's
 * header), or 0 to take the first that answers. A store that answers with
 * another cluster ID, or below a revision already delivered, ends the watch
 * with reset(); so does a message over the limit. Responses are asked for in
 * fragments, so a catch-up of any size gets through; whole revisions are
 * delivered. A dead connection is noticed by TCP keep-alive within ~10 s.
 */
int etcd_watch_start(struct etcd *e, struct loop *l, const char *prefix, int64_t start_revision,
		     uint64_t cluster_id, const struct etcd_watch_ops *ops, void *ctx,
		     struct etcd_watch **out) must_check;
/* Stops and frees. Accepts NULL. Safe inside the watch's own callbacks. */
void etcd_watch_stop(struct etcd_watch *w);
/* The next revision the watch will deliver from (0 while "from now" is not known yet). */
int64_t etcd_watch_next_revision(const struct etcd_watch *w);

#endif
