/*
 * HTTP on libcurl (see http.h): the one file that includes curl.h.
 *
 * An agent is a curl multi handle. With a loop, curl tells us which sockets
 * to watch (socket callback → loop_add_fd/mod/del) and when it next needs
 * the clock (timer callback → one loop timer); readiness and the timer hand
 * control back with curl_multi_socket_action, and finished transfers are
 * collected right after, outside curl, where their callbacks may start or
 * cancel other calls. Without a loop, http_agent_perform drives the same
 * multi handle with curl_multi_poll until its one call ends: the connection
 * cache is the agent's either way, so a tool's calls reuse one connection.
 */
#include <brindle/sys/http.h>
#include <brindle/sys/loop.h>
#include <brindle/sys/strbuf_file.h>

#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>

#define DEFAULT_CONNECT_TIMEOUT_MS 1000
#define DEFAULT_MAX_BODY	   (64u * 1024 * 1024)
#define MAX_HEADER_BYTES	   (32u * 1024)

struct http_call {
	struct http_agent *a;
	CURL *easy;
	CURLM *multi; /* the multi handle it was added to, NULL before */
	struct curl_slist *headers;
	struct curl_slist *connect_to; /* tls_server_name: where the URL's name really is */
	http_data_fn on_data;
	void *ctx;
	http_done_fn done;
	void *done_ctx;
	size_t max_body;
	size_t header_bytes;
	int cb_err;	   /* why our write callback stopped the transfer */
	char own_why[128]; /* and what it said (curl's error buffer says "Failed writing") */
	bool cancelled, finished;
	bool in_done;		  /* its done callback runs: collect frees it afterwards */
	int keepalive_count;	  /* set on its sockets (on_sockopt) */
	unsigned user_timeout_ms; /* likewise */
	struct http_result res;
	struct http_call *prev, *next;
};

/*
 * One multi handle of a loop agent, with its connection pool. A loop agent has
 * two: streams and short requests share HTTP/2 connections in the first; bulk
 * lists (own_connection) keep their HTTP/1.1 connections in the second. In one
 * pool libcurl 7.88 lets a request that could multiplex take an idle
 * HTTP/1.1 connection, and marks the host as one that cannot multiplex once
 * such a connection is made: then every watch had a connection of its own.
 */
struct agent_multi {
	struct http_agent *a;
	CURLM *m;
	struct loop_timer *timer;
};

struct http_agent {
	CURLM *multi; /* pool[0].m */
	struct agent_multi pool[2];
	struct loop *l;
	char *ca_file, *cert_file, *key_file, *token, *token_file;
	char *ca_pem, *cert_pem, *key_pem; /* in-memory PEM, NUL-terminated */
	size_t ca_pem_len, cert_pem_len, key_pem_len;
	bool insecure;
	char *tls_server_name;
	char *file_token; /* the token file's content, and what it was read from */
	struct timespec token_mtime;
	ino_t token_ino;
	off_t token_size;
	struct http_call *calls;
	int in_action; /* inside curl: removing a handle must wait */
	bool cancels_pending;
	int busy;	   /* in action(): freeing the agent must wait */
	bool free_pending; /* http_agent_free was called meanwhile */
};

static char *dup_or_null(const char *s)
{
	return s && *s ? xstrdup(s) : NULL;
}

static char *pem_dup(const char *p, size_t len, size_t *out_len)
{
	*out_len = 0;
	if (!p || !len)
		return NULL;
	char *copy = xmalloc(len + 1);
	memcpy(copy, p, len);
	copy[len] = '\0';
	*out_len = len;
	return copy;
}

/* --- calls ------------------------------------------------------------------------------ */

static void call_unlink(struct http_call *c)
{
	struct http_agent *a = c->a;
	if (c->prev)
		c->prev->next = c->next;
	else if (a->calls == c)
		a->calls = c->next;
	if (c->next)
		c->next->prev = c->prev;
	c->prev = c->next = NULL;
}

