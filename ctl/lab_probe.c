/*
 * lab probe and lab matrix: new connections from inside one part of a lab to
 * another's own address, made by brindle-probe run in the source's network
 * namespace (entered with setns, no `ip netns exec`, so hundreds stay cheap),
 * many at once. TCP is allowed when the handshake and one echo complete
 * within the timeout, UDP when a datagram's echo comes back; SCTP as TCP where
 * the kernel has SCTP sockets, else skipped (lab_sctp). Verdicts never change the exit status;
 * only a probe that could not be run does.
 */
#include "lab.h"

#include <brindle/core/json.h>
#include <brindle/sys/clock.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_RUNNING 64

struct endpoint {
	const char *given; /* as the user wrote it, echoed back */
	const char *netns;
	const char *ip;		      /* NULL: it has no IPv4 address */
	const char *ip6;	      /* NULL: it has no IPv6 address */
	const struct lab_port *ports; /* what it serves (matrix defaults) */
	size_t n_ports;
	int family; /* ip:ADDRESS: the address's family (4 or 6), probes' default; else 0 */
};

enum verdict {
	V_ALLOWED,
	V_DENIED,
	V_SKIPPED,
	V_ERROR
};

static const char *const verdict_names[] = { "allowed", "denied", "skipped", "error" };

struct probe {
	const struct endpoint *from, *to;
	int family; /* 4 or 6: which of the destination's addresses */
	enum lab_proto proto;
	unsigned port;
	enum verdict v;
	double ms;
	pid_t pid;
	uint64_t start_ns;
};

/* The family probes take unless told: IPv4, or IPv6 in a lab without an IPv4 pool. */
static const char *default_family(const struct lab *l)
{
	return l->topo && !l->topo->ipv4 ? "6" : "4";
}

static int resolve(struct lab *l, const struct lab_pod_state *pods, size_t npods, const char *s,
		   struct endpoint *e)
{
	const struct lab_topology *t = l->topo;
	*e = (struct endpoint){ .given = s };
	if (str_has_prefix(s, "node:")) {
		for (size_t i = 0; i < t->n_nodes; i++)
			if (streq(t->nodes[i].name, s + 5)) {
				char buf[IP_STRLEN];
				e->netns = lab_ns_node(l->a, t->name, t->nodes[i].name);
				if (t->nodes[i].ip.family)
					e->ip = arena_strdup(l->a, ip_str(&t->nodes[i].ip, buf));
				if (t->nodes[i].ip6.family)
					e->ip6 = arena_strdup(l->a, ip_str(&t->nodes[i].ip6, buf));
				e->ports = t->nodes[i].serve;
				e->n_ports = t->nodes[i].n_serve;
				return 0;
			}
		ctl_error("\"%s\": lab %s has no node %s", s, t->name, s + 5);
		return -ENOENT;
	}
	if (str_has_prefix(s, "ip:")) {
		struct br_ip ip;
		for (size_t i = 0; ip_parse(s + 3, &ip) == 0 && i < t->n_externals; i++) {
			const struct lab_external *x = &t->externals[i];
			if (!ip_equal(&ip, &x->ip) && !ip_equal(&ip, &x->ip6))
				continue;
			/* the host, by either of its addresses: both are its own */
			char buf[IP_STRLEN];
			e->netns = lab_ns_external(l->a, t->name, x->name);
			if (x->ip.family)
				e->ip = arena_strdup(l->a, ip_str(&x->ip, buf));
			if (x->ip6.family)
				e->ip6 = arena_strdup(l->a, ip_str(&x->ip6, buf));
			e->family = ip.family == AF_INET6 ? 6 : 4;
			e->ports = x->serve;
			e->n_ports = x->n_serve;
			return 0;
		}
		ctl_error("\"%s\": lab %s has no external host with that address", s, t->name);
		return -ENOENT;
	}
	for (size_t i = 0; i < npods; i++)
		if (streq(pods[i].ref, s)) {
			e->netns = pods[i].netns;
			/* an IPv6-only pod's one address is its IPv6 one */
			bool v6_only = strchr(pods[i].ip, ':') != NULL;
			e->ip = v6_only ? NULL : pods[i].ip;
			e->ip6 = v6_only ? pods[i].ip : pods[i].ip6;
			/* declared ports and serve entries, in that order */
			e->ports = pods[i].ports;
			e->n_ports = pods[i].n_ports;
			return 0;
		}
	ctl_error("\"%s\": lab %s has no pod of that name (endpoints are NS/POD, node:NAME or "
		  "ip:ADDRESS)",
		  s, t->name);
	return -ENOENT;
}

