/*
 * etcd watches inside a struct loop. Each connection attempt is one libcurl
 * multi handle with one easy handle POSTing a create_request to /v3/watch;
 * libcurl's sockets and timeout are handed to the loop (CURLMOPT_SOCKETFUNCTION
 * -> loop_add_fd/loop_mod_fd/loop_del_fd, CURLMOPT_TIMERFUNCTION -> a
 * loop_timer) and driven with curl_multi_socket_action. Body bytes go through
 * a json_stream; each complete message is decoded by etcd_codec.
 *
 * Invariants:
 *  - next_rev is one past the last revision delivered (or confirmed by a
 *    progress notification); events below it are never delivered again, so a
 *    reconnect that resumes at next_rev loses and repeats nothing. etcd never
 *    splits one revision's events across messages, so whole revisions are
 *    delivered or dropped.
 *  - libcurl handles are only torn down outside libcurl's callbacks, and the
 *    watch itself only when no handler of ours is on the stack (depth == 0),
 *    so etcd_watch_stop is safe from any callback.
 *  - Every attempt ends the same way: attempt_end, then either nothing more
 *    (stopped, compacted) or state(false) once and a retry after a backoff on
 *    the next endpoint.
 */
#include "etcd_internal.h"

#include <brindle/json.h>
#include <brindle/loop.h>

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000

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
	int64_t next_rev; /* 0: "from now", until the first watch is created */

	/* The current attempt; multi == NULL between attempts. */
	CURLM *multi;
	CURL *easy;
	struct json_stream *js;
	bool created;
	int *fds; /* sockets registered with the loop */
	size_t n_fds, cap_fds;
	struct strbuf errbody; /* body of a non-200 answer */
	struct strbuf why;     /* why the attempt ended, when we know better than libcurl */
	char curl_err[CURL_ERROR_SIZE];

	struct curl_slist *headers;
	struct loop_timer *curl_timer;	/* libcurl's timeout */
	struct loop_timer *retry_timer; /* backoff before the next attempt */
	struct loop_timer *guard_timer; /* deadline for the "created" answer */
	uint64_t backoff_ms;
	enum reported reported;

	bool finished; /* compacted: no more attempts */
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

/* --- one message of the stream --- */

static int on_message(void *ctx, struct jv *v, struct arena *a)
{
	struct etcd_watch *w = ctx;
	if (!live(w))
		return -ECANCELED;
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
			w->finished = true;
			set_why(w, "start revision compacted at %" PRId64, m.compact_revision);
			if (w->ops.compacted)
				w->ops.compacted(w->ctx, m.compact_revision);
			return -ECANCELED;
		}
		set_why(w, "%s: watch canceled by etcd: %s", ep_name(w),
			*m.message ? m.message : "no reason given");
		return -EIO;
	case ETCD_WATCH_MSG_CREATED:
		w->created = true;
		loop_timer_disarm(w->guard_timer);
		w->backoff_ms = BACKOFF_MIN_MS;
		/* Started "from now": the store revision is where we are. */
		if (w->next_rev <= 0)
			w->next_rev = m.header_revision + 1;
		report_up(w);
		break;
	case ETCD_WATCH_MSG_PROGRESS:
		/* Sent only to caught-up watchers: nothing up to it is missing. */
		if (w->created && m.header_revision >= w->next_rev)
			w->next_rev = m.header_revision + 1;
		break;
	case ETCD_WATCH_MSG_EVENTS: {
		size_t first = etcd_events_first_new(m.events, m.n_events, w->next_rev);
		if (first == m.n_events)
			break;
		int64_t last = m.events[m.n_events - 1].kv.mod_revision;
		w->next_rev = last + 1;
		w->ops.events(w->ctx, m.events + first, m.n_events - first, last);
		break;
	}
	}
	return live(w) ? 0 : -ECANCELED;
}

static size_t on_body(char *p, size_t size, size_t nmemb, void *ctx)
{
	struct etcd_watch *w = ctx;
	size_t n = size * nmemb;
	if (!live(w))
		return 0; /* abort the transfer; torn down after socket_action */
	long status = 0;
	curl_easy_getinfo(w->easy, CURLINFO_RESPONSE_CODE, &status);
	if (status != 200) {
		if (w->errbody.len < 4096)
			sb_add(&w->errbody, p, n);
		return n;
	}
	struct strbuf err = STRBUF_INIT;
	int r = json_stream_feed(w->js, p, n, &err);
	if (r < 0)
		set_why(w, "%s: malformed watch stream: %s", ep_name(w), sb_str(&err));
	sb_free(&err);
	return r < 0 ? 0 : n;
}

/* --- libcurl <-> loop --- */

static bool fd_known(const struct etcd_watch *w, int fd)
{
	for (size_t i = 0; i < w->n_fds; i++)
		if (w->fds[i] == fd)
			return true;
	return false;
}

