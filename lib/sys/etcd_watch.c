/*
 * etcd watches inside a struct loop. Each connection attempt is one HTTP
 * call (lib/http.c, driven by the loop) POSTing a create_request to
 * /v3/watch and streaming the answer; a loop timer bounds the wait for the
 * "created" answer (curl bounds the connect). Body bytes go through a
 * json_stream; each complete message is decoded by etcd_codec.
 *
 * Invariants:
 *  - next_rev is one past the last revision delivered (or confirmed by a
 *    progress notification); events below it are never delivered again, so a
 *    reconnect that resumes at next_rev loses and repeats nothing.
 *  - Whole revisions only: the watch asks for fragmented responses (so a
 *    catch-up of any size arrives in messages of about etcd's request limit),
 *    and a fragment's last revision, which the next fragment may continue, is
 *    held back (copied) until the response's last fragment or a later
 *    revision arrives. A broken stream drops what was held; the resume
 *    starts at next_rev, before it.
 *  - The store must not go back: a stream whose header revision is below
 *    next_rev - 1 (a store rebuilt or restored), or whose cluster ID is not
 *    the one the watch began with, or a message over the limit (a server that
 *    does not fragment), ends the watch with reset(): its owner re-lists.
 *    Retrying could only repeat the failure or hide the loss.
 *  - The watch itself is only freed when no handler of ours is on the stack
 *    (depth == 0), so etcd_watch_stop is safe from any callback.
 *  - Every attempt ends the same way: attempt_end, then either nothing more
 *    (stopped, compacted) or state(false) once and a retry after a backoff on
 *    the next endpoint.
 *  - Nothing blocks the loop: names resolve, connections open and TLS
 *    handshakes run while the loop turns.
 */
#include "etcd_internal.h"

#include <brindle/core/json.h>
#include <brindle/sys/loop.h>

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000
/*
 * One message of the stream, roughly: bytes since the last one. With
 * fragments a message is about etcd's request limit (1.5 MiB by default,
 * base64 and JSON add a third); this bounds a server that ignores fragment.
 */
#define MAX_MESSAGE_BYTES (64u * 1024 * 1024)

enum reported {
	REPORTED_NONE,
	REPORTED_UP,
	REPORTED_DOWN
};

struct etcd_watch {
	struct loop *loop;
	struct etcd_conn conn;
	size_t ep; /* endpoint of the current or next attempt */
	char *key, *end;
	size_t key_len, end_len;
	struct etcd_watch_ops ops;
	void *ctx;
	int64_t next_rev;    /* 0: "from now", until the first watch is created */
	uint64_t cluster_id; /* the cluster the watch belongs to; 0 until known */

	/* Events of a revision a fragment may not have finished (see above). */
	struct arena *held_arena;
	struct etcd_event *held;
	size_t n_held;

	/* The current attempt; attempting is false between attempts. */
	bool attempting;
	struct http_agent *agent; /* the watch's own: it outlives nothing of the client's */
	struct http_call *call;	  /* NULL when the attempt failed to start */
	struct strbuf url, body;
	struct json_stream *js;
	size_t msg_bytes; /* fed since the last complete message */
	bool created;
	struct strbuf errbody; /* body of a non-200 answer */
	struct strbuf why;     /* why the attempt ended */

	struct loop_timer *retry_timer;	  /* backoff before the next attempt */
	struct loop_timer *guard_timer;	  /* deadline for the "created" answer */
	uint64_t backoff_ms;
	enum reported reported;

	bool finished; /* reset: no more attempts */
	bool stopping; /* etcd_watch_stop called while a handler was running */
	unsigned depth;
};

static void watch_free(struct etcd_watch *w);

static void enter(struct etcd_watch *w)
{
	w->depth++;
}

/* The last thing every entry point does; @w may be gone afterwards. */
static void leave(struct etcd_watch *w)
{
	if (--w->depth == 0 && w->stopping)
		watch_free(w);
}

static bool live(const struct etcd_watch *w)
{
	return !w->stopping && !w->finished;
}

