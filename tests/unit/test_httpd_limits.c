/*
 * The health/metrics server under attack, on loopback: a flood of idle
 * connections, requests that never finish (or trickle in), answers nobody
 * reads, and a process out of file descriptors. The server must keep its
 * descriptors bounded, close what overstays, not spin, and keep answering.
 */
#include "harness.h"

#include <brindle/sys/httpd.h>
#include <brindle/sys/loop.h>
#include <brindle/sys/clock.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define HUGE_BODY (32u << 20)

static void handler(void *ctx, const char *path, struct httpd_response *resp)
{
	if (strcmp(path, "/ok") == 0) {
		resp->status = 200;
		sb_adds(&resp->body, "ok\n");
	} else if (strcmp(path, "/huge") == 0) {
		static char chunk[65536];
		memset(chunk, 'x', sizeof(chunk));
		resp->status = 200;
		for (size_t n = 0; n < HUGE_BODY; n += sizeof(chunk))
			sb_add(&resp->body, chunk, sizeof(chunk));
	}
}

/* Open descriptors of this process. */
static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	assert_non_null(d);
	int n = 0;
	for (struct dirent *e; (e = readdir(d));)
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1; /* the directory's own */
}

static int highest_fd(void)
{
	DIR *d = opendir("/proc/self/fd");
	assert_non_null(d);
	int max = -1;
	for (struct dirent *e; (e = readdir(d));)
		if (e->d_name[0] != '.' && atoi(e->d_name) > max)
			max = atoi(e->d_name);
	closedir(d);
	return max;
}

static int client_socket(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	return fd;
}

/* Non-blocking: the handshake completes in the kernel without the server. */
static void client_connect(int fd, uint16_t port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int r = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	assert_true(r == 0 || errno == EINPROGRESS);
}

static bool connected(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	int err = 0;
	socklen_t len = sizeof(err);
	return poll(&p, 1, 0) == 1 && (p.revents & POLLOUT) &&
	       getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0;
}

static void client_send(int fd, const char *s)
{
	assert_int_equal(send(fd, s, strlen(s), MSG_NOSIGNAL), (ssize_t)strlen(s));
}

/* Read what is there; true once the server has closed (EOF or reset). */
static bool client_closed(int fd, struct strbuf *got)
{
	char buf[65536];
	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		if (n > 0) {
			if (got)
				sb_add(got, buf, (size_t)n);
			continue;
		}
		return n == 0 || (errno != EAGAIN && errno != EINTR);
	}
}

static void run_for(struct loop *l, uint64_t ms)
{
	uint64_t end = now_ms() + ms;
	while (now_ms() < end)
		loop_run_once(l, 10);
}

/* Run the loop until @fd sees the server close it, at most @ms; the answer, or NULL. */
static char *wait_answer(struct loop *l, int fd, uint64_t ms)
{
	struct strbuf got = STRBUF_INIT;
	sb_init(&got);
	uint64_t end = now_ms() + ms;
	while (!client_closed(fd, &got)) {
		if (now_ms() >= end) {
			sb_free(&got);
			return NULL;
		}
		loop_run_once(l, 10);
	}
	return sb_detach(&got);
}

static void assert_ok(char *answer)
{
	assert_non_null(answer);
	assert_true(str_has_prefix(answer, "HTTP/1.1 200 OK\r\n"));
	assert_true(str_has_suffix(answer, "\r\n\r\nok\n"));
	free(answer);
}

/* A fresh GET /ok, answered within @ms. */
static void get_ok(struct loop *l, uint16_t port, uint64_t ms)
{
	int fd = client_socket();
	client_connect(fd, port);
	uint64_t end = now_ms() + ms;
	while (!connected(fd) && now_ms() < end)
		loop_run_once(l, 10);
	client_send(fd, "GET /ok HTTP/1.1\r\nHost: x\r\n\r\n");
	assert_ok(wait_answer(l, fd, end > now_ms() ? end - now_ms() : 1));
	close(fd);
}

static struct httpd *start(struct loop *l)
{
	struct httpd *h;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	assert_int_equal(httpd_start(l, "localhost", 0, handler, NULL, &h, &err), 0);
	sb_free(&err);
	return h;
}

/*
 * 500 idle connections: the server keeps at most HTTPD_MAX_CONNECTIONS of them
 * (in descriptors, not just in its own count), a request that comes with its
 * connection is still answered at once, and the idle ones go at the deadline.
 */
