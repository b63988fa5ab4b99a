/*
 * BIRD's control socket: the reply parser, `show protocols` (BIRD 2 and
 * BIRD 1 headings), session names, and the client against a scripted
 * server on a unix socket.
 */
#include "harness.h"

#include <brindle/core/bgp_names.h>
#include <brindle/sys/bird_ctl.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

/* As BIRD 2.0.12 answered `show protocols` (captured). */
static const char show_protocols[] =
	"2002-Name       Proto      Table      State  Since         Info\n"
	"1002-device1    Device     ---        up     03:24:59.843  \n"
	" direct1    Direct     ---        up     03:24:59.843  \n"
	" kernel4    Kernel     master4    up     03:24:59.843  \n"
	" brindle_static4 Static     master4    up     03:24:59.843  \n"
	" Mesh_10_99_0_2 BGP        ---        start  03:24:59.843  Active        Socket: "
	"Connection refused\n"
	" Global_10_99_0_1_port_1790 BGP        ---        up     2026-11-21 10:00:01  "
	"Established   \n"
	"0000 \n";

static void test_reply_parse(void **state)
{
	struct arena *a = arena_new();
	struct bird_reply r;
	size_t used;
	const char *two = "0001 BIRD 2.0.12 ready.\n0003 Reconfigured\n";
	assert_int_equal(bird_reply_parse(two, strlen(two), a, &r, &used), 1);
	assert_int_equal(used, strlen("0001 BIRD 2.0.12 ready.\n"));
	assert_int_equal(r.code, 1);
	assert_int_equal(r.n, 1);
	assert_string_equal(r.lines[0].text, "BIRD 2.0.12 ready.");
	assert_true(bird_reply_ok(&r));

	/* Partial input needs more, whatever the cut. */
	for (size_t cut = 0; cut < strlen(show_protocols); cut++)
		assert_int_equal(bird_reply_parse(show_protocols, cut, a, &r, &used), 0);
	assert_int_equal(bird_reply_parse(show_protocols, strlen(show_protocols), a, &r, &used), 1);
	assert_int_equal(used, strlen(show_protocols));
	assert_int_equal(r.n, 8);
	assert_int_equal(r.lines[0].code, 2002);
	assert_int_equal(r.lines[2].code, 1002); /* continuation keeps the code */
	assert_int_equal(r.code, 0);

	const char *err = "0002-Reading configuration from /etc/bird.conf\n"
			  "8002 /etc/bird.conf:3:1 syntax error, unexpected CF_SYM_UNDEFINED\n";
	assert_int_equal(bird_reply_parse(err, strlen(err), a, &r, &used), 1);
	assert_false(bird_reply_ok(&r));
	assert_int_equal(r.code, 8002);
	assert_string_equal(bird_reply_text(&r, a),
			    "Reading configuration from /etc/bird.conf\n"
			    "/etc/bird.conf:3:1 syntax error, unexpected CF_SYM_UNDEFINED");

	static const char *const bad[] = { "hello\n", " continued first\n", "12x4 x\n",
					   "0001-a\nnot a line\n", "\n" };
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		assert_int_equal(bird_reply_parse(bad[i], strlen(bad[i]), a, &r, &used), -EINVAL);
	arena_free(a);
}

