/*
 * Choosing the node's address (autodetect.h). Pure: interface names and
 * addresses in, one address out; regular expressions are POSIX extended
 * (regcomp), anchored to the whole name as Calico's are.
 */
#include <brindle/core/autodetect.h>
#include <brindle/core/devices.h>
#include <brindle/core/util.h>

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* Interfaces first-found never picks: Calico's list, with Brindle's own devices. */
static const char *const skip_prefixes[] = {
	"docker",
	"cbr",
	"dummy",
	"virbr",
	"lxcbr",
	"veth",
	"cali",
	"tunl",
	"flannel",
	"kube-ipvs",
	"cni",
	VXLAN_DEV,
	VXLAN6_DEV,
	"wireguard.cali",
	"wg-v6.cali",
	"nodelocaldns",
	"podman",
	"br-",
};

bool ad_skipped(const char *ifname)
{
	if (streq(ifname, "lo"))
		return true;
	for (size_t i = 0; i < ARRAY_SIZE(skip_prefixes); i++)
		if (str_has_prefix(ifname, skip_prefixes[i]))
			return true;
	return false;
}

static void free_res(struct ad_method *m)
{
	if (m->kind == AD_INTERFACE || m->kind == AD_SKIP_INTERFACE)
		for (size_t i = 0; i < m->n; i++)
			regfree(&m->re[i]);
	m->n = 0;
}

void ad_method_free(struct ad_method *m)
{
	free_res(m);
}

#define AD_MAX_RE_LEN	   128
#define AD_MAX_QUANTIFIERS 8

/* How many repetitions @re has; SIZE_MAX when one follows another ("a*?", "b++", "c{2}*"). */
static size_t quantifiers(const char *re)
{
	size_t n = 0;
	bool after = false; /* the last character closed a repetition */
	for (; *re; re++) {
		bool q = strchr("*+?{", *re) != NULL;
		if (q && after)
			return SIZE_MAX;
		n += q;
		if (*re == '{')
			re += strcspn(re, "}") - (re[strcspn(re, "}")] ? 0 : 1);
		after = q;
	}
	return n;
}

/* "a,b,c" after the '=' of @text, each item to @item; -EINVAL on the first bad one. */
static int each_item(const char *list, struct ad_method *m, int family, struct strbuf *err)
{
	char *copy = xstrdup(list), *save = NULL;
	int r = 0;
	for (char *s = strtok_r(copy, ",", &save); s && r == 0; s = strtok_r(NULL, ",", &save)) {
		while (*s == ' ')
			s++;
		if (m->n == AD_MAX_ITEMS) {
			sb_addf(err, "at most %d items", AD_MAX_ITEMS);
			r = -EINVAL;
		} else if (m->kind == AD_CIDR) {
			struct br_cidr c;
			int fam = 0;
			if (cidr_parse(s, false, &c) == 0 && cidr_is_network(&c))
				fam = c.ip.family;
			if (!fam || fam != family) {
				sb_addf(err, "\"%s\" is not an IPv%d network", s,
					family == AF_INET ? 4 : 6);
				r = -EINVAL;
			} else {
				m->cidr[m->n++] = c;
			}
		} else if (strlen(s) > AD_MAX_RE_LEN || quantifiers(s) > AD_MAX_QUANTIFIERS) {
			/*
			 * glibc's regcomp copies a subexpression for each repetition around it:
			 * stacked ones ("a+++...", "a*?") grow it exponentially (the fuzzer ran
			 * it out of memory, then out of time with 8 of them): refused, and at
			 * most 8 in all. Interface names are 15 characters: a bound costs nothing.
			 */
			sb_addf(err,
				"\"%.40s\" is too long or has too many repetitions (at most %d "
				"characters and %d of * + ? {)",
				s, AD_MAX_RE_LEN, AD_MAX_QUANTIFIERS);
			r = -EINVAL;
		} else {
			struct strbuf anchored = STRBUF_INIT;
			sb_init(&anchored);
			sb_addf(&anchored, "^(%s)$", s);
			int rc = regcomp(&m->re[m->n], sb_str(&anchored), REG_EXTENDED | REG_NOSUB);
			sb_free(&anchored);
			if (rc != 0) {
				char why[128];
				regerror(rc, &m->re[m->n], why, sizeof(why));
				sb_addf(err, "\"%s\" is not a regular expression: %s", s, why);
				r = -EINVAL;
			} else {
				m->n++;
			}
		}
	}
	free(copy);
	if (r == 0 && m->n == 0) {
		sb_adds(err, "the list is empty");
		r = -EINVAL;
	}
	return r;
}

