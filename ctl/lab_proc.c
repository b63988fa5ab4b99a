/*
 * The lab's processes and namespaces. Everything a lab creates is written
 * down in its state directory before it is created: <dir>/namespaces (one
 * network namespace per line) and <dir>/pids ("pid starttime name"), so that
 * lab down removes exactly the lab's own objects, also after a crash halfway
 * through lab up. A pid is killed only while its start time still matches
 * (pids are reused). Nothing here touches the root network namespace: links,
 * addresses and routes are made with `ip -n <lab namespace>`.
 */
#include "lab.h"

#include <brindle/core/util.h>
#include <brindle/paths.h>
#include <brindle/sys/install.h>
#include <brindle/sys/strbuf_file.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdnoreturn.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const char *lab_state_base(void)
{
	const char *e = getenv("BRINDLE_LAB_STATE_DIR");
	return e && e[0] ? e : "/run/brindle-lab";
}

void lab_init(struct lab *l, const char *name)
{
	*l = (struct lab){ .a = arena_new(), .name = name };
	l->dir = arena_printf(l->a, "%s/%s", lab_state_base(), name);
	l->etcd_sock = arena_printf(l->a, "%s/etcd/etcd.sock:0", l->dir);
	l->endpoints = arena_printf(l->a, "unix:%s", l->etcd_sock);
}

void lab_free(struct lab *l)
{
	if (l->admin) {
		ds_close(l->admin->ds);
		ds_config_free_storage(&l->admin->storage);
	}
	arena_free(l->a);
	l->a = NULL;
}

int lab_load(struct lab *l)
{
	struct strbuf text = STRBUF_INIT, err = STRBUF_INIT;
	sb_init(&text);
	sb_init(&err);
	const char *path = arena_printf(l->a, "%s/topology.yaml", l->dir);
	int r = sb_read_file(&text, path);
	if (r < 0) {
		if (r == -ENOENT)
			ctl_error("no lab \"%s\" on this machine (nothing in %s)", l->name, l->dir);
		else
			ctl_error("%s: %s", path, strerror(-r));
	} else if ((r = lab_topology_parse(l->a, path, text.buf, text.len, &l->topo, &err)) < 0) {
		fprintf(stderr, "%s", sb_str(&err));
	}
	sb_free(&text);
	sb_free(&err);
	return r;
}

/*
 * A program of the lab: the build tree's (@rel under it) when brindlectl runs
 * from the build tree, else the one under brindlectl's own install prefix
 * (@installed, a path of the install layout), else under the configured
 * prefix, else @fallback (a name looked up in PATH, or a path).
 */
static const char *find_bin(struct arena *a, const char *rel, const char *installed,
			    const char *fallback)
{
	if (install_in_build_tree(a)) {
		const char *p = arena_printf(a, "%s/%s", BRINDLE_BUILD_DIR, rel);
		if (access(p, X_OK) == 0)
			return p;
	}
	const char *p = install_find(a, installed, X_OK);
	return access(p, X_OK) == 0 ? p : fallback;
}

void lab_find_bins(struct arena *a, struct lab_bins *b)
{
	const char *sbin = BRINDLE_INSTALL_SBINDIR, *bin = BRINDLE_INSTALL_BINDIR;
	const char *cni = BRINDLE_INSTALL_CNI_BIN_DIR;
	b->felix = find_bin(a, "felix/brindle-felix", arena_printf(a, "%s/brindle-felix", sbin),
			    "brindle-felix");
	b->confd = find_bin(a, "confd/brindle-confd", arena_printf(a, "%s/brindle-confd", sbin),
			    "brindle-confd");
	b->node = find_bin(a, "node/brindle-node", arena_printf(a, "%s/brindle-node", sbin),
			   "brindle-node");
	b->controllers =
		find_bin(a, "controllers/brindle-controllers",
			 arena_printf(a, "%s/brindle-controllers", sbin), "brindle-controllers");
	b->probe = find_bin(a, "lab/brindle-probe", arena_printf(a, "%s/brindle-probe", bin),
			    "brindle-probe");
	/* A runtime's CNI_PATH: brindle-ipam is looked up next to brindle-cni. */
	b->cni = find_bin(a, "cni/brindle-cni", arena_printf(a, "%s/brindle-cni", cni),
			  "/opt/cni/bin/brindle-cni");
	b->cni_dir = arena_strndup(a, b->cni, (size_t)(strrchr(b->cni, '/') - b->cni));
	/* brindle-confd finds the templates that go with it (or BRINDLE_CONFD_TEMPLATES). */
}

