/*
 * Shared by lib/etcd.c (unary calls) and lib/etcd_watch.c (watches): the
 * connection settings a client holds and a watch copies, and how a
 * connection to one endpoint is opened. Private to libbrindle.
 */
#ifndef BRINDLE_ETCD_INTERNAL_H
#define BRINDLE_ETCD_INTERNAL_H

#include <brindle/sys/etcd.h>
#include <brindle/core/etcd_codec.h>
#include <brindle/sys/http.h>

/* Unary bodies: a list page of 1,000 keys with values of ~45 KB each. */
#define ETCD_MAX_BODY_BYTES (64u * 1024 * 1024)

struct etcd_conn {
	struct etcd_endpoint *eps;
	size_t n_eps;
	char *ca_file, *cert_file, *key_file; /* NULL when unset */
	long timeout_ms, connect_timeout_ms;
};

void etcd_conn_copy(struct etcd_conn *dst, const struct etcd_conn *src);
void etcd_conn_clear(struct etcd_conn *c);

/* The client's settings, and the endpoint that answered it last. */
const struct etcd_conn *etcd_client_conn(const struct etcd *e);
size_t etcd_client_good_endpoint(const struct etcd *e);

/*
 * An HTTP agent with @c's TLS settings (read only when an endpoint uses TLS),
 * driven by @l (NULL: blocking calls). -EINVAL with the reason in @err.
 */
int etcd_agent_new(const struct etcd_conn *c, struct loop *l, struct http_agent **out,
		   struct strbuf *err) must_check;
/* A POST of @body (JSON) to endpoint @i's @path; the URL is built in @url. */
void etcd_request(const struct etcd_conn *c, size_t i, const char *path, const struct strbuf *body,
		  long connect_timeout_ms, long timeout_ms, struct strbuf *url,
		  struct http_request *out);

/* Appends the base64 of @len bytes at @p as a JSON string. */
void etcd_json_b64(struct strbuf *sb, const void *p, size_t len);

#endif