static void call_free(struct http_call *c)
{
	if (!c)
		return;
	if (c->easy) {
		if (c->multi)
			curl_multi_remove_handle(c->multi, c->easy);
		curl_easy_cleanup(c->easy);
	}
	curl_slist_free_all(c->headers);
	curl_slist_free_all(c->connect_to);
	sb_free(&c->res.body);
	free(c);
}

static size_t on_write(char *p, size_t size, size_t n, void *ctx)
{
	struct http_call *c = ctx;
	size_t len = size * n;
	if (c->cancelled)
		return 0;
	if (c->on_data) {
		int r = c->on_data(c->ctx, p, len);
		if (r < 0 || c->cancelled) {
			c->cb_err = r < 0 ? r : -ECANCELED;
			return 0; /* stops the transfer: CURLE_WRITE_ERROR */
		}
		return len;
	}
	if (c->res.body.len + len > c->max_body) {
		c->cb_err = -EMSGSIZE;
		snprintf(c->own_why, sizeof(c->own_why), "body too large (over %zu bytes)",
			 c->max_body);
		return 0;
	}
	sb_add(&c->res.body, p, len);
	return len;
}

static size_t on_header(char *p, size_t size, size_t n, void *ctx)
{
	struct http_call *c = ctx;
	size_t len = size * n;
	c->header_bytes += len;
	if (c->header_bytes > MAX_HEADER_BYTES) {
		c->cb_err = -EMSGSIZE;
		snprintf(c->own_why, sizeof(c->own_why), "header too large (over %u bytes)",
			 MAX_HEADER_BYTES);
		return 0;
	}
	/* A new response (after a 100 Continue or a redirect we do not follow) starts over. */
	if (len >= 5 && strncmp(p, "HTTP/", 5) == 0)
		c->header_bytes = len;
	return len;
}

/* The bearer token: given, or the file's, read again when the file changed (rotation). */
static const char *current_token(struct http_agent *a)
{
	if (a->token)
		return a->token;
	if (!a->token_file)
		return NULL;
	struct stat st;
	if (stat(a->token_file, &st) < 0)
		return a->file_token; /* keep the last one we had */
	if (a->file_token && st.st_ino == a->token_ino && st.st_size == a->token_size &&
	    st.st_mtim.tv_sec == a->token_mtime.tv_sec &&
	    st.st_mtim.tv_nsec == a->token_mtime.tv_nsec)
		return a->file_token;
	struct strbuf sb = STRBUF_INIT;
	sb_init(&sb);
	if (st.st_size <= 64 * 1024 && sb_read_file(&sb, a->token_file) == 0) {
		while (sb.len && (sb.buf[sb.len - 1] == '\n' || sb.buf[sb.len - 1] == '\r' ||
				  sb.buf[sb.len - 1] == ' '))
			sb.buf[--sb.len] = '\0';
		free(a->file_token);
		a->file_token = sb_detach(&sb);
		a->token_ino = st.st_ino;
		a->token_size = st.st_size;
		a->token_mtime = st.st_mtim;
	}
	sb_free(&sb);
	return a->file_token;
}

/* A new connection's socket: the keep-alive count and user timeout of its call. */
static int on_sockopt(void *ctx, curl_socket_t fd, curlsocktype purpose)
{
	const struct http_call *c = ctx;
	if (purpose != CURLSOCKTYPE_IPCXN)
		return CURL_SOCKOPT_OK;
	/* Fails harmlessly on a unix socket, which has no TCP options. */
	if (c->keepalive_count > 0)
		(void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &c->keepalive_count,
				 sizeof(c->keepalive_count));
	if (c->user_timeout_ms > 0)
		(void)setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &c->user_timeout_ms,
				 sizeof(c->user_timeout_ms));
	return CURL_SOCKOPT_OK;
}

static void set_blob(CURL *e, CURLoption opt, char *pem, size_t len)
{
	struct curl_blob b = { .data = pem, .len = len, .flags = CURL_BLOB_NOCOPY };
	curl_easy_setopt(e, opt, &b); /* curl copies the struct; the agent outlives its calls */
}

