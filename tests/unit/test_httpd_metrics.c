/* The health/metrics HTTP server (on loopback) and the Prometheus registry. */
#include "harness.h"

#include <brindle/sys/httpd.h>
#include <brindle/sys/loop.h>
#include <brindle/core/metrics.h>
#include <brindle/sys/clock.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

static void test_render(void **state)
{
	struct metrics *r = metrics_new();
	struct metric *c = metrics_counter(r, "brindle_errors_total", "Errors by kind.", "kind");
	struct metric *g = metrics_gauge(r, "brindle_routes", "Routes programmed.", NULL);
	const double b[] = { 0.001, 0.01, 0.1 };
	struct metric *h = metrics_histogram(r, "brindle_apply_seconds", "Apply time.", NULL, b, 3);
	struct metric *z = metrics_counter(r, "brindle_resyncs_total", "Resyncs.", NULL);
	metric_add(c, "netlink", 2);
	metric_add(c, "ipip \"unsupported\"", 1);
	metric_set(g, NULL, 12);
	metric_observe(h, NULL, 0.005);
	metric_observe(h, NULL, 0.5);
	struct strbuf sb = STRBUF_INIT;
	sb_init(&sb);
	metrics_render(r, &sb);
	assert_string_equal(sb_str(&sb),
			    "# HELP brindle_apply_seconds Apply time.\n"
			    "# TYPE brindle_apply_seconds histogram\n"
			    "brindle_apply_seconds_bucket{le=\"0.001\"} 0\n"
			    "brindle_apply_seconds_bucket{le=\"0.01\"} 1\n"
			    "brindle_apply_seconds_bucket{le=\"0.1\"} 1\n"
			    "brindle_apply_seconds_bucket{le=\"+Inf\"} 2\n"
			    "brindle_apply_seconds_sum 0.505\n"
			    "brindle_apply_seconds_count 2\n"
			    "# HELP brindle_errors_total Errors by kind.\n"
			    "# TYPE brindle_errors_total counter\n"
			    "brindle_errors_total{kind=\"ipip \\\"unsupported\\\"\"} 1\n"
			    "brindle_errors_total{kind=\"netlink\"} 2\n"
			    "# HELP brindle_resyncs_total Resyncs.\n"
			    "# TYPE brindle_resyncs_total counter\n"
			    "brindle_resyncs_total 0\n"
			    "# HELP brindle_routes Routes programmed.\n"
			    "# TYPE brindle_routes gauge\n"
			    "brindle_routes 12\n");
	assert_true(metric_value(c, "netlink") == 2);
	assert_true(metric_value(z, NULL) == 0);
	sb_free(&sb);
	metrics_free(r);
}

/* Quantiles by nearest rank over the last METRICS_SUMMARY_WINDOW observations, with labels. */
static void test_summary(void **state)
{
	struct metrics *r = metrics_new();
	struct metric *s = metrics_summary(r, "felix_int_dataplane_apply_time_seconds",
					   "Time to apply.", "table");
	struct strbuf sb = STRBUF_INIT;
	sb_init(&sb);
	metrics_render(r, &sb);
	assert_string_equal(sb_str(&sb),
			    "# HELP felix_int_dataplane_apply_time_seconds Time to apply.\n"
			    "# TYPE felix_int_dataplane_apply_time_seconds summary\n");
	/* 1..100: the median 50, the 90th 90, the 99th 99 */
	for (int i = 100; i >= 1; i--)
		metric_observe(s, "filter", i);
	sb_reset(&sb);
	metrics_render(r, &sb);
	assert_non_null(
		strstr(sb_str(&sb),
		       "felix_int_dataplane_apply_time_seconds{table=\"filter\","
		       "quantile=\"0.5\"} 50\n"
		       "felix_int_dataplane_apply_time_seconds{table=\"filter\","
		       "quantile=\"0.9\"} 90\n"
		       "felix_int_dataplane_apply_time_seconds{table=\"filter\","
		       "quantile=\"0.99\"} 99\n"
		       "felix_int_dataplane_apply_time_seconds_sum{table=\"filter\"} 5050\n"
		       "felix_int_dataplane_apply_time_seconds_count{table=\"filter\"} 100\n"));
	/* the window forgets: after a window of 1000s, every quantile is 1000, the count all */
	for (int i = 0; i < METRICS_SUMMARY_WINDOW; i++)
		metric_observe(s, "filter", 1000);
	sb_reset(&sb);
	metrics_render(r, &sb);
	assert_non_null(strstr(sb_str(&sb), "quantile=\"0.5\"} 1000\n"));
	assert_non_null(strstr(sb_str(&sb), "quantile=\"0.99\"} 1000\n"));
	assert_true(metric_value(s, "filter") == 100 + METRICS_SUMMARY_WINDOW);
	/* a series without observations says NaN */
	metric_set(s, "nat", 0);
	sb_reset(&sb);
	metrics_render(r, &sb);
	assert_non_null(strstr(sb_str(&sb), "{table=\"nat\",quantile=\"0.9\"} NaN\n"));
	sb_free(&sb);
	metrics_free(r);
	(void)state;
}

