/*
 * CNI documents without system calls: the network configuration read from
 * stdin, CNI_ARGS, the names derived from a pod, and result, error and
 * version documents in each spec version we speak.
 */
#include <brindle/core/cni.h>
#include <brindle/core/hash.h>
#include <brindle/core/json.h>
#include <brindle/core/model.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

static const char *const versions[] = { "0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0" };

bool cni_version_supported(const char *v)
{
	for (size_t i = 0; i < ARRAY_SIZE(versions); i++)
		if (streq(v, versions[i]))
			return true;
	return false;
}

static bool version_parts(const char *v, long p[3])
{
	char *end;
	for (int i = 0; i < 3; i++) {
		if (!v || *v < '0' || *v > '9')
			return false;
		p[i] = strtol(v, &end, 10);
		if (i < 2 && *end != '.')
			return false;
		v = end + (i < 2);
	}
	return *end == '\0';
}

int cni_version_cmp(const char *a, const char *b)
{
	long x[3], y[3];
	bool ok_a = version_parts(a, x), ok_b = version_parts(b, y);
	if (!ok_a || !ok_b)
		return (int)ok_a - (int)ok_b;
	for (int i = 0; i < 3; i++)
		if (x[i] != y[i])
			return x[i] < y[i] ? -1 : 1;
	return 0;
}

/* --- the configuration --------------------------------------------------------------------- */

struct parser {
	struct cni_conf *c;
	struct strbuf *err;
	int code;
};

static int bad(struct parser *p, int code, const char *fmt, ...) printf_like(3, 4);
static int bad(struct parser *p, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	sb_vaddf(p->err, fmt, ap);
	va_end(ap);
	p->code = code;
	return -EINVAL;
}

/* A string field: absent leaves *out alone; present must be a non-empty string. */
static int str_field(struct parser *p, const struct jv *obj, const char *key, const char *path,
		     const char **out, bool allow_empty)
{
	const struct jv *v = jv_get(obj, key);
	if (!v || v->type == JV_NULL)
		return 0;
	const char *s = v->type == JV_STRING ? jv_as_string(v) : NULL;
	if (!s || (!*s && !allow_empty))
		return bad(p, CNI_ERR_INVALID_CONFIG, "%s%s: must be a non-empty string", path,
			   key);
	if (strlen(s) != v->s.len)
		return bad(p, CNI_ERR_INVALID_CONFIG, "%s%s: must not contain NUL", path, key);
	*out = arena_strdup(p->c->a, s);
	return 0;
}

static int int_field(struct parser *p, const struct jv *obj, const char *key, const char *path,
		     int64_t min, int64_t max, int64_t *out)
{
	const struct jv *v = jv_get(obj, key);
	if (!v || v->type == JV_NULL)
		return 0;
	int64_t i;
	if (!jv_as_int64(v, &i) || i < min || i > max)
		return bad(p, CNI_ERR_INVALID_CONFIG,
			   "%s%s: must be an integer from %" PRId64 " to %" PRId64, path, key, min,
			   max);
	*out = i;
	return 0;
}

static const struct jv *obj_field(struct parser *p, const struct jv *obj, const char *key,
				  const char *path, int *r)
{
	const struct jv *v = jv_get(obj, key);
	if (!v || v->type == JV_NULL)
		return NULL;
	if (v->type != JV_OBJECT) {
		*r = bad(p, CNI_ERR_INVALID_CONFIG, "%s%s: must be an object", path, key);
		return NULL;
	}
	return v;
}

static const struct jv *arr_field(struct parser *p, const struct jv *obj, const char *key,
				  const char *path, int *r)
{
	const struct jv *v = jv_get(obj, key);
	if (!v || v->type == JV_NULL)
		return NULL;
	if (v->type != JV_ARRAY) {
		*r = bad(p, CNI_ERR_INVALID_CONFIG, "%s%s: must be a list", path, key);
		return NULL;
	}
	if (v->arr.n > 256) {
		*r = bad(p, CNI_ERR_INVALID_CONFIG, "%s%s: too many entries", path, key);
		return NULL;
	}
	return v;
}

