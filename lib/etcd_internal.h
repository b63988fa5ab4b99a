/*
 * Shared by lib/etcd.c (unary calls) and lib/etcd_watch.c (watches): the
 * connection settings a client holds and a watch copies, and how a curl
 * handle is pointed at one endpoint. Private to libbrindle; includes curl.
 */
#ifndef BRINDLE_ETCD_INTERNAL_H
#define BRINDLE_ETCD_INTERNAL_H

#include <brindle/etcd.h>
#include <brindle/etcd_codec.h>

#include <curl/curl.h>

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

/* Points @h at endpoint @i for a POST to @path: URL, unix socket, TLS files. */
void etcd_curl_target(CURL *h, const struct etcd_conn *c, size_t i, const char *path);

/* Appends the base64 of @len bytes at @p as a JSON string. */
void etcd_json_b64(struct strbuf *sb, const void *p, size_t len);

#endif
