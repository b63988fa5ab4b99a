#include "config.h"

#include <brindle/core/net.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

static const struct {
	const char *protocol;
	uint16_t port;
} default_in[] = {
	{ "TCP", 22 },	 { "UDP", 68 },	  { "TCP", 179 },  { "TCP", 2379 }, { "TCP", 2380 },
	{ "TCP", 5473 }, { "TCP", 6443 }, { "TCP", 6666 }, { "TCP", 6667 },
}, default_out[] = {
	{ "UDP", 53 },	 { "UDP", 67 },	  { "TCP", 179 },  { "TCP", 2379 }, { "TCP", 2380 },
	{ "TCP", 5473 }, { "TCP", 6443 }, { "TCP", 6666 }, { "TCP", 6667 },
};

static void set_prefixes(struct felix_config *c, const char *list)
{
	c->n_prefixes = 0;
	const char *p = list;
	while (*p && c->n_prefixes < FELIX_MAX_PREFIXES) {
		const char *comma = strchr(p, ',');
		size_t n = comma ? (size_t)(comma - p) : strlen(p);
		if (n > 0 && n < sizeof(c->prefixes[0])) {
			memcpy(c->prefixes[c->n_prefixes], p, n);
			c->prefixes[c->n_prefixes++][n] = '\0';
		}
		p += n + (comma ? 1 : 0);
	}
}

void felix_config_defaults(struct felix_config *c)
{
	memset(c, 0, sizeof(*c));
	c->log_severity = LOG_INFO;
	set_prefixes(c, "cali");
	c->health_enabled = true;
	snprintf(c->health_host, sizeof(c->health_host), "localhost");
	c->health_port = 9099;
	c->metrics_enabled = false;
	c->metrics_port = 9091;
	c->route_refresh_ms = 90000;
	c->iptables_refresh_ms = 90000;
	c->ipsets_refresh_ms = 90000;
	c->drift_check_ms = 1000;
	c->apply_settle_ms = 10;
	c->apply_max_delay_ms = 1000;
	c->vxlan_port = 4789;
	c->vxlan_vni = 4096;
	c->mark_mask = 0xffff0000u;
	snprintf(c->endpoint_to_host_action, sizeof(c->endpoint_to_host_action), "Drop");
	snprintf(c->chain_insert_mode, sizeof(c->chain_insert_mode), "Insert");
	snprintf(c->ip_forwarding, sizeof(c->ip_forwarding), "Enabled");
	snprintf(c->rule_backend, sizeof(c->rule_backend), "Auto");
	snprintf(c->iptables_backend, sizeof(c->iptables_backend), "Auto");
	snprintf(c->nftables_mode, sizeof(c->nftables_mode), "Auto");
	for (size_t i = 0; i < ARRAY_SIZE(default_in); i++)
		c->failsafe_in[i] = (struct felix_failsafe){ .protocol = default_in[i].protocol,
							     .port = default_in[i].port };
	c->n_failsafe_in = ARRAY_SIZE(default_in);
	for (size_t i = 0; i < ARRAY_SIZE(default_out); i++)
		c->failsafe_out[i] = (struct felix_failsafe){ .protocol = default_out[i].protocol,
							      .port = default_out[i].port };
	c->n_failsafe_out = ARRAY_SIZE(default_out);
	c->route_grace_ms = 10000;
	snprintf(c->log_prefix, sizeof(c->log_prefix), "calico-packet");
	snprintf(c->event_log_dir, sizeof(c->event_log_dir), "%s", FELIX_EVENT_LOG_DIR);
	snprintf(c->iptables_lock_path, sizeof(c->iptables_lock_path), "/run/xtables.lock");
	snprintf(c->event_log_file, sizeof(c->event_log_file), "%s", FELIX_EVENT_LOG_NAME);
	c->wep_min_prefix_v4 = 32;
	c->wep_min_prefix_v6 = 128;
}

static const char *canonical_proto(const char *p)
{
	return strcasecmp(p, "tcp") == 0    ? "TCP"
	       : strcasecmp(p, "udp") == 0  ? "UDP"
	       : strcasecmp(p, "sctp") == 0 ? "SCTP"
					    : NULL;
}

