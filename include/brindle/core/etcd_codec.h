/*
 * The pure half of the etcd client: endpoint URLs, key ranges, and decoding
 * the JSON gateway's responses and watch-stream messages from jv trees. No
 * I/O; lib/sys/etcd.c and lib/sys/etcd_watch.c call it, and it is exported so unit
 * tests and fuzz targets can reach it.
 *
 * The gateway writes keys and values in base64 and int64 fields as JSON
 * strings ("revision":"3"); absent fields mean zero, false or empty. Decoders
 * take the strings apart into an arena the caller owns and return -EPROTO,
 * with a reason in @err, when a field has the wrong shape.
 */
#ifndef BRINDLE_ETCD_CODEC_H
#define BRINDLE_ETCD_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <brindle/core/arena.h>
#include <brindle/core/jv.h>
#include <brindle/core/strbuf.h>

/* A key and its value as etcd stores them (the client's and the decoders'). */
struct etcd_kv {
	char *key; /* NUL-terminated; key_len excludes the NUL */
	size_t key_len;
	char *value; /* NUL-terminated for convenience; may contain NULs (use value_len) */
	size_t value_len;
	int64_t create_revision;
	int64_t mod_revision;
	int64_t version;
	int64_t lease;
};

enum etcd_event_type {
	ETCD_EVENT_PUT,
	ETCD_EVENT_DELETE
};

struct etcd_event {
	enum etcd_event_type type;
	struct etcd_kv kv; /* for DELETE: key and mod_revision only */
};

/*
 * One endpoint: "http://host:port", "https://host:port", "unix:PATH",
 * "unix://PATH" or "unixs:PATH" (TLS over a unix socket). A trailing "/" is
 * dropped. @url is the base URL requests go to ("http://localhost" for unix
 * sockets, whose path is in @unix_path).
 */
struct etcd_endpoint {
	char *url;
	char *unix_path; /* NULL for TCP */
};

int etcd_endpoint_parse(const char *s, struct etcd_endpoint *out, struct strbuf *err) must_check;
void etcd_endpoint_clear(struct etcd_endpoint *ep);

/*
 * The [key, range_end) pair that covers every key starting with @prefix, as
 * etcd's clients compute it: range_end is the prefix with its last byte below
 * 0xff incremented. An empty prefix (or one of only 0xff bytes) gives key
 * "\0" or the prefix and range_end "\0", which etcd reads as "no upper bound".
 * Both are allocated from @a; lengths in *key_len and *end_len.
 */
void etcd_prefix_range(struct arena *a, const char *prefix, char **key, size_t *key_len, char **end,
		       size_t *end_len);

/* An int64 field: JSON string or number; absent (NULL) reads as 0. */
int etcd_decode_int64(const struct jv *v, int64_t *out) must_check;
/* header.revision of a response object (0 when absent). */
int etcd_decode_header_revision(const struct jv *resp, int64_t *rev) must_check;

/* What every response's header says of the store: its revision and which cluster answered. */
struct etcd_header {
	int64_t revision;
	uint64_t cluster_id; /* 0 when absent */
};
int etcd_decode_header(const struct jv *resp, struct etcd_header *out) must_check;

/*
 * A gateway error body {"error":..,"message":..,"code":N}. Returns the errno
 * the client reports for it (always negative): -ESTALE for a compacted
 * revision, -ERANGE for a future one, -ENOENT for gRPC NotFound (an unknown lease), -EIO otherwise;
 * the message goes to @msg. @v that is not an error object gives -EPROTO.
 */
int etcd_decode_error(const struct jv *v, struct strbuf *msg) must_check;

/* A RangeResponse (also the response_range of a txn). */
struct etcd_range_page {
	struct etcd_kv *kvs; /* from the arena */
	size_t n;
	bool more;
	int64_t count;
	int64_t revision;
	uint64_t cluster_id;
};

int etcd_decode_range(struct arena *a, const struct jv *v, struct etcd_range_page *out,
		      struct strbuf *err) must_check;

/* A DeleteRangeResponse. */
int etcd_decode_delete(const struct jv *v, int64_t *deleted, int64_t *revision,
		       struct strbuf *err) must_check;

/*
 * A TxnResponse, one entry per response. GET ops (response_range) fill kvs[i]
 * and found[i] with the first key of the range; the other entries stay empty.
 */
struct etcd_txn_decoded {
	bool succeeded;
	int64_t revision;
	struct etcd_kv *kvs; /* from the arena */
	bool *found;
	size_t n;
};

int etcd_decode_txn(struct arena *a, const struct jv *v, struct etcd_txn_decoded *out,
		    struct strbuf *err) must_check;

/* LeaseGrantResponse: {"ID","TTL","error"}; a non-empty "error" gives -EIO. */
int etcd_decode_lease_grant(const struct jv *v, int64_t *id, int64_t *ttl,
			    struct strbuf *err) must_check;
/* One LeaseKeepAliveResponse, bare or wrapped as {"result":..} by the stream gateway. */
int etcd_decode_lease_keepalive(const struct jv *v, int64_t *id, int64_t *ttl,
				struct strbuf *err) must_check;

/*
 * List pages are bounded by keys (etcd's limit) and, since etcd cannot bound
 * them by bytes, by learning: after a page of @keys keys and @bytes bytes
 * the next asks for as many keys as fit ETCD_PAGE_TARGET_BYTES (at least 1,
 * at most @max). A page refused as too large is asked again with a sixteenth
 * of the keys (etcd_page_size_shrink; 0 once a single key was too large).
 */
#define ETCD_PAGE_TARGET_BYTES (8u * 1024 * 1024)
size_t etcd_page_size_next(size_t max, size_t keys, size_t bytes);
size_t etcd_page_size_shrink(size_t cur);

/* What one message of a /v3/watch stream says. */
enum etcd_watch_msg_kind {
	ETCD_WATCH_MSG_CREATED,	 /* the watch exists; header.revision is the store's */
	ETCD_WATCH_MSG_EVENTS,	 /* one or more events, in revision order */
	ETCD_WATCH_MSG_PROGRESS, /* no events: everything up to header.revision was sent */
	ETCD_WATCH_MSG_CANCELED, /* compact_revision > 0 when the start was compacted */
	ETCD_WATCH_MSG_ERROR,	 /* a gateway error object; text in @message */
};

struct etcd_watch_msg {
	enum etcd_watch_msg_kind kind;
	int64_t header_revision;
	uint64_t cluster_id;
	bool fragment; /* more of this response follows (fragmented watch responses) */
	int64_t compact_revision;
	struct etcd_event *events; /* from the arena */
	size_t n_events;
	const char *message; /* ERROR: the error text; CANCELED: cancel_reason, may be "" */
	int error;	     /* ERROR: what etcd_decode_error maps the error to */
};

int etcd_decode_watch_msg(struct arena *a, const struct jv *v, struct etcd_watch_msg *out,
			  struct strbuf *err) must_check;

/*
 * The index of the first of @evs (sorted by mod_revision, as etcd sends
 * them) at or after @next_revision: a resumed watch drops the ones before it,
 * which it has delivered already. Returns @n when none is left.
 */
size_t etcd_events_first_new(const struct etcd_event *evs, size_t n, int64_t next_revision);

#endif
