/*
 * A client of the Kubernetes API server over the HTTP agent (libcurl):
 * blocking requests and paginated lists for tools, the CNI plugin and
 * datastore writes; watches driven by a daemon's loop. Answers are JSON
 * read into jv trees; failures are the errno values of kube_codec.h with the
 * reason in kube_last_error() (or the watch's @why).
 *
 * Over TLS the agent negotiates HTTP/2, so a daemon's watches and requests
 * share one connection to the server.
 */
#ifndef BRINDLE_KUBE_CLIENT_H
#define BRINDLE_KUBE_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <brindle/core/jv.h>
#include <brindle/core/kube_codec.h>
#include <brindle/core/strbuf.h>
#include <brindle/sys/http.h>

struct loop;
struct kube_client;

/*
 * @server: "https://host:port" (a trailing "/" is dropped). @auth may be NULL.
 * @l: the loop that drives watches, or NULL for a client of blocking calls
 * only. @timeout_ms bounds each blocking request (0: 10 s).
 */
int kube_client_new(struct loop *l, const char *server, const struct http_auth *auth,
		    long timeout_ms, struct kube_client **out, struct strbuf *err) must_check;
void kube_client_free(struct kube_client *c);
const char *kube_last_error(const struct kube_client *c);

/*
 * One blocking request. @path starts with "/" and may carry a query. @body
 * may be NULL; @content_type defaults to application/json. On a 2xx answer
 * *out (may be NULL) is its JSON, valid until the client's next call.
 * Returns 0 or a negative errno; transport failures are those of http.h
 * (-ECONNREFUSED, -ETIMEDOUT, -ECONNRESET, ...).
 */
int kube_request(struct kube_client *c, const char *method, const char *path,
		 const char *content_type, const struct strbuf *body, struct jv **out) must_check;

/*
 * Several blocking requests at once, multiplexed on one HTTP/2 connection:
 * each gets err (0 or as kube_request's), out (the JSON answer of a 2xx) and
 * error (why it failed), valid until the client's next call. Returns 0, or
 * the first error (also kube_last_error's).
 */
struct kube_req {
	const char *method;
	const char *path;
	const char *content_type;
	const struct strbuf *body;
	int err;
	struct jv *out;
	const char *error;
};
int kube_request_many(struct kube_client *c, struct kube_req *reqs, size_t n);

/*
 * Every object of a collection, @limit per page (0: 500), following
 * metadata.continue. @item sees each object (valid during the call; a
 * negative return stops the list with it). The list's resourceVersion (the
 * snapshot the pages were read at, to start a watch from) goes to @rv. A
 * continue token that expired (410) starts the list again from the first
 * page, after telling @restart (may be NULL) so the caller can drop what it
 * has collected.
 */
int kube_list(struct kube_client *c, const char *path, size_t limit,
	      int (*item)(void *ctx, const struct jv *obj), void (*restart)(void *ctx), void *ctx,
	      struct strbuf *rv) must_check;

/*
 * The list of kube_list, from the client's loop, never blocking it: @item
 * sees each object as its page arrives (a negative return stops the list
 * with that error), @restart (may be NULL) a continue token that expired
 * (the list starts again from the first page), then @done runs once with 0
 * and the list's resourceVersion, or a negative errno and the reason.
 * kube_list_cancel stops it without further callbacks (also from inside
 * @item).
 */
struct kube_list_op;
int kube_list_start(struct kube_client *c, const char *path, size_t limit,
		    int (*item)(void *ctx, const struct jv *obj), void (*restart)(void *ctx),
		    void (*done)(void *ctx, int err, const char *rv, const char *why), void *ctx,
		    struct kube_list_op **out) must_check;
void kube_list_cancel(struct kube_list_op *op);

/*
 * A watch of a collection from @rv (with bookmarks), driven by the client's
 * loop. @event sees each event in order (valid during the call). @ended runs
 * once when the stream ends: @err 0 when the server closed it (its timeout:
 * start a new one from the last resourceVersion seen), -ESTALE when @rv is
 * too old (410: list again), another negative errno with @why otherwise. The
 * watch must still be stopped with kube_watch_stop (also allowed inside the
 * callbacks).
 */
struct kube_watch;
struct kube_watch_ops {
	void (*event)(void *ctx, const struct kube_event *e);
	void (*ended)(void *ctx, int err, const char *why);
};
int kube_watch_start(struct kube_client *c, const char *path, const char *rv, long timeout_s,
		     const struct kube_watch_ops *ops, void *ctx,
		     struct kube_watch **out) must_check;
void kube_watch_stop(struct kube_watch *w);
/* The server has answered the watch (200 and its headers): it is up, even while quiet. */
bool kube_watch_established(const struct kube_watch *w);

#endif