/* ipam.<key>: pool names or CIDRs. */
static int pool_list(struct parser *p, const struct jv *ipam, const char *key, const char ***out,
		     size_t *n)
{
	int r = 0;
	const struct jv *pools = arr_field(p, ipam, key, "ipam.", &r);
	if (r < 0 || !pools)
		return r;
	*out = arena_new_array(p->c->a, const char *, pools->arr.n + 1);
	for (size_t i = 0; i < pools->arr.n; i++) {
		const struct jv *v = pools->arr.items[i];
		const char *s = v->type == JV_STRING ? jv_as_string(v) : NULL;
		if (!s || !*s || strlen(s) != v->s.len)
			return bad(p, CNI_ERR_INVALID_CONFIG,
				   "ipam.%s[%zu]: must be a pool name or CIDR", key, i);
		(*out)[(*n)++] = arena_strdup(p->c->a, s);
	}
	return 0;
}

/* A switch (ipam.assign_ipv4 and _ipv6, ...): true or false, or Calico's "true" and "false". */
static int switch_field(struct parser *p, const struct jv *obj, const char *path, const char *key,
			bool dflt, bool *out)
{
	const struct jv *v = jv_get(obj, key);
	*out = dflt;
	if (!v)
		return 0;
	const char *s = v->type == JV_STRING ? jv_as_string(v) : NULL;
	if (v->type == JV_BOOL && jv_as_bool(v, out))
		return 0;
	if (s && (streq(s, "true") || streq(s, "false"))) {
		*out = streq(s, "true");
		return 0;
	}
	return bad(p, CNI_ERR_INVALID_CONFIG, "%s%s: must be true or false", path, key);
}

static int parse_ipam(struct parser *p, const struct jv *ipam)
{
	struct cni_conf *c = p->c;
	int r = 0;
	if ((r = str_field(p, ipam, "type", "ipam.", &c->ipam_type, false)) < 0 ||
	    (r = str_field(p, ipam, "ipam_lock_file", "ipam.", &c->ipam_lock_file, true)) < 0 ||
	    (r = int_field(p, ipam, "empty_block_grace_seconds", "ipam.", 0, 365 * 86400,
			   &c->empty_block_grace_s)) < 0 ||
	    (r = int_field(p, ipam, "timeout_seconds", "ipam.", 1, 3600, &c->ipam_timeout_s)) < 0)
		return r;
	if ((r = pool_list(p, ipam, "ipv4_pools", &c->ipv4_pools, &c->n_ipv4_pools)) < 0 ||
	    (r = pool_list(p, ipam, "ipv6_pools", &c->ipv6_pools, &c->n_ipv6_pools)) < 0 ||
	    (r = switch_field(p, ipam, "ipam.", "assign_ipv4", true, &c->assign_ipv4)) < 0 ||
	    (r = switch_field(p, ipam, "ipam.", "assign_ipv6", false, &c->assign_ipv6)) < 0)
		return r;
	if (!c->assign_ipv4 && !c->assign_ipv6)
		return bad(p, CNI_ERR_INVALID_CONFIG,
			   "ipam.assign_ipv4 and ipam.assign_ipv6 are both false: a pod would get "
			   "no address");
	return 0;
}

static int add_ip(struct parser *p, const struct jv *v, const char *path, size_t i)
{
	struct cni_conf *c = p->c;
	const char *s = v->type == JV_STRING ? jv_as_string(v) : NULL;
	struct br_cidr cidr;
	if (!s || strlen(s) != v->s.len || cidr_parse(s, true, &cidr) < 0)
		return bad(p, CNI_ERR_INVALID_CONFIG, "%s[%zu]: \"%s\" is not an IP address", path,
			   i, s ? s : "");
	bool v6 = cidr.ip.family == AF_INET6;
	if (v6 ? !c->assign_ipv6 : !c->assign_ipv4)
		return bad(p, CNI_ERR_INVALID_CONFIG,
			   "%s[%zu]: an %s address, but ipam.assign_%s is not true", path, i,
			   v6 ? "IPv6" : "IPv4", v6 ? "ipv6" : "ipv4");
	for (size_t k = 0; k < c->n_ips; k++)
		if (ip_equal(&c->ips[k], &cidr.ip))
			return 0;
	if (c->n_ips >= CNI_MAX_IPS)
		return bad(p, CNI_ERR_INVALID_CONFIG, "%s: at most %d addresses", path,
			   CNI_MAX_IPS);
	c->ips[c->n_ips++] = cidr.ip;
	return 0;
}