static void handler(void *ctx, const char *path, struct httpd_response *resp)
{
	if (strcmp(path, "/readiness") == 0) {
		resp->status = 503;
		sb_adds(&resp->body, "not in sync\n");
	} else if (strcmp(path, "/big") == 0) {
		resp->status = 200;
		for (int i = 0; i < 100000; i++)
			sb_adds(&resp->body, "0123456789");
	}
}

struct client {
	int fd;
	struct strbuf got;
	bool done;
};

static void client_io(struct loop *l, int fd, uint32_t ev, void *ctx)
{
	struct client *c = ctx;
	char buf[65536];
	ssize_t n = read(fd, buf, sizeof(buf));
	if (n > 0)
		sb_add(&c->got, buf, (size_t)n);
	else if (n == 0 || (errno != EAGAIN && errno != EINTR))
		c->done = true;
}

static char *get(struct loop *l, uint16_t port, const char *request)
{
	struct client c = { .fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0) };
	sb_init(&c.got);
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	assert_int_equal(connect(c.fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(write(c.fd, request, strlen(request)), (ssize_t)strlen(request));
	fcntl(c.fd, F_SETFL, O_NONBLOCK);
	assert_int_equal(loop_add_fd(l, c.fd, EPOLLIN, client_io, &c), 0);
	uint64_t deadline = now_ms() + 5000;
	while (!c.done && now_ms() < deadline)
		loop_run_once(l, 50);
	assert_true(c.done);
	loop_del_fd(l, c.fd);
	close(c.fd);
	return sb_detach(&c.got);
}

static void test_server(void **state)
{
	struct loop *l = loop_new();
	struct httpd *h;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	assert_int_equal(httpd_start(l, "localhost", 0, handler, NULL, &h, &err), 0);
	uint16_t port = httpd_port(h);
	assert_true(port > 0);
	char *r = get(l, port, "GET /readiness HTTP/1.1\r\nHost: x\r\n\r\n");
	assert_true(str_has_prefix(r, "HTTP/1.1 503 Service Unavailable\r\n"));
	assert_true(str_has_suffix(r, "\r\n\r\nnot in sync\n"));
	free(r);
	r = get(l, port, "GET /nope?x=1 HTTP/1.0\r\n\r\n");
	assert_true(str_has_prefix(r, "HTTP/1.1 404 Not Found\r\n"));
	free(r);
	r = get(l, port, "POST /readiness HTTP/1.1\r\n\r\n");
	assert_true(str_has_prefix(r, "HTTP/1.1 405"));
	free(r);
	/* A large answer is written without blocking the loop. */
	r = get(l, port, "GET /big HTTP/1.1\r\n\r\n");
	assert_non_null(strstr(r, "Content-Length: 1000000\r\n"));
	assert_int_equal(strlen(strstr(r, "\r\n\r\n") + 4), 1000000);
	free(r);
	assert_int_equal(httpd_start(l, "not-an-ip", 0, handler, NULL, &h, &err), -EINVAL);
	httpd_stop(h);
	sb_free(&err);
	loop_free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_render),
		cmocka_unit_test(test_summary),
		cmocka_unit_test(test_server),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
