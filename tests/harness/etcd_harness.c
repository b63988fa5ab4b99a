/*
 * Test etcd launcher: fork/exec of the installed etcd with a private data
 * directory. Readiness is a range through the Brindle client (the harness
 * needs no HTTP of its own). Every live child is on a list that an atexit
 * handler kills and cleans, for tests that stop half-way.
 */
#include "etcd_harness.h"

#include <brindle/sys/etcd.h>
#include <brindle/core/util.h>
#include <brindle/sys/clock.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define START_TIMEOUT_MS 20000
#define STOP_TIMEOUT_MS	 5000
#define PORT_TRIES	 5

struct etcd_proc {
	struct etcd_proc_opts opts;
	char dir[64];
	char endpoint[128];
	char ca[128], cert[128], key[128];
	int port;
	pid_t pid;
	char token[64]; /* --initial-cluster-token; empty: etcd's default */
	struct etcd_proc *next;
};

static struct etcd_proc *live_procs;
static bool atexit_done;

static void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	remove(path);
	return 0;
}

static void rm_rf(const char *dir)
{
	if (dir[0])
		nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void kill_now(struct etcd_proc *p)
{
	if (p->pid > 0) {
		kill(p->pid, SIGKILL);
		waitpid(p->pid, NULL, 0);
		p->pid = 0;
	}
}

static void cleanup_all(void)
{
	for (struct etcd_proc *p = live_procs; p; p = p->next) {
		kill_now(p);
		rm_rf(p->dir);
	}
	live_procs = NULL;
}

/* Runs @argv in @dir with output appended to @log; 0 when it exits 0. */
static int run_in(const char *dir, const char *log, char *const argv[])
{
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		if (chdir(dir) < 0)
			_exit(126);
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (fd < 0 || null < 0 || dup2(null, 0) < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(126);
		execvp(argv[0], argv);
		_exit(127);
	}
	int st;
	if (waitpid(pid, &st, 0) < 0)
		return -errno;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EIO;
}

static int write_file(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	if (!f)
		return -errno;
	fputs(text, f);
	return fclose(f) == 0 ? 0 : -EIO;
}

/* Runs "openssl ARGS" in @dir; ARGS are separated by single spaces. */
static int openssl(const char *dir, const char *fmt, ...) printf_like(2, 3);
static int openssl(const char *dir, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	char *argv[32] = { "openssl" };
	size_t n = 1;
	char *save;
	for (char *t = strtok_r(line, " ", &save); t && n < ARRAY_SIZE(argv) - 1;
	     t = strtok_r(NULL, " ", &save))
		argv[n++] = t;
	argv[n] = NULL;
	return run_in(dir, "openssl.log", argv);
}

#define EC_KEY "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"

/* A CA, a server certificate for 127.0.0.1/localhost and a client certificate. */
static int make_certs(struct etcd_proc *p)
{
	static const struct {
		const char *name, *subject, *ext;
	} certs[] = {
		{ "server", "localhost",
		  "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
		  "extendedKeyUsage=serverAuth,clientAuth\n"
		  "keyUsage=critical,digitalSignature\n" },
		{ "client", "brindle-test-client",
		  "extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature\n" },
	};
	int r = openssl(p->dir, "req -x509 " EC_KEY " -keyout ca.key -out ca.crt"
				" -subj /CN=brindle-test-ca -days 2");
	for (size_t i = 0; r == 0 && i < ARRAY_SIZE(certs); i++) {
		const char *n = certs[i].name;
		char ext[32];
		snprintf(ext, sizeof(ext), "%s.ext", n);
		r = write_file(p->dir, ext, certs[i].ext);
		if (r == 0)
			r = openssl(p->dir,
				    "req " EC_KEY " -keyout %s.key -out %s.csr -subj /CN=%s", n, n,
				    certs[i].subject);
		if (r == 0)
			r = openssl(p->dir,
				    "x509 -req -in %s.csr -CA ca.crt -CAkey ca.key -CAcreateserial"
				    " -out %s.crt -days 2 -extfile %s",
				    n, n, ext);
	}
	if (r < 0)
		return r;
	snprintf(p->ca, sizeof(p->ca), "%s/ca.crt", p->dir);
	snprintf(p->cert, sizeof(p->cert), "%s/client.crt", p->dir);
	snprintf(p->key, sizeof(p->key), "%s/client.key", p->dir);
	return 0;
}

static int free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int r = 0;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) < 0)
		r = -errno;
	close(fd);
	return r < 0 ? r : ntohs(sa.sin_port);
}

