/*
 * brindlectl node status: this node's BGP sessions as BIRD reports them, in
 * the table calicoctl users know, and a readiness check for a DaemonSet's
 * probe (--ready: exit 0 when every checked session is Established).
 * Reads BIRD's control socket (--bird-socket, BRINDLE_BIRD_SOCKET, default
 * /var/run/brindle/bird.ctl); only sessions named as confd names them
 * (Mesh_/Global_/Node_) are shown.
 */
#include "ctl.h"

#include <brindle/core/bgp_names.h>
#include <brindle/sys/bird_ctl.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct row {
	enum bgp_peer_type type;
	int family; /* 0 IPv4, 1 IPv6 */
	char address[IP_STRLEN + 8];
	const struct bird_protocol *p;
};

static void hline(const size_t *w, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		putchar('+');
		for (size_t k = 0; k < w[i] + 2; k++)
			putchar('-');
	}
	puts("+");
}

static void print_table(const struct row *rows, size_t n, int family)
{
	static const char *const heads[] = { "PEER ADDRESS", "PEER TYPE", "STATE", "SINCE",
					     "INFO" };
	size_t w[5];
	size_t count = 0;
	for (size_t i = 0; i < 5; i++)
		w[i] = strlen(heads[i]);
	for (size_t i = 0; i < n; i++) {
		if (rows[i].family != family)
			continue;
		count++;
		const char *cells[5] = { rows[i].address, bgp_peer_type_label(rows[i].type),
					 rows[i].p->state, rows[i].p->since, rows[i].p->info };
		for (size_t k = 0; k < 5; k++)
			w[k] = MAX(w[k], strlen(cells[k]));
	}
	printf("IPv%d BGP status\n", family ? 6 : 4);
	if (!count) {
		printf("No IPv%d peers found.\n", family ? 6 : 4);
		return;
	}
	hline(w, 5);
	for (size_t k = 0; k < 5; k++) {
		size_t pad = w[k] - strlen(heads[k]);
		printf("| %*s%s%*s ", (int)(pad / 2), "", heads[k], (int)(pad - pad / 2), "");
	}
	puts("|");
	hline(w, 5);
	for (size_t i = 0; i < n; i++) {
		if (rows[i].family != family)
			continue;
		const char *cells[5] = { rows[i].address, bgp_peer_type_label(rows[i].type),
					 rows[i].p->state, rows[i].p->since, rows[i].p->info };
		for (size_t k = 0; k < 5; k++)
			printf("| %-*s ", (int)w[k], cells[k]);
		puts("|");
	}
	hline(w, 5);
}

static bool established(const struct bird_protocol *p)
{
	return strncmp(p->info, "Established", 11) == 0;
}

/* "mesh,global,node" into a mask of peer types. */
static int parse_types(const char *s, unsigned *mask)
{
	*mask = 0;
	char *copy = xstrdup(s), *save = NULL;
	int r = 0;
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (streq(t, "mesh"))
			*mask |= 1u << BGP_PEER_MESH;
		else if (streq(t, "global"))
			*mask |= 1u << BGP_PEER_GLOBAL;
		else if (streq(t, "node"))
			*mask |= 1u << BGP_PEER_NODE;
		else if (streq(t, "all"))
			*mask |= 7u;
		else
			r = -EINVAL;
	}
	free(copy);
	return *mask ? r : -EINVAL;
}

enum {
	STATUS_BIRD_SOCKET,
	STATUS_READY,
	STATUS_PEERS
};
static const struct ctl_flag status_flags[] = {
	[STATUS_BIRD_SOCKET] = { "--bird-socket", NULL, "PATH",
				 "BIRD's control socket (default " BIRD_CTL_DEFAULT_SOCKET
				 ", or BRINDLE_BIRD_SOCKET)" },
	[STATUS_READY] = { "--ready", NULL, NULL,
			   "exit 0 when every session of the --peers types is Established, "
			   "else 1" },
	[STATUS_PEERS] = { "--peers", NULL, "TYPES",
			   "--ready: mesh, global, node, a comma-separated list, or all "
			   "(default mesh)" },
	{ 0 },
};