static int parse_ips(struct parser *p, const struct jv *list, const char *path)
{
	for (size_t i = 0; list && i < list->arr.n; i++) {
		int r = add_ip(p, list->arr.items[i], path, i);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Label keys and values as Kubernetes allows them (the model checks them again). */
static bool label_text_ok(const char *s, size_t max)
{
	size_t n = strlen(s);
	if (n > max)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch < 0x21 || ch > 0x7e || ch == '"' || ch == '\\')
			return false;
	}
	return true;
}

static int parse_args(struct parser *p, const struct jv *args)
{
	struct cni_conf *c = p->c;
	int r = 0;
	const struct jv *cni = obj_field(p, args, "cni", "args.", &r);
	if (r < 0)
		return r;
	if (cni) {
		const struct jv *labels = arr_field(p, cni, "labels", "args.cni.", &r);
		if (r < 0)
			return r;
		for (size_t i = 0; labels && i < labels->arr.n; i++) {
			const struct jv *l = labels->arr.items[i];
			const struct jv *k = l->type == JV_OBJECT ? jv_get(l, "key") : NULL;
			const struct jv *v = l->type == JV_OBJECT ? jv_get(l, "value") : NULL;
			const char *ks = k && k->type == JV_STRING ? jv_as_string(k) : NULL;
			const char *vs = v && v->type == JV_STRING ? jv_as_string(v) : NULL;
			if (!ks || !vs || !*ks || strlen(ks) != k->s.len ||
			    strlen(vs) != v->s.len || !label_text_ok(ks, 317) ||
			    !label_text_ok(vs, 63))
				return bad(p, CNI_ERR_INVALID_CONFIG,
					   "args.cni.labels[%zu]: needs a \"key\" and a \"value\" "
					   "(strings)",
					   i);
			labels_set(c->a, &c->labels, ks, vs);
		}
		const struct jv *ips = arr_field(p, cni, "ips", "args.cni.", &r);
		if (r < 0 || (r = parse_ips(p, ips, "args.cni.ips")) < 0)
			return r;
	}
	const struct jv *br = obj_field(p, args, "brindle", "args.", &r);
	if (r < 0)
		return r;
	const struct jv *ports = br ? arr_field(p, br, "ports", "args.brindle.", &r) : NULL;
	if (r < 0)
		return r;
	if (ports) {
		c->ports = arena_new_array(c->a, struct cni_port, ports->arr.n + 1);
		for (size_t i = 0; i < ports->arr.n; i++) {
			const struct jv *o = ports->arr.items[i];
			struct cni_port port = { 0 };
			char path[48];
			snprintf(path, sizeof(path), "args.brindle.ports[%zu].", i);
			if (o->type != JV_OBJECT)
				return bad(p, CNI_ERR_INVALID_CONFIG, "%s: must be an object",
					   path);
			if ((r = str_field(p, o, "name", path, &port.name, false)) < 0 ||
			    (r = str_field(p, o, "protocol", path, &port.protocol, false)) < 0 ||
			    (r = int_field(p, o, "port", path, 1, 65535, &port.port)) < 0)
				return r;
			if (!port.name || !port.port)
				return bad(p, CNI_ERR_INVALID_CONFIG, "%s: needs a name and a port",
					   path);
			c->ports[c->n_ports++] = port;
		}
	}
	return 0;
}

/* prevResult: the addresses, whatever the version wrote them as. */
static int parse_prev(struct parser *p, const struct jv *prev)
{
	struct cni_conf *c = p->c;
	c->has_prev_result = true;
	c->prev_ips = arena_new_array(c->a, struct br_ip, CNI_MAX_IPS);
	const struct jv *ips = jv_get(prev, "ips");
	const struct jv *ip4 = jv_get(prev, "ip4"), *ip6 = jv_get(prev, "ip6");
	const struct jv *list[CNI_MAX_IPS];
	size_t n = 0;
	if (ips && ips->type == JV_ARRAY)
		for (size_t i = 0; i < ips->arr.n && n < CNI_MAX_IPS; i++)
			if (ips->arr.items[i]->type == JV_OBJECT)
				list[n++] = jv_get(ips->arr.items[i], "address");
	if (ip4 && ip4->type == JV_OBJECT && n < CNI_MAX_IPS)
		list[n++] = jv_get(ip4, "ip");
	if (ip6 && ip6->type == JV_OBJECT && n < CNI_MAX_IPS)
		list[n++] = jv_get(ip6, "ip");
	for (size_t i = 0; i < n; i++) {
		const char *s =
			list[i] && list[i]->type == JV_STRING ? jv_as_string(list[i]) : NULL;
		struct br_cidr cidr;
		if (!s || cidr_parse(s, true, &cidr) < 0)
			return bad(p, CNI_ERR_DECODE, "prevResult: address %zu is not a CIDR", i);
		c->prev_ips[c->n_prev_ips++] = cidr.ip;
	}
	return 0;
}