static pid_t start_probe(const char *probe_bin, struct probe *p, unsigned timeout_ms)
{
	char port[8], timeout[16];
	snprintf(port, sizeof(port), "%u", p->port);
	snprintf(timeout, sizeof(timeout), "%u", timeout_ms);
	const char *path = NULL;
	char nspath[512];
	snprintf(nspath, sizeof(nspath), "/run/netns/%s", p->from->netns);
	path = nspath;
	fflush(NULL);
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, CLONE_NEWNET) < 0)
		_exit(126);
	int null = open("/dev/null", O_RDWR);
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
	}
	char *argv[] = { (char *)probe_bin,
			 (char *)lab_probe_cmd(p->proto),
			 (char *)(p->family == 6 ? p->to->ip6 : p->to->ip),
			 port,
			 "--timeout",
			 timeout,
			 NULL };
	execv(probe_bin, argv);
	_exit(127);
}

/* Runs every probe, MAX_RUNNING at a time. False when one could not be run at all. */
static bool run_probes(const char *probe_bin, struct probe *v, size_t n, unsigned timeout_ms)
{
	size_t next = 0, running = 0;
	bool ok = true;
	for (size_t i = 0; i < n; i++)
		if (lab_proto_skipped(v[i].proto) || (v[i].family == 6 && !v[i].to->ip6) ||
		    (v[i].family == 4 && !v[i].to->ip))
			v[i].v = V_SKIPPED; /* no SCTP sockets here; no address of the family there
					     */
	while (next < n || running) {
		while (next < n && running < MAX_RUNNING) {
			struct probe *p = &v[next++];
			if (p->v == V_SKIPPED)
				continue;
			p->start_ns = now_ns();
			p->pid = start_probe(probe_bin, p, timeout_ms);
			if (p->pid < 0) {
				p->v = V_ERROR;
				ok = false;
				continue;
			}
			running++;
		}
		if (!running)
			break;
		int status;
		pid_t pid = waitpid(-1, &status, 0);
		if (pid < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		uint64_t end = now_ns();
		for (size_t i = 0; i < next; i++) {
			if (v[i].pid != pid)
				continue;
			running--;
			v[i].pid = 0;
			v[i].ms = (double)(end - v[i].start_ns) / 1e6;
			int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
			if (code == 0) {
				v[i].v = V_ALLOWED;
			} else if (code == 126 || code == 127 || code == 64 || code >= 128) {
				v[i].v = V_ERROR;
				ok = false;
			} else {
				v[i].v = V_DENIED;
			}
			break;
		}
	}
	return ok;
}

static void json_probe(struct strbuf *sb, const struct probe *p)
{
	sb_adds(sb, "{\"from\":");
	json_write_string(sb, p->from->given);
	sb_adds(sb, ",\"to\":");
	json_write_string(sb, p->to->given);
	sb_addf(sb, ",\"family\":%d,\"proto\":\"%s\",\"port\":%u,\"result\":\"%s\",\"ms\":%.1f}",
		p->family, lab_proto_name(p->proto), p->port, verdict_names[p->v], p->ms);
}

/* Comma-separated list into @out (strings in @a). */
static size_t split(struct arena *a, const char *s, const char ***out)
{
	size_t n = 1;
	for (const char *p = s; *p; p++)
		n += *p == ',';
	const char **v = arena_new_array(a, const char *, n);
	size_t k = 0;
	for (const char *p = s;;) {
		size_t len = strcspn(p, ",");
		if (len)
			v[k++] = arena_strndup(a, p, len);
		if (!p[len])
			break;
		p += len + 1;
	}
	*out = v;
	return k;
}

static bool parse_port(const char *s, unsigned *out)
{
	char *end;
	long v = strtol(s, &end, 10);
	if (!*s || *end || v < 1 || v > 65535)
		return false;
	*out = (unsigned)v;
	return true;
}

static int open_lab(struct lab *l, int argc, char **argv, const char *usage)
{
	if (argc < 2 || argv[1][0] == '-') {
		ctl_error("usage: brindlectl lab %s", usage);
		return CTL_USAGE;
	}
	if (!lab_name_valid(argv[1])) {
		ctl_error("\"%s\" is not a lab name", argv[1]);
		return CTL_USAGE;
	}
	lab_init(l, argv[1]);
	if (lab_load(l) < 0) {
		lab_free(l);
		return CTL_FAIL;
	}
	return CTL_OK;
}

enum {
	PROBE_FROM,
	PROBE_TO,
	PROBE_PROTO,
	PROBE_PORT,
	PROBE_TIMEOUT,
	PROBE_OUTPUT,
	PROBE_FAMILY
};
const struct ctl_flag lab_probe_flags[] = {
	[PROBE_FROM] = { "--from", NULL, "SRC",
			 "ns/pod, node:NAME or ip:ADDRESS (an external host)" },
	[PROBE_TO] = { "--to", NULL, "DST", "ns/pod, node:NAME or ip:ADDRESS" },
	[PROBE_PROTO] = { "--proto", NULL, "PROTO", "tcp, udp or sctp (default tcp)" },
	[PROBE_PORT] = { "--port", NULL, "N", "the destination port" },
	[PROBE_TIMEOUT] = { "--timeout-ms", NULL, "N",
			    "how long to wait for an answer (default 1000)" },
	[PROBE_OUTPUT] = { "--output", "-o", "FORMAT", "json (default: a line of text)" },
	[PROBE_FAMILY] = { "--family", NULL, "4|6",
			   "the destination's IPv4 (default) or IPv6 address" },
	{ 0 },
};

enum {
	MATRIX_PORTS,
	MATRIX_PROTOS,
	MATRIX_FROM,
	MATRIX_TO,
	MATRIX_TIMEOUT,
	MATRIX_OUTPUT,
	MATRIX_FAMILY
};
const struct ctl_flag lab_matrix_flags[] = {
	[MATRIX_PORTS] = { "--ports", NULL, "P,...",
			   "ports to probe (default: what each destination declares; with "
			   "--protos alone, 80)" },
	[MATRIX_PROTOS] = { "--protos", NULL, "PROTO,...",
			    "tcp, udp, sctp (default: as declared; with --ports alone, tcp)" },
	[MATRIX_FROM] = { "--from", NULL, "SRC,...", "sources (default: every pod)" },
	[MATRIX_TO] = { "--to", NULL, "DST,...", "destinations (default: every pod)" },
	[MATRIX_TIMEOUT] = { "--timeout-ms", NULL, "N",
			     "how long each probe waits for an answer (default 1000)" },
	[MATRIX_OUTPUT] = { "--output", "-o", "FORMAT", "table (default) or json" },
	[MATRIX_FAMILY] = { "--family", NULL, "4|6|both",
			    "probe the destinations' IPv4 addresses (default), IPv6 ones, or "
			    "both" },
	{ 0 },
};

int lab_cmd_probe(struct ctl *c, int argc, char **argv)
{
	static const char usage[] =
		"probe NAME --from SRC --to DST --proto tcp|udp|sctp --port N [--timeout-ms N] "
		"[--family 4|6] [-o json]";
	struct lab l;
	int r = open_lab(&l, argc, argv, usage);
	if (r != CTL_OK)
		return r;
	struct ctl_parsed pa;
	r = ctl_parse("lab probe", lab_probe_flags, argc, argv, 2, &pa);
	if (r == CTL_OK && pa.n_pos) {
		ctl_error("lab probe: unexpected argument \"%s\"", pa.pos[0]);
		r = CTL_USAGE;
	}
	const char *from = pa.value[PROBE_FROM], *to = pa.value[PROBE_TO],
		   *proto = pa.value[PROBE_PROTO] ? pa.value[PROBE_PROTO] : "tcp",
		   *port = pa.value[PROBE_PORT], *out = pa.value[PROBE_OUTPUT],
		   *tmo = pa.value[PROBE_TIMEOUT] ? pa.value[PROBE_TIMEOUT] : "1000",
		   *fam = pa.value[PROBE_FAMILY] ? pa.value[PROBE_FAMILY] : default_family(&l);
	bool explicit_family = pa.value[PROBE_FAMILY] != NULL;
	ctl_parsed_free(&pa);
	if (r != CTL_OK) {
		lab_free(&l);
		return r;
	}
	struct probe p = { 0 };
	unsigned timeout;
	if (!from || !to || !port) {
		ctl_error("usage: brindlectl lab %s", usage);
		r = CTL_USAGE;
	} else if (!lab_proto_parse(proto, &p.proto)) {
		ctl_error("--proto: unknown protocol \"%s\" (tcp, udp or sctp)", proto);
		r = CTL_USAGE;
	} else if (!parse_port(port, &p.port)) {
		ctl_error("--port: \"%s\" is not a port (1-65535)", port);
		r = CTL_USAGE;
	} else if (!parse_port(tmo, &timeout)) {
		ctl_error("--timeout-ms: \"%s\" is not a number of milliseconds (1-65535)", tmo);
		r = CTL_USAGE;
	} else if (out && !streq(out, "json")) {
		ctl_error("-o: unknown output format \"%s\" (json)", out);
		r = CTL_USAGE;
	} else if (!streq(fam, "4") && !streq(fam, "6")) {
		ctl_error("--family: \"%s\" is not 4 or 6", fam);
		r = CTL_USAGE;
	}
	p.family = fam[0] == '6' ? 6 : 4;
	struct lab_pod_state *pods;
	size_t npods;
	struct endpoint src, dst;
	struct lab_bins b;
	if (r == CTL_OK &&
	    (lab_read_pods(&l, &pods, &npods) < 0 || resolve(&l, pods, npods, from, &src) < 0 ||
	     resolve(&l, pods, npods, to, &dst) < 0))
		r = CTL_FAIL;
	if (r == CTL_OK) {
		lab_find_bins(l.a, &b);
		p.from = &src;
		p.to = &dst;
		if (!explicit_family && dst.family) /* ip:ADDRESS probes that address */
			p.family = dst.family;
		if ((p.family == 6 && !dst.ip6) || (p.family == 4 && !dst.ip)) {
			ctl_error("%s has no IPv%d address", to, p.family);
			r = CTL_FAIL;
		} else if (!run_probes(b.probe, &p, 1, timeout)) {
			ctl_error("could not probe from %s", from);
			r = CTL_FAIL;
		} else if (out) {
			struct strbuf sb = STRBUF_INIT;
			sb_init(&sb);
			json_probe(&sb, &p);
			printf("%s\n", sb_str(&sb));
			sb_free(&sb);
		} else {
			printf("%s -> %s %s%s/%u: %s (%.1f ms)\n", from, to,
			       p.family == 6 ? "IPv6 " : "", lab_proto_name(p.proto), p.port,
			       verdict_names[p.v], p.ms);
		}
	}
	lab_free(&l);
	return r;
}

static void print_table(const struct probe *v, size_t n, const struct endpoint *from, size_t nfrom,
			const struct endpoint *to, size_t nto)
{
	size_t w = 0;
	for (size_t i = 0; i < nfrom; i++)
		w = MAX(w, strlen(from[i].given));
	for (size_t i = 0; i < n; i++) {
		bool first = true;
		for (size_t j = 0; j < i; j++)
			first &= !(v[j].family == v[i].family && v[j].proto == v[i].proto &&
				   v[j].port == v[i].port);
		if (!first)
			continue;
		char head[32];
		snprintf(head, sizeof(head), "%s%s/%u", v[i].family == 6 ? "IPv6 " : "",
			 lab_proto_name(v[i].proto), v[i].port);
		printf("%-*s", (int)MAX(w, strlen(head)), head);
		for (size_t k = 0; k < nto; k++)
			printf("  %s", to[k].given);
		printf("\n");
		for (size_t f = 0; f < nfrom; f++) {
			printf("%-*s", (int)MAX(w, strlen(head)), from[f].given);
			for (size_t k = 0; k < nto; k++) {
				const char *cell = " ";
				for (size_t j = 0; j < n; j++)
					if (v[j].from == &from[f] && v[j].to == &to[k] &&
					    v[j].family == v[i].family &&
					    v[j].proto == v[i].proto && v[j].port == v[i].port)
						cell = v[j].v == V_ALLOWED   ? "."
						       : v[j].v == V_DENIED  ? "X"
						       : v[j].v == V_SKIPPED ? "-"
									     : "?";
				printf("  %-*s", (int)strlen(to[k].given), cell);
			}
			printf("\n");
		}
		printf("\n");
	}
	printf(". allowed   X denied   - skipped\n");
}

int lab_cmd_matrix(struct ctl *c, int argc, char **argv)
{
	static const char usage[] = "matrix NAME [--ports 80,81] [--protos tcp,udp,sctp] [--from "
				    "SRC,...] [--to DST,...] [--timeout-ms N] [--family 4|6|both] "
				    "[-o json|table]";
	struct lab l;
	int r = open_lab(&l, argc, argv, usage);
	if (r != CTL_OK)
		return r;
	struct ctl_parsed pa;
	r = ctl_parse("lab matrix", lab_matrix_flags, argc, argv, 2, &pa);
	if (r == CTL_OK && pa.n_pos) {
		ctl_error("lab matrix: unexpected argument \"%s\"", pa.pos[0]);
		r = CTL_USAGE;
	}
	const char *ports = pa.value[MATRIX_PORTS], *protos = pa.value[MATRIX_PROTOS],
		   *from = pa.value[MATRIX_FROM], *to = pa.value[MATRIX_TO],
		   *tmo = pa.value[MATRIX_TIMEOUT] ? pa.value[MATRIX_TIMEOUT] : "1000",
		   *out = pa.value[MATRIX_OUTPUT] ? pa.value[MATRIX_OUTPUT] : "table",
		   *fam = pa.value[MATRIX_FAMILY] ? pa.value[MATRIX_FAMILY] : default_family(&l);
	ctl_parsed_free(&pa);
	if (r != CTL_OK) {
		lab_free(&l);
		return r;
	}
	unsigned timeout;
	const char **port_s = NULL, **proto_s = NULL, **from_s, **to_s;
	size_t nport = 0, nproto = 0, nfrom, nto;
	unsigned *portv = NULL;
	enum lab_proto *protov = NULL;
	struct lab_pod_state *pods;
	size_t npods;
	if (!parse_port(tmo, &timeout)) {
		ctl_error("--timeout-ms: \"%s\" is not a number of milliseconds (1-65535)", tmo);
		r = CTL_USAGE;
		goto out;
	}
	if (!streq(out, "json") && !streq(out, "table")) {
		ctl_error("-o: unknown output format \"%s\" (json or table)", out);
		r = CTL_USAGE;
		goto out;
	}
	if (!streq(fam, "4") && !streq(fam, "6") && !streq(fam, "both")) {
		ctl_error("--family: \"%s\" is not 4, 6 or both", fam);
		r = CTL_USAGE;
		goto out;
	}
	int families[2] = { fam[0] == '6' ? 6 : 4, 6 };
	size_t nfam = streq(fam, "both") ? 2 : 1;
	if (ports) {
		nport = split(l.a, ports, &port_s);
		portv = arena_new_array(l.a, unsigned, nport + 1);
		for (size_t i = 0; i < nport; i++)
			if (!parse_port(port_s[i], &portv[i])) {
				ctl_error("--ports: \"%s\" is not a port (1-65535)", port_s[i]);
				r = CTL_USAGE;
				goto out;
			}
	}
	if (protos) {
		nproto = split(l.a, protos, &proto_s);
		protov = arena_new_array(l.a, enum lab_proto, nproto + 1);
		for (size_t i = 0; i < nproto; i++)
			if (!lab_proto_parse(proto_s[i], &protov[i])) {
				ctl_error("--protos: unknown protocol \"%s\" (tcp, udp or sctp)",
					  proto_s[i]);
				r = CTL_USAGE;
				goto out;
			}
	}
	if (ports && !protos) {
		static enum lab_proto tcp = LAB_TCP;
		protov = &tcp;
		nproto = 1;
	} else if (protos && !ports) {
		static unsigned p80 = 80;
		portv = &p80;
		nport = 1;
	}
	if (lab_read_pods(&l, &pods, &npods) < 0) {
		r = CTL_FAIL;
		goto out;
	}
	if (from) {
		nfrom = split(l.a, from, &from_s);
	} else {
		nfrom = npods;
		from_s = arena_new_array(l.a, const char *, npods + 1);
		for (size_t i = 0; i < npods; i++)
			from_s[i] = pods[i].ref;
	}
	if (to) {
		nto = split(l.a, to, &to_s);
	} else {
		nto = npods;
		to_s = arena_new_array(l.a, const char *, npods + 1);
		for (size_t i = 0; i < npods; i++)
			to_s[i] = pods[i].ref;
	}
	struct endpoint *src = arena_new_array(l.a, struct endpoint, nfrom + 1);
	struct endpoint *dst = arena_new_array(l.a, struct endpoint, nto + 1);
	for (size_t i = 0; i < nfrom; i++)
		if (resolve(&l, pods, npods, from_s[i], &src[i]) < 0)
			r = CTL_FAIL;
	for (size_t i = 0; i < nto; i++)
		if (resolve(&l, pods, npods, to_s[i], &dst[i]) < 0)
			r = CTL_FAIL;
	if (r != CTL_OK)
		goto out;
	/* without --ports/--protos each destination is probed on what it serves */
	size_t cap = 0, n = 0;
	for (size_t k = 0; k < nto; k++)
		cap += nfam * nfrom * (nport ? nport * nproto : dst[k].n_ports);
	struct probe *v = arena_new_array(l.a, struct probe, cap + 1);
	for (size_t fa = 0; fa < nfam; fa++)
		for (size_t f = 0; f < nfrom; f++)
			for (size_t k = 0; k < nto; k++) {
				size_t np = nport ? nport * nproto : dst[k].n_ports;
				for (size_t q = 0; q < np; q++) {
					struct probe *p = &v[n++];
					*p = (struct probe){ .from = &src[f],
							     .to = &dst[k],
							     .family = families[fa] };
					if (nport) { /* each protocol on each port */
						p->proto = protov[q / nport];
						p->port = portv[q % nport];
					} else {
						p->proto = dst[k].ports[q].proto;
						p->port = dst[k].ports[q].port;
					}
				}
			}
	struct lab_bins b;
	lab_find_bins(l.a, &b);
	if (!run_probes(b.probe, v, n, timeout)) {
		ctl_error("some probes could not be run");
		r = CTL_FAIL;
	}
	if (streq(out, "json")) {
		struct strbuf sb = STRBUF_INIT;
		sb_init(&sb);
		sb_adds(&sb, "[");
		for (size_t i = 0; i < n; i++) {
			sb_adds(&sb, i ? ",\n " : "");
			json_probe(&sb, &v[i]);
		}
		sb_adds(&sb, "]");
		printf("%s\n", sb_str(&sb));
		sb_free(&sb);
	} else {
		print_table(v, n, src, nfrom, dst, nto);
	}
out:
	lab_free(&l);
	return r;
}