static int node_status(struct ctl *c, int argc, char **argv)
{
	const char *socket = getenv("BRINDLE_BIRD_SOCKET");
	if (!socket || !*socket)
		socket = BIRD_CTL_DEFAULT_SOCKET;
	struct ctl_parsed p;
	int pr = ctl_parse("node status", status_flags, argc, argv, 1, &p);
	if (pr == CTL_OK && p.n_pos) {
		ctl_error("node status: unknown argument \"%s\"", p.pos[0]);
		pr = CTL_USAGE;
	}
	if (p.value[STATUS_BIRD_SOCKET])
		socket = p.value[STATUS_BIRD_SOCKET];
	const char *peers = p.value[STATUS_PEERS] ? p.value[STATUS_PEERS] : "mesh";
	bool ready = p.value[STATUS_READY] != NULL;
	ctl_parsed_free(&p);
	if (pr != CTL_OK)
		return pr;
	unsigned mask;
	if (parse_types(peers, &mask) < 0) {
		ctl_error("--peers: \"%s\" is not a list of mesh, global, node or all", peers);
		return CTL_USAGE;
	}

	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	struct bird_ctl *b;
	int r = bird_ctl_open(socket, 5000, &b, &err);
	if (r < 0) {
		if (ready)
			printf("BIRD is not ready: %s\n", sb_str(&err));
		else
			printf("The BGP backend process (BIRD) is not running: %s\n", sb_str(&err));
		sb_free(&err);
		return CTL_FAIL;
	}
	struct arena *ar = arena_new();
	struct bird_reply reply;
	struct bird_protocol *protos = NULL;
	size_t n = 0;
	r = bird_ctl_command(b, "show protocols", ar, &reply, &err);
	if (r == 0 && bird_protocols_parse(&reply, ar, &protos, &n) < 0) {
		sb_addf(&err, "cannot read BIRD's answer to show protocols: %s",
			bird_reply_text(&reply, ar));
		r = -EPROTO;
	}
	int ret = CTL_OK;
	if (r < 0) {
		printf("%s%s\n", ready ? "BIRD is not ready: " : "", sb_str(&err));
		ret = CTL_FAIL;
		goto out;
	}
	struct row *rows = arena_new_array(ar, struct row, n + 1);
	size_t nrows = 0;
	for (size_t i = 0; i < n; i++) {
		struct row *row = &rows[nrows];
		struct br_ip ip;
		uint16_t port;
		if (strcmp(protos[i].proto, "BGP") != 0 ||
		    !bgp_session_name_parse(protos[i].name, &row->type, &ip, &port))
			continue;
		char addr[IP_STRLEN];
		ip_str(&ip, addr);
		row->family = ip.family == AF_INET6;
		if (!port)
			snprintf(row->address, sizeof(row->address), "%s", addr);
		else if (row->family)
			snprintf(row->address, sizeof(row->address), "[%s]:%u", addr, port);
		else
			snprintf(row->address, sizeof(row->address), "%s:%u", addr, port);
		/* BIRD pads the state inside the info column; one blank is enough here. */
		char *info = arena_strdup(ar, protos[i].info), *w = info;
		for (const char *q = protos[i].info; *q; q++)
			if (*q != ' ' || (w > info && w[-1] != ' '))
				*w++ = *q;
		*w = '\0';
		protos[i].info = info;
		row->p = &protos[i];
		nrows++;
	}
	if (ready) {
		struct strbuf down = STRBUF_INIT;
		sb_init(&down);
		size_t checked = 0;
		for (size_t i = 0; i < nrows; i++) {
			if (!(mask & (1u << rows[i].type)))
				continue;
			checked++;
			if (!established(rows[i].p))
				sb_addf(&down, "%s%s", down.len ? "," : "", rows[i].address);
		}
		if (down.len) {
			printf("BIRD is not ready: BGP not established with %s\n", sb_str(&down));
			ret = CTL_FAIL;
		} else {
			printf("BIRD is ready: BGP established with %zu %s peer%s\n", checked,
			       peers, checked == 1 ? "" : "s");
		}
		sb_free(&down);
		goto out;
	}
	const char *greeting = bird_ctl_greeting(b);
	size_t glen = strlen(greeting);
	if (str_has_suffix(greeting, " ready."))
		glen -= strlen(" ready.");
	printf("BIRD is running (%.*s)\n\n", (int)glen, greeting);
	print_table(rows, nrows, 0);
	putchar('\n');
	print_table(rows, nrows, 1);
out:
	bird_ctl_close(b);
	arena_free(ar);
	sb_free(&err);
	return ret;
}

const struct ctl_cmd ctl_node_cmds[] = {
	{ "status", NULL, "this node's BGP sessions, from BIRD's control socket", status_flags,
	  NULL, node_status },
	{ 0 },
};