static void report_up(struct etcd_watch *w)
{
	if (w->reported == REPORTED_UP)
		return;
	w->reported = REPORTED_UP;
	if (w->ops.state)
		w->ops.state(w->ctx, true, NULL);
}

static void report_down(struct etcd_watch *w, const char *why)
{
	if (w->reported == REPORTED_DOWN)
		return;
	w->reported = REPORTED_DOWN;
	if (w->ops.state)
		w->ops.state(w->ctx, false, why);
}

static void set_why(struct etcd_watch *w, const char *fmt, ...) printf_like(2, 3);
static void set_why(struct etcd_watch *w, const char *fmt, ...)
{
	if (w->why.len)
		return; /* keep the first reason */
	va_list ap;
	va_start(ap, fmt);
	sb_vaddf(&w->why, fmt, ap);
	va_end(ap);
}

static const char *ep_name(const struct etcd_watch *w)
{
	const struct etcd_endpoint *ep = &w->conn.eps[w->ep];
	return ep->unix_path ? ep->unix_path : ep->url;
}

/* Ends the watch for good: the owner must re-list (see the invariants). */
static void reset(struct etcd_watch *w, enum etcd_watch_reset_reason reason, int64_t revision,
		  uint64_t cluster_id)
{
	w->finished = true;
	struct etcd_watch_reset r = { .reason = reason,
				      .revision = revision,
				      .cluster_id = cluster_id,
				      .why = sb_str(&w->why) };
	if (w->ops.reset)
		w->ops.reset(w->ctx, &r);
}

static void drop_held(struct etcd_watch *w)
{
	arena_free(w->held_arena);
	w->held_arena = NULL;
	w->held = NULL;
	w->n_held = 0;
}

/*
 * Whether the stream still speaks for the store the watch has followed: the
 * same cluster, a revision no lower than what was delivered. Ends the watch
 * with reset() when not.
 */
static bool same_store(struct etcd_watch *w, const struct etcd_watch_msg *m)
{
	if (m->cluster_id && w->cluster_id && m->cluster_id != w->cluster_id) {
		set_why(w, "%s: cluster ID changed from %" PRIx64 " to %" PRIx64, ep_name(w),
			w->cluster_id, m->cluster_id);
		reset(w, ETCD_WATCH_CLUSTER_CHANGED, m->header_revision, m->cluster_id);
		return false;
	}
	if (m->cluster_id)
		w->cluster_id = m->cluster_id;
	if (w->next_rev > 0 && m->header_revision > 0 && m->header_revision < w->next_rev - 1) {
		set_why(w,
			"%s: the store is at revision %" PRId64 ", below revision %" PRId64
			" already seen (rebuilt or restored?)",
			ep_name(w), m->header_revision, w->next_rev - 1);
		reset(w, ETCD_WATCH_BEHIND, m->header_revision, m->cluster_id);
		return false;
	}
	return true;
}

static struct etcd_event *copy_events(struct arena *a, const struct etcd_event *evs, size_t n)
{
	struct etcd_event *out = arena_new_array(a, struct etcd_event, n ? n : 1);
	for (size_t i = 0; i < n; i++) {
		out[i] = evs[i];
		out[i].kv.key = arena_memdup(a, evs[i].kv.key, evs[i].kv.key_len + 1);
		out[i].kv.value = arena_memdup(a, evs[i].kv.value, evs[i].kv.value_len + 1);
	}
	return out;
}

/*
 * The events of one message (after the held ones): deliver the whole
 * revisions, hold the last one back while the response has more fragments.
 */