static void copy_ports(struct felix_failsafe *dst, size_t *n, const struct br_proto_port *src,
		       size_t count)
{
	*n = 0;
	for (size_t i = 0; i < count && i < 32; i++) {
		dst[*n] = (struct felix_failsafe){ .protocol = canonical_proto(src[i].protocol),
						   .port = (uint16_t)src[i].port };
		snprintf(dst[*n].net, sizeof(dst[*n].net), "%s", src[i].net ? src[i].net : "");
		(*n)++;
	}
}

/* One FelixConfiguration layered over @c; its event log file is resolved later (*evlog). */
static void apply_resource(struct felix_config *c, const struct br_felixconfig *fc,
			   const char **evlog)
{
	const struct br_felixconfig_spec *s = &fc->spec;
	if (s->log_severity_screen) {
		int l = log_parse_level(s->log_severity_screen);
		if (l >= 0)
			c->log_severity = (enum log_level)l;
	}
	if (s->interface_prefix)
		set_prefixes(c, s->interface_prefix);
	if (s->health_enabled.set)
		c->health_enabled = s->health_enabled.v;
	if (s->health_host)
		snprintf(c->health_host, sizeof(c->health_host), "%s", s->health_host);
	if (s->health_port.set)
		c->health_port = (uint16_t)s->health_port.v;
	if (s->prometheus_metrics_enabled.set)
		c->metrics_enabled = s->prometheus_metrics_enabled.v;
	if (s->prometheus_metrics_port.set)
		c->metrics_port = (uint16_t)s->prometheus_metrics_port.v;
	if (s->prometheus_metrics_host)
		snprintf(c->metrics_host, sizeof(c->metrics_host), "%s",
			 s->prometheus_metrics_host);
	if (s->workload_ipv4_min_prefix_length.set)
		c->wep_min_prefix_v4 = (uint8_t)s->workload_ipv4_min_prefix_length.v;
	if (s->workload_ipv6_min_prefix_length.set)
		c->wep_min_prefix_v6 = (uint8_t)s->workload_ipv6_min_prefix_length.v;
	if (s->more.ipv6_support.set)
		c->ipv6_support = s->more.ipv6_support.v;
	if (s->more.ip_forwarding)
		snprintf(c->ip_forwarding, sizeof(c->ip_forwarding), "%s", s->more.ip_forwarding);
	if (s->route_refresh_interval.text)
		c->route_refresh_ms = (uint64_t)s->route_refresh_interval.ms;
	if (s->iptables_refresh_interval.text)
		c->iptables_refresh_ms = (uint64_t)s->iptables_refresh_interval.ms;
	if (s->ipsets_refresh_interval.text)
		c->ipsets_refresh_ms = (uint64_t)s->ipsets_refresh_interval.ms;
	if (s->vxlan_mtu.set)
		c->vxlan_mtu = (uint32_t)s->vxlan_mtu.v;
	if (s->more.vxlan_mtuv6.set)
		c->vxlan_mtu_v6 = (uint32_t)s->more.vxlan_mtuv6.v;
	if (s->ipip_mtu.set)
		c->ipip_mtu = (uint32_t)s->ipip_mtu.v;
	if (s->vxlan_port.set)
		c->vxlan_port = (uint16_t)s->vxlan_port.v;
	if (s->vxlan_vni.set)
		c->vxlan_vni = (uint32_t)s->vxlan_vni.v;
	if (s->iptables_mark_mask.set)
		c->mark_mask = (uint32_t)s->iptables_mark_mask.v;
	if (s->default_endpoint_to_host_action)
		snprintf(c->endpoint_to_host_action, sizeof(c->endpoint_to_host_action), "%s",
			 s->default_endpoint_to_host_action);
	if (s->chain_insert_mode)
		snprintf(c->chain_insert_mode, sizeof(c->chain_insert_mode), "%s",
			 s->chain_insert_mode);
	if (s->iptables_backend)
		snprintf(c->iptables_backend, sizeof(c->iptables_backend), "%s",
			 s->iptables_backend);
	if (s->nftables_mode)
		snprintf(c->nftables_mode, sizeof(c->nftables_mode), "%s", s->nftables_mode);
	if (s->log_prefix)
		snprintf(c->log_prefix, sizeof(c->log_prefix), "%s", s->log_prefix);
	if (s->policy_event_log_enabled.set)
		c->event_log_enabled = s->policy_event_log_enabled.v;
	if (s->policy_event_log_allowed.set)
		c->event_log_allowed = s->policy_event_log_allowed.v;
	if (s->policy_event_log_file)
		*evlog = s->policy_event_log_file;
	if (s->failsafe_inbound_host_ports_set)
		copy_ports(c->failsafe_in, &c->n_failsafe_in, s->failsafe_inbound_host_ports,
			   s->n_failsafe_inbound_host_ports);
	if (s->failsafe_outbound_host_ports_set)
		copy_ports(c->failsafe_out, &c->n_failsafe_out, s->failsafe_outbound_host_ports,
			   s->n_failsafe_outbound_host_ports);
}