const char *lab_file(struct arena *a, const char *src_rel, const char *installed, int mode)
{
	if (install_in_build_tree(a)) {
		const char *p = arena_printf(a, "%s/%s", BRINDLE_SOURCE_DIR, src_rel);
		if (access(p, mode) == 0)
			return p;
	}
	return install_find(a, installed, mode);
}

int lab_fail_errno(const char *what)
{
	int r = errno ? -errno : -EIO;
	ctl_error("%s: %s", what, strerror(-r));
	return r;
}

int lab_mkdirs(const char *path)
{
	int r = file_make_dirs(path);
	if (r < 0)
		ctl_error("%s: %s", path, strerror(-r));
	return r;
}

int lab_write_file(const char *path, const char *text, int mode)
{
	return file_write_whole(path, text, strlen(text), (mode_t)mode);
}

static int enter_netns(const char *ns)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "/run/netns/%s", ns);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = setns(fd, CLONE_NEWNET) < 0 ? -errno : 0;
	close(fd);
	return r;
}

/* In a child: its namespace, its view, then the program with its environment. */
static noreturn void exec_child(const struct lab_exec *x, char *const argv[])
{
	if (x->ns && enter_netns(x->ns) < 0) {
		fprintf(stderr, "cannot enter network namespace %s\n", x->ns);
		_exit(126);
	}
	if (x->view && lab_view_apply(x->view) < 0)
		_exit(126);
	if (x->envp)
		execvpe(argv[0], argv, x->envp);
	else
		execvp(argv[0], argv);
	fprintf(stderr, "%s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

int lab_run(const char *ns, char *const argv[], const char *input, struct strbuf *out)
{
	return lab_run_exec(&(struct lab_exec){ .ns = ns }, argv, input, out);
}

int lab_run_exec(const struct lab_exec *x, char *const argv[], const char *input,
		 struct strbuf *out)
{
	int in[2] = { -1, -1 }, o[2] = { -1, -1 };
	if (pipe2(in, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(o, O_CLOEXEC) < 0) {
		int r = -errno;
		close(in[0]);
		close(in[1]);
		return r;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		int r = -errno;
		close(in[0]);
		close(in[1]);
		close(o[0]);
		close(o[1]);
		return r;
	}
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(o[1], 1);
		dup2(o[1], 2);
		exec_child(x, argv);
	}
	close(in[0]);
	close(o[1]);
	if (input) {
		size_t n = strlen(input), done = 0;
		signal(SIGPIPE, SIG_IGN);
		while (done < n) {
			ssize_t w = write(in[1], input + done, n - done);
			if (w <= 0)
				break;
			done += (size_t)w;
		}
	}
	close(in[1]);
	char buf[4096];
	ssize_t r;
	while ((r = read(o[0], buf, sizeof(buf))) > 0 || (r < 0 && errno == EINTR))
		if (r > 0 && out)
			sb_add(out, buf, (size_t)r);
	close(o[0]);
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

int lab_runf(struct strbuf *out, const char *fmt, ...)
{
	struct strbuf line = STRBUF_INIT;
	sb_init(&line);
	va_list ap;
	va_start(ap, fmt);
	sb_vaddf(&line, fmt, ap);
	va_end(ap);
	char *argv[64];
	size_t n = 0;
	for (char *s = strtok(line.buf, " "); s && n + 1 < ARRAY_SIZE(argv); s = strtok(NULL, " "))
		argv[n++] = s;
	argv[n] = NULL;
	int r = lab_run(NULL, argv, NULL, out);
	sb_free(&line);
	return r;
}

int lab_state_append(struct lab *l, const char *file, const char *fmt, ...)
{
	const char *path = arena_printf(l->a, "%s/%s", l->dir, file);
	FILE *f = fopen(path, "ae");
	if (!f)
		return -errno;
	va_list ap;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	int r = fflush(f) == 0 && fsync(fileno(f)) == 0 ? 0 : -errno;
	fclose(f);
	return r;
}

/* Field 22 of /proc/<pid>/stat: when the process started (0 when it is gone). */
static unsigned long long start_time(pid_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	char *p = strrchr(buf, ')'); /* the command name may hold spaces */
	if (!p)
		return 0;
	unsigned long long v = 0;
	/* after ")": state is field 3; start time is field 22 */
	for (int field = 2; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	if (p)
		v = strtoull(p + 1, NULL, 10);
	return v;
}

static int spawn_in(struct lab *l, const char *ns, const char *log, char *const argv[],
		    bool restart)
{
	size_t n = 0;
	while (argv[n])
		n++;
	char **full = arena_new_array(l->a, char *, n + 5);
	size_t k = 0;
	if (ns) {
		full[k++] = "ip";
		full[k++] = "netns";
		full[k++] = "exec";
		full[k++] = (char *)ns;
	}
	for (size_t i = 0; i < n; i++)
		full[k++] = argv[i];
	full[k] = NULL;
	return lab_spawn_exec(l, &(struct lab_exec){ .restart = restart }, log, full);
}

int lab_spawn(struct lab *l, const char *ns, const char *log, char *const argv[])
{
	return spawn_in(l, ns, log, argv, false);
}

int lab_spawn_restarted(struct lab *l, const char *ns, const char *log, char *const argv[])
{
	return spawn_in(l, ns, log, argv, true);
}

/* The supervisor of a restarted daemon (lab_exec.restart): its child, and whether to stop. */
static volatile pid_t supervised;
static volatile sig_atomic_t supervisor_stop;

static void supervisor_signal(int sig)
{
	supervisor_stop = 1;
	if (supervised > 0)
		kill(supervised, sig);
}

/* Run @argv, and again a second after each exit, until SIGTERM or SIGINT. */
noreturn static void supervise(const struct lab_exec *x, char *const argv[])
{
	struct sigaction sa = { .sa_handler = supervisor_signal };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	while (!supervisor_stop) {
		pid_t pid = fork();
		if (pid < 0)
			_exit(126);
		if (pid == 0) {
			signal(SIGTERM, SIG_DFL);
			signal(SIGINT, SIG_DFL);
			exec_child(x, argv);
		}
		supervised = pid;
		int status = 0;
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		supervised = 0;
		if (supervisor_stop)
			break;
		char msg[160];
		int n = snprintf(msg, sizeof(msg),
				 "brindlectl lab: %s exited (%s %d); starting it again in 1 s\n",
				 argv[0], WIFSIGNALED(status) ? "signal" : "status",
				 WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
		if (write(1, msg, (size_t)MIN(n, (int)sizeof(msg) - 1)) < 0)
			_exit(1);
		struct timespec ts = { 1, 0 };
		while (!supervisor_stop && nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
	}
	_exit(0);
}

int lab_spawn_exec(struct lab *l, const struct lab_exec *x, const char *log, char *const argv[])
{
	const char *logpath = arena_printf(l->a, "%s/%s.log", l->dir, log);
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		setsid();
		int in = open("/dev/null", O_RDONLY);
		int out = open(logpath, O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (in < 0 || out < 0)
			_exit(126);
		dup2(in, 0);
		dup2(out, 1);
		dup2(out, 2);
		if (x->restart)
			supervise(x, argv);
		exec_child(x, argv);
	}
	/* the start time is the same after exec: it identifies this process from now on */
	unsigned long long st = 0;
	for (int i = 0; i < 100 && !(st = start_time(pid)); i++)
		usleep(1000);
	return lab_state_append(l, "pids", "%d %llu %s\n", (int)pid, st, log);
}

int lab_netns_add(struct lab *l, const char *ns)
{
	int r = lab_state_append(l, "namespaces", "%s\n", ns);
	if (r < 0)
		return r;
	struct strbuf out = STRBUF_INIT;
	sb_init(&out);
	r = lab_runf(&out, "ip netns add %s", ns);
	if (r == 0)
		r = lab_runf(&out, "ip -n %s link set lo up", ns);
	if (r != 0)
		ctl_error("network namespace %s: %s", ns, sb_str(&out));
	sb_free(&out);
	return r == 0 ? 0 : -EIO;
}

static char *read_state(struct lab *l, const char *file)
{
	struct strbuf sb = STRBUF_INIT;
	sb_init(&sb);
	if (sb_read_file(&sb, arena_printf(l->a, "%s/%s", l->dir, file)) < 0) {
		sb_free(&sb);
		return NULL;
	}
	char *s = arena_strdup(l->a, sb_str(&sb));
	sb_free(&sb);
	return s;
}

static void kill_recorded(struct lab *l)
{
	char *pids = read_state(l, "pids");
	if (!pids)
		return;
	struct {
		pid_t pid;
		unsigned long long st;
	} v[512];
	size_t n = 0;
	for (char *line = strtok(pids, "\n"); line && n < ARRAY_SIZE(v);
	     line = strtok(NULL, "\n")) {
		int pid;
		unsigned long long st;
		if (sscanf(line, "%d %llu", &pid, &st) == 2 && pid > 1 && st &&
		    start_time(pid) == st) {
			v[n].pid = pid;
			v[n++].st = st;
			kill(pid, SIGTERM);
		}
	}
	/* up to 5 s for a clean exit, then KILL */
	for (int round = 0; round < 50; round++) {
		bool alive = false;
		for (size_t i = 0; i < n; i++) {
			if (!v[i].st)
				continue;
			waitpid(v[i].pid, NULL, WNOHANG);
			if (start_time(v[i].pid) != v[i].st)
				v[i].st = 0;
			else
				alive = true;
		}
		if (!alive)
			return;
		usleep(100000);
	}
	for (size_t i = 0; i < n; i++)
		if (v[i].st && start_time(v[i].pid) == v[i].st)
			kill(v[i].pid, SIGKILL);
}

void lab_teardown(struct lab *l)
{
	kill_recorded(l);
	char *nss = read_state(l, "namespaces"), *save = NULL;
	for (char *ns = nss ? strtok_r(nss, "\n", &save) : NULL; ns;
	     ns = strtok_r(NULL, "\n", &save)) {
		/* whatever still runs inside a namespace of the lab is the lab's */
		struct strbuf out = STRBUF_INIT;
		sb_init(&out);
		char *psave = NULL;
		if (lab_runf(&out, "ip netns pids %s", ns) == 0 && out.len) {
			for (char *p = strtok_r(out.buf, "\n", &psave); p;
			     p = strtok_r(NULL, "\n", &psave))
				/* not ourselves: a command of a Kubernetes lab runs in its fabric
				 */
				if (atoi(p) > 1 && atoi(p) != getpid())
					kill(atoi(p), SIGKILL);
		}
		sb_reset(&out);
		(void)lab_runf(&out, "ip netns del %s", ns);
		sb_free(&out);
	}
	char *argv[] = { "rm", "-rf", "--", (char *)l->dir, NULL };
	(void)lab_run(NULL, argv, NULL, NULL);
}

/* "name:PROTO:port,..." ("-" for none, name "-" for serve entries); bad entries skipped. */
static void parse_ports(struct lab *l, char *s, struct lab_pod_state *ps)
{
	size_t n = 0;
	for (char *c = s; c && *c; c++)
		n += *c == ',';
	ps->ports = arena_new_array(l->a, struct lab_port, n + 1);
	ps->n_ports = 0;
	if (!s || streq(s, "-"))
		return;
	char *save = NULL;
	for (char *e = strtok_r(s, ",", &save); e; e = strtok_r(NULL, ",", &save)) {
		char *name = e, *proto = strchr(e, ':'),
		     *port = proto ? strchr(proto + 1, ':') : NULL;
		if (!port)
			continue;
		*proto++ = '\0';
		*port++ = '\0';
		struct lab_port *p = &ps->ports[ps->n_ports];
		unsigned long v = strtoul(port, NULL, 10);
		if (!lab_proto_parse(proto, &p->proto) || v == 0 || v > 65535)
			continue;
		p->port = (uint16_t)v;
		p->name = streq(name, "-") ? NULL : name;
		ps->n_ports++;
	}
}

int lab_state_drop(struct lab *l, const char *file, const char *prefix)
{
	char *text = read_state(l, file);
	if (!text)
		return -ENOENT;
	const char *path = arena_printf(l->a, "%s/%s", l->dir, file);
	const char *tmp = arena_printf(l->a, "%s.tmp", path);
	FILE *f = fopen(tmp, "we");
	if (!f)
		return -errno;
	size_t plen = strlen(prefix);
	char *save = NULL;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (strncmp(line, prefix, plen) != 0)
			fprintf(f, "%s\n", line);
	int r = fflush(f) == 0 && fsync(fileno(f)) == 0 ? 0 : -errno;
	fclose(f);
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	return r;
}

void lab_kill_log(struct lab *l, const char *log)
{
	char *pids = read_state(l, "pids"), *save = NULL;
	pid_t v[64];
	unsigned long long st[64];
	size_t n = 0;
	for (char *line = pids ? strtok_r(pids, "\n", &save) : NULL; line && n < ARRAY_SIZE(v);
	     line = strtok_r(NULL, "\n", &save)) {
		int pid;
		unsigned long long s;
		char name[256];
		if (sscanf(line, "%d %llu %255s", &pid, &s, name) == 3 && streq(name, log) &&
		    pid > 1 && s && start_time(pid) == s) {
			kill(pid, SIGTERM);
			v[n] = pid;
			st[n++] = s;
		}
	}
	for (int round = 0; round < 30; round++) {
		bool alive = false;
		for (size_t i = 0; i < n; i++) {
			waitpid(v[i], NULL, WNOHANG);
			alive |= start_time(v[i]) == st[i];
		}
		if (!alive)
			return;
		usleep(100000);
	}
	for (size_t i = 0; i < n; i++)
		if (start_time(v[i]) == st[i])
			kill(v[i], SIGKILL);
}

int lab_read_pods(struct lab *l, struct lab_pod_state **out, size_t *n)
{
	char *text = read_state(l, "pods");
	*out = NULL;
	*n = 0;
	if (!text)
		return 0;
	size_t cap = 0;
	struct lab_pod_state *v = NULL;
	char *save = NULL;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *ref = strtok_r(line, " ", &line), *node = strtok_r(NULL, " ", &line),
		     *ip = strtok_r(NULL, " ", &line), *netns = strtok_r(NULL, " ", &line),
		     *ports = strtok_r(NULL, " ", &line);
		if (!ref || !node || !ip || !netns || !strchr(ref, '/'))
			continue;
		GROW(v, cap, *n + 1);
		/* a dual-stack pod's addresses: "IPV4,IPV6" */
		char *comma = strchr(ip, ',');
		if (comma)
			*comma = '\0';
		v[*n] = (struct lab_pod_state){ .ref = ref,
						.node = node,
						.ip = ip,
						.ip6 = comma ? comma + 1 : NULL,
						.netns = netns };
		parse_ports(l, ports, &v[*n]);
		(*n)++;
	}
	if (*n) {
		*out = arena_memdup(l->a, v, sizeof(*v) * *n);
	}
	free(v);
	return 0;
}

const char *lab_rule_backend(const struct lab_topology *t)
{
	if (t->rule_backend)
		return t->rule_backend;
	const char *v = getenv("BRINDLE_LAB_RULE_BACKEND");
	if (!v || !*v)
		return NULL;
	return strcasecmp(v, "nft") == 0 ? "NFT" : strcasecmp(v, "legacy") == 0 ? "Legacy" : "Auto";
}

/*
 * Whether this kernel has SCTP sockets (the project's machines: no; Debian's own kernel, as
 * in the VM tier: yes). Without them SCTP ports are not served and SCTP probes are skipped.
 */
static bool lab_sctp(void)
{
	static int have = -1;
	if (have < 0) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_SCTP);
		have = fd >= 0;
		if (fd >= 0)
			close(fd);
	}
	return have;
}

bool lab_proto_skipped(enum lab_proto p)
{
	return p == LAB_SCTP && !lab_sctp();
}

const char *lab_probe_flag(enum lab_proto p)
{
	return p == LAB_TCP ? "--tcp" : p == LAB_UDP ? "--udp" : "--sctp";
}

const char *lab_probe_cmd(enum lab_proto p)
{
	return p == LAB_TCP ? "tcp" : p == LAB_UDP ? "udp" : "sctp";
}