static int spawn(struct etcd_proc *p)
{
	char client_url[96], data[96], srv_crt[96], srv_key[96];
	if (p->opts.tcp)
		snprintf(client_url, sizeof(client_url), "%s://127.0.0.1:%d",
			 p->opts.tls ? "https" : "http", p->port);
	else
		snprintf(client_url, sizeof(client_url), "unix://etcd.sock:0");
	snprintf(data, sizeof(data), "%s/data", p->dir);
	snprintf(srv_crt, sizeof(srv_crt), "%s/server.crt", p->dir);
	snprintf(srv_key, sizeof(srv_key), "%s/server.key", p->dir);
	char *argv[40] = { "etcd", "--name", "brindle-test", "--data-dir", data,
			   "--listen-client-urls", client_url, "--advertise-client-urls",
			   client_url, "--listen-peer-urls", "unix://peer.sock:0",
			   "--initial-advertise-peer-urls", "unix://peer.sock:0",
			   "--initial-cluster", "brindle-test=unix://peer.sock:0", "--logger",
			   "zap", "--log-level", "error", "--log-outputs", "stderr",
			   /* One member: elect it at once. */
			   "--heartbeat-interval", "10", "--election-timeout", "100",
			   /* Progress notifications often enough for tests to see them. */
			   "--experimental-watch-progress-notify-interval", "500ms" };
	size_t n = 0;
	while (argv[n])
		n++;
	if (p->token[0]) {
		argv[n++] = "--initial-cluster-token";
		argv[n++] = p->token;
	}
	if (p->opts.tls) {
		char *tls[] = { "--cert-file",	     srv_crt, "--key-file",	   srv_key,
				"--trusted-ca-file", p->ca,   "--client-cert-auth" };
		for (size_t i = 0; i < ARRAY_SIZE(tls); i++)
			argv[n++] = tls[i];
	}
	argv[n] = NULL;

	/* Stale sockets of a killed run would stop etcd from listening. */
	char sock[128];
	snprintf(sock, sizeof(sock), "%s/etcd.sock:0", p->dir);
	unlink(sock);
	snprintf(sock, sizeof(sock), "%s/peer.sock:0", p->dir);
	unlink(sock);

	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(125);
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		if (chdir(p->dir) < 0)
			_exit(126);
		int fd = open("etcd.log", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (fd < 0 || null < 0 || dup2(null, 0) < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(126);
		/* The test's sockets (clients, fake servers) stay the test's. */
		close_range(3, ~0U, 0);
		execvp(argv[0], argv);
		_exit(127);
	}
	p->pid = pid;
	return 0;
}

/* Until a range answers; -ECHILD if etcd exits first (a port taken, say). */
static int wait_ready(struct etcd_proc *p)
{
	const char *eps[] = { p->endpoint };
	struct etcd_config cfg = {
		.endpoints = eps,
		.n_endpoints = 1,
		.ca_file = p->opts.tls ? p->ca : NULL,
		.cert_file = p->opts.tls ? p->cert : NULL,
		.key_file = p->opts.tls ? p->key : NULL,
		.timeout_ms = 1000,
		.connect_timeout_ms = 300,
	};
	struct etcd *e;
	int r = etcd_new(&cfg, &e, NULL);
	if (r < 0)
		return r;
	uint64_t deadline = now_ms() + START_TIMEOUT_MS;
	r = -ETIMEDOUT;
	while (now_ms() < deadline) {
		if (waitpid(p->pid, NULL, WNOHANG) == p->pid) {
			p->pid = 0;
			r = -ECHILD;
			break;
		}
		struct etcd_kv kv;
		int g = etcd_get(e, "/brindle-harness-probe", &kv);
		if (g == 0)
			etcd_kv_clear(&kv);
		if (g == 0 || g == -ENOENT) {
			r = 0;
			break;
		}
		sleep_ms(20);
	}
	etcd_free(e);
	if (r == -ETIMEDOUT)
		fprintf(stderr, "etcd in %s did not answer within %d ms (see etcd.log)\n", p->dir,
			START_TIMEOUT_MS);
	return r;
}

static void set_endpoint(struct etcd_proc *p)
{
	if (p->opts.tcp)
		snprintf(p->endpoint, sizeof(p->endpoint), "%s://127.0.0.1:%d",
			 p->opts.tls ? "https" : "http", p->port);
	else
		snprintf(p->endpoint, sizeof(p->endpoint), "unix:%s/etcd.sock:0", p->dir);
}

static int launch(struct etcd_proc *p)
{
	int r = spawn(p);
	if (r == 0)
		r = wait_ready(p);
	if (r < 0)
		kill_now(p);
	return r;
}

int etcd_proc_start(const struct etcd_proc_opts *opts, struct etcd_proc **out)
{
	struct etcd_proc *p = xcalloc(1, sizeof(*p));
	if (opts)
		p->opts = *opts;
	if (p->opts.tls)
		p->opts.tcp = true;
	snprintf(p->dir, sizeof(p->dir), "/tmp/brindle-test-XXXXXX");
	if (!mkdtemp(p->dir)) {
		int r = -errno;
		free(p);
		return r;
	}
	if (!atexit_done) {
		atexit(cleanup_all);
		atexit_done = true;
	}
	p->next = live_procs;
	live_procs = p;
	int r = p->opts.tls ? make_certs(p) : 0;
	for (int tries = 1; r == 0; tries++) {
		if (p->opts.tcp) {
			p->port = free_port();
			if (p->port < 0) {
				r = p->port;
				break;
			}
		}
		set_endpoint(p);
		r = launch(p);
		/* etcd exits at once when someone took the port meanwhile: try another. */
		if (r != -ECHILD || !p->opts.tcp || tries == PORT_TRIES)
			break;
		r = 0;
	}
	if (r < 0) {
		etcd_proc_destroy(p);
		return r;
	}
	*out = p;
	return 0;
}

const char *etcd_proc_endpoint(const struct etcd_proc *p)
{
	return p->endpoint;
}

const char *etcd_proc_ca(const struct etcd_proc *p)
{
	return p->opts.tls ? p->ca : NULL;
}

const char *etcd_proc_cert(const struct etcd_proc *p)
{
	return p->opts.tls ? p->cert : NULL;
}

const char *etcd_proc_key(const struct etcd_proc *p)
{
	return p->opts.tls ? p->key : NULL;
}

const char *etcd_proc_dir(const struct etcd_proc *p)
{
	return p->dir;
}

int etcd_proc_stop(struct etcd_proc *p)
{
	if (p->pid <= 0)
		return 0;
	kill(p->pid, SIGTERM);
	uint64_t deadline = now_ms() + STOP_TIMEOUT_MS;
	while (now_ms() < deadline) {
		pid_t r = waitpid(p->pid, NULL, WNOHANG);
		if (r == p->pid || (r < 0 && errno == ECHILD)) {
			p->pid = 0;
			return 0;
		}
		sleep_ms(10);
	}
	kill_now(p);
	return 0;
}

int etcd_proc_restart(struct etcd_proc *p)
{
	etcd_proc_stop(p);
	return launch(p);
}

int etcd_proc_rebuild(struct etcd_proc *p, const char *cluster_token)
{
	etcd_proc_stop(p);
	char data[96];
	snprintf(data, sizeof(data), "%s/data", p->dir);
	rm_rf(data);
	snprintf(p->token, sizeof(p->token), "%s", cluster_token ? cluster_token : "");
	return launch(p);
}

void etcd_proc_destroy(struct etcd_proc *p)
{
	if (!p)
		return;
	etcd_proc_stop(p);
	rm_rf(p->dir);
	for (struct etcd_proc **pp = &live_procs; *pp; pp = &(*pp)->next) {
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	}
	free(p);
}