/*
 * Verify the server as tls_server_name: the URL names it (SNI, certificate
 * check, Host) and CONNECT_TO sends the connection to the URL's real host.
 */
static void set_server_name(struct http_agent *a, struct http_call *c, const char *url)
{
	CURLU *u = curl_url();
	char *host = NULL, *port = NULL, *renamed = NULL;
	if (u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK &&
	    curl_url_set(u, CURLUPART_HOST, a->tls_server_name, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_URL, &renamed, 0) == CURLUE_OK) {
		struct strbuf line = STRBUF_INIT;
		sb_init(&line);
		sb_addf(&line, "%s:%s:%s:%s", a->tls_server_name, port, host, port);
		c->connect_to = curl_slist_append(NULL, line.buf);
		sb_free(&line);
		curl_easy_setopt(c->easy, CURLOPT_URL, renamed);
		curl_easy_setopt(c->easy, CURLOPT_CONNECT_TO, c->connect_to);
	}
	curl_free(host);
	curl_free(port);
	curl_free(renamed);
	curl_url_cleanup(u);
}

static void set_tls(struct http_agent *a, struct http_call *c, const struct http_request *req)
{
	CURL *e = c->easy;
	if (a->ca_file || a->ca_pem) {
		/* The CA given is the only one trusted, not the system's as well. */
		curl_easy_setopt(e, CURLOPT_CAPATH, NULL);
		curl_easy_setopt(e, CURLOPT_CAINFO, a->ca_pem ? NULL : a->ca_file);
		if (a->ca_pem)
			set_blob(e, CURLOPT_CAINFO_BLOB, a->ca_pem, a->ca_pem_len);
	}
	if (a->cert_pem) {
		set_blob(e, CURLOPT_SSLCERT_BLOB, a->cert_pem, a->cert_pem_len);
		set_blob(e, CURLOPT_SSLKEY_BLOB, a->key_pem, a->key_pem_len);
	} else if (a->cert_file) {
		curl_easy_setopt(e, CURLOPT_SSLCERT, a->cert_file);
		curl_easy_setopt(e, CURLOPT_SSLKEY, a->key_file ? a->key_file : a->cert_file);
	}
	if (a->insecure) {
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	if (a->tls_server_name && !req->unix_socket)
		set_server_name(a, c, req->url);
}

static struct http_call *call_new(struct http_agent *a, const struct http_request *req)
{
	struct http_call *c = xcalloc(1, sizeof(*c));
	c->a = a;
	sb_init(&c->res.body);
	c->on_data = req->on_data;
	c->ctx = req->ctx;
	c->max_body = req->max_body ? req->max_body : DEFAULT_MAX_BODY;
	c->easy = curl_easy_init();
	if (!c->easy) {
		free(c);
		return NULL;
	}
	CURL *e = c->easy;
	curl_easy_setopt(e, CURLOPT_PRIVATE, c);
	curl_easy_setopt(e, CURLOPT_URL, req->url);
	if (req->unix_socket)
		curl_easy_setopt(e, CURLOPT_UNIX_SOCKET_PATH, req->unix_socket);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_PROXY, ""); /* direct, whatever *_proxy says */
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, c->res.why);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, c);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, c);
	if (!req->on_data) /* refuse a too-large Content-Length before reading any of it */
		curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)c->max_body);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
			 req->connect_timeout_ms ? req->connect_timeout_ms
						 : (long)DEFAULT_CONNECT_TIMEOUT_MS);
	if (req->timeout_ms)
		curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, req->timeout_ms);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPIDLE,
			 req->keepalive_idle_s ? req->keepalive_idle_s : 30L);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPINTVL,
			 req->keepalive_interval_s ? req->keepalive_interval_s : 10L);
	if (req->keepalive_count || req->user_timeout_ms) {
		/* curl before 8.9 has no option for the probe count; set both on the socket. */
		c->keepalive_count = (int)req->keepalive_count;
		c->user_timeout_ms = (unsigned)req->user_timeout_ms;
		curl_easy_setopt(e, CURLOPT_SOCKOPTFUNCTION, on_sockopt);
		curl_easy_setopt(e, CURLOPT_SOCKOPTDATA, c);
	}
	/* HTTP/2 over TLS when offered (many watches, one connection); 1.1 in the clear. */
	if (req->own_connection) {
		curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	} else {
		curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
		curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);
	}
	set_tls(a, c, req);
	const char *method = req->method ? req->method : "GET";
	if (req->body) {
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
		curl_easy_setopt(e, CURLOPT_COPYPOSTFIELDS, req->body);
	}
	if (strcmp(method, req->body ? "POST" : "GET") != 0)
		curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
	char line[512];
	c->headers = curl_slist_append(c->headers, "Expect:");
	if (req->content_type) {
		snprintf(line, sizeof(line), "Content-Type: %s", req->content_type);
		c->headers = curl_slist_append(c->headers, line);
	}
	if (req->accept) {
		snprintf(line, sizeof(line), "Accept: %s", req->accept);
		c->headers = curl_slist_append(c->headers, line);
	}
	const char *token = current_token(a);
	if (token) {
		struct strbuf h = STRBUF_INIT;
		sb_init(&h);
		sb_addf(&h, "Authorization: Bearer %s", token);
		c->headers = curl_slist_append(c->headers, h.buf);
		sb_free(&h);
	}
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, c->headers);
	return c;
}