/* --- the environment -------------------------------------------------------------------- */

static bool env_bool(const char *v, bool *out)
{
	static const char *const yes[] = { "true", "1", "yes", "on" };
	static const char *const no[] = { "false", "0", "no", "off" };
	for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
		if (strcasecmp(v, yes[i]) == 0) {
			*out = true;
			return true;
		}
		if (strcasecmp(v, no[i]) == 0) {
			*out = false;
			return true;
		}
	}
	return false;
}

static bool env_uint(const char *v, uint64_t max, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long n = strtoull(v, &end, 0);
	if (errno || end == v || *end || n > max || v[0] == '-')
		return false;
	*out = n;
	return true;
}

/* Felix takes durations as Go durations or as seconds. */
static bool env_duration(const char *v, uint64_t *ms)
{
	return duration_or_seconds_parse(v, ms) == 0;
}

static bool env_choice(const char *v, const char *const *choices, char *out, size_t size)
{
	for (; *choices; choices++)
		if (strcasecmp(v, *choices) == 0) {
			snprintf(out, size, "%s", *choices);
			return true;
		}
	return false;
}

/* "tcp:22,udp:68,tcp:10.0.0.0/8:443" (protocol[:net]:port), or "none" / "". */
static bool env_ports(const char *v, struct felix_failsafe *out, size_t *n)
{
	struct felix_failsafe tmp[32];
	size_t count = 0;
	if (*v && strcasecmp(v, "none") != 0) {
		const char *p = v;
		while (*p) {
			const char *comma = strchr(p, ',');
			size_t len = comma ? (size_t)(comma - p) : strlen(p);
			char item[80];
			if (len == 0 || len >= sizeof(item) || count == 32)
				return false;
			memcpy(item, p, len);
			item[len] = '\0';
			char *first = strchr(item, ':'), *last = strrchr(item, ':');
			if (!first)
				return false;
			*first = '\0';
			uint64_t port;
			const char *proto = canonical_proto(item);
			if (!proto || !env_uint(last + 1, 65535, &port) || port == 0)
				return false;
			tmp[count] = (struct felix_failsafe){ .protocol = proto,
							      .port = (uint16_t)port };
			if (last != first) {
				*last = '\0';
				struct br_cidr c;
				if (cidr_parse(first + 1, true, &c) < 0)
					return false;
				snprintf(tmp[count].net, sizeof(tmp[count].net), "%s", first + 1);
			}
			count++;
			p += len + (comma ? 1 : 0);
		}
	}
	memcpy(out, tmp, sizeof(tmp[0]) * count);
	*n = count;
	return true;
}

static const char *getenv_in(char *const *env, const char *name)
{
	size_t n = strlen(name);
	for (; env && *env; env++)
		if (strncasecmp(*env, name, n) == 0 && (*env)[n] == '=')
			return *env + n + 1;
	return NULL;
}