static void take_events(struct etcd_watch *w, struct arena *a, const struct etcd_watch_msg *m)
{
	size_t first = etcd_events_first_new(m->events, m->n_events, w->next_rev);
	const struct etcd_event *fresh = m->events + first;
	size_t n_fresh = m->n_events - first;
	if (n_fresh == 0 && !(w->n_held && !m->fragment))
		return;
	/* Held events first, then the new ones, in one array. */
	size_t n = w->n_held + n_fresh;
	struct etcd_event *evs = arena_new_array(a, struct etcd_event, n);
	if (w->n_held)
		memcpy(evs, w->held, w->n_held * sizeof(*evs));
	memcpy(evs + w->n_held, fresh, n_fresh * sizeof(*evs));
	size_t ready = n;
	if (m->fragment) {
		int64_t last = evs[n - 1].kv.mod_revision;
		while (ready > 0 && evs[ready - 1].kv.mod_revision == last)
			ready--;
	}
	/* Copy what stays held before the old held arena (which @evs may point into) goes. */
	struct arena *keep = NULL;
	struct etcd_event *held = NULL;
	if (ready < n) {
		keep = arena_new();
		held = copy_events(keep, evs + ready, n - ready);
	}
	struct arena *old = w->held_arena;
	w->held_arena = keep;
	w->held = held;
	w->n_held = n - ready;
	if (ready > 0) {
		int64_t last = evs[ready - 1].kv.mod_revision;
		w->next_rev = last + 1;
		w->ops.events(w->ctx, evs, ready, last);
	}
	arena_free(old);
}

/* --- one message of the stream --- */

static int on_message(void *ctx, struct jv *v, struct arena *a)
{
	struct etcd_watch *w = ctx;
	if (!live(w))
		return -ECANCELED;
	w->msg_bytes = 0;
	struct etcd_watch_msg m;
	struct strbuf err = STRBUF_INIT;
	int r = etcd_decode_watch_msg(a, v, &m, &err);
	if (r < 0) {
		set_why(w, "%s: malformed watch message: %s", ep_name(w), sb_str(&err));
		sb_free(&err);
		return r;
	}
	switch (m.kind) {
	case ETCD_WATCH_MSG_ERROR:
		set_why(w, "%s: %s", ep_name(w), m.message);
		return -EIO;
	case ETCD_WATCH_MSG_CANCELED:
		if (m.compact_revision > 0) {
			set_why(w, "%s: start revision %" PRId64 " compacted (at %" PRId64 ")",
				ep_name(w), w->next_rev, m.compact_revision);
			reset(w, ETCD_WATCH_COMPACTED, m.compact_revision, m.cluster_id);
			return -ECANCELED;
		}
		set_why(w, "%s: watch canceled by etcd: %s", ep_name(w),
			*m.message ? m.message : "no reason given");
		return -EIO;
	case ETCD_WATCH_MSG_CREATED:
		if (!same_store(w, &m))
			return -ECANCELED;
		w->created = true;
		loop_timer_disarm(w->guard_timer);
		w->backoff_ms = BACKOFF_MIN_MS;
		/* Started "from now": the store revision is where we are. */
		if (w->next_rev <= 0)
			w->next_rev = m.header_revision + 1;
		report_up(w);
		break;
	case ETCD_WATCH_MSG_PROGRESS:
		if (!same_store(w, &m))
			return -ECANCELED;
		/* Sent only to caught-up watchers: nothing up to it is missing. */
		if (w->created && !w->n_held && m.header_revision >= w->next_rev)
			w->next_rev = m.header_revision + 1;
		break;
	case ETCD_WATCH_MSG_EVENTS:
		if (m.cluster_id && w->cluster_id && m.cluster_id != w->cluster_id) {
			(void)same_store(w, &m);
			return -ECANCELED;
		}
		take_events(w, a, &m);
		break;
	}
	return live(w) ? 0 : -ECANCELED;
}

static int feed(struct etcd_watch *w, const char *p, size_t n)
{
	if (!live(w))
		return -ECANCELED;
	if (http_call_status(w->call) != 200) {
		if (w->errbody.len < 4096)
			sb_add(&w->errbody, p, MIN(n, 4096 - w->errbody.len));
		return 0;
	}
	w->msg_bytes += n;
	if (w->msg_bytes > MAX_MESSAGE_BYTES) {
		/* Only a server that ignores "fragment" sends this: re-listing gets past it. */
		set_why(w, "%s: a watch message larger than %u bytes (etcd without fragments?)",
			ep_name(w), MAX_MESSAGE_BYTES);
		reset(w, ETCD_WATCH_TOO_LARGE, w->next_rev, w->cluster_id);
		return -ECANCELED;
	}
	struct strbuf err = STRBUF_INIT;
	int r = json_stream_feed(w->js, p, n, &err);
	if (r < 0)
		set_why(w, "%s: malformed watch stream: %s", ep_name(w), sb_str(&err));
	sb_free(&err);
	if (r < 0)
		return r;
	return live(w) ? 0 : -ECANCELED;
}