static int map_error(CURLcode rc, struct http_call *c)
{
	long req_size = 0;
	curl_easy_getinfo(c->easy, CURLINFO_REQUEST_SIZE, &req_size);
	/* The answer was not HTTP at all (curl calls it HTTP/0.9 and refuses it). */
	if (rc == CURLE_UNSUPPORTED_PROTOCOL && req_size > 0)
		rc = CURLE_WEIRD_SERVER_REPLY;
	switch (rc) {
	case CURLE_OK:
		return 0;
	case CURLE_WRITE_ERROR:
		return c->cb_err ? c->cb_err : -ECONNRESET;
	case CURLE_OPERATION_TIMEDOUT:
		return -ETIMEDOUT;
	case CURLE_UNSUPPORTED_PROTOCOL:
	case CURLE_URL_MALFORMAT:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
	case CURLE_COULDNT_CONNECT:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_ENGINE_NOTFOUND:
	case CURLE_SSL_ENGINE_SETFAILED:
	case CURLE_SSL_ISSUER_ERROR:
		return -ECONNREFUSED;
	case CURLE_FILESIZE_EXCEEDED:
		snprintf(c->res.why, sizeof(c->res.why), "body too large (over %zu bytes)",
			 c->max_body);
		return -EMSGSIZE;
	case CURLE_WEIRD_SERVER_REPLY:
	case CURLE_BAD_CONTENT_ENCODING:
	case CURLE_HTTP2:
		if (!strstr(c->res.why, "malformed HTTP")) {
			char curl_why[sizeof(c->res.why)];
			snprintf(curl_why, sizeof(curl_why), "%s",
				 c->res.why[0] ? c->res.why : curl_easy_strerror(rc));
			snprintf(c->res.why, sizeof(c->res.why), "malformed HTTP answer: %.200s",
				 curl_why);
		}
		return -EPROTO;
	default:
		return -ECONNRESET;
	}
}

static void call_finish(struct http_call *c, CURLcode rc)
{
	struct http_result *r = &c->res;
	curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &r->status);
	long req_size = 0;
	curl_easy_getinfo(c->easy, CURLINFO_REQUEST_SIZE, &req_size);
	r->err = map_error(rc, c);
	if (rc == CURLE_WRITE_ERROR && c->own_why[0])
		snprintf(r->why, sizeof(r->why), "%s", c->own_why);
	/* A request that never left is safe to try elsewhere; once bytes went out it may not be. */
	r->sent = req_size > 0 && r->err != -ECONNREFUSED;
	if (rc != CURLE_OK && !r->why[0])
		snprintf(r->why, sizeof(r->why), "%s", curl_easy_strerror(rc));
	if (r->err == 0)
		r->why[0] = '\0';
	c->finished = true;
}

