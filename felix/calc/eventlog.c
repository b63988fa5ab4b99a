/*
 * The event log's lines: an NFLOG packet and the prefix of the rule that
 * sent it, as one JSON object (see eventlog.h). Pure.
 */
#include "eventlog.h"

#include <brindle/core/json.h>
#include <brindle/core/util.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *proto_name(uint8_t p)
{
	switch (p) {
	case 1:
		return "icmp";
	case 6:
		return "tcp";
	case 17:
		return "udp";
	case 58:
		return "icmpv6";
	case 132:
		return "sctp";
	case 136:
		return "udplite";
	}
	return NULL;
}

/*
 * Everything written is ASCII (names and prefixes felix made); a byte outside
 * it (a prefix from someone else's NFLOG rule) becomes "?", so a line is
 * always valid JSON.
 */
static void field_str(struct strbuf *out, const char *key, const char *v)
{
	char clean[256];
	size_t n = 0;
	for (; v[n] && n < sizeof(clean) - 1; n++)
		clean[n] = (unsigned char)v[n] < 0x80 ? v[n] : '?';
	clean[n] = '\0';
	sb_addf(out, ",\"%s\":", key);
	json_write_string(out, clean);
}

void eventlog_format(const struct pol *p, const struct nflog_event *ev, const char *in_ifname,
		     const char *out_ifname, uint64_t now_us, struct strbuf *out)
{
	const char *pf = ev->prefix;
	bool ok = strlen(pf) >= 5 && (pf[0] == 'A' || pf[0] == 'D' || pf[0] == 'P') &&
		  (pf[1] == 'i' || pf[1] == 'o') && pf[2] == ':' && pf[4] == ':';
	/* the staged preview's: what would happen (w: a rule, x: the end of a tier) */
	bool preview = ok && (pf[3] == 'w' || pf[3] == 'x');
	if (ok && pf[0] == 'P' && pf[3] != 'w')
		ok = false;
	bool ingress = ok && pf[1] == 'i';
	uint64_t t = ev->time_us ? ev->time_us : now_us;
	time_t secs = (time_t)(t / 1000000);
	struct tm tm;
	if (!gmtime_r(&secs, &tm) || tm.tm_year > 9999 - 1900) {
		/* a timestamp no calendar holds: the time it was read */
		t = now_us;
		secs = (time_t)(t / 1000000);
		if (!gmtime_r(&secs, &tm))
			memset(&tm, 0, sizeof(tm));
	}
	char ts[64];
	snprintf(ts, sizeof(ts), "%04d-%02d-%02dT%02d:%02d:%02d.%06uZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		 (unsigned)(t % 1000000));
	sb_addf(out, "{\"time\":\"%s\"", ts);
	static const char *const verdicts[2][3] = { { "allow", "deny", "pass" },
						    { "would-allow", "would-deny", "would-pass" } };
	field_str(out, "verdict",
		  !ok ? "unknown"
		      : verdicts[preview][pf[0] == 'A'	 ? 0
					  : pf[0] == 'D' ? 1
							 : 2]);
	if (ok)
		field_str(out, "direction", ingress ? "ingress" : "egress");
	const char *pn = proto_name(ev->proto);
	if (pn)
		field_str(out, "protocol", pn);
	else if (ev->proto)
		sb_addf(out, ",\"protocol\":%u", ev->proto);
	char ip[IP_STRLEN];
	if (ev->src.family) {
		field_str(out, "src", ip_str(&ev->src, ip));
		field_str(out, "dst", ip_str(&ev->dst, ip));
	}
	if (ev->sport || ev->dport)
		sb_addf(out, ",\"sport\":%u,\"dport\":%u", ev->sport, ev->dport);
	if (ev->icmp_type >= 0)
		sb_addf(out, ",\"icmpType\":%d,\"icmpCode\":%d", ev->icmp_type, ev->icmp_code);
	/* The endpoint: the interface named in the prefix, else the one the packet used. */
	char iface[20] = "";
	char kind = ok ? pf[3] : '?';
	if (kind == 'e' || kind == 'n' || kind == 'f')
		snprintf(iface, sizeof(iface), "%s", pf + 5);
	else if (kind == 'x')
		snprintf(iface, sizeof(iface), "%.*s", (int)strcspn(pf + 5, ":"), pf + 5);
	else if (ok)
		snprintf(iface, sizeof(iface), "%s",
			 (ingress ? out_ifname : in_ifname) ? (ingress ? out_ifname : in_ifname)
							    : "");
	if (iface[0]) {
		field_str(out, "interface", iface);
		const char *ep = pol_endpoint_of_iface(p, iface);
		if (ep)
			field_str(out, "endpoint", ep);
	}
	switch (kind) {
	case 'p':
	case 'r': {
		const char *id = pol_describe_prefix(p, pf);
		const char *rule = strchr(pf + 5, ':');
		field_str(out, kind == 'p' ? "policy" : "profile", id ? id : pf + 5);
		if (rule)
			sb_addf(out, ",\"rule\":%d", atoi(rule + 1));
		field_str(out, "reason", kind == 'p' ? "policy rule" : "profile rule");
		break;
	}
	case 'w': {
		/* a rule of the preview, of a staged policy ("snp/...") or one in force */
		const char *id = pol_describe_prefix(p, pf);
		const char *rule = strchr(pf + 5, ':');
		field_str(out, "policy", id ? id : pf + 5);
		int r = rule ? atoi(rule + 1) : -1;
		if (r >= 0)
			sb_addf(out, ",\"rule\":%d", r);
		field_str(out, "reason",
			  r >= 0 ? "staged preview: policy rule"
				 : "staged preview: the policy cannot be rendered "
				   "(it would fail closed)");
		break;
	}
	case 'x': {
		const char *tier = pol_describe_prefix(p, pf);
		if (tier && str_has_prefix(tier, "tier/"))
			field_str(out, "tier", tier + 5);
		field_str(out, "reason", "staged preview: end of tier, no policy would allow");
		break;
	}
	case 'e':
		field_str(out, "reason", "policies applied and none allowed");
		break;
	case 'n':
		field_str(out, "reason", "no policy applied and no profile allowed");
		break;
	case 'f':
		field_str(out, "reason", "fail closed: a policy of the endpoint cannot be rendered");
		break;
	default:
		field_str(out, "prefix", pf);
		break;
	}
	sb_addc(out, '}');
}
