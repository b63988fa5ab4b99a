/*
 * BIRD control-socket replies: the input is a stream of replies as the
 * socket would carry them. Each complete reply is parsed, read as a `show
 * protocols` table, and every row's name is tried as a Brindle session
 * name, and the reply is read as confd reads `show status`, `show protocols`
 * and `show route` for a CalicoNodeStatus. Besides not crashing: the parser
 * never claims more than it was given, a complete reply has at least one
 * line and no newline in its texts, a name that parses is rebuilt to exactly
 * itself, and every peer and route of the status has its address.
 */
#include "node_status.h"

#include <brindle/core/bgp_names.h>
#include <brindle/sys/bird_ctl.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_bird_reply: %s\n", what);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct arena *a = arena_new();
	const char *buf = (const char *)data;
	size_t pos = 0;
	while (pos < size) {
		struct bird_reply r;
		size_t used = 0;
		int p = bird_reply_parse(buf + pos, size - pos, a, &r, &used);
		check(used <= size - pos, "used more than the input");
		if (p <= 0)
			break;
		check(used > 0 && r.n > 0, "a complete reply without lines");
		for (size_t i = 0; i < r.n; i++)
			check(!strchr(r.lines[i].text, '\n'), "a newline inside a line");
		check(r.code == r.lines[r.n - 1].code, "the reply's code is not its last line's");
		struct bird_protocol *rows;
		size_t n;
		if (bird_protocols_parse(&r, a, &rows, &n) == 0) {
			for (size_t i = 0; i < n; i++) {
				enum bgp_peer_type t;
				struct br_ip ip;
				uint16_t port;
				char again[BGP_SESSION_NAME_MAX];
				check(rows[i].name && rows[i].info, "a row without fields");
				if (!bgp_session_name_parse(rows[i].name, &t, &ip, &port))
					continue;
				bgp_session_name(t, &ip, port, again);
				check(strcmp(again, rows[i].name) == 0,
				      "a name does not round-trip");
			}
		}
		const char *classes[] = { "Agent", "BGP", "Routes" };
		struct br_cns_spec spec = { .node = "n", .classes = classes, .n_classes = 3 };
		struct br_cns_status st;
		node_status_fill(a, &spec, &r, &r, &r, "now", &st);
		for (size_t i = 0; i < st.bgp.n_peers_v4; i++)
			check(st.bgp.peers_v4[i].peer_ip && st.bgp.peers_v4[i].state,
			      "a peer without address");
		for (size_t i = 0; i < st.routes.n_routes_v4; i++)
			check(st.routes.routes_v4[i].destination != NULL,
			      "a route without destination");
		check(st.bgp.established_v4 + st.bgp.not_established_v4 ==
			      (int64_t)st.bgp.n_peers_v4,
		      "the counts do not add up");
		pos += used;
	}
	arena_free(a);
	return 0;
}
