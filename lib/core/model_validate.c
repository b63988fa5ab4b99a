/*
 * Validators and custom codecs shared by the kind tables: Kubernetes name and
 * label rules, addresses, ports, protocols, AS numbers, durations, selectors.
 */
#include "model_internal.h"

#include <brindle/core/devices.h>
#include <brindle/core/net.h>
#include <brindle/core/sel.h>

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

/* --- Kubernetes names and labels ---------------------------------------------- */

static bool alnum(char ch)
{
	return isalnum((unsigned char)ch);
}

static bool lower_alnum(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
}

bool valid_dns_label(const char *s, const char **why)
{
	size_t n = strlen(s);
	if (n == 0 || n > 63) {
		*why = "must be 1-63 characters";
		return false;
	}
	for (size_t i = 0; i < n; i++) {
		if (!lower_alnum(s[i]) && !(s[i] == '-' && i > 0 && i < n - 1)) {
			*why = "must consist of lower case letters, digits and '-', and start and "
			       "end with a letter or digit";
			return false;
		}
	}
	return true;
}

bool valid_dns_subdomain(const char *s, const char **why)
{
	size_t n = strlen(s);
	if (n == 0 || n > 253) {
		*why = "must be 1-253 characters";
		return false;
	}
	for (size_t i = 0; i < n; i++) {
		char prev = i ? s[i - 1] : '.', next = i + 1 < n ? s[i + 1] : '.';
		bool ok = lower_alnum(s[i]) || (s[i] == '-' && prev != '.' && next != '.') ||
			  (s[i] == '.' && prev != '.' && next != '.');
		if (!ok || (i == 0 && !lower_alnum(s[i])) || (i == n - 1 && !lower_alnum(s[i]))) {
			*why = "must consist of lower case letters, digits, '-' and '.', and start "
			       "and end with a letter or digit";
			return false;
		}
	}
	return true;
}

