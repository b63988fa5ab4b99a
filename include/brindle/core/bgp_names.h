/*
 * Names of the BGP sessions Brindle configures in BIRD, which `brindlectl
 * node status` and readiness checks read back: "Mesh_", "Global_" or
 * "Node_", then the peer's address with '.' and ':' as '_', then "_port_N"
 * when the session uses a port other than BGP's own. Pure.
 */
#ifndef BRINDLE_BGP_NAMES_H
#define BRINDLE_BGP_NAMES_H

#include <stdbool.h>
#include <stdint.h>
#include <brindle/core/net.h>

enum bgp_peer_type {
	BGP_PEER_MESH,	 /* node-to-node mesh */
	BGP_PEER_GLOBAL, /* a BGPPeer without node or nodeSelector */
	BGP_PEER_NODE,	 /* a BGPPeer for some nodes (node, nodeSelector, or reverse peering) */
};

/* BIRD symbols are at most 64 characters; the longest name here is 57. */
#define BGP_SESSION_NAME_MAX 64

/* What calicoctl prints: "node-to-node mesh", "global", "node specific". */
const char *bgp_peer_type_label(enum bgp_peer_type t);

/* The session name for a peer at @ip (@port 0: none given). */
void bgp_session_name(enum bgp_peer_type t, const struct br_ip *ip, uint16_t port,
		      char out[BGP_SESSION_NAME_MAX]);
/* The other way round; false for names Brindle does not make. */
bool bgp_session_name_parse(const char *name, enum bgp_peer_type *t, struct br_ip *ip,
			    uint16_t *port);

#endif