static void test_flood(void **state)
{
	enum {
		FLOOD = 500
	};
	struct loop *l = loop_new();
	struct httpd *h = start(l);
	uint16_t port = httpd_port(h);
	int base = count_fds();
	int fds[FLOOD];
	for (int i = 0; i < FLOOD; i++) {
		fds[i] = client_socket();
		client_connect(fds[i], port);
	}
	/* Until every handshake is done (a short backlog makes some wait for SYN retries). */
	uint64_t end = now_ms() + 3500;
	int up = 0;
	while (now_ms() < end) {
		loop_run_once(l, 10);
		up = 0;
		for (int i = 0; i < FLOOD; i++)
			up += connected(fds[i]);
		if (up == FLOOD)
			break;
	}
	run_for(l, 100);
	int server_fds = count_fds() - base - FLOOD;
	print_message("connected %d of %d; the server holds %d descriptors\n", up, FLOOD,
		      server_fds);
	assert_true(server_fds <= HTTPD_MAX_CONNECTIONS);
	assert_int_equal(up, FLOOD);
	struct httpd_stats st;
	httpd_get_stats(h, &st);
	assert_true(st.connections <= HTTPD_MAX_CONNECTIONS);
	assert_int_equal(st.accepted, FLOOD);
	assert_int_equal(st.evicted, FLOOD - st.connections);

	/* A probe whose request arrives with its connection is answered promptly. */
	uint64_t t0 = now_ms();
	get_ok(l, port, 1000);
	print_message("answered in %llu ms during the flood\n",
		      (unsigned long long)(now_ms() - t0));

	/* The idle ones are closed at the deadline, and the clients see it. */
	run_for(l, HTTPD_REQUEST_MS + 300);
	assert_int_equal(count_fds() - base - FLOOD, 0);
	int closed = 0;
	for (int i = 0; i < FLOOD; i++)
		closed += client_closed(fds[i], NULL);
	assert_int_equal(closed, FLOOD);
	httpd_get_stats(h, &st);
	assert_int_equal(st.connections, 0);
	for (int i = 0; i < FLOOD; i++)
		close(fds[i]);
	httpd_stop(h);
	loop_free(l);
}

/*
 * Slow loris: one client sends nothing, one trickles a byte every 200 ms and
 * never ends its request. Both are closed HTTPD_REQUEST_MS after the accept.
 */
static void test_request_deadline(void **state)
{
	struct loop *l = loop_new();
	struct httpd *h = start(l);
	int idle = client_socket(), slow = client_socket();
	uint64_t t0 = now_ms();
	client_connect(idle, httpd_port(h));
	client_connect(slow, httpd_port(h));
	run_for(l, 20);
	const char *req =
		"GET /ok HTTP/1.1\r\nHost: x\r\nX-Padding: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
	uint64_t idle_closed = 0, slow_closed = 0, next_byte = now_ms();
	size_t sent = 0;
	while (now_ms() < t0 + HTTPD_REQUEST_MS + 1500 && !(idle_closed && slow_closed)) {
		loop_run_once(l, 10);
		if (!idle_closed && client_closed(idle, NULL))
			idle_closed = now_ms();
		if (!slow_closed && client_closed(slow, NULL))
			slow_closed = now_ms();
		if (!slow_closed && now_ms() >= next_byte && req[sent]) {
			ssize_t n = send(slow, req + sent, 1, MSG_NOSIGNAL);
			sent += n == 1;
			next_byte = now_ms() + 200;
		}
	}
	print_message("idle closed after %lld ms, slow after %lld ms (%zu bytes sent)\n",
		      idle_closed ? (long long)(idle_closed - t0) : -1LL,
		      slow_closed ? (long long)(slow_closed - t0) : -1LL, sent);
	assert_true(idle_closed && slow_closed);
	assert_true(idle_closed - t0 >= HTTPD_REQUEST_MS - 50);
	assert_true(idle_closed - t0 <= HTTPD_REQUEST_MS + 300);
	assert_true(slow_closed - t0 >= HTTPD_REQUEST_MS - 50);
	assert_true(slow_closed - t0 <= HTTPD_REQUEST_MS + 300);
	struct httpd_stats st;
	httpd_get_stats(h, &st);
	assert_int_equal(st.timed_out, 2);
	assert_int_equal(st.connections, 0);
	close(idle);
	close(slow);
	httpd_stop(h);
	loop_free(l);
}