/* --- the agent in a loop ---------------------------------------------------------------- */

static void collect(struct agent_multi *am)
{
	struct http_agent *a = am->a;
	CURLMsg *m;
	int left;
	while ((m = curl_multi_info_read(am->m, &left))) {
		if (m->msg != CURLMSG_DONE)
			continue;
		struct http_call *c = NULL;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&c);
		CURLcode rc = m->data.result; /* m is invalid after the handle is removed */
		curl_multi_remove_handle(am->m, c->easy);
		c->multi = NULL;
		call_unlink(c);
		if (!c->cancelled) {
			call_finish(c, rc);
			c->in_done = true;
			if (c->done)
				c->done(c->done_ctx, &c->res);
		}
		call_free(c);
		if (a->free_pending)
			return; /* a callback freed the agent: the rest goes with it */
	}
	if (a->cancels_pending) {
		a->cancels_pending = false;
		for (struct http_call *c = a->calls, *next; c; c = next) {
			next = c->next;
			if (c->cancelled) {
				call_unlink(c);
				call_free(c);
			}
		}
	}
}

static void agent_destroy(struct http_agent *a);

static void action(struct agent_multi *am, curl_socket_t s, int flags)
{
	struct http_agent *a = am->a;
	int running;
	a->busy++;
	a->in_action++;
	curl_multi_socket_action(am->m, s, flags, &running);
	a->in_action--;
	if (!a->free_pending)
		collect(am);
	if (--a->busy == 0 && a->free_pending)
		agent_destroy(a);
}

static void on_fd(struct loop *l, int fd, uint32_t events, void *ctx)
{
	int flags = 0;
	if (events & EPOLLIN)
		flags |= CURL_CSELECT_IN;
	if (events & EPOLLOUT)
		flags |= CURL_CSELECT_OUT;
	if (events & (EPOLLERR | EPOLLHUP))
		flags |= CURL_CSELECT_ERR;
	action(ctx, fd, flags);
}

static void on_timer(struct loop *l, struct loop_timer *t, void *ctx)
{
	action(ctx, CURL_SOCKET_TIMEOUT, 0);
}

static int socket_cb(CURL *e, curl_socket_t s, int what, void *userp, void *socketp)
{
	struct agent_multi *am = userp;
	struct http_agent *a = am->a;
	if (what == CURL_POLL_REMOVE) {
		if (socketp)
			loop_del_fd(a->l, s);
		curl_multi_assign(am->m, s, NULL);
		return 0;
	}
	uint32_t events =
		(what & CURL_POLL_IN ? EPOLLIN : 0) | (what & CURL_POLL_OUT ? EPOLLOUT : 0);
	if (socketp)
		return loop_mod_fd(a->l, s, events) < 0 ? -1 : 0;
	if (loop_add_fd(a->l, s, events, on_fd, am) < 0)
		return -1;
	curl_multi_assign(am->m, s, (void *)1);
	return 0;
}

static int timer_cb(CURLM *m, long timeout_ms, void *userp)
{
	struct agent_multi *am = userp;
	if (timeout_ms < 0)
		loop_timer_disarm(am->timer);
	else
		loop_timer_arm(am->timer, timeout_ms > 0 ? (uint64_t)timeout_ms : 1, 0);
	return 0;
}

/* --- the API ---------------------------------------------------------------------------- */

static bool global_ready(void)
{
	static int state; /* 0 not yet, 1 ok, -1 failed */
	if (!state)
		state = curl_global_init(CURL_GLOBAL_SSL) == CURLE_OK ? 1 : -1;
	return state > 0;
}