/* The name part of a label key, and label values: [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])? */
static bool valid_label_token(const char *s, size_t n)
{
	if (n == 0)
		return true;
	if (!alnum(s[0]) || !alnum(s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
			return false;
	return true;
}

bool valid_label_key(const char *s, const char **why)
{
	const char *slash = strchr(s, '/');
	const char *name = slash ? slash + 1 : s;
	if (slash) {
		char prefix[254];
		size_t pn = (size_t)(slash - s);
		const char *pwhy;
		if (pn == 0 || pn > 253) {
			*why = "prefix must be 1-253 characters";
			return false;
		}
		memcpy(prefix, s, pn);
		prefix[pn] = '\0';
		if (!valid_dns_subdomain(prefix, &pwhy)) {
			*why = "prefix must be a DNS subdomain (lower case letters, digits, '-' "
			       "and "
			       "'.')";
			return false;
		}
	}
	size_t n = strlen(name);
	if (n == 0 || n > 63) {
		*why = "name part must be 1-63 characters";
		return false;
	}
	if (!valid_label_token(name, n)) {
		*why = "name part must consist of letters, digits, '-', '_' and '.', and start "
		       "and end with a letter or digit";
		return false;
	}
	return true;
}

bool valid_label_value(const char *s, const char **why)
{
	size_t n = strlen(s);
	if (n > 63) {
		*why = "must be at most 63 characters";
		return false;
	}
	if (!valid_label_token(s, n)) {
		*why = "must consist of letters, digits, '-', '_' and '.', and start and end "
		       "with a letter or digit";
		return false;
	}
	return true;
}

bool model_valid_port_name(const char *s, const char **why)
{
	size_t n = strlen(s);
	bool letter = false;
	if (n == 0 || n > 15) {
		*why = "a port name must be 1-15 characters";
		return false;
	}
	for (size_t i = 0; i < n; i++) {
		if (s[i] >= 'a' && s[i] <= 'z')
			letter = true;
		else if (!(s[i] >= '0' && s[i] <= '9') && s[i] != '-')
			goto bad;
		if (s[i] == '-' && (i == 0 || i == n - 1 || s[i + 1] == '-'))
			goto bad;
	}
	if (letter)
		return true;
bad:
	*why = "a port name must be lower case letters, digits and single '-' inside, with at "
	       "least one letter";
	return false;
}

void model_check_dns_label(struct model_ctx *c, const void *field)
{
	const char *s = *(const char *const *)field, *why;
	if (!valid_dns_label(s, &why))
		model_err(c, "\"%s\" %s", s, why);
}

void model_check_dns_subdomain(struct model_ctx *c, const void *field)
{
	model_check_dns_subdomain_item(c, *(const char *const *)field);
}

void model_check_dns_subdomain_item(struct model_ctx *c, const char *s)
{
	const char *why;
	if (!valid_dns_subdomain(s, &why))
		model_err(c, "\"%s\" %s", s, why);
}

void model_check_label_key_item(struct model_ctx *c, const char *s)
{
	const char *why;
	if (!valid_label_key(s, &why))
		model_err(c, "\"%s\" is not a valid label key: %s", s, why);
}

void model_check_label_value_item(struct model_ctx *c, const char *s)
{
	const char *why;
	if (!valid_label_value(s, &why))
		model_err(c, "\"%s\" is not a valid label value: %s", s, why);
}

void model_check_label_map(struct model_ctx *c, const void *field)
{
	const struct br_labels *l = field;
	const char *why;
	for (size_t i = 0; i < l->n; i++) {
		if (!valid_label_key(l->v[i].key, &why))
			model_err(c, "key \"%s\": %s", l->v[i].key, why);
		else if (!valid_label_value(l->v[i].value, &why))
			model_err(c, "value \"%s\" of %s: %s", l->v[i].value, l->v[i].key, why);
	}
}

void model_check_annotation_map(struct model_ctx *c, const void *field)
{
	const struct br_labels *l = field;
	const char *why;
	size_t total = 0;
	for (size_t i = 0; i < l->n; i++) {
		if (!valid_label_key(l->v[i].key, &why))
			model_err(c, "key \"%s\": %s", l->v[i].key, why);
		total += strlen(l->v[i].key) + strlen(l->v[i].value);
	}
	if (total > 256 * 1024)
		model_err(c, "annotations may not exceed 256 KiB in total");
}

void model_check_port_name(struct model_ctx *c, const void *field)
{
	const char *s = *(const char *const *)field, *why;
	if (!model_valid_port_name(s, &why))
		model_err(c, "\"%s\": %s", s, why);
}

void model_check_iface_name(struct model_ctx *c, const void *field)
{
	const char *s = *(const char *const *)field;
	size_t n = strlen(s);
	bool ok = n > 0 && n < 16 && strcmp(s, ".") && strcmp(s, "..");
	for (size_t i = 0; ok && i < n; i++)
		ok = s[i] != '/' && !isspace((unsigned char)s[i]) && s[i] != ':';
	if (!ok)
		model_err(c,
			  "\"%s\" is not a valid interface name (1-15 characters, no '/', ':' "
			  "or spaces)",
			  s);
}

bool iface_reserved(const char *name)
{
	static const char *const reserved[] = { "lo",	  VXLAN_DEV,	    VXLAN6_DEV,
						IPIP_DEV, "wireguard.cali", "wg-v6.cali" };
	for (size_t i = 0; i < ARRAY_SIZE(reserved); i++)
		if (streq(name, reserved[i]))
			return true;
	return false;
}

/* A workload's host-side interface: a valid name that is not the loopback or felix's own. */
void model_check_wep_iface(struct model_ctx *c, const void *field)
{
	const char *s = *(const char *const *)field;
	model_check_iface_name(c, field);
	if (iface_reserved(s))
		model_err(c, "\"%s\" is a host interface felix owns; a workload cannot claim it",
			  s);
}

/*
 * A workload's network: a CIDR, never a default route. (How wide one may be
 * is felix's setting, workloadIPv4MinPrefixLength; /32 by default.)
 */
void model_check_wep_net_item(struct model_ctx *c, const char *s)
{
	struct br_cidr cidr;
	if (cidr_parse(s, true, &cidr) < 0)
		model_err(c, "\"%s\" is not a valid IP address or CIDR", s);
	else if (cidr.len == 0)
		model_err(c,
			  "\"%s\" is a default route; a workload's networks are its own addresses",
			  s);
}

void model_check_nonempty_item(struct model_ctx *c, const char *s)
{
	if (!*s)
		model_err(c, "must not be empty");
}

/* --- addresses ------------------------------------------------------------------ */

void model_check_cidr_item(struct model_ctx *c, const char *s)
{
	struct br_cidr cidr;
	if (cidr_parse(s, false, &cidr) < 0)
		model_err(c, "\"%s\" is not a valid CIDR", s);
}

void model_check_cidr(struct model_ctx *c, const void *field)
{
	model_check_cidr_item(c, *(const char *const *)field);
}

void model_check_net_item(struct model_ctx *c, const char *s)
{
	struct br_cidr cidr;
	if (cidr_parse(s, true, &cidr) < 0)
		model_err(c, "\"%s\" is not a valid IP address or CIDR", s);
}

void model_check_ip_item(struct model_ctx *c, const char *s)
{
	struct br_ip ip;
	if (ip_parse(s, &ip) < 0)
		model_err(c, "\"%s\" is not a valid IP address", s);
}

void model_check_ip(struct model_ctx *c, const void *field)
{
	model_check_ip_item(c, *(const char *const *)field);
}

void model_check_ipv4(struct model_ctx *c, const void *field)
{
	const char *s = *(const char *const *)field;
	struct br_ip ip;
	if (ip_parse(s, &ip) < 0 || ip.family != AF_INET)
		model_err(c, "\"%s\" is not a valid IPv4 address", s);
}

static void check_family_cidr(struct model_ctx *c, const void *field, int family)
{
	const char *s = *(const char *const *)field;
	struct br_cidr cidr;
	if (cidr_parse(s, true, &cidr) < 0 || cidr.ip.family != family)
		model_err(c, "\"%s\" is not a valid %s address with prefix length", s,
			  family == AF_INET ? "IPv4" : "IPv6");
}

void model_check_ipv4_cidr(struct model_ctx *c, const void *field)
{
	check_family_cidr(c, field, AF_INET);
}

void model_check_ipv6_cidr(struct model_ctx *c, const void *field)
{
	check_family_cidr(c, field, AF_INET6);
}

void model_check_mac(struct model_ctx *c, const void *field)
{
	const char *s = *(const char *const *)field;
	bool ok = strlen(s) == 17;
	for (size_t i = 0; ok && i < 17; i++)
		ok = (i % 3 == 2) ? s[i] == ':' : isxdigit((unsigned char)s[i]);
	if (!ok)
		model_err(c, "\"%s\" is not a valid MAC address", s);
}

int peer_ip_parse(const char *s, char ip[46], uint16_t *port)
{
	const char *addr = s, *portstr = NULL;
	size_t alen;
	struct br_ip parsed;
	if (s[0] == '[') {
		const char *close = strchr(s, ']');
		if (!close || close[1] != ':')
			return -EINVAL;
		addr = s + 1;
		alen = (size_t)(close - addr);
		portstr = close + 2;
	} else {
		const char *colon = strchr(s, ':');
		if (colon && !strchr(colon + 1, ':')) {
			alen = (size_t)(colon - s);
			portstr = colon + 1;
		} else {
			alen = strlen(s); /* IPv4 or a bare IPv6 */
		}
	}
	if (alen == 0 || alen >= 46)
		return -EINVAL;
	char buf[46];
	memcpy(buf, addr, alen);
	buf[alen] = '\0';
	if (ip_parse(buf, &parsed) < 0)
		return -EINVAL;
	unsigned long p = 0;
	if (portstr) {
		char *end;
		if (!isdigit((unsigned char)*portstr))
			return -EINVAL;
		p = strtoul(portstr, &end, 10);
		if (*end || p == 0 || p > 65535)
			return -EINVAL;
	}
	memcpy(ip, buf, alen + 1);
	*port = (uint16_t)p;
	return 0;
}

void model_check_peer_ip(struct model_ctx *c, const void *field)
{
	const char *s = *(const char *const *)field;
	char ip[46];
	uint16_t port;
	if (peer_ip_parse(s, ip, &port) < 0)
		model_err(c, "\"%s\" is not a valid peer address (IP, IP:port or [IPv6]:port)", s);
}

void model_check_selector(struct model_ctx *c, const void *field)
{
	const char *s = *(const char *const *)field;
	struct sel *sel;
	struct strbuf err = STRBUF_INIT;
	sb_init(&err);
	if (sel_parse(s, &sel, &err) < 0)
		model_err(c, "invalid selector \"%s\": %s", s, sb_str(&err));
	else
		sel_free(sel);
	sb_free(&err);
}

/* --- codecs ---------------------------------------------------------------------- */

/* {type: T} */
static struct jv *schema_typed(struct arena *a, const char *type)
{
	struct jv *s = jv_object(a);
	jv_add(a, s, "type", jv_string(a, type));
	return s;
}

/* An integer or a string, the way Kubernetes' own IntOrString fields are declared. */
static struct jv *schema_int_or_string(struct arena *a)
{
	struct jv *s = jv_object(a), *any = jv_array(a);
	jv_push(a, any, schema_typed(a, "integer"));
	jv_push(a, any, schema_typed(a, "string"));
	jv_add(a, s, "anyOf", any);
	jv_add(a, s, "x-kubernetes-int-or-string", jv_bool(a, true));
	return s;
}

static struct jv *schema_array_of(struct arena *a, struct jv *items)
{
	struct jv *s = schema_typed(a, "array");
	jv_add(a, s, "items", items);
	return s;
}

static struct jv *port_list_schema(struct arena *a)
{
	return schema_array_of(a, schema_int_or_string(a));
}

/* An AS number is stored as a number (dotted 1.10 is read, 65546 written); 0 is reserved. */
static struct jv *asn_schema(struct arena *a)
{
	struct jv *s = schema_typed(a, "integer");
	jv_add(a, s, "minimum", jv_int(a, 1));
	jv_add(a, s, "maximum", jv_int(a, UINT32_MAX));
	return s;
}

static struct jv *duration_schema(struct arena *a)
{
	return schema_typed(a, "string");
}

/* IPAMBlock allocations: an attribute index per ordinal, null when free. */
static struct jv *int_list_schema(struct arena *a)
{
	struct jv *item = schema_typed(a, "integer");
	jv_add(a, item, "nullable", jv_bool(a, true));
	return schema_array_of(a, item);
}

static struct jv *str_int_map_schema(struct arena *a)
{
	struct jv *s = schema_typed(a, "object");
	jv_add(a, s, "additionalProperties", schema_typed(a, "integer"));
	return s;
}

static bool ios_decode(struct model_ctx *c, const struct jv *v, void *field)
{
	struct br_int_or_string *ios = field;
	int64_t i;
	if (v->type == JV_NUMBER && jv_as_int64(v, &i)) {
		*ios = (struct br_int_or_string){ .type = IOS_INT, .i = i };
		return true;
	}
	if (v->type == JV_STRING) {
		*ios = (struct br_int_or_string){ .type = IOS_STRING,
						  .s = arena_strdup(c->a, v->s.text) };
		return true;
	}
	model_err(c, "must be a port number or a port name");
	return false;
}

static struct jv *ios_encode(struct arena *a, const void *field)
{
	const struct br_int_or_string *ios = field;
	if (ios->type == IOS_INT)
		return jv_int(a, ios->i);
	if (ios->type == IOS_STRING)
		return jv_string(a, ios->s);
	return NULL;
}

const struct model_codec model_codec_int_or_string = { ios_decode, ios_encode,
						       schema_int_or_string };

static const struct {
	const char *name;
	uint8_t number;
} protocols[] = {
	{ "TCP", 6 },	  { "UDP", 17 },   { "ICMP", 1 },
	{ "ICMPv6", 58 }, { "SCTP", 132 }, { "UDPLite", 136 },
};

static bool protocol_decode(struct model_ctx *c, const struct jv *v, void *field)
{
	struct br_protocol *p = field;
	int64_t i;
	const char *s = jv_as_string(v);
	if (v->type == JV_NUMBER && jv_as_int64(v, &i)) {
		if (i < 1 || i > 255) {
			model_err(c, "protocol number %" PRId64 " is out of range (1-255)", i);
			return false;
		}
		/* A number stays a number as written. */
		*p = (struct br_protocol){ .set = true, .number = (uint8_t)i };
		return true;
	}
	for (size_t k = 0; s && k < ARRAY_SIZE(protocols); k++) {
		if (strcasecmp(s, protocols[k].name) == 0) {
			*p = (struct br_protocol){ .set = true,
						   .number = protocols[k].number,
						   .name = protocols[k].name };
			return true;
		}
	}
	model_err(c,
		  "\"%s\" is not a protocol (TCP, UDP, ICMP, ICMPv6, SCTP, UDPLite or a "
		  "number 1-255)",
		  s ? s : jv_type_name(v->type));
	return false;
}

static struct jv *protocol_encode(struct arena *a, const void *field)
{
	const struct br_protocol *p = field;
	if (!p->set)
		return NULL;
	return p->name ? jv_string(a, p->name) : jv_int(a, p->number);
}

const struct model_codec model_codec_protocol = { protocol_decode, protocol_encode,
						  schema_int_or_string };

static bool parse_port_number(const char *s, unsigned long *out)
{
	char *end;
	if (!isdigit((unsigned char)*s))
		return false;
	errno = 0;
	*out = strtoul(s, &end, 10);
	return *end == '\0' && errno == 0;
}

static bool port_decode(struct model_ctx *c, const struct jv *v, void *field)
{
	struct br_port *p = field;
	int64_t i;
	unsigned long lo, hi;
	if (v->type == JV_NUMBER) {
		if (!jv_as_int64(v, &i) || i < 1 || i > 65535) {
			model_err(c, "port %s is out of range (1-65535)", v->s.text);
			return false;
		}
		*p = (struct br_port){ .min = (uint16_t)i, .max = (uint16_t)i };
		return true;
	}
	const char *s = jv_as_string(v);
	if (!s) {
		model_err(c, "must be a port, a range \"min:max\" or a port name");
		return false;
	}
	const char *colon = strchr(s, ':');
	if (colon) {
		char buf[16];
		size_t n = (size_t)(colon - s);
		bool ok = n < sizeof(buf);
		if (ok) {
			memcpy(buf, s, n);
			buf[n] = '\0';
			ok = parse_port_number(buf, &lo) && parse_port_number(colon + 1, &hi);
		}
		if (!ok || lo < 1 || hi > 65535) {
			model_err(c, "\"%s\" is not a valid port range (min:max within 1-65535)",
				  s);
			return false;
		}
		if (lo > hi) {
			model_err(c, "port range \"%s\" has its minimum above its maximum", s);
			return false;
		}
		*p = (struct br_port){ .min = (uint16_t)lo, .max = (uint16_t)hi };
		return true;
	}
	if (parse_port_number(s, &lo)) {
		if (lo < 1 || lo > 65535) {
			model_err(c, "port %s is out of range (1-65535)", s);
			return false;
		}
		*p = (struct br_port){ .min = (uint16_t)lo, .max = (uint16_t)lo };
		return true;
	}
	const char *why;
	if (!model_valid_port_name(s, &why)) {
		model_err(c, "\"%s\" is not a port, range or port name: %s", s, why);
		return false;
	}
	*p = (struct br_port){ .name = arena_strdup(c->a, s) };
	return true;
}

static struct jv *port_encode(struct arena *a, const void *field)
{
	const struct br_port *p = field;
	if (p->name)
		return jv_string(a, p->name);
	if (p->min == p->max)
		return jv_int(a, p->min);
	return jv_string(a, arena_printf(a, "%u:%u", p->min, p->max));
}

static bool port_list_decode(struct model_ctx *c, const struct jv *v, void *field)
{
	struct br_port_list *l = field;
	if (v->type != JV_ARRAY) {
		model_err(c, "must be a list of ports");
		return false;
	}
	l->v = arena_alloc(c->a, sizeof(*l->v) * (v->arr.n ? v->arr.n : 1));
	l->n = v->arr.n;
	bool ok = true;
	for (size_t i = 0; i < v->arr.n; i++) {
		size_t m = model_push_index(c, i);
		ok &= port_decode(c, v->arr.items[i], &l->v[i]);
		model_pop(c, m);
	}
	return ok;
}

static struct jv *port_list_encode(struct arena *a, const void *field)
{
	const struct br_port_list *l = field;
	if (!l->n)
		return NULL;
	struct jv *arr = jv_array(a);
	for (size_t i = 0; i < l->n; i++)
		jv_push(a, arr, port_encode(a, &l->v[i]));
	return arr;
}

const struct model_codec model_codec_port_list = { port_list_decode, port_list_encode,
						   port_list_schema };

int asn_parse(const char *s, uint32_t *out)
{
	unsigned long hi, lo;
	const char *dot = strchr(s, '.');
	if (!dot) {
		if (!parse_port_number(s, &lo) || lo > UINT32_MAX || strlen(s) > 10)
			return -EINVAL;
		*out = (uint32_t)lo;
		return 0;
	}
	char buf[8];
	size_t n = (size_t)(dot - s);
	if (n == 0 || n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = '\0';
	if (!parse_port_number(buf, &hi) || !parse_port_number(dot + 1, &lo) || hi > 65535 ||
	    lo > 65535 || strlen(dot + 1) > 5)
		return -EINVAL;
	*out = (uint32_t)(hi << 16 | lo);
	return 0;
}

static bool asn_decode(struct model_ctx *c, const struct jv *v, void *field)
{
	struct opt_asn *a = field;
	uint32_t n;
	/* 1.10 read from YAML is a float; its text is what the user meant. */
	const char *text = v->type == JV_NUMBER ? (v->src ? v->src : v->s.text) : jv_as_string(v);
	if (!text || asn_parse(text, &n) < 0) {
		model_err(c, "\"%s\" is not an AS number (0-4294967295, or dotted 0-65535.0-65535)",
			  text ? text : jv_type_name(v->type));
		return false;
	}
	if (n == 0) {
		model_err(c, "AS number 0 is reserved");
		return false;
	}
	*a = (struct opt_asn){ true, n };
	return true;
}

static struct jv *asn_encode(struct arena *a, const void *field)
{
	const struct opt_asn *asn = field;
	return asn->set ? jv_uint(a, asn->v) : NULL;
}

const struct model_codec model_codec_asn = { asn_decode, asn_encode, asn_schema };

int duration_or_seconds_parse(const char *s, uint64_t *ms)
{
	int64_t d;
	if (duration_parse(s, &d) == 0 && d >= 0) {
		*ms = (uint64_t)d;
		return 0;
	}
	char *end;
	errno = 0;
	unsigned long long secs = strtoull(s, &end, 0);
	if (errno || end == s || *end || s[0] == '-' || secs > 1000000000ull)
		return -EINVAL;
	*ms = secs * 1000;
	return 0;
}

int duration_parse(const char *s, int64_t *ms)
{
	static const struct {
		const char *unit;
		double ms;
	} units[] = { { "ns", 1e-6 }, { "us", 1e-3 }, { "µs", 1e-3 },  { "ms", 1 },
		      { "s", 1000 },  { "m", 60000 }, { "h", 3600000 } };
	double total = 0;
	const char *p = s;
	if (*p == '\0')
		return -EINVAL;
	if (streq(s, "0")) {
		*ms = 0;
		return 0;
	}
	while (*p) {
		char *end;
		if (!isdigit((unsigned char)*p) && *p != '.')
			return -EINVAL;
		double v = strtod(p, &end);
		if (end == p)
			return -EINVAL;
		p = end;
		size_t best = 0, bestlen = 0;
		for (size_t i = 0; i < ARRAY_SIZE(units); i++) {
			size_t ul = strlen(units[i].unit);
			if (strncmp(p, units[i].unit, ul) == 0 && ul > bestlen) {
				best = i;
				bestlen = ul;
			}
		}
		if (!bestlen)
			return -EINVAL;
		total += v * units[best].ms;
		p += bestlen;
	}
	if (total > 9.2e15)
		return -EINVAL;
	*ms = (int64_t)total;
	return 0;
}

static bool duration_decode(struct model_ctx *c, const struct jv *v, void *field)
{
	struct br_duration *d = field;
	const char *s = jv_as_string(v);
	int64_t ms;
	if (!s || duration_parse(s, &ms) < 0) {
		model_err(c, "\"%s\" is not a duration (like 90s, 1m30s, 500ms)",
			  s ? s : jv_type_name(v->type));
		return false;
	}
	*d = (struct br_duration){ arena_strdup(c->a, s), ms };
	return true;
}

static struct jv *duration_encode(struct arena *a, const void *field)
{
	const struct br_duration *d = field;
	return d->text ? jv_string(a, d->text) : NULL;
}

const struct model_codec model_codec_duration = { duration_decode, duration_encode,
						  duration_schema };

static bool int_list_decode(struct model_ctx *c, const struct jv *v, void *field)
{
	struct br_int_list *l = field;
	if (v->type != JV_ARRAY) {
		model_err(c, "must be a list of integers");
		return false;
	}
	l->v = arena_alloc(c->a, sizeof(int64_t) * (v->arr.n ? v->arr.n : 1));
	l->n = v->arr.n;
	bool ok = true;
	for (size_t i = 0; i < v->arr.n; i++) {
		const struct jv *e = v->arr.items[i];
		if (e->type == JV_NULL) {
			l->v[i] = -1;
		} else if (!jv_as_int64(e, &l->v[i]) || l->v[i] < 0) {
			size_t m = model_push_index(c, i);
			model_err(c, "must be a non-negative integer or null");
			model_pop(c, m);
			l->v[i] = -1;
			ok = false;
		}
	}
	return ok;
}

static struct jv *int_list_encode(struct arena *a, const void *field)
{
	const struct br_int_list *l = field;
	if (!l->n)
		return NULL;
	struct jv *arr = jv_array(a);
	for (size_t i = 0; i < l->n; i++)
		jv_push(a, arr, l->v[i] < 0 ? jv_null(a) : jv_int(a, l->v[i]));
	return arr;
}

const struct model_codec model_codec_int_list = { int_list_decode, int_list_encode,
						  int_list_schema };

static bool str_int_map_decode(struct model_ctx *c, const struct jv *v, void *field)
{
	struct br_str_int_map *m = field;
	if (v->type != JV_OBJECT) {
		model_err(c, "must be a map of integers");
		return false;
	}
	m->v = arena_alloc(c->a, sizeof(*m->v) * (v->obj.n ? v->obj.n : 1));
	m->n = 0;
	bool ok = true;
	for (size_t i = 0; i < v->obj.n; i++) {
		if (!jv_as_int64(v->obj.members[i].value, &m->v[m->n].value)) {
			model_err_at(c, v->obj.members[i].key, "must be an integer");
			ok = false;
			continue;
		}
		m->v[m->n++].key = arena_strdup(c->a, v->obj.members[i].key);
	}
	return ok;
}

static struct jv *str_int_map_encode(struct arena *a, const void *field)
{
	const struct br_str_int_map *m = field;
	if (!m->n)
		return NULL;
	struct jv *o = jv_object(a);
	for (size_t i = 0; i < m->n; i++)
		jv_add(a, o, m->v[i].key, jv_int(a, m->v[i].value));
	return o;
}

const struct model_codec model_codec_str_int_map = { str_int_map_decode, str_int_map_encode,
						     str_int_map_schema };

/* --- lists and kinds ------------------------------------------------------------ */

/* Duplicates in a list of enum values: "Ingress" twice. */
void model_check_no_dups(struct model_ctx *c, const char *field, const char *const *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < i; j++)
			if (streq(v[i], v[j])) {
				size_t m = model_push(c, field);
				model_push_index(c, i);
				model_err(c, "duplicate value \"%s\"", v[i]);
				model_pop(c, m);
			}
}

void model_check_policy_type_item(struct model_ctx *c, const char *s)
{
	if (!streq(s, "Ingress") && !streq(s, "Egress"))
		model_err(c, "\"%s\" is not one of Ingress or Egress", s);
}

/* [a-z0-9]([-a-z0-9]*[a-z0-9])? over s[0..n) (no length bound: Calico's policy names bound the
 * whole name only). */
static bool name_label(const char *s, size_t n)
{
	if (n == 0 || !lower_alnum(s[0]) || !lower_alnum(s[n - 1]))
		return false;
	for (size_t i = 1; i + 1 < n; i++)
		if (!lower_alnum(s[i]) && s[i] != '-')
			return false;
	return true;
}

/*
 * Calico's policy names: a label, or two joined by one '.' (the form "<tier>.<name>" that
 * Calico used to require); a namespaced (staged) NetworkPolicy may also be "knp.default.<name>"
 * or "ossg.default.<name>" (Calico's own names for converted policies), <name> a subdomain.
 */
static bool policy_name_ok(const char *s, bool namespaced)
{
	const char *why;
	if (namespaced && (str_has_prefix(s, "knp.default.") || str_has_prefix(s, "ossg.default.")))
		return valid_dns_subdomain(strchr(s, '.') + 9, &why);
	const char *dot = strchr(s, '.');
	if (!dot)
		return name_label(s, strlen(s));
	return !strchr(dot + 1, '.') && name_label(s, (size_t)(dot - s)) &&
	       name_label(dot + 1, strlen(dot + 1));
}

void model_check_name(struct model_ctx *c, const struct br_object *o)
{
	const char *why;
	/* IPAM bookkeeping names are key segments ("fd00::-122"), never user input. */
	if (o->kind->internal) {
		if (strchr(o->meta.name, '/'))
			model_err_at(c, "metadata.name", "must not contain '/'");
		return;
	}
	bool ok = o->kind->id == KIND_NAMESPACE ? valid_dns_label(o->meta.name, &why)
						: valid_dns_subdomain(o->meta.name, &why);
	if (!ok) {
		model_err_at(c, "metadata.name", "\"%s\" %s", o->meta.name, why);
		return;
	}
	enum br_kind_id k = o->kind->id;
	bool np = k == KIND_NETWORKPOLICY || k == KIND_STAGEDNETWORKPOLICY;
	if ((np || k == KIND_GLOBALNETWORKPOLICY || k == KIND_STAGEDGLOBALNETWORKPOLICY) &&
	    !policy_name_ok(o->meta.name, np))
		model_err_at(
			c, "metadata.name",
			"\"%s\": a policy's name is lower case letters, digits and '-' (starting "
			"and ending with a letter or digit), or two such joined by one '.'%s, "
			"as Calico requires",
			o->meta.name, np ? ", or \"knp.default.<name>\"" : "");
}