/* Body bytes, from inside curl: a callback may stop the watch, freed on the way out. */
static int on_body(void *ctx, const char *p, size_t n)
{
	struct etcd_watch *w = ctx;
	enter(w);
	int r = feed(w, p, n);
	leave(w);
	return r;
}

/* --- attempts --- */

static void attempt_failed(struct etcd_watch *w);

/* The gateway's error text from a non-200 body, or the body itself. */
static void watch_http_error(struct etcd_watch *w, long status)
{
	struct arena *a = arena_new();
	struct jv *v;
	struct strbuf msg = STRBUF_INIT;
	sb_init(&msg);
	if (json_parse(a, w->errbody.buf ? w->errbody.buf : "", w->errbody.len, &v, NULL) < 0 ||
	    etcd_decode_error(v, &msg) == -EPROTO) {
		sb_reset(&msg);
		sb_add(&msg, w->errbody.buf ? w->errbody.buf : "", MIN(w->errbody.len, 200));
	}
	set_why(w, "%s: HTTP %ld: %s", ep_name(w), status, sb_str(&msg));
	sb_free(&msg);
	arena_free(a);
}

/* The stream ended: an error, a broken connection, or the server closing it. */
static void call_done(void *ctx, const struct http_result *res)
{
	struct etcd_watch *w = ctx;
	enter(w);
	w->call = NULL;
	if (w->attempting) {
		if (res->err && res->err != -ECANCELED && live(w))
			set_why(w, "%s: %s", ep_name(w), res->why);
		else if (res->status && res->status != 200)
			watch_http_error(w, res->status);
		else
			set_why(w, "%s: watch stream ended", ep_name(w));
		attempt_failed(w);
	}
	leave(w);
}

static void attempt_end(struct etcd_watch *w)
{
	http_call_cancel(w->call);
	w->call = NULL;
	if (w->guard_timer)
		loop_timer_disarm(w->guard_timer);
	json_stream_free(w->js);
	w->js = NULL;
	drop_held(w);
	w->created = false;
	w->attempting = false;
}

static void attempt_failed(struct etcd_watch *w)
{
	attempt_end(w);
	if (!live(w))
		return;
	report_down(w, sb_str(&w->why));
	if (!live(w))
		return;
	w->ep = (w->ep + 1) % w->conn.n_eps;
	loop_timer_arm(w->retry_timer, w->backoff_ms, 0);
	w->backoff_ms = MIN(w->backoff_ms * 2, BACKOFF_MAX_MS);
}

/* Also ends an attempt that could not start (its reason is set already). */
static void guard_fired(struct loop *l, struct loop_timer *t, void *ctx)
{
	struct etcd_watch *w = ctx;
	enter(w);
	if (w->attempting && !w->created) {
		set_why(w, "%s: no answer to the watch request within %ld ms", ep_name(w),
			w->conn.timeout_ms);
		attempt_failed(w);
	}
	leave(w);
}

/*
 * Starts the call. Calls no callback: a failure shows when the guard timer
 * fires (at once).
 */