static void test_show_protocols(void **state)
{
	struct arena *a = arena_new();
	struct bird_reply r;
	size_t used, n;
	struct bird_protocol *rows;
	assert_int_equal(bird_reply_parse(show_protocols, strlen(show_protocols), a, &r, &used), 1);
	assert_int_equal(bird_protocols_parse(&r, a, &rows, &n), 0);
	assert_int_equal(n, 6);
	assert_string_equal(rows[0].name, "device1");
	assert_string_equal(rows[0].info, "");
	assert_string_equal(rows[3].name, "brindle_static4");
	assert_string_equal(rows[3].proto, "Static");
	assert_string_equal(rows[4].name, "Mesh_10_99_0_2");
	assert_string_equal(rows[4].proto, "BGP");
	assert_string_equal(rows[4].state, "start");
	assert_string_equal(rows[4].since, "03:24:59.843");
	assert_string_equal(rows[4].info, "Active        Socket: Connection refused");
	assert_string_equal(rows[5].since, "2026-11-21 10:00:01");
	assert_string_equal(rows[5].info, "Established");

	/* BIRD 1's lower-case heading. */
	const char *v1 = "2002-name     proto    table    state  since       info\n"
			 "1002-Mesh_10_0_0_2 BGP      master   up     2026-01-01  Established\n"
			 "0000 \n";
	assert_int_equal(bird_reply_parse(v1, strlen(v1), a, &r, &used), 1);
	assert_int_equal(bird_protocols_parse(&r, a, &rows, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(rows[0].since, "2026-01-01");

	/* No protocols at all; an error reply; a row before the heading; a short row. */
	const char *empty = "2002-Name Proto Table State Since Info\n0000 \n";
	assert_int_equal(bird_reply_parse(empty, strlen(empty), a, &r, &used), 1);
	assert_int_equal(bird_protocols_parse(&r, a, &rows, &n), 0);
	assert_int_equal(n, 0);
	static const char *const bad[] = {
		"9001 syntax error, unexpected CF_SYM_UNDEFINED\n",
		"1002-x BGP --- up 1:00:00 Established\n0000 \n",
		"2002-Name Proto Table State Since Info\n1002-x BGP\n0000 \n",
		"2002-Name Proto Table State When Info\n0000 \n",
		"1000-BIRD 2.0.12\n0013 Daemon is up and running\n",
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		assert_int_equal(bird_reply_parse(bad[i], strlen(bad[i]), a, &r, &used), 1);
		assert_int_equal(bird_protocols_parse(&r, a, &rows, &n), -EINVAL);
	}
	arena_free(a);
}

static void test_session_names(void **state)
{
	static const struct {
		enum bgp_peer_type t;
		const char *ip;
		uint16_t port;
		const char *name;
	} cases[] = {
		{ BGP_PEER_MESH, "10.99.0.2", 0, "Mesh_10_99_0_2" },
		{ BGP_PEER_GLOBAL, "192.168.1.1", 1790, "Global_192_168_1_1_port_1790" },
		{ BGP_PEER_NODE, "fd00::1", 0, "Node_fd00__1" },
		{ BGP_PEER_NODE, "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", 65535,
		  "Node_2001_db8_ffff_ffff_ffff_ffff_ffff_ffff_port_65535" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct br_ip ip, back;
		char name[BGP_SESSION_NAME_MAX];
		enum bgp_peer_type t;
		uint16_t port;
		assert_int_equal(ip_parse(cases[i].ip, &ip), 0);
		bgp_session_name(cases[i].t, &ip, cases[i].port, name);
		assert_string_equal(name, cases[i].name);
		assert_true(bgp_session_name_parse(name, &t, &back, &port));
		assert_int_equal(t, cases[i].t);
		assert_true(ip_equal(&ip, &back));
		assert_int_equal(port, cases[i].port);
	}
	static const char *const not_ours[] = {
		"device1",
		"kernel4",
		"Mesh_",
		"Mesh_10_99_0",
		"Mesh_10_99_0_2_port_",
		"Mesh_10_99_0_2_port_0",
		"Mesh_10_99_0_2_port_70000",
		"Peer_10_0_0_1",
		"Mesh_010_99_0_2",
		"Global_fd00__1_port_17x",
	};
	for (size_t i = 0; i < ARRAY_SIZE(not_ours); i++) {
		enum bgp_peer_type t;
		struct br_ip ip;
		uint16_t port;
		assert_false(bgp_session_name_parse(not_ours[i], &t, &ip, &port));
	}
	assert_string_equal(bgp_peer_type_label(BGP_PEER_MESH), "node-to-node mesh");
}

/* A scripted BIRD: greets, then answers each command from @script in turn. */
struct fake {
	char dir[64];
	char path[128];
	pid_t pid;
};

static void serve(int lfd, const char *greeting, const char *const *replies, size_t n)
{
	int fd = accept(lfd, NULL, NULL);
	if (fd < 0)
		_exit(1);
	if (write(fd, greeting, strlen(greeting)) < 0)
		_exit(1);
	char buf[512];
	for (size_t i = 0; i < n; i++) {
		size_t got = 0;
		while (!memchr(buf, '\n', got)) {
			ssize_t r = read(fd, buf + got, sizeof(buf) - got);
			if (r <= 0)
				_exit(0);
			got += (size_t)r;
		}
		/* Split a reply in two writes to exercise reassembly. */
		size_t half = strlen(replies[i]) / 2;
		if (write(fd, replies[i], half) < 0)
			_exit(1);
		usleep(20000);
		if (write(fd, replies[i] + half, strlen(replies[i]) - half) < 0)
			_exit(1);
	}
	sleep(5); /* leave the connection open: a silent BIRD */
	_exit(0);
}

static void fake_start(struct fake *f, const char *greeting, const char *const *replies, size_t n)
{
	strcpy(f->dir, "/tmp/brindle-test-birdctl-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/bird.ctl", f->dir);
	int lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	strcpy(sun.sun_path, f->path);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	assert_int_equal(listen(lfd, 1), 0);
	f->pid = fork();
	assert_true(f->pid >= 0);
	if (f->pid == 0)
		serve(lfd, greeting, replies, n);
	close(lfd);
}

static void fake_stop(struct fake *f)
{
	kill(f->pid, SIGKILL);
	waitpid(f->pid, NULL, 0);
	unlink(f->path);
	rmdir(f->dir);
}

static void test_client(void **state)
{
	struct fake f;
	static const char *const replies[] = {
		show_protocols,
		"0002-Reading configuration from /x/bird.conf\n0003 Reconfigured\n",
	};
	fake_start(&f, "0001 BIRD 2.0.12 ready.\n", replies, ARRAY_SIZE(replies));
	struct bird_ctl *c;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	assert_int_equal(bird_ctl_open(f.path, 2000, &c, &err), 0);
	assert_string_equal(bird_ctl_greeting(c), "BIRD 2.0.12 ready.");
	struct arena *a = arena_new();
	struct bird_reply r;
	assert_int_equal(bird_ctl_command(c, "show protocols", a, &r, &err), 0);
	assert_int_equal(r.n, 8);
	assert_int_equal(bird_ctl_command(c, "configure", a, &r, &err), 0);
	assert_int_equal(r.code, 3);
	assert_int_equal(bird_ctl_command(c, "two\nlines", a, &r, &err), -EINVAL);
	/* The fake now stays silent: the timeout bounds the wait. */
	bird_ctl_close(c);
	assert_int_equal(bird_ctl_open(f.path, 200, &c, &err), -ETIMEDOUT);
	fake_stop(&f);

	/* Something else on the socket. */
	fake_start(&f, "220 smtp.example ESMTP\n", NULL, 0);
	sb_reset(&err);
	assert_int_equal(bird_ctl_open(f.path, 2000, &c, &err), -EPROTO);
	assert_non_null(strstr(sb_str(&err), "not a reply"));
	fake_stop(&f);

	/* Nobody there. */
	sb_reset(&err);
	assert_int_equal(bird_ctl_open("/nonexistent/bird.ctl", 200, &c, &err), -ENOENT);
	assert_non_null(strstr(sb_str(&err), "/nonexistent/bird.ctl"));
	arena_free(a);
	sb_free(&err);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reply_parse),
		cmocka_unit_test(test_show_protocols),
		cmocka_unit_test(test_session_names),
		cmocka_unit_test(test_client),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