static void apply_env(struct felix_config *c, char *const *env, struct model_errors *errs)
{
	static const char *const actions[] = { "Drop", "Accept", "Return", NULL };
	static const char *const modes[] = { "Insert", "Append", NULL };
	uint64_t u;
	bool b;
	const char *v;
#define BAD(name, what) model_errors_add(errs, "%s: \"%s\" is not %s; ignored", name, v, what)
	if ((v = getenv_in(env, "FELIX_LOGSEVERITYSCREEN"))) {
		int l = log_parse_level(v);
		if (l < 0)
			BAD("FELIX_LOGSEVERITYSCREEN", "a log level");
		else
			c->log_severity = (enum log_level)l;
	}
	if ((v = getenv_in(env, "FELIX_INTERFACEPREFIX"))) {
		if (!*v || strlen(v) > 64)
			BAD("FELIX_INTERFACEPREFIX", "a list of interface prefixes");
		else
			set_prefixes(c, v);
	}
	struct {
		const char *name;
		bool *dst;
	} bools[] = {
		{ "FELIX_HEALTHENABLED", &c->health_enabled },
		{ "FELIX_PROMETHEUSMETRICSENABLED", &c->metrics_enabled },
		{ "FELIX_POLICYEVENTLOGENABLED", &c->event_log_enabled },
		{ "FELIX_POLICYEVENTLOGALLOWED", &c->event_log_allowed },
		{ "FELIX_IPV6SUPPORT", &c->ipv6_support },
	};
	for (size_t i = 0; i < ARRAY_SIZE(bools); i++)
		if ((v = getenv_in(env, bools[i].name))) {
			if (env_bool(v, &b))
				*bools[i].dst = b;
			else
				BAD(bools[i].name, "true or false");
		}
	struct {
		const char *name;
		char *dst;
		size_t size;
	} hosts[] = {
		{ "FELIX_HEALTHHOST", c->health_host, sizeof(c->health_host) },
		{ "FELIX_PROMETHEUSMETRICSHOST", c->metrics_host, sizeof(c->metrics_host) },
		{ "FELIX_LOGPREFIX", c->log_prefix, sizeof(c->log_prefix) },
	};
	for (size_t i = 0; i < ARRAY_SIZE(hosts); i++)
		if ((v = getenv_in(env, hosts[i].name)))
			snprintf(hosts[i].dst, hosts[i].size, "%s", v);
	struct {
		const char *name;
		uint64_t max;
		int width; /* 16 or 32 bits */
		void *dst;
	} uints[] = {
		{ "FELIX_HEALTHPORT", 65535, 16, &c->health_port },
		{ "FELIX_PROMETHEUSMETRICSPORT", 65535, 16, &c->metrics_port },
		{ "FELIX_VXLANMTU", 65535, 32, &c->vxlan_mtu },
		{ "FELIX_VXLANMTUV6", 65535, 32, &c->vxlan_mtu_v6 },
		{ "FELIX_IPINIPMTU", 65535, 32, &c->ipip_mtu },
		{ "FELIX_VXLANPORT", 65535, 16, &c->vxlan_port },
		{ "FELIX_VXLANVNI", 16777215, 32, &c->vxlan_vni },
		{ "FELIX_IPTABLESMARKMASK", 0xffffffffull, 32, &c->mark_mask },
	};
	struct {
		const char *name;
		uint64_t max;
		uint8_t *dst;
	} lengths[] = {
		{ "FELIX_WORKLOADIPV4MINPREFIXLENGTH", 32, &c->wep_min_prefix_v4 },
		{ "FELIX_WORKLOADIPV6MINPREFIXLENGTH", 128, &c->wep_min_prefix_v6 },
	};
	for (size_t i = 0; i < ARRAY_SIZE(lengths); i++) {
		if (!(v = getenv_in(env, lengths[i].name)))
			continue;
		if (!env_uint(v, lengths[i].max, &u) || u == 0)
			BAD(lengths[i].name, "a prefix length from 1 up to the family's width");
		else
			*lengths[i].dst = (uint8_t)u;
	}
	for (size_t i = 0; i < ARRAY_SIZE(uints); i++) {
		if (!(v = getenv_in(env, uints[i].name)))
			continue;
		if (!env_uint(v, uints[i].max, &u)) {
			BAD(uints[i].name, "a number in range");
			continue;
		}
		if (uints[i].width == 16)
			*(uint16_t *)uints[i].dst = (uint16_t)u;
		else
			*(uint32_t *)uints[i].dst = (uint32_t)u;
	}
	struct {
		const char *name;
		uint64_t *dst;
	} durations[] = {
		{ "FELIX_ROUTEREFRESHINTERVAL", &c->route_refresh_ms },
		{ "FELIX_IPTABLESREFRESHINTERVAL", &c->iptables_refresh_ms },
		{ "FELIX_IPSETSREFRESHINTERVAL", &c->ipsets_refresh_ms },
		{ "FELIX_DRIFTCHECKINTERVAL", &c->drift_check_ms },
		{ "FELIX_APPLYSETTLE", &c->apply_settle_ms },
		{ "FELIX_APPLYMAXDELAY", &c->apply_max_delay_ms },
	};
	for (size_t i = 0; i < ARRAY_SIZE(durations); i++)
		if ((v = getenv_in(env, durations[i].name)) && !env_duration(v, durations[i].dst))
			BAD(durations[i].name, "a duration (90s, 1m30s) or a number of seconds");
	if ((v = getenv_in(env, "FELIX_DEFAULTENDPOINTTOHOSTACTION")) &&
	    !env_choice(v, actions, c->endpoint_to_host_action, sizeof(c->endpoint_to_host_action)))
		BAD("FELIX_DEFAULTENDPOINTTOHOSTACTION", "one of Drop, Accept or Return");
	if ((v = getenv_in(env, "FELIX_CHAININSERTMODE")) &&
	    !env_choice(v, modes, c->chain_insert_mode, sizeof(c->chain_insert_mode)))
		BAD("FELIX_CHAININSERTMODE", "Insert or Append");
	static const char *const forwarding[] = { "Enabled", "Disabled", NULL };
	if ((v = getenv_in(env, "FELIX_IPFORWARDING")) &&
	    !env_choice(v, forwarding, c->ip_forwarding, sizeof(c->ip_forwarding)))
		BAD("FELIX_IPFORWARDING", "Enabled or Disabled");
	static const char *const backends[] = { "Legacy", "NFT", "Auto", NULL };
	if ((v = getenv_in(env, "FELIX_IPTABLESBACKEND")) &&
	    !env_choice(v, backends, c->iptables_backend, sizeof(c->iptables_backend)))
		BAD("FELIX_IPTABLESBACKEND", "one of Legacy, NFT or Auto");
	static const char *const nft_modes[] = { "Enabled", "Disabled", "Auto", NULL };
	if ((v = getenv_in(env, "FELIX_NFTABLESMODE")) &&
	    !env_choice(v, nft_modes, c->nftables_mode, sizeof(c->nftables_mode)))
		BAD("FELIX_NFTABLESMODE", "one of Enabled, Disabled or Auto");
	if ((v = getenv_in(env, "FELIX_FAILSAFEINBOUNDHOSTPORTS")) &&
	    !env_ports(v, c->failsafe_in, &c->n_failsafe_in))
		BAD("FELIX_FAILSAFEINBOUNDHOSTPORTS", "a list like tcp:22,udp:68 (or none)");
	if ((v = getenv_in(env, "FELIX_FAILSAFEOUTBOUNDHOSTPORTS")) &&
	    !env_ports(v, c->failsafe_out, &c->n_failsafe_out))
		BAD("FELIX_FAILSAFEOUTBOUNDHOSTPORTS", "a list like udp:53,tcp:179 (or none)");
#undef BAD
}