static int parse_root(struct parser *p, const struct jv *root)
{
	struct cni_conf *c = p->c;
	int r = 0;
	if (root->type != JV_OBJECT)
		return bad(p, CNI_ERR_DECODE, "the network configuration must be a JSON object");
	if ((r = str_field(p, root, "cniVersion", "", &c->cni_version, false)) < 0)
		return r;
	if (!c->cni_version)
		c->cni_version = CNI_DEFAULT_VERSION;
	if (!cni_version_supported(c->cni_version))
		return bad(p, CNI_ERR_INCOMPATIBLE_VERSION,
			   "cniVersion %s is not supported (0.1.0 to 1.0.0)", c->cni_version);
	if ((r = str_field(p, root, "name", "", &c->name, false)) < 0 ||
	    (r = str_field(p, root, "type", "", &c->type, false)) < 0 ||
	    (r = int_field(p, root, "mtu", "", 0, 65535, &c->mtu)) < 0 ||
	    (r = str_field(p, root, "mtu_file", "", &c->mtu_file, true)) < 0 ||
	    (r = str_field(p, root, "nodename", "", &c->nodename, false)) < 0 ||
	    (r = str_field(p, root, "nodename_file", "", &c->nodename_file, true)) < 0 ||
	    (r = str_field(p, root, "log_level", "", &c->log_level, false)) < 0 ||
	    (r = str_field(p, root, "log_file_path", "", &c->log_file_path, true)) < 0 ||
	    (r = str_field(p, root, "datastore_type", "", &c->datastore_type, false)) < 0 ||
	    (r = str_field(p, root, "etcd_endpoints", "", &c->etcd_endpoints, false)) < 0 ||
	    (r = str_field(p, root, "etcd_ca_cert_file", "", &c->etcd_ca_cert_file, false)) < 0 ||
	    (r = str_field(p, root, "etcd_cert_file", "", &c->etcd_cert_file, false)) < 0 ||
	    (r = str_field(p, root, "etcd_key_file", "", &c->etcd_key_file, false)) < 0 ||
	    (r = switch_field(p, root, "", "felix_ipv6_support", false, &c->felix_ipv6_support)) <
		    0)
		return r;
	if (!c->name)
		return bad(p, CNI_ERR_INVALID_CONFIG, "name: required");
	if (strchr(c->name, '/'))
		return bad(p, CNI_ERR_INVALID_CONFIG, "name: must not contain '/'");
	if (c->mtu && c->mtu < 68)
		return bad(p, CNI_ERR_INVALID_CONFIG, "mtu: must be at least 68");
	const struct jv *kube = obj_field(p, root, "kubernetes", "", &r);
	if (r < 0 ||
	    (kube && (r = str_field(p, kube, "kubeconfig", "kubernetes.", &c->kubeconfig, false)) < 0))
		return r;
	c->ips = arena_new_array(c->a, struct br_ip, CNI_MAX_IPS);
	c->assign_ipv4 = true;
	const struct jv *ipam = obj_field(p, root, "ipam", "", &r);
	if (r < 0 || (ipam && (r = parse_ipam(p, ipam)) < 0))
		return r;
	const struct jv *args = obj_field(p, root, "args", "", &r);
	if (r < 0 || (args && (r = parse_args(p, args)) < 0))
		return r;
	const struct jv *rc = obj_field(p, root, "runtimeConfig", "", &r);
	if (r < 0)
		return r;
	const struct jv *rips = rc ? arr_field(p, rc, "ips", "runtimeConfig.", &r) : NULL;
	if (r < 0 || (r = parse_ips(p, rips, "runtimeConfig.ips")) < 0)
		return r;
	const struct jv *prev = obj_field(p, root, "prevResult", "", &r);
	if (r < 0 || (prev && (r = parse_prev(p, prev)) < 0))
		return r;
	return 0;
}