static bool fd_forget(struct etcd_watch *w, int fd)
{
	for (size_t i = 0; i < w->n_fds; i++) {
		if (w->fds[i] == fd) {
			w->fds[i] = w->fds[--w->n_fds];
			return true;
		}
	}
	return false;
}

static void process_done(struct etcd_watch *w);

static void fd_ready(struct loop *l, int fd, uint32_t events, void *ctx)
{
	struct etcd_watch *w = ctx;
	int flags = 0;
	if (events & (EPOLLIN | EPOLLHUP | EPOLLRDHUP))
		flags |= CURL_CSELECT_IN;
	if (events & EPOLLOUT)
		flags |= CURL_CSELECT_OUT;
	if (events & EPOLLERR)
		flags |= CURL_CSELECT_ERR;
	enter(w);
	if (w->multi) {
		int running;
		CURLMcode rc = curl_multi_socket_action(w->multi, fd, flags, &running);
		if (rc != CURLM_OK)
			set_why(w, "%s: %s", ep_name(w), curl_multi_strerror(rc));
		process_done(w);
	}
	leave(w);
}

static int on_socket(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp)
{
	struct etcd_watch *w = userp;
	if (what == CURL_POLL_REMOVE) {
		if (fd_forget(w, s))
			loop_del_fd(w->loop, s);
		return 0;
	}
	uint32_t ev = 0;
	if (what & CURL_POLL_IN)
		ev |= EPOLLIN;
	if (what & CURL_POLL_OUT)
		ev |= EPOLLOUT;
	if (fd_known(w, s))
		return loop_mod_fd(w->loop, s, ev) < 0 ? -1 : 0;
	if (loop_add_fd(w->loop, s, ev, fd_ready, w) < 0)
		return -1;
	GROW(w->fds, w->cap_fds, w->n_fds + 1);
	w->fds[w->n_fds++] = s;
	return 0;
}

static int on_curl_timer(CURLM *multi, long timeout_ms, void *userp)
{
	struct etcd_watch *w = userp;
	if (timeout_ms < 0)
		loop_timer_disarm(w->curl_timer);
	else
		loop_timer_arm(w->curl_timer, (uint64_t)timeout_ms, 0);
	return 0;
}

static void curl_timer_fired(struct loop *l, struct loop_timer *t, void *ctx)
{
	struct etcd_watch *w = ctx;
	enter(w);
	if (w->multi) {
		int running;
		CURLMcode rc = curl_multi_socket_action(w->multi, CURL_SOCKET_TIMEOUT, 0, &running);
		if (rc != CURLM_OK)
			set_why(w, "%s: %s", ep_name(w), curl_multi_strerror(rc));
		process_done(w);
	}
	leave(w);
}

/* --- attempts --- */