/* A file name, not a path: no '/', not "." or "..", printable, short. */
static bool plain_file_name(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 200 || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] == '/' || (unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return false;
	return true;
}

/*
 * Where the event log goes. The directory comes from the environment only
 * (the operator's, with the DaemonSet's mounts); FELIX_POLICYEVENTLOGFILE may
 * be any absolute path (its directory then is the log's), but a value from the
 * datastore must be a name in that directory or a path inside it: whoever can
 * write a FelixConfiguration cannot make felix create or append to a file
 * elsewhere.
 */
static void resolve_event_log(struct felix_config *c, const char *from_datastore, char *const *env,
			      struct model_errors *errs)
{
	const char *dir = getenv_in(env, "FELIX_POLICYEVENTLOGDIR");
	const char *file = getenv_in(env, "FELIX_POLICYEVENTLOGFILE");
	if (dir && (dir[0] != '/' || strlen(dir) >= sizeof(c->event_log_dir) ||
		    strstr(dir, "/../") || str_has_suffix(dir, "/.."))) {
		model_errors_add(errs,
				 "FELIX_POLICYEVENTLOGDIR: \"%s\" is not an absolute directory; "
				 "using %s",
				 dir, FELIX_EVENT_LOG_DIR);
		dir = NULL;
	}
	if (dir)
		snprintf(c->event_log_dir, sizeof(c->event_log_dir), "%s", dir);
	size_t dl = strlen(c->event_log_dir);
	while (dl > 1 && c->event_log_dir[dl - 1] == '/')
		c->event_log_dir[--dl] = '\0';
	if (file) {
		const char *slash = strrchr(file, '/');
		if (streq(file, "-") || plain_file_name(file)) {
			snprintf(c->event_log_file, sizeof(c->event_log_file), "%s", file);
		} else if (file[0] == '/' && slash && plain_file_name(slash + 1) &&
			   (size_t)(slash - file) < sizeof(c->event_log_dir) &&
			   !strstr(file, "/../") &&
			   (!dir || ((size_t)(slash - file) == dl &&
				     strncmp(file, c->event_log_dir, dl) == 0))) {
			snprintf(c->event_log_dir, sizeof(c->event_log_dir), "%.*s",
				 slash == file ? 1 : (int)(slash - file), file);
			snprintf(c->event_log_file, sizeof(c->event_log_file), "%s", slash + 1);
		} else {
			model_errors_add(
				errs,
				"FELIX_POLICYEVENTLOGFILE: \"%s\" is not a file name or an "
				"absolute path (with FELIX_POLICYEVENTLOGDIR set, give a name "
				"in that directory); using %s/%s",
				file, c->event_log_dir, c->event_log_file);
		}
		return;
	}
	if (!from_datastore)
		return;
	const char *slash = strrchr(from_datastore, '/');
	if (streq(from_datastore, "-") || plain_file_name(from_datastore)) {
		snprintf(c->event_log_file, sizeof(c->event_log_file), "%s", from_datastore);
	} else if (from_datastore[0] == '/' && slash && plain_file_name(slash + 1) &&
		   (size_t)(slash - from_datastore) == dl &&
		   strncmp(from_datastore, c->event_log_dir, dl) == 0) {
		snprintf(c->event_log_file, sizeof(c->event_log_file), "%s", slash + 1);
	} else {
		model_errors_add(
			errs,
			"FelixConfiguration policyEventLogFile: \"%s\" is outside the event "
			"log directory %s (set by FELIX_POLICYEVENTLOGDIR only); using "
			"%s/%s",
			from_datastore, c->event_log_dir, c->event_log_dir, c->event_log_file);
	}
}