int ad_method_parse(const char *text, int family, struct ad_method *m, struct strbuf *err)
{
	*m = (struct ad_method){ .kind = AD_FIRST_FOUND };
	if (!text || !*text || streq(text, "first-found"))
		return 0;
	if (streq(text, "kubernetes-internal-ip")) {
		m->kind = AD_K8S_INTERNAL_IP;
		return 0;
	}
	static const struct {
		const char *prefix;
		enum ad_kind kind;
	} with_arg[] = {
		{ "interface=", AD_INTERFACE },
		{ "skip-interface=", AD_SKIP_INTERFACE },
		{ "cidr=", AD_CIDR },
		{ "can-reach=", AD_CAN_REACH },
	};
	for (size_t i = 0; i < ARRAY_SIZE(with_arg); i++) {
		if (!str_has_prefix(text, with_arg[i].prefix))
			continue;
		const char *arg = text + strlen(with_arg[i].prefix);
		m->kind = with_arg[i].kind;
		if (m->kind == AD_CAN_REACH) {
			if (!*arg || strlen(arg) >= sizeof(m->target) || strchr(arg, ',')) {
				sb_addf(err, "can-reach= needs one address or host name");
				return -EINVAL;
			}
			strcpy(m->target, arg);
			return 0;
		}
		struct strbuf why = STRBUF_INIT;
		sb_init(&why);
		int r = each_item(arg, m, family, &why);
		if (r < 0) {
			sb_addf(err, "%s: %s", with_arg[i].prefix, sb_str(&why));
			free_res(m);
		}
		sb_free(&why);
		return r;
	}
	sb_addf(err,
		"unknown method \"%s\" (first-found, interface=, skip-interface=, cidr=, "
		"can-reach=, kubernetes-internal-ip)",
		text);
	return -EINVAL;
}

static bool name_matches(const struct ad_method *m, const char *name)
{
	for (size_t i = 0; i < m->n; i++)
		if (regexec(&m->re[i], name, 0, NULL, 0) == 0)
			return true;
	return false;
}

/* An address a node can be reached at: of the family, not loopback, link-local or multicast. */
static bool usable(const struct br_cidr *c, int family)
{
	if (c->ip.family != family)
		return false;
	if (family == AF_INET) {
		uint32_t v = ip4_u32(&c->ip);
		return (v >> 24) != 127 && (v >> 16) != 0xa9fe && (v >> 28) != 0xe && v != 0;
	}
	const uint8_t *b = c->ip.a;
	bool loopback = true, zero = true;
	for (size_t i = 0; i < 15; i++)
		loopback &= b[i] == 0;
	for (size_t i = 0; i < 16; i++)
		zero &= b[i] == 0;
	loopback &= b[15] == 1;
	bool link_local = b[0] == 0xfe && (b[1] & 0xc0) == 0x80;
	return !loopback && !zero && !link_local && b[0] != 0xff;
}

int ad_choose(const struct ad_method *m, const struct ad_iface *ifs, size_t n, int family,
	      const struct br_ip *source, struct br_cidr *out, struct strbuf *err)
{
	if (m->kind == AD_K8S_INTERNAL_IP) {
		sb_adds(err, "kubernetes-internal-ip is read from the Node, not the interfaces");
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		const struct ad_iface *f = &ifs[i];
		bool take;
		switch (m->kind) {
		case AD_INTERFACE:
			take = name_matches(m, f->name);
			break;
		case AD_SKIP_INTERFACE:
			take = f->up && !ad_skipped(f->name) && !name_matches(m, f->name);
			break;
		case AD_CIDR:
		case AD_CAN_REACH:
			take = f->up;
			break;
		default:
			take = f->up && !ad_skipped(f->name);
		}
		for (size_t j = 0; take && j < f->n_addrs; j++) {
			const struct br_cidr *c = &f->addrs[j];
			if (!usable(c, family))
				continue;
			if (m->kind == AD_CAN_REACH && (!source || !ip_equal(&c->ip, source)))
				continue;
			bool in = m->kind != AD_CIDR;
			for (size_t k = 0; !in && k < m->n; k++)
				in = cidr_contains_ip(&m->cidr[k], &c->ip);
			if (!in)
				continue;
			*out = *c;
			return 0;
		}
	}
	static const char *const what[] = {
		[AD_FIRST_FOUND] = ("no interface that is up has a usable address (loopback, "
				    "container bridges, veths and tunnels are skipped)"),
		[AD_INTERFACE] = "no interface whose name matches has a usable address",
		[AD_SKIP_INTERFACE] =
			"no interface that is up and not skipped has a usable address",
		[AD_CIDR] = "no interface has an address in the given networks",
		[AD_CAN_REACH] = "the address the kernel would send from is on no interface",
	};
	sb_addf(err, "IPv%d: %s", family == AF_INET ? 4 : 6, what[m->kind]);
	return -ENOENT;
}

/* A name calico-node takes for a host NIC: ^((en|wl|ww|sl|ib)[Pcopsvx].*|(eth|wlan|wwan).*) */
static bool host_nic(const char *name)
{
	static const char *const two[] = { "en", "wl", "ww", "sl", "ib" };
	for (size_t i = 0; i < ARRAY_SIZE(two); i++)
		if (str_has_prefix(name, two[i]) && name[2] && strchr("Pcopsvx", name[2]))
			return true;
	return str_has_prefix(name, "eth") || str_has_prefix(name, "wlan") ||
	       str_has_prefix(name, "wwan");
}

unsigned ad_pod_mtu(const struct ad_link_mtu *links, size_t n, unsigned encaps)
{
	unsigned host = 0;
	for (size_t i = 0; i < n; i++)
		if (links[i].up && links[i].mtu && host_nic(links[i].name) &&
		    (!host || links[i].mtu < host))
			host = links[i].mtu;
	if (!host)
		host = 1460;
	unsigned overhead = (encaps & AD_ENCAP_VXLAN6)	? 70
			    : (encaps & AD_ENCAP_VXLAN) ? 50
			    : (encaps & AD_ENCAP_IPIP)	? 20
							: 0;
	return host > overhead + 68 ? host - overhead : 68;
}