int http_agent_new(struct loop *l, const struct http_auth *auth, struct http_agent **out,
		   struct strbuf *err)
{
	if (!global_ready()) {
		if (err)
			sb_adds(err, "libcurl could not be initialised");
		return -ENOMEM;
	}
	const char *files[] = { auth ? auth->ca_file : NULL, auth ? auth->cert_file : NULL,
				auth ? auth->key_file : NULL };
	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		FILE *f = files[i] && *files[i] ? fopen(files[i], "r") : NULL;
		if (files[i] && *files[i] && !f) {
			int e = errno;
			if (err)
				sb_addf(err, "%s: %s", files[i], strerror(e));
			return -EINVAL;
		}
		if (f)
			fclose(f);
	}
	if (auth && !auth->cert_pem != !auth->key_pem) {
		if (err)
			sb_adds(err, auth->cert_pem ? "a client certificate (PEM) without its key"
						    : "a client key (PEM) without its certificate");
		return -EINVAL;
	}
	struct http_agent *a = xcalloc(1, sizeof(*a));
	/* The bulk pool only where streams run beside lists: in a loop. */
	for (size_t i = 0; i < (l ? 2u : 1u); i++) {
		a->pool[i] = (struct agent_multi){ .a = a, .m = curl_multi_init() };
		if (!a->pool[i].m) {
			http_agent_free(a);
			return -ENOMEM;
		}
		curl_multi_setopt(a->pool[i].m, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
	}
	/* Lists run at once at start-up; afterwards one idle connection is plenty. */
	if (l)
		curl_multi_setopt(a->pool[1].m, CURLMOPT_MAXCONNECTS, 1L);
	a->multi = a->pool[0].m;
	if (auth) {
		a->ca_file = dup_or_null(auth->ca_file);
		a->cert_file = dup_or_null(auth->cert_file);
		a->key_file = dup_or_null(auth->key_file);
		a->token = dup_or_null(auth->token);
		a->token_file = dup_or_null(auth->token_file);
		a->ca_pem = pem_dup(auth->ca_pem, auth->ca_pem_len, &a->ca_pem_len);
		a->cert_pem = pem_dup(auth->cert_pem, auth->cert_pem_len, &a->cert_pem_len);
		a->key_pem = pem_dup(auth->key_pem, auth->key_pem_len, &a->key_pem_len);
		a->insecure = auth->insecure;
		a->tls_server_name = dup_or_null(auth->tls_server_name);
	}
	a->l = l;
	for (size_t i = 0; l && i < 2; i++) {
		struct agent_multi *am = &a->pool[i];
		am->timer = loop_timer_new(l, on_timer, am);
		if (!am->timer) {
			http_agent_free(a);
			return -ENOMEM;
		}
		curl_multi_setopt(am->m, CURLMOPT_SOCKETFUNCTION, socket_cb);
		curl_multi_setopt(am->m, CURLMOPT_SOCKETDATA, am);
		curl_multi_setopt(am->m, CURLMOPT_TIMERFUNCTION, timer_cb);
		curl_multi_setopt(am->m, CURLMOPT_TIMERDATA, am);
	}
	*out = a;
	return 0;
}

void http_agent_free(struct http_agent *a)
{
	if (!a)
		return;
	if (a->busy) {
		/* From one of its own callbacks: done when the callback returns. */
		a->free_pending = true;
		return;
	}
	agent_destroy(a);
}

static void agent_destroy(struct http_agent *a)
{
	while (a->calls) {
		struct http_call *c = a->calls;
		call_unlink(c);
		call_free(c);
	}
	for (size_t i = 0; i < ARRAY_SIZE(a->pool); i++) {
		if (a->pool[i].m)
			curl_multi_cleanup(a->pool[i].m);
		loop_timer_free(a->pool[i].timer);
	}
	free(a->ca_file);
	free(a->cert_file);
	free(a->key_file);
	free(a->token);
	free(a->token_file);
	free(a->file_token);
	free(a->ca_pem);
	free(a->cert_pem);
	if (a->key_pem) /* a private key: not left behind in freed memory */
		explicit_bzero(a->key_pem, a->key_pem_len);
	free(a->key_pem);
	free(a->tls_server_name);
	free(a);
}