int cni_conf_parse(const char *text, size_t len, struct cni_conf **out, int *code,
		   struct strbuf *err)
{
	struct arena *a = arena_new();
	struct cni_conf *c = arena_alloc(a, sizeof(*c));
	c->a = a;
	c->empty_block_grace_s = -1;
	struct parser p = { .c = c, .err = err, .code = 0 };
	struct jv *root;
	struct strbuf perr = STRBUF_INIT;
	sb_init(&perr);
	int r;
	if (len > 1024 * 1024) {
		r = bad(&p, CNI_ERR_DECODE, "the network configuration is larger than 1 MiB");
	} else if (json_parse(a, text, len, &root, &perr) < 0) {
		r = bad(&p, CNI_ERR_DECODE, "the network configuration is not JSON: %s",
			sb_str(&perr));
	} else {
		r = parse_root(&p, root);
	}
	sb_free(&perr);
	if (r < 0) {
		*code = p.code;
		arena_free(a);
		return r;
	}
	if (c->empty_block_grace_s < 0)
		c->empty_block_grace_s = 300;
	*out = c;
	return 0;
}

void cni_conf_free(struct cni_conf *c)
{
	if (c)
		arena_free(c->a);
}

/* --- CNI_ARGS and names --------------------------------------------------------------------- */

int cni_args_parse(struct arena *a, const char *args, struct br_labels *out, struct strbuf *err)
{
	struct br_labels l = { 0 };
	const char *p = args ? args : "";
	while (*p) {
		const char *end = strchr(p, ';');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		if (n) {
			const char *eq = memchr(p, '=', n);
			if (!eq || eq == p) {
				sb_addf(err, "CNI_ARGS: \"%.*s\" is not KEY=VALUE", (int)n, p);
				return -EINVAL;
			}
			char *k = arena_strndup(a, p, (size_t)(eq - p));
			char *v = arena_strndup(a, eq + 1, n - (size_t)(eq - p) - 1);
			labels_set(a, &l, k, v);
		}
		p += n + (end ? 1 : 0);
	}
	*out = l;
	return 0;
}

static bool token_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       ch == '-' || ch == '_' || ch == '.';
}

static bool token_ok(const char *s, size_t max)
{
	size_t n = strlen(s);
	if (!n || n > max)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!token_char(s[i]))
			return false;
	return true;
}

bool cni_container_id_valid(const char *id)
{
	return id && token_ok(id, 128);
}

bool cni_ifname_valid(const char *ifname)
{
	/* The kernel's dev_valid_name(), narrowed to characters safe in names and keys. */
	return ifname && token_ok(ifname, 15) && !streq(ifname, ".") && !streq(ifname, "..");
}

/* RFC 1123 names (the model's checks), at most @max bytes; @dots: a subdomain. */
static bool dns_name_ok(const char *s, size_t max, bool dots)
{
	const char *why;
	return strlen(s) <= max && (dots ? valid_dns_subdomain(s, &why) : valid_dns_label(s, &why));
}

/* @s for a message: quoted, control and non-ASCII bytes escaped, at most 64 bytes of it. */
static void quote_value(struct strbuf *out, const char *s)
{
	size_t n = strlen(s);
	sb_addc(out, '"');
	for (size_t i = 0; i < n && i < 64; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch == '"' || ch == '\\')
			sb_addf(out, "\\%c", ch);
		else if (ch == '\n')
			sb_adds(out, "\\n");
		else if (ch < 0x20 || ch >= 0x7f)
			sb_addf(out, "\\x%02x", ch);
		else
			sb_addc(out, (char)ch);
	}
	sb_adds(out, n > 64 ? "\"..." : "\"");
}

int cni_identity_check(const struct cni_identity *id, const char *ifname, struct strbuf *err)
{
	bool k8s = streq(id->orchestrator, "k8s");
	if (!dns_name_ok(id->namespace, 63, false)) {
		sb_adds(err, "K8S_POD_NAMESPACE ");
		quote_value(err, id->namespace);
		sb_adds(err, " is not a namespace name (1-63 lower case letters, digits and '-', "
			     "starting and ending with a letter or digit)");
		return -EINVAL;
	}
	if (!dns_name_ok(id->pod, 253, true)) {
		sb_adds(err, k8s ? "K8S_POD_NAME " : "CNI_CONTAINERID ");
		quote_value(err, id->pod);
		sb_addf(err,
			" is not a pod name (a DNS subdomain: 1-253 lower case letters, "
			"digits, '-' and '.', each part starting and ending with a letter or "
			"digit)%s",
			k8s ? "" : "; without K8S_POD_NAME the container ID is the pod name");
		return -EINVAL;
	}
	if (!dns_name_ok(ifname, 15, true)) {
		sb_adds(err, "CNI_IFNAME ");
		quote_value(err, ifname);
		sb_adds(err, " cannot end a WorkloadEndpoint name (lower case letters, digits, '-' "
			     "and '.', starting and ending with a letter or digit)");
		return -EINVAL;
	}
	return 0;
}