void felix_config_compute(struct felix_config *c, const struct br_felixconfig *global,
			  const struct br_felixconfig *node, char *const *env,
			  struct model_errors *errs)
{
	const char *evlog = NULL;
	felix_config_defaults(c);
	if (global)
		apply_resource(c, global, &evlog);
	if (node)
		apply_resource(c, node, &evlog);
	apply_env(c, env, errs);
	resolve_event_log(c, evlog, env, errs);
	/* Calico's IptablesLockFilePath, from the environment only: it names a file felix creates
	 */
	const char *lock = getenv_in(env, "FELIX_IPTABLESLOCKFILEPATH");
	if (lock && (lock[0] != '/' || strlen(lock) >= sizeof(c->iptables_lock_path) ||
		     str_has_suffix(lock, "/")))
		model_errors_add(
			errs,
			"FELIX_IPTABLESLOCKFILEPATH: \"%.100s\" is not an absolute file path; "
			"using %s",
			lock, c->iptables_lock_path);
	else if (lock)
		snprintf(c->iptables_lock_path, sizeof(c->iptables_lock_path), "%s", lock);
	/* nftablesMode Enabled or Disabled decides; Auto leaves it to iptablesBackend (Calico's
	 * rule), each setting taken from its own sources first */
	snprintf(c->rule_backend, sizeof(c->rule_backend), "%s",
		 streq(c->nftables_mode, "Enabled")    ? "NFT"
		 : streq(c->nftables_mode, "Disabled") ? "Legacy"
						       : c->iptables_backend);
}

bool felix_is_workload_iface(const struct felix_config *c, const char *ifname)
{
	for (size_t i = 0; i < c->n_prefixes; i++)
		if (str_has_prefix(ifname, c->prefixes[i]))
			return true;
	return false;
}
