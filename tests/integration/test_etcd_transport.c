/*
 * The etcd client's HTTP transport at its edges: one kept-alive connection
 * per client, servers that close idle connections, close mid-answer, answer
 * too slowly, with bytes that are not HTTP or over the limits, a watch stream
 * that arrives one byte at a time, large list pages from a real etcd, and
 * TLS host-name checks. The misbehaving peers are a small unix-socket server
 * in this process that sends fixed bytes (it knows nothing of etcd beyond
 * them). Every wait is bounded.
 */
#include "harness.h"
#include "etcd_harness.h"

#include <brindle/sys/etcd.h>
#include <brindle/sys/loop.h>
#include <brindle/sys/clock.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static struct etcd_proc *shared_etcd;

static int group_setup(void **state)
{
	int r = etcd_proc_start(NULL, &shared_etcd);
	if (r < 0)
		fprintf(stderr, "cannot start etcd: %s\n", strerror(-r));
	return r < 0 ? -1 : 0;
}

static int group_teardown(void **state)
{
	etcd_proc_destroy(shared_etcd);
	shared_etcd = NULL;
	return 0;
}

static struct etcd *client_for(const char *const *eps, size_t n, long timeout_ms)
{
	struct etcd_config cfg = {
		.endpoints = eps,
		.n_endpoints = n,
		.timeout_ms = timeout_ms,
		.connect_timeout_ms = 500,
	};
	struct etcd *e;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	if (etcd_new(&cfg, &e, &err) < 0)
		fail_msg("etcd_new: %s", sb_str(&err));
	sb_free(&err);
	return e;
}

/* --- a peer that sends fixed bytes --- */

enum peer_mode {
	PEER_OK,	   /* a range answer with no keys, kept alive */
	PEER_CLOSE_HEADER, /* the same with "Connection: close" */
	PEER_CLOSE_IDLE,   /* the same, then closes the idle connection */
	PEER_TRUNCATE,	   /* half an answer, then closes */
	PEER_GARBAGE,	   /* not HTTP */
	PEER_HUGE_HEADER,  /* a header over the limit */
	PEER_HUGE_BODY,	   /* a Content-Length over the limit */
	PEER_SLOW,	   /* the body one byte every 50 ms */
	PEER_WATCH_BYTES,  /* a watch stream, one byte per write */
	PEER_WATCH_404,	   /* a watch refused with an error */
};

struct peer {
	char dir[64];
	char endpoint[160];
	int lfd;
	enum peer_mode mode;
	pthread_t th;
	atomic_int accepts, requests;
	atomic_bool stop;
	char last_request[1024]; /* body of the last request */
	pthread_mutex_t lock;
	struct peer *next;
};

/* Peers still running, for a test that fails half-way: their files go at exit. */
static struct peer *live_peers;

static void peer_remove_files(struct peer *p)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/peer.sock", p->dir);
	unlink(path);
	rmdir(p->dir);
}

static void cleanup_peers(void)
{
	for (struct peer *p = live_peers; p; p = p->next)
		peer_remove_files(p);
	live_peers = NULL;
}

static bool send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w <= 0)
			return false;
		p += w;
		n -= (size_t)w;
	}
	return true;
}

static bool send_str(int fd, const char *s)
{
	return send_all(fd, s, strlen(s));
}

/* Reads one request (headers and Content-Length body); false at EOF. */
static bool read_request(struct peer *p, int fd)
{
	char buf[65536];
	size_t len = 0;
	for (;;) {
		ssize_t n = recv(fd, buf + len, sizeof(buf) - 1 - len, 0);
		if (n <= 0)
			return false;
		len += (size_t)n;
		buf[len] = '\0';
		char *end = strstr(buf, "\r\n\r\n");
		if (!end)
			continue;
		const char *cl = strcasestr(buf, "Content-Length:");
		size_t want = (size_t)(end + 4 - buf) + (cl ? strtoul(cl + 15, NULL, 10) : 0);
		if (len < want)
			continue;
		pthread_mutex_lock(&p->lock);
		snprintf(p->last_request, sizeof(p->last_request), "%s", end + 4);
		pthread_mutex_unlock(&p->lock);
		atomic_fetch_add(&p->requests, 1);
		return true;
	}
}

#define EMPTY_RANGE "{\"header\":{\"revision\":\"5\"}}"

static void sleep_ms(long ms)
{
	usleep((useconds_t)ms * 1000);
}