static void attempt_end(struct etcd_watch *w)
{
	if (w->multi) {
		if (w->easy)
			curl_multi_remove_handle(w->multi, w->easy);
		curl_multi_cleanup(w->multi);
	}
	if (w->easy)
		curl_easy_cleanup(w->easy);
	w->multi = NULL;
	w->easy = NULL;
	/* Whatever libcurl did not tell us to forget. */
	for (size_t i = 0; i < w->n_fds; i++)
		loop_del_fd(w->loop, w->fds[i]);
	w->n_fds = 0;
	if (w->curl_timer)
		loop_timer_disarm(w->curl_timer);
	if (w->guard_timer)
		loop_timer_disarm(w->guard_timer);
	json_stream_free(w->js);
	w->js = NULL;
	w->created = false;
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

/* The gateway's error text from a non-200 body, or the body itself. */
static void http_error(struct etcd_watch *w, long status)
{
	struct arena *a = arena_new();
	struct jv *v;
	struct strbuf msg = STRBUF_INIT;
	sb_init(&msg);
	if (json_parse(a, w->errbody.buf, w->errbody.len, &v, NULL) < 0 ||
	    etcd_decode_error(v, &msg) == -EPROTO) {
		sb_reset(&msg);
		sb_add(&msg, w->errbody.buf, MIN(w->errbody.len, 200));
	}
	set_why(w, "%s: HTTP %ld: %s", ep_name(w), status, sb_str(&msg));
	sb_free(&msg);
	arena_free(a);
}

static void process_done(struct etcd_watch *w)
{
	CURLMsg *m;
	int left;
	bool failed = !w->multi || w->why.len; /* a socket_action error */
	while (!failed && (m = curl_multi_info_read(w->multi, &left))) {
		if (m->msg != CURLMSG_DONE)
			continue;
		long status = 0;
		curl_easy_getinfo(w->easy, CURLINFO_RESPONSE_CODE, &status);
		if (m->data.result != CURLE_OK && m->data.result != CURLE_WRITE_ERROR)
			set_why(w, "%s: %s", ep_name(w),
				w->curl_err[0] ? w->curl_err : curl_easy_strerror(m->data.result));
		else if (status != 200 && status != 0)
			http_error(w, status);
		else
			set_why(w, "%s: watch stream ended", ep_name(w));
		failed = true;
	}
	if (failed && w->multi)
		attempt_failed(w);
}

static void guard_fired(struct loop *l, struct loop_timer *t, void *ctx)
{
	struct etcd_watch *w = ctx;
	enter(w);
	if (w->multi && !w->created) {
		set_why(w, "%s: no answer to the watch request within %ld ms", ep_name(w),
			w->conn.timeout_ms);
		attempt_failed(w);
	}
	leave(w);
}

static int attempt_start(struct etcd_watch *w)
{
	sb_reset(&w->why);
	sb_reset(&w->errbody);
	w->curl_err[0] = '\0';
	w->multi = curl_multi_init();
	w->easy = curl_easy_init();
	if (!w->multi || !w->easy) {
		set_why(w, "cannot create libcurl handles");
		return -ENOMEM;
	}
	curl_multi_setopt(w->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
	curl_multi_setopt(w->multi, CURLMOPT_SOCKETDATA, w);
	curl_multi_setopt(w->multi, CURLMOPT_TIMERFUNCTION, on_curl_timer);
	curl_multi_setopt(w->multi, CURLMOPT_TIMERDATA, w);

	struct strbuf req = STRBUF_INIT;
	sb_init(&req);
	sb_adds(&req, "{\"create_request\":{\"key\":");
	etcd_json_b64(&req, w->key, w->key_len);
	sb_adds(&req, ",\"range_end\":");
	etcd_json_b64(&req, w->end, w->end_len);
	if (w->next_rev > 0)
		sb_addf(&req, ",\"start_revision\":\"%" PRId64 "\"", w->next_rev);
	sb_adds(&req, ",\"progress_notify\":true}}");

	CURL *h = w->easy;
	etcd_curl_target(h, &w->conn, w->ep, "/v3/watch");
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, w->headers);
	curl_easy_setopt(h, CURLOPT_COPYPOSTFIELDS, req.buf);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, w);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, w->curl_err);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, w->conn.connect_timeout_ms);
	/* A watch is idle for long stretches; notice a vanished peer anyway. */
	curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPIDLE, 10L);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPINTVL, 5L);
	sb_free(&req);

	w->js = json_stream_new(on_message, w);
	loop_timer_arm(w->guard_timer, (uint64_t)w->conn.timeout_ms, 0);
	CURLMcode rc = curl_multi_add_handle(w->multi, h);
	if (rc != CURLM_OK) {
		set_why(w, "%s: %s", ep_name(w), curl_multi_strerror(rc));
		return -EIO;
	}
	return 0;
}

static void retry_fired(struct loop *l, struct loop_timer *t, void *ctx)
{
	struct etcd_watch *w = ctx;
	enter(w);
	if (live(w) && !w->multi && attempt_start(w) < 0)
		attempt_failed(w);
	leave(w);
}

/* --- public --- */

static void watch_free(struct etcd_watch *w)
{
	attempt_end(w);
	loop_timer_free(w->curl_timer);
	loop_timer_free(w->retry_timer);
	loop_timer_free(w->guard_timer);
	curl_slist_free_all(w->headers);
	etcd_conn_clear(&w->conn);
	free(w->key);
	free(w->end);
	free(w->fds);
	sb_free(&w->errbody);
	sb_free(&w->why);
	free(w);
	curl_global_cleanup();
}

int etcd_watch_start(struct etcd *e, struct loop *l, const char *prefix, int64_t start_revision,
		     const struct etcd_watch_ops *ops, void *ctx, struct etcd_watch **out)
{
	if (!e || !l || !prefix || !ops || !ops->events)
		return -EINVAL;
	curl_global_init(CURL_GLOBAL_DEFAULT);
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
	w->backoff_ms = BACKOFF_MIN_MS;
	sb_init(&w->errbody);
	sb_init(&w->why);
	w->headers = curl_slist_append(NULL, "Content-Type: application/json");
	w->headers = curl_slist_append(w->headers, "Expect:");
	w->curl_timer = loop_timer_new(l, curl_timer_fired, w);
	w->retry_timer = loop_timer_new(l, retry_fired, w);
	w->guard_timer = loop_timer_new(l, guard_fired, w);
	if (!w->curl_timer || !w->retry_timer || !w->guard_timer) {
		watch_free(w);
		return -ENOMEM;
	}
	int r = attempt_start(w);
	if (r < 0) {
		watch_free(w);
		return r;
	}
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
