/* BGP session names: see include/brindle/bgp_names.h. */
#include <brindle/core/bgp_names.h>

#include <stdio.h>
#include <stdlib.h>

static const struct {
	const char *prefix, *label;
} types[] = {
	[BGP_PEER_MESH] = { "Mesh", "node-to-node mesh" },
	[BGP_PEER_GLOBAL] = { "Global", "global" },
	[BGP_PEER_NODE] = { "Node", "node specific" },
};

const char *bgp_peer_type_label(enum bgp_peer_type t)
{
	return types[t].label;
}

void bgp_session_name(enum bgp_peer_type t, const struct br_ip *ip, uint16_t port,
		      char out[BGP_SESSION_NAME_MAX])
{
	char addr[IP_STRLEN];
	ip_str(ip, addr);
	for (char *p = addr; *p; p++)
		if (*p == '.' || *p == ':')
			*p = '_';
	if (port)
		snprintf(out, BGP_SESSION_NAME_MAX, "%s_%s_port_%u", types[t].prefix, addr, port);
	else
		snprintf(out, BGP_SESSION_NAME_MAX, "%s_%s", types[t].prefix, addr);
}

bool bgp_session_name_parse(const char *name, enum bgp_peer_type *t, struct br_ip *ip,
			    uint16_t *port)
{
	size_t k;
	for (k = 0; k < ARRAY_SIZE(types); k++) {
		size_t n = strlen(types[k].prefix);
		if (strncmp(name, types[k].prefix, n) == 0 && name[n] == '_')
			break;
	}
	if (k == ARRAY_SIZE(types))
		return false;
	const char *rest = name + strlen(types[k].prefix) + 1;
	char addr[IP_STRLEN + 1];
	size_t alen = strlen(rest);
	unsigned long pv = 0;
	const char *pp = strstr(rest, "_port_");
	if (pp) {
		char *end;
		if (!pp[6] || pp[6] == '0')
			return false;
		pv = strtoul(pp + 6, &end, 10);
		if (*end || pv > 65535)
			return false;
		alen = (size_t)(pp - rest);
	}
	if (alen == 0 || alen > IP_STRLEN)
		return false;
	memcpy(addr, rest, alen);
	addr[alen] = '\0';
	/* IPv4 has exactly three separators and only digits; anything else is IPv6. */
	size_t seps = 0;
	bool digits = true;
	for (size_t i = 0; i < alen; i++) {
		seps += addr[i] == '_';
		digits &= addr[i] == '_' || (addr[i] >= '0' && addr[i] <= '9');
	}
	char sep = seps == 3 && digits ? '.' : ':';
	for (size_t i = 0; i < alen; i++)
		if (addr[i] == '_')
			addr[i] = sep;
	struct br_ip parsed;
	if (ip_parse(addr, &parsed) < 0)
		return false;
	/* Only names we would have made: the address in its canonical spelling. */
	char again[BGP_SESSION_NAME_MAX];
	bgp_session_name((enum bgp_peer_type)k, &parsed, (uint16_t)pv, again);
	if (strcmp(again, name) != 0)
		return false;
	*t = (enum bgp_peer_type)k;
	*ip = parsed;
	*port = (uint16_t)pv;
	return true;
}
