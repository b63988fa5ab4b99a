/*
 * brindle-probe: real connections for tests, without depending on netcat
 * flavours. Run it inside a pod's namespace. IP is an IPv4 or IPv6 address;
 * the server listens on both families (one IPv6 socket per port, taking IPv4
 * too, where the namespace has IPv6; IPv4 only where it has not).
 *
 *   brindle-probe serve [--tcp PORT]... [--udp PORT]... [--sctp PORT]...
 *       echo server on every port given (TCP, UDP and SCTP), until killed
 *   brindle-probe tcp|sctp IP PORT [--timeout MS]
 *       connect and exchange one line: exit 0 when it works, 1 when refused
 *       or reset (an SCTP ABORT), 2 on timeout (what a DROP looks like)
 *   brindle-probe sctp-available
 *       exit 0 when this kernel has SCTP sockets
 *   brindle-probe udp IP PORT [--timeout MS]
 *       one datagram and its echo: exit 0, or 2 when no answer came
 *   brindle-probe hold IP PORT --seconds N [--interval MS]
 *       keep one TCP connection for N seconds, one echo every interval;
 *       prints "sent N lost M" and exits 0 only when nothing was lost
 *   brindle-probe ready IP PORT --timeout MS
 *       wait until a TCP connect succeeds (a server started)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_FDS 1024

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int usage(void)
{
	fprintf(stderr,
		"usage: brindle-probe serve [--tcp PORT]... [--udp PORT]... [--sctp PORT]...\n"
		"       brindle-probe tcp|udp|sctp IP PORT [--timeout MS]\n"
		"       brindle-probe sctp-available\n"
		"       brindle-probe hold IP PORT --seconds N [--interval MS]\n"
		"       brindle-probe ready IP PORT --timeout MS\n");
	return 64;
}

/* SCTP in the one-to-one style: a stream socket like TCP's, with IPPROTO_SCTP. */
static int listen_on(int type, int proto, int port)
{
	bool v6 = true;
	int fd = socket(AF_INET6, type | SOCK_CLOEXEC, proto);
	if (fd < 0 && errno == EAFNOSUPPORT) {
		v6 = false;
		fd = socket(AF_INET, type | SOCK_CLOEXEC, proto);
	}
	if (fd < 0)
		return -1;
	int one = 1, zero = 0;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sockaddr_storage ss;
	socklen_t len;
	memset(&ss, 0, sizeof(ss));
	if (v6) {
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)port);
		len = sizeof(*a);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;
		a->sin_family = AF_INET;
		a->sin_port = htons((uint16_t)port);
		len = sizeof(*a);
	}
	if (bind(fd, (struct sockaddr *)&ss, len) < 0 ||
	    (type == SOCK_STREAM && listen(fd, 128) < 0)) {
		fprintf(stderr, "brindle-probe: port %d: %s\n", port, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static int serve(int argc, char **argv)
{
	struct pollfd pf[MAX_FDS];
	bool is_listener[MAX_FDS], is_udp[MAX_FDS];
	int n = 0;
	for (int i = 0; i < argc; i++) {
		bool tcp = strcmp(argv[i], "--tcp") == 0, udp = strcmp(argv[i], "--udp") == 0;
		bool sctp = strcmp(argv[i], "--sctp") == 0;
		if ((!tcp && !udp && !sctp) || i + 1 >= argc || n >= MAX_FDS)
			return usage();
		int fd = listen_on(udp ? SOCK_DGRAM : SOCK_STREAM, sctp ? IPPROTO_SCTP : 0,
				   atoi(argv[++i]));
		if (fd < 0)
			return 1;
		pf[n] = (struct pollfd){ .fd = fd, .events = POLLIN };
		is_listener[n] = tcp || sctp;
		is_udp[n] = udp;
		n++;
	}
	signal(SIGPIPE, SIG_IGN);
	char buf[4096];
	for (;;) {
		if (poll(pf, (nfds_t)n, -1) < 0 && errno != EINTR)
			return 1;
		for (int i = 0; i < n; i++) {
			if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (is_listener[i]) {
				int c = accept4(pf[i].fd, NULL, NULL, SOCK_CLOEXEC);
				if (c >= 0 && n < MAX_FDS) {
					pf[n] = (struct pollfd){ .fd = c, .events = POLLIN };
					is_listener[n] = is_udp[n] = false;
					n++;
				} else if (c >= 0) {
					close(c);
				}
			} else if (is_udp[i]) {
				struct sockaddr_storage from;
				socklen_t fl = sizeof(from);
				ssize_t r = recvfrom(pf[i].fd, buf, sizeof(buf), 0,
						     (struct sockaddr *)&from, &fl);
				if (r > 0)
					sendto(pf[i].fd, buf, (size_t)r, 0, (struct sockaddr *)&from, fl);
			} else {
				ssize_t r = read(pf[i].fd, buf, sizeof(buf));
				if (r <= 0 || write(pf[i].fd, buf, (size_t)r) != r) {
					close(pf[i].fd);
					pf[i] = pf[--n];
					is_listener[i] = is_listener[n];
					is_udp[i] = is_udp[n];
					i--;
				}
			}
		}
	}
}

/* An address to connect to. */
struct peer {
	struct sockaddr_storage ss;
	socklen_t len;
};

static bool parse_addr(const char *ip, const char *port, struct peer *p)
{
	memset(p, 0, sizeof(*p));
	uint16_t n = htons((uint16_t)atoi(port));
	struct sockaddr_in *a4 = (struct sockaddr_in *)&p->ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&p->ss;
	if (inet_pton(AF_INET, ip, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = n;
		p->len = sizeof(*a4);
		return true;
	}
	if (inet_pton(AF_INET6, ip, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = n;
		p->len = sizeof(*a6);
		return true;
	}
	return false;
}

/* Wait for @fd to be readable (or writable) until @deadline: 1 ready, 0 timeout. */
static int wait_fd(int fd, short ev, long long deadline)
{
	for (;;) {
		long long left = deadline - now_ms();
		if (left <= 0)
			return 0;
		struct pollfd p = { .fd = fd, .events = ev };
		int r = poll(&p, 1, (int)left);
		if (r > 0)
			return 1;
		if (r < 0 && errno != EINTR)
			return -1;
	}
}

/* 0 connected, 1 refused/reset, 2 timeout. @proto: 0 (TCP) or IPPROTO_SCTP. */
static int stream_connect(const struct peer *a, int proto, long long deadline, int *out)
{
	int fd = socket(a->ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, proto);
	if (fd < 0)
		return 1;
	if (connect(fd, (const struct sockaddr *)&a->ss, a->len) < 0 && errno != EINPROGRESS) {
		close(fd);
		return 1;
	}
	if (wait_fd(fd, POLLOUT, deadline) <= 0) {
		close(fd);
		return 2;
	}
	int err = 0;
	socklen_t l = sizeof(err);
	getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &l);
	if (err) {
		close(fd);
		return err == ETIMEDOUT ? 2 : 1;
	}
	*out = fd;
	return 0;
}

/* One line there and back: 0 ok, 1 closed, 2 timeout. */
static int echo(int fd, const char *msg, long long deadline)
{
	size_t n = strlen(msg);
	if (send(fd, msg, n, MSG_NOSIGNAL) != (ssize_t)n)
		return 1;
	char buf[256];
	size_t got = 0;
	while (got < n) {
		int w = wait_fd(fd, POLLIN, deadline);
		if (w <= 0)
			return 2;
		ssize_t r = recv(fd, buf + got, sizeof(buf) - got, 0);
		if (r <= 0)
			return 1;
		got += (size_t)r;
	}
	return memcmp(buf, msg, n) == 0 ? 0 : 1;
}

static long opt_long(int argc, char **argv, const char *name, long def)
{
	for (int i = 0; i + 1 < argc; i++)
		if (strcmp(argv[i], name) == 0)
			return atol(argv[i + 1]);
	return def;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return usage();
	const char *cmd = argv[1];
	if (strcmp(cmd, "serve") == 0)
		return serve(argc - 2, argv + 2);
	if (strcmp(cmd, "sctp-available") == 0) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_SCTP);
		if (fd < 0)
			return 1;
		close(fd);
		return 0;
	}
	struct peer a;
	if (argc < 4 || !parse_addr(argv[2], argv[3], &a))
		return usage();
	long timeout = opt_long(argc, argv, "--timeout", 2000);
	long long deadline = now_ms() + timeout;
	signal(SIGPIPE, SIG_IGN);
	if (strcmp(cmd, "tcp") == 0 || strcmp(cmd, "sctp") == 0) {
		int fd, r = stream_connect(&a, cmd[0] == 's' ? IPPROTO_SCTP : 0, deadline, &fd);
		if (r)
			return r;
		r = echo(fd, "probe\n", deadline);
		close(fd);
		return r;
	}
	if (strcmp(cmd, "ready") == 0) {
		for (;;) {
			int fd, r = stream_connect(&a, 0, deadline, &fd);
			if (r == 0) {
				close(fd);
				return 0;
			}
			if (now_ms() >= deadline)
				return 2;
			usleep(50000);
		}
	}
	if (strcmp(cmd, "udp") == 0) {
		int fd = socket(a.ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (fd < 0 || connect(fd, (struct sockaddr *)&a.ss, a.len) < 0)
			return 1;
		int r = 2;
		/* a few tries: the first datagram may wait for ARP */
		for (int i = 0; i < 3 && r; i++) {
			long long step = now_ms() + timeout / 3;
			r = echo(fd, "probe\n", step < deadline ? step : deadline);
			if (r == 1)
				r = 2; /* ICMP unreachable shows as an error: treat as no answer */
		}
		close(fd);
		return r;
	}
	if (strcmp(cmd, "hold") == 0) {
		long secs = opt_long(argc, argv, "--seconds", 5);
		long interval = opt_long(argc, argv, "--interval", 100);
		int fd, r = stream_connect(&a, 0, now_ms() + 2000, &fd);
		if (r) {
			fprintf(stderr, "brindle-probe: cannot connect\n");
			return r;
		}
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		long long end = now_ms() + secs * 1000;
		unsigned sent = 0, lost = 0;
		while (now_ms() < end) {
			sent++;
			if (echo(fd, "hold\n", now_ms() + 1000) != 0) {
				lost++;
				break; /* a stream that failed once is gone */
			}
			usleep((useconds_t)interval * 1000);
		}
		close(fd);
		printf("sent %u lost %u\n", sent, lost);
		return lost ? 1 : 0;
	}
	return usage();
}