static void attempt_start(struct etcd_watch *w)
{
	sb_reset(&w->why);
	sb_reset(&w->errbody);
	w->attempting = true;
	w->created = false;
	w->msg_bytes = 0;
	w->js = json_stream_new(on_message, w);

	sb_reset(&w->body);
	sb_adds(&w->body, "{\"create_request\":{\"key\":");
	etcd_json_b64(&w->body, w->key, w->key_len);
	sb_adds(&w->body, ",\"range_end\":");
	etcd_json_b64(&w->body, w->end, w->end_len);
	if (w->next_rev > 0)
		sb_addf(&w->body, ",\"start_revision\":\"%" PRId64 "\"", w->next_rev);
	sb_adds(&w->body, ",\"progress_notify\":true,\"fragment\":true}}");

	struct http_request hr;
	/* No overall timeout: a stream. The guard timer bounds the wait for "created". */
	etcd_request(&w->conn, w->ep, "/v3/watch", &w->body, w->conn.connect_timeout_ms, 0, &w->url,
		     &hr);
	hr.on_data = on_body; /* no body limit: bounded per message in on_body */
	hr.ctx = w;
	/*
	 * A watch is idle for long stretches; notice a vanished peer within
	 * seconds anyway: probes after 4 s idle, every 2 s, 3 unanswered (or
	 * 10 s of unacknowledged data) end the connection.
	 */
	hr.keepalive_idle_s = 4;
	hr.keepalive_interval_s = 2;
	hr.keepalive_count = 3;
	hr.user_timeout_ms = 10000;
	int r = http_call_start(w->agent, &hr, call_done, w, &w->call);
	if (r < 0) {
		w->call = NULL;
		set_why(w, "%s: cannot start the request: %s", ep_name(w), strerror(-r));
		loop_timer_arm(w->guard_timer, 0, 0);
	} else {
		loop_timer_arm(w->guard_timer, (uint64_t)w->conn.timeout_ms, 0);
	}
}

static void retry_fired(struct loop *l, struct loop_timer *t, void *ctx)
{
	struct etcd_watch *w = ctx;
	enter(w);
	if (live(w) && !w->attempting)
		attempt_start(w);
	leave(w);
}

/* --- public --- */

static void watch_free(struct etcd_watch *w)
{
	attempt_end(w);
	loop_timer_free(w->retry_timer);
	loop_timer_free(w->guard_timer);
	http_agent_free(w->agent);
	etcd_conn_clear(&w->conn);
	sb_free(&w->url);
	sb_free(&w->body);
	free(w->key);
	free(w->end);
	sb_free(&w->errbody);
	sb_free(&w->why);
	free(w);
}

int etcd_watch_start(struct etcd *e, struct loop *l, const char *prefix, int64_t start_revision,
		     uint64_t cluster_id, const struct etcd_watch_ops *ops, void *ctx,
		     struct etcd_watch **out)
{
	if (!e || !l || !prefix || !ops || !ops->events)
		return -EINVAL;
	struct etcd_watch *w = xcalloc(1, sizeof(*w));
	w->loop = l;
	etcd_conn_copy(&w->conn, etcd_client_conn(e));
	w->ep = etcd_client_good_endpoint(e) % w->conn.n_eps;
	struct arena *a = arena_new();
	char *key, *end;
	etcd_prefix_range(a, prefix, &key, &w->key_len, &end, &w->end_len);
	w->key = xmalloc(w->key_len + 1);
	memcpy(w->key, key, w->key_len + 1);
	w->end = xmalloc(w->end_len + 1);
	memcpy(w->end, end, w->end_len + 1);
	arena_free(a);
	w->ops = *ops;
	w->ctx = ctx;
	w->next_rev = start_revision > 0 ? start_revision : 0;
	w->cluster_id = cluster_id;
	w->backoff_ms = BACKOFF_MIN_MS;
	sb_init(&w->errbody);
	sb_init(&w->why);
	sb_init(&w->url);
	sb_init(&w->body);
	w->retry_timer = loop_timer_new(l, retry_fired, w);
	w->guard_timer = loop_timer_new(l, guard_fired, w);
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	int r = w->retry_timer && w->guard_timer ? etcd_agent_new(&w->conn, l, &w->agent, &err)
						 : -ENOMEM;
	if (r < 0) {
		/* A TLS file that cannot be used: the watch cannot start at all. */
		sb_free(&err);
		watch_free(w);
		return r == -ENOMEM ? r : -ECONNREFUSED;
	}
	sb_free(&err);
	attempt_start(w);
	*out = w;
	return 0;
}

void etcd_watch_stop(struct etcd_watch *w)
{
	if (!w)
		return;
	if (w->depth > 0) {
		w->stopping = true;
		return;
	}
	watch_free(w);
}

int64_t etcd_watch_next_revision(const struct etcd_watch *w)
{
	return w->next_rev;
}