/* The result of @c (which is freed), moved into @res. */
static int take_result(struct http_call *c, CURLcode rc, struct http_result *res)
{
	call_finish(c, rc);
	*res = c->res; /* the body moves to the caller */
	sb_init(&c->res.body);
	if (res->why[0] == '\0' && res->err)
		snprintf(res->why, sizeof(res->why), "%s", strerror(-res->err));
	call_free(c);
	return res->err;
}

int http_agent_perform_many(struct http_agent *a, const struct http_request *reqs, size_t n,
			    struct http_result *res)
{
	struct http_call **calls = xcalloc(n + 1, sizeof(*calls));
	CURLcode *rcs = xcalloc(n + 1, sizeof(*rcs));
	bool *done = xcalloc(n + 1, sizeof(*done));
	int first = 0;
	size_t pending = 0;
	for (size_t i = 0; i < n; i++) {
		memset(&res[i], 0, sizeof(res[i]));
		calls[i] = call_new(a, &reqs[i]);
		if (!calls[i]) {
			sb_init(&res[i].body);
			res[i].err = -ENOMEM;
			snprintf(res[i].why, sizeof(res[i].why), "cannot create a transfer");
			done[i] = true;
		} else if (a->l) {
			/* An agent of a loop: a blocking call still must not touch the loop's
			 * sockets. */
			rcs[i] = curl_easy_perform(calls[i]->easy);
			done[i] = true;
		} else {
			curl_multi_add_handle(a->multi, calls[i]->easy);
			calls[i]->multi = a->multi;
			pending++;
		}
	}
	while (pending) {
		int running = 0;
		if (curl_multi_perform(a->multi, &running) != CURLM_OK)
			break;
		CURLMsg *m;
		int left;
		while ((m = curl_multi_info_read(a->multi, &left))) {
			for (size_t i = 0; m->msg == CURLMSG_DONE && i < n; i++)
				if (calls[i] && !done[i] && m->easy_handle == calls[i]->easy) {
					rcs[i] = m->data.result;
					done[i] = true;
					pending--;
				}
		}
		if (pending && curl_multi_poll(a->multi, NULL, 0, 1000, NULL) != CURLM_OK)
			break;
	}
	for (size_t i = 0; i < n; i++) {
		if (calls[i]) {
			if (!done[i])
				rcs[i] = CURLE_RECV_ERROR;
			take_result(calls[i], rcs[i], &res[i]);
		}
		if (res[i].err && !first)
			first = res[i].err;
	}
	free(calls);
	free(rcs);
	free(done);
	return first;
}

int http_agent_perform(struct http_agent *a, const struct http_request *req,
		       struct http_result *res)
{
	return http_agent_perform_many(a, req, 1, res);
}

int http_call_start(struct http_agent *a, const struct http_request *req, http_done_fn done,
		    void *ctx, struct http_call **out)
{
	if (!a->l)
		return -EINVAL;
	struct http_call *c = call_new(a, req);
	if (!c)
		return -ENOMEM;
	c->done = done;
	c->done_ctx = ctx;
	CURLM *m = a->pool[req->own_connection ? 1 : 0].m;
	if (curl_multi_add_handle(m, c->easy) != CURLM_OK) {
		call_free(c);
		return -ENOMEM;
	}
	c->multi = m;
	c->next = a->calls;
	if (a->calls)
		a->calls->prev = c;
	a->calls = c;
	*out = c;
	return 0;
}

void http_call_cancel(struct http_call *c)
{
	if (!c || c->cancelled || c->in_done)
		return; /* a call whose done callback runs is freed when it returns */
	struct http_agent *a = c->a;
	c->cancelled = true;
	if (a->in_action) {
		/* Inside curl (a body callback): remove the handle once curl has returned. */
		a->cancels_pending = true;
		return;
	}
	call_unlink(c);
	call_free(c);
}

long http_call_status(const struct http_call *c)
{
	long status = 0;
	curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &status);
	return status;
}

void http_result_clear(struct http_result *r)
{
	if (r)
		sb_free(&r->body);
}

const char *http_library_version(void)
{
	return curl_version();
}