void cni_identity(struct arena *a, const struct br_labels *args, const char *container_id,
		  struct cni_identity *out)
{
	const char *ns = labels_get(args, "K8S_POD_NAMESPACE");
	const char *pod = labels_get(args, "K8S_POD_NAME");
	if (ns && *ns && pod && *pod) {
		out->orchestrator = "k8s";
		out->namespace = arena_strdup(a, ns);
		out->pod = arena_strdup(a, pod);
	} else {
		out->orchestrator = "cni";
		out->namespace = "default";
		out->pod = arena_strdup(a, container_id);
	}
}

void cni_host_veth_name(const char *ns, const char *pod, char out[16])
{
	struct strbuf sb = STRBUF_INIT;
	sb_init(&sb);
	sb_addf(&sb, "%s.%s", ns, pod);
	char hex[16];
	hash_hex(HASH_SHA1, sb_str(&sb), hex, 11);
	snprintf(out, 16, "cali%.11s", hex);
	sb_free(&sb);
}

static void add_escaped(struct strbuf *sb, const char *s)
{
	for (; *s; s++) {
		sb_addc(sb, *s);
		if (*s == '-')
			sb_addc(sb, '-');
	}
}

char *cni_wep_name(struct arena *a, const char *node, const char *orchestrator, const char *pod,
		   const char *iface)
{
	struct strbuf sb = STRBUF_INIT;
	sb_init(&sb);
	add_escaped(&sb, node);
	sb_addc(&sb, '-');
	add_escaped(&sb, orchestrator);
	sb_addc(&sb, '-');
	add_escaped(&sb, pod);
	sb_addc(&sb, '-');
	add_escaped(&sb, iface);
	char *s = arena_strdup(a, sb_str(&sb));
	sb_free(&sb);
	return s;
}

char *cni_handle_id(struct arena *a, const char *network, const char *container_id)
{
	return arena_printf(a, "%s.%s", network, container_id);
}

/* --- output documents ----------------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at @s (1-4), or 0. */
static size_t utf8_len(const unsigned char *s)
{
	if (s[0] < 0x80)
		return 1;
	size_t n;
	unsigned char lo = 0x80, hi = 0xbf;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4;
	else
		return 0;
	if (s[0] == 0xe0)
		lo = 0xa0; /* overlong */
	else if (s[0] == 0xed)
		hi = 0x9f; /* surrogates */
	else if (s[0] == 0xf0)
		lo = 0x90; /* overlong */
	else if (s[0] == 0xf4)
		hi = 0x8f; /* above U+10FFFF */
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return n;
}

/*
 * A JSON string of text that may come from the request (names, paths): bytes
 * that are not UTF-8 are written as "\xNN" text, so the document stays JSON.
 */
static void write_text(struct strbuf *out, const char *s)
{
	struct strbuf clean = STRBUF_INIT;
	sb_init(&clean);
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		size_t n = utf8_len(p);
		if (n) {
			for (size_t i = 0; i < n; i++)
				sb_addc(&clean, (char)p[i]);
			p += n;
		} else {
			sb_addf(&clean, "\\x%02x", *p++);
		}
	}
	json_write_string(out, sb_str(&clean));
	sb_free(&clean);
}

static const char *gateway_of(bool v6)
{
	return v6 ? CNI_GATEWAY6 : CNI_GATEWAY;
}

/* The family's default route via its gateway: {"dst": ..., "gw": ...}. */
static void write_default_route(struct strbuf *out, bool v6)
{
	sb_addf(out, "{\"dst\":\"%s\",\"gw\":\"%s\"}", v6 ? "::/0" : "0.0.0.0/0", gateway_of(v6));
}