static const char watch_stream[] =
	"8c\r\n{\"result\":{\"header\":{\"cluster_id\":\"8625344958863561880\",\"member_id\":"
	"\"14332145401352075586\",\"revision\":\"2\",\"raft_term\":\"2\"},\"created\":true}}\n\r\n"
	"e4\r\n{\"result\":{\"header\":{\"cluster_id\":\"8625344958863561880\",\"member_id\":"
	"\"14332145401352075586\",\"revision\":\"2\",\"raft_term\":\"2\"},\"events\":[{\"kv\":{"
	"\"key\":\"Zm9v\",\"create_revision\":\"2\",\"mod_revision\":\"2\",\"version\":\"1\","
	"\"value\":\"YmFy\"}}]}}\n\r\n"
	"c1\r\n{\"result\":{\"header\":{\"cluster_id\":\"8625344958863561880\",\"member_id\":"
	"\"14332145401352075586\",\"revision\":\"4\",\"raft_term\":\"2\"},\"events\":[{\"type\":"
	"\"DELETE\",\"kv\":{\"key\":\"Zm9v\",\"mod_revision\":\"4\"}}]}}\n\r\n";

/* Answers requests on one connection until the client closes it. */
static void serve(struct peer *p, int fd)
{
	char head[256];
	while (!atomic_load(&p->stop) && read_request(p, fd)) {
		switch (p->mode) {
		case PEER_OK:
		case PEER_CLOSE_HEADER:
		case PEER_CLOSE_IDLE:
			snprintf(head, sizeof(head),
				 "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n%s"
				 "Content-Length: %zu\r\n\r\n",
				 p->mode == PEER_CLOSE_HEADER ? "Connection: close\r\n" : "",
				 strlen(EMPTY_RANGE));
			if (!send_str(fd, head) || !send_str(fd, EMPTY_RANGE))
				return;
			if (p->mode != PEER_OK)
				return;
			break;
		case PEER_TRUNCATE:
			send_str(fd, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"header\":");
			return;
		case PEER_GARBAGE:
			send_str(fd, "SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n");
			sleep_ms(100);
			return;
		case PEER_HUGE_HEADER:
			send_str(fd, "HTTP/1.1 200 OK\r\n");
			for (int i = 0; i < 2000; i++)
				if (!send_str(fd, "X-Filler: 0123456789abcdef0123456789\r\n"))
					return;
			send_str(fd, "Content-Length: 0\r\n\r\n");
			return;
		case PEER_HUGE_BODY:
			send_str(fd, "HTTP/1.1 200 OK\r\nContent-Length: 1000000000\r\n\r\n{");
			sleep_ms(100);
			return;
		case PEER_SLOW:
			if (!send_str(fd, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"))
				return;
			for (int i = 0; i < 1000 && !atomic_load(&p->stop); i++) {
				if (!send_str(fd, " "))
					return;
				sleep_ms(50);
			}
			return;
		case PEER_WATCH_BYTES:
			if (!send_str(fd, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
					  "Transfer-Encoding: chunked\r\n\r\n"))
				return;
			for (size_t i = 0; i < sizeof(watch_stream) - 1; i++) {
				if (!send_all(fd, watch_stream + i, 1))
					return;
				usleep(300);
			}
			sleep_ms(300);
			send_str(fd, "0\r\n\r\n"); /* the stream ends: the watch reconnects */
			sleep_ms(100);
			return;
		case PEER_WATCH_404:
			send_str(fd, "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\n"
				     "Content-Length: 58\r\n\r\n"
				     "{\"error\":\"no such path\",\"code\":5,"
				     "\"message\":\"no such path\"}");
			break;
		}
	}
}

static void *peer_main(void *arg)
{
	struct peer *p = arg;
	for (;;) {
		int fd = accept4(p->lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			break; /* shut down */
		atomic_fetch_add(&p->accepts, 1);
		serve(p, fd);
		close(fd);
	}
	return NULL;
}

static struct peer *peer_start(enum peer_mode mode)
{
	struct peer *p = xcalloc(1, sizeof(*p));
	p->mode = mode;
	pthread_mutex_init(&p->lock, NULL);
	snprintf(p->dir, sizeof(p->dir), "/tmp/brindle-test-XXXXXX");
	assert_non_null(mkdtemp(p->dir));
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/peer.sock", p->dir);
	snprintf(p->endpoint, sizeof(p->endpoint), "unix:%s", sa.sun_path);
	p->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(p->lfd >= 0);
	assert_int_equal(bind(p->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(p->lfd, 16), 0);
	assert_int_equal(pthread_create(&p->th, NULL, peer_main, p), 0);
	static bool atexit_done;
	if (!atexit_done) {
		atexit(cleanup_peers);
		atexit_done = true;
	}
	p->next = live_peers;
	live_peers = p;
	return p;
}

static void peer_stop(struct peer *p)
{
	atomic_store(&p->stop, true);
	shutdown(p->lfd, SHUT_RDWR);
	pthread_join(p->th, NULL);
	close(p->lfd);
	peer_remove_files(p);
	for (struct peer **pp = &live_peers; *pp; pp = &(*pp)->next) {
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	}
	pthread_mutex_destroy(&p->lock);
	free(p);
}

/* --- connection reuse --- */

static void test_one_connection_per_client(void **state)
{
	struct peer *p = peer_start(PEER_OK);
	const char *ep = p->endpoint;
	struct etcd *e = client_for(&ep, 1, 2000);
	struct etcd_kv kv;
	for (int i = 0; i < 6; i++) {
		assert_int_equal(etcd_get(e, "/reuse", &kv), -ENOENT);
		int64_t rev;
		assert_int_equal(etcd_put(e, "/reuse", "x", 1, 0, &rev), 0);
		assert_int_equal(rev, 5);
	}
	assert_int_equal(atomic_load(&p->requests), 12);
	assert_int_equal(atomic_load(&p->accepts), 1);
	etcd_free(e);
	peer_stop(p);
}

static void test_server_closes(void **state)
{
	/* "Connection: close": a new connection for each call. */
	struct peer *p = peer_start(PEER_CLOSE_HEADER);
	const char *ep = p->endpoint;
	struct etcd *e = client_for(&ep, 1, 2000);
	for (int i = 0; i < 3; i++)
		assert_int_equal(etcd_put(e, "/close", "x", 1, 0, NULL), 0);
	assert_int_equal(atomic_load(&p->accepts), 3);
	etcd_free(e);
	peer_stop(p);

	/*
	 * The server closes idle connections: writes too go through on a new
	 * connection, whether the close is seen before sending or only after.
	 */
	p = peer_start(PEER_CLOSE_IDLE);
	ep = p->endpoint;
	e = client_for(&ep, 1, 2000);
	for (int i = 0; i < 20; i++) {
		int r = etcd_put(e, "/close", "x", 1, 0, NULL);
		if (r < 0)
			fail_msg("put %d: %s: %s", i, strerror(-r), etcd_last_error(e));
		if (i % 2)
			sleep_ms(5); /* let the close arrive before the next call */
	}
	assert_int_equal(atomic_load(&p->accepts), 20);
	assert_int_equal(atomic_load(&p->requests), 20);
	etcd_free(e);
	peer_stop(p);
}

/* --- broken answers --- */

static void test_closed_mid_answer(void **state)
{
	struct peer *p = peer_start(PEER_TRUNCATE);
	const char *ep = p->endpoint;
	struct etcd *e = client_for(&ep, 1, 2000);
	struct etcd_kv kv;
	/* A read has nowhere else to go; a write may have been applied. */
	assert_int_equal(etcd_get(e, "/x", &kv), -ECONNREFUSED);
	assert_non_null(strstr(etcd_last_error(e), "closed"));
	assert_int_equal(etcd_put(e, "/x", "y", 1, 0, NULL), -ECONNRESET);
	assert_non_null(strstr(etcd_last_error(e), "may have been applied"));
	etcd_free(e);

	/* With a good endpoint after it, the read fails over; the write does not. */
	const char *eps[] = { p->endpoint, etcd_proc_endpoint(shared_etcd) };
	e = client_for(eps, 2, 3000);
	assert_int_equal(etcd_get(e, "/transport/none", &kv), -ENOENT);
	etcd_free(e);
	e = client_for(eps, 2, 3000);
	assert_int_equal(etcd_put(e, "/transport/x", "y", 1, 0, NULL), -ECONNRESET);
	etcd_free(e);
	peer_stop(p);
}

static void test_unreadable_answers(void **state)
{
	static const enum peer_mode modes[] = { PEER_GARBAGE, PEER_HUGE_HEADER, PEER_HUGE_BODY };
	static const char *const why[] = { "malformed HTTP", "header too large", "body too large" };
	for (size_t i = 0; i < ARRAY_SIZE(modes); i++) {
		struct peer *p = peer_start(modes[i]);
		/* Not a connection failure: no failover to the good endpoint. */
		const char *eps[] = { p->endpoint, etcd_proc_endpoint(shared_etcd) };
		struct etcd *e = client_for(eps, 2, 3000);
		struct etcd_kv kv;
		uint64_t t0 = now_ms();
		assert_int_equal(etcd_get(e, "/x", &kv), -EPROTO);
		assert_true(now_ms() - t0 < 1000);
		if (!strstr(etcd_last_error(e), why[i]))
			fail_msg("%s: want \"%s\"", etcd_last_error(e), why[i]);
		/* The next call starts on a new connection and still works. */
		assert_int_equal(etcd_put(e, "/x", "y", 1, 0, NULL), -EPROTO);
		etcd_free(e);
		peer_stop(p);
	}
}

static void test_slow_answer(void **state)
{
	/* Bytes keep coming, but the call's one timeout still holds. */
	struct peer *p = peer_start(PEER_SLOW);
	const char *ep = p->endpoint;
	struct etcd *e = client_for(&ep, 1, 600);
	struct etcd_kv kv;
	uint64_t t0 = now_ms();
	assert_int_equal(etcd_get(e, "/x", &kv), -ETIMEDOUT);
	uint64_t took = now_ms() - t0;
	assert_true(took >= 550);
	assert_true(took < 1500);
	etcd_free(e);
	peer_stop(p);
}

/* --- watches over the bad peer --- */

struct rec {
	int64_t mods[16];
	int types[16];
	size_t n;
	int ups, downs;
	char why[512];
	int resets;
	struct etcd_watch_reset reset;
};

static void rec_events(void *ctx, const struct etcd_event *evs, size_t n, int64_t revision)
{
	struct rec *r = ctx;
	for (size_t i = 0; i < n; i++) {
		assert_true(r->n < ARRAY_SIZE(r->mods));
		assert_string_equal(evs[i].kv.key, "foo");
		r->types[r->n] = evs[i].type;
		r->mods[r->n++] = evs[i].kv.mod_revision;
	}
}

static void rec_state(void *ctx, bool up, const char *why)
{
	struct rec *r = ctx;
	if (up) {
		r->ups++;
	} else {
		r->downs++;
		snprintf(r->why, sizeof(r->why), "%s", why ? why : "");
	}
}

static void rec_reset(void *ctx, const struct etcd_watch_reset *rs)
{
	struct rec *r = ctx;
	r->resets++;
	r->reset = *rs;
	r->reset.why = NULL;
	snprintf(r->why, sizeof(r->why), "%s", rs->why);
}

static const struct etcd_watch_ops rec_ops = { .events = rec_events,
					       .state = rec_state,
					       .reset = rec_reset };

static bool run_until(struct loop *l, const struct rec *r, size_t n, int ups, int downs,
		      int timeout_ms)
{
	uint64_t deadline = now_ms() + (uint64_t)timeout_ms;
	while (r->n < n || r->ups < ups || r->downs < downs) {
		uint64_t now = now_ms();
		if (now >= deadline)
			return false;
		assert_true(loop_run_once(l, (int)MIN(deadline - now, 50)) >= 0);
	}
	return true;
}

static void test_watch_byte_by_byte(void **state)
{
	struct peer *p = peer_start(PEER_WATCH_BYTES);
	const char *ep = p->endpoint;
	struct etcd *e = client_for(&ep, 1, 5000);
	struct loop *l = loop_new();
	struct rec rec = { 0 };
	struct etcd_watch *w;
	assert_int_equal(etcd_watch_start(e, l, "foo", 1, 0, &rec_ops, &rec, &w), 0);
	assert_true(run_until(l, &rec, 2, 1, 0, 10000));
	assert_int_equal(rec.n, 2);
	assert_int_equal(rec.types[0], ETCD_EVENT_PUT);
	assert_int_equal(rec.mods[0], 2);
	assert_int_equal(rec.types[1], ETCD_EVENT_DELETE);
	assert_int_equal(rec.mods[1], 4);
	assert_int_equal(etcd_watch_next_revision(w), 5);
	/* The stream ends; the watch resumes after what it delivered. The peer
	 * answers as a store at revision 2 again, below the 4 delivered: a store
	 * that went back. The watch ends with a reset and delivers nothing twice. */
	assert_true(run_until(l, &rec, 2, 1, 1, 10000));
	assert_non_null(strstr(rec.why, "watch stream ended"));
	uint64_t deadline = now_ms() + 10000;
	while (!rec.resets && now_ms() < deadline)
		assert_true(loop_run_once(l, 50) >= 0);
	assert_int_equal(rec.resets, 1);
	assert_int_equal(rec.reset.reason, ETCD_WATCH_BEHIND);
	assert_int_equal(rec.reset.revision, 2);
	assert_non_null(strstr(rec.why, "below revision 4"));
	pthread_mutex_lock(&p->lock);
	assert_non_null(strstr(p->last_request, "\"start_revision\":\"5\""));
	assert_non_null(strstr(p->last_request, "\"fragment\":true"));
	pthread_mutex_unlock(&p->lock);
	assert_int_equal(rec.n, 2);
	assert_int_equal(rec.ups, 1); /* the store that went back is not "up" */
	etcd_watch_stop(w);
	loop_free(l);
	etcd_free(e);
	peer_stop(p);
}

static void test_watch_refused(void **state)
{
	struct peer *p = peer_start(PEER_WATCH_404);
	const char *ep = p->endpoint;
	struct etcd *e = client_for(&ep, 1, 5000);
	struct loop *l = loop_new();
	struct rec rec = { 0 };
	struct etcd_watch *w;
	assert_int_equal(etcd_watch_start(e, l, "foo", 1, 0, &rec_ops, &rec, &w), 0);
	assert_true(run_until(l, &rec, 0, 0, 1, 5000));
	assert_non_null(strstr(rec.why, "HTTP 404"));
	assert_non_null(strstr(rec.why, "no such path"));
	etcd_watch_stop(w);
	loop_free(l);
	etcd_free(e);
	peer_stop(p);
}

/* --- real etcd --- */

static void test_large_pages(void **state)
{
	/* 1,000 keys of 6 KB: one page of about 8 MB of JSON. */
	const char *ep = etcd_proc_endpoint(shared_etcd);
	struct etcd *e = client_for(&ep, 1, 20000);
	enum {
		N = 1000,
		VLEN = 6000,
		PER_TXN = 100
	};
	char *value = xmalloc(VLEN);
	char keys[PER_TXN][32];
	struct etcd_op ops[PER_TXN];
	for (int base = 0; base < N; base += PER_TXN) {
		for (int i = 0; i < PER_TXN; i++) {
			snprintf(keys[i], sizeof(keys[i]), "/large/k%04d", base + i);
			ops[i] = (struct etcd_op){ .type = ETCD_OP_PUT,
						   .key = keys[i],
						   .value = value,
						   .value_len = VLEN };
		}
		memset(value, 'a' + base / PER_TXN, VLEN);
		struct etcd_txn_result res;
		int r = etcd_txn(e, NULL, 0, ops, PER_TXN, NULL, 0, &res);
		if (r < 0)
			fail_msg("txn: %s: %s", strerror(-r), etcd_last_error(e));
		etcd_txn_result_clear(&res);
	}
	struct etcd_range res;
	int r = etcd_list(e, "/large/", 0, 1000, &res);
	if (r < 0)
		fail_msg("list: %s: %s", strerror(-r), etcd_last_error(e));
	assert_int_equal(res.n, N);
	for (size_t i = 0; i < res.n; i++) {
		assert_int_equal(res.kvs[i].value_len, VLEN);
		assert_int_equal(res.kvs[i].value[0], 'a' + (int)i / PER_TXN);
		assert_int_equal(res.kvs[i].value[VLEN - 1], 'a' + (int)i / PER_TXN);
	}
	etcd_range_clear(&res);
	/* The same connection carries small calls afterwards. */
	struct etcd_kv kv;
	assert_int_equal(etcd_get(e, "/large/k0999", &kv), 0);
	assert_int_equal(kv.value_len, VLEN);
	etcd_kv_clear(&kv);
	free(value);
	etcd_free(e);
}

/* A loopback TCP port nobody listens on now. */
static int free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	close(fd);
	return ntohs(sa.sin_port);
}

/* Until something accepts on @port, while @pid lives; at most @timeout_ms. */
static bool wait_listening(int port, pid_t pid, int timeout_ms)
{
	uint64_t deadline = now_ms() + (uint64_t)timeout_ms;
	while (now_ms() < deadline && waitpid(pid, NULL, WNOHANG) == 0) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		struct sockaddr_in sa = { .sin_family = AF_INET,
					  .sin_port = htons((uint16_t)port),
					  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		int r = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
		close(fd);
		if (r == 0)
			return true;
		sleep_ms(50);
	}
	return false;
}

/*
 * TLS checks the server's name: etcd's certificate holds 127.0.0.1 and
 * localhost; a server with a certificate from the same CA for another name
 * is refused.
 */
static void test_tls_names(void **state)
{
	struct etcd_proc_opts opts = { .tls = true };
	struct etcd_proc *p;
	assert_int_equal(etcd_proc_start(&opts, &p), 0);
	const char *ip_ep = etcd_proc_endpoint(p);
	char name_ep[128];
	snprintf(name_ep, sizeof(name_ep), "https://localhost:%s", strrchr(ip_ep, ':') + 1);
	struct etcd_config cfg = {
		.endpoints = (const char *const[]){ name_ep },
		.n_endpoints = 1,
		.ca_file = etcd_proc_ca(p),
		.cert_file = etcd_proc_cert(p),
		.key_file = etcd_proc_key(p),
		.timeout_ms = 3000,
	};
	struct etcd *e;
	assert_int_equal(etcd_new(&cfg, &e, NULL), 0);
	int r = etcd_put(e, "/tls/name", "ok", 2, 0, NULL);
	if (r < 0)
		fail_msg("put via localhost: %s: %s", strerror(-r), etcd_last_error(e));
	etcd_free(e);

	/* A certificate for other.example, served by openssl s_server on a free port. */
	char cmd[1024];
	const char *dir = etcd_proc_dir(p);
	snprintf(cmd, sizeof(cmd),
		 "cd %s && openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
		 " -keyout other.key -out other.csr -subj /CN=other.example 2>/dev/null &&"
		 " printf 'subjectAltName=DNS:other.example\\n' > other.ext &&"
		 " openssl x509 -req -in other.csr -CA ca.crt -CAkey ca.key -CAcreateserial"
		 " -out other.crt -days 1 -extfile other.ext 2>/dev/null",
		 dir);
	assert_int_equal(system(cmd), 0);
	int port = 0;
	pid_t pid = -1;
	for (int tries = 0; tries < 5 && pid < 0; tries++) {
		port = free_port();
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			prctl(PR_SET_PDEATHSIG,
			      SIGKILL); /* gone with the test, even a failed one */
			char portarg[16], crt[160], key[160];
			snprintf(portarg, sizeof(portarg), "%d", port);
			snprintf(crt, sizeof(crt), "%s/other.crt", dir);
			snprintf(key, sizeof(key), "%s/other.key", dir);
			int null = open("/dev/null", O_RDWR);
			dup2(null, 0);
			dup2(null, 1);
			dup2(null, 2);
			execlp("openssl", "openssl", "s_server", "-quiet", "-accept", portarg,
			       "-cert", crt, "-key", key, (char *)NULL);
			_exit(127);
		}
		if (!wait_listening(port, pid, 10000)) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			pid = -1; /* the port was taken meanwhile: another one */
		}
	}
	assert_true(pid > 0);
	char other_ep[64];
	snprintf(other_ep, sizeof(other_ep), "https://127.0.0.1:%d", port);
	cfg.endpoints = (const char *const[]){ other_ep };
	assert_int_equal(etcd_new(&cfg, &e, NULL), 0);
	struct etcd_kv kv;
	r = etcd_get(e, "/tls/name", &kv);
	char why[512];
	snprintf(why, sizeof(why), "%s", etcd_last_error(e));
	etcd_free(e);
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	assert_int_equal(r, -ECONNREFUSED);
	/* curl's words: "no alternative certificate subject name matches target host name" */
	if (!strstr(why, "subject name") && !strstr(why, "mismatch"))
		fail_msg("want a name mismatch: %s", why);
	etcd_proc_destroy(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_connection_per_client),
		cmocka_unit_test(test_server_closes),
		cmocka_unit_test(test_closed_mid_answer),
		cmocka_unit_test(test_unreadable_answers),
		cmocka_unit_test(test_slow_answer),
		cmocka_unit_test(test_watch_byte_by_byte),
		cmocka_unit_test(test_watch_refused),
		cmocka_unit_test(test_large_pages),
		cmocka_unit_test(test_tls_names),
	};
	return cmocka_run_group_tests_name("etcd_transport", tests, group_setup, group_teardown);
}