/* A client asks for a large answer and never reads it: closed HTTPD_ANSWER_MS later. */
static void test_answer_deadline(void **state)
{
	struct loop *l = loop_new();
	struct httpd *h = start(l);
	int base = count_fds();
	int fd = client_socket();
	client_connect(fd, httpd_port(h));
	run_for(l, 20);
	client_send(fd, "GET /huge HTTP/1.1\r\n\r\n");
	uint64_t t0 = now_ms();
	run_for(l, 100);
	struct httpd_stats st;
	httpd_get_stats(h, &st);
	assert_int_equal(st.connections, 1); /* stuck writing */
	while (now_ms() < t0 + HTTPD_ANSWER_MS + 1000 && count_fds() > base + 1)
		loop_run_once(l, 10);
	print_message("unread answer dropped after %llu ms\n", (unsigned long long)(now_ms() - t0));
	assert_int_equal(count_fds(), base + 1);
	assert_true(now_ms() - t0 >= HTTPD_ANSWER_MS - 100);
	httpd_get_stats(h, &st);
	assert_int_equal(st.timed_out, 1);
	close(fd);
	httpd_stop(h);
	loop_free(l);
}

static long cpu_ms(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000L +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000L;
}

/* Take every free descriptor below the (lowered) limit, as copies of @src. */
static int fill_fds(int src, int *fillers, int max)
{
	int n = 0, fd;
	while (n < max && (fd = fcntl(src, F_DUPFD_CLOEXEC, 0)) >= 0)
		fillers[n++] = fd;
	assert_int_equal(errno, EMFILE);
	return n;
}

/*
 * The process runs out of descriptors (RLIMIT_NOFILE lowered). A prompt
 * request is still answered, at the cost of an idle connection; with none to
 * close, pending connections are dropped through the reserve descriptor
 * rather than left to keep the level-triggered listener ready: the loop must
 * not spin. Once descriptors are free, the server serves again.
 */
static void test_out_of_descriptors(void **state)
{
	enum {
		PENDING = 3
	};
	struct loop *l = loop_new();
	struct httpd *h = start(l);
	uint16_t port = httpd_port(h);
	int idle = client_socket(), prompt = client_socket(), pending[PENDING];
	for (int i = 0; i < PENDING; i++)
		pending[i] = client_socket();
	client_connect(idle, port);
	run_for(l, 50);
	struct httpd_stats st;
	httpd_get_stats(h, &st);
	assert_int_equal(st.connections, 1);

	struct rlimit saved, low;
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &saved), 0);
	/* Above what is open now (descriptors inherited from the test runner included). */
	int limit = highest_fd() + 64;
	low = (struct rlimit){ .rlim_cur = (rlim_t)limit, .rlim_max = saved.rlim_max };
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	assert_true(devnull >= 0);
	int *fillers = xcalloc((size_t)limit, sizeof(int));
	int n_fillers = fill_fds(devnull, fillers, limit);

	/* Out of descriptors, a prompt request is answered: the idle connection gives way. */
	client_connect(prompt, port);
	client_send(prompt, "GET /ok HTTP/1.1\r\n\r\n");
	char *answer = wait_answer(l, prompt, 1000);
	bool idle_closed = client_closed(idle, NULL);
	/* The prompt connection's descriptor is free again: take it too. */
	n_fillers += fill_fds(devnull, fillers + n_fillers, limit - n_fillers);

	/* Nothing left to close: pending connections are dropped, and the loop stays idle. */
	for (int i = 0; i < PENDING; i++) {
		client_connect(pending[i], port);
		client_send(pending[i], "GET /ok HTTP/1.1\r\n\r\n");
	}
	long cpu0 = cpu_ms();
	uint64_t t0 = now_ms();
	int busy = 0, turns = 0;
	while (now_ms() < t0 + 1000) {
		busy += loop_run_once(l, 50) > 0;
		turns++;
	}
	long cpu = cpu_ms() - cpu0;
	int dropped = 0;
	for (int i = 0; i < PENDING; i++)
		dropped += client_closed(pending[i], NULL);

	for (int i = 0; i < n_fillers; i++)
		close(fillers[i]);
	close(devnull);
	free(fillers);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &saved), 0);
	print_message("out of descriptors: %d of %d loop turns had events, %ld ms CPU in 1 s; "
		      "%d of %d pending dropped\n",
		      busy, turns, cpu, dropped, PENDING);

	assert_true(busy <= 5);
	assert_true(cpu < 200);
	assert_ok(answer);
	assert_true(idle_closed);
	assert_int_equal(dropped, PENDING);
	httpd_get_stats(h, &st);
	assert_int_equal(st.dropped, PENDING);
	assert_int_equal(st.evicted, 1);

	/* Descriptors free again: served as before. */
	get_ok(l, port, 1000);
	close(idle);
	close(prompt);
	for (int i = 0; i < PENDING; i++)
		close(pending[i]);
	httpd_stop(h);
	loop_free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flood),
		cmocka_unit_test(test_request_deadline),
		cmocka_unit_test(test_answer_deadline),
		cmocka_unit_test(test_out_of_descriptors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