static void write_ip(struct strbuf *out, const struct br_ip *ip)
{
	char b[IP_STRLEN];
	sb_addf(out, "\"%s/%u\"", ip_str(ip, b), ip_bits(ip));
}

void cni_result_write(struct strbuf *out, const char *version, const struct cni_result *r)
{
	sb_adds(out, "{\"cniVersion\":");
	json_write_string(out, version);
	bool has[2] = { false, false }; /* IPv4, IPv6 */
	for (size_t i = 0; i < r->n_ips; i++)
		has[r->ips[i].family == AF_INET6] = true;
	if (cni_version_cmp(version, "0.3.0") < 0) {
		/* 0.1.0 / 0.2.0: the first address of each family, with its routes. */
		for (int v6 = 0; v6 < 2; v6++) {
			const struct br_ip *ip = NULL;
			for (size_t i = 0; i < r->n_ips && !ip; i++)
				if ((r->ips[i].family == AF_INET6) == v6)
					ip = &r->ips[i];
			if (!ip)
				continue;
			sb_adds(out, v6 ? ",\"ip6\":{\"ip\":" : ",\"ip4\":{\"ip\":");
			write_ip(out, ip);
			if (r->gateway) {
				sb_addf(out, ",\"gateway\":\"%s\",\"routes\":[", gateway_of(v6));
				write_default_route(out, v6);
				sb_addc(out, ']');
			}
			sb_addc(out, '}');
		}
		sb_adds(out, ",\"dns\":{}}\n");
		return;
	}
	bool versioned = cni_version_cmp(version, "1.0.0") < 0;
	if (r->n_ifaces) {
		sb_adds(out, ",\"interfaces\":[");
		for (size_t i = 0; i < r->n_ifaces; i++) {
			sb_adds(out, i ? ",{\"name\":" : "{\"name\":");
			write_text(out, r->ifaces[i].name);
			if (r->ifaces[i].mac[0]) {
				sb_adds(out, ",\"mac\":");
				write_text(out, r->ifaces[i].mac);
			}
			if (r->ifaces[i].sandbox) {
				sb_adds(out, ",\"sandbox\":");
				write_text(out, r->ifaces[i].sandbox);
			}
			sb_addc(out, '}');
		}
		sb_addc(out, ']');
	}
	sb_adds(out, ",\"ips\":[");
	for (size_t i = 0; i < r->n_ips; i++) {
		bool v6 = r->ips[i].family == AF_INET6;
		sb_adds(out, i ? ",{" : "{");
		if (versioned)
			sb_adds(out, v6 ? "\"version\":\"6\"," : "\"version\":\"4\",");
		sb_adds(out, "\"address\":");
		write_ip(out, &r->ips[i]);
		if (r->gateway)
			sb_addf(out, ",\"gateway\":\"%s\"", gateway_of(v6));
		if (r->ip_iface >= 0)
			sb_addf(out, ",\"interface\":%d", r->ip_iface);
		sb_addc(out, '}');
	}
	sb_addc(out, ']');
	if (r->gateway && (has[0] || has[1])) {
		sb_adds(out, ",\"routes\":[");
		if (has[0])
			write_default_route(out, false);
		if (has[0] && has[1])
			sb_addc(out, ',');
		if (has[1])
			write_default_route(out, true);
		sb_addc(out, ']');
	}
	sb_adds(out, ",\"dns\":{}}\n");
}

void cni_error_write(struct strbuf *out, const char *version, int code, const char *msg,
		     const char *details)
{
	sb_adds(out, "{\"cniVersion\":");
	json_write_string(out,
			  version && cni_version_supported(version) ? version : CNI_LATEST_VERSION);
	sb_addf(out, ",\"code\":%d,\"msg\":", code);
	write_text(out, msg ? msg : "");
	if (details && *details) {
		sb_adds(out, ",\"details\":");
		write_text(out, details);
	}
	sb_adds(out, "}\n");
}

void cni_version_write(struct strbuf *out, const char *version)
{
	sb_adds(out, "{\"cniVersion\":");
	json_write_string(out,
			  version && cni_version_supported(version) ? version : CNI_LATEST_VERSION);
	sb_adds(out, ",\"supportedVersions\":[");
	for (size_t i = 0; i < ARRAY_SIZE(versions); i++) {
		if (i)
			sb_addc(out, ',');
		json_write_string(out, versions[i]);
	}
	sb_adds(out, "]}\n");
}
