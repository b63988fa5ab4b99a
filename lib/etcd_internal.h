/*
 * Shared by lib/etcd.c (unary calls) and lib/etcd_watch.c (watches): the
 * connection settings a client holds and a watch copies, and how a
 * connection to one endpoint is opened. Private to libbrindle.
 */
#ifndef BRINDLE_ETCD_INTERNAL_H
#define BRINDLE_ETCD_INTERNAL_H

#include <brindle/etcd.h>
#include <brindle/etcd_codec.h>
#include <brindle/http_client.h>

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
 * Starts a connection to endpoint @i (the name resolved by @deadline_ms).
 * *@tls is loaded from @c's files on the first TLS endpoint and kept there.
 * -ECONNREFUSED (a bad URL or TLS file, refused, unresolvable) or
 * -ETIMEDOUT, with the reason in @err.
 */
int etcd_conn_open(const struct etcd_conn *c, size_t i, struct http_tls **tls, uint64_t deadline_ms,
		   struct http_conn **out, struct strbuf *err) must_check;

/* Appends the base64 of @len bytes at @p as a JSON string. */
void etcd_json_b64(struct strbuf *sb, const void *p, size_t len);

#endif
