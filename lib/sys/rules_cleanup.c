/*
 * Brindle's rules removed from a backend, and nothing else (see
 * <brindle/sys/rules_cleanup.h>).
 */
#include <brindle/sys/rules_cleanup.h>

#include <brindle/core/ipt_rule.h>
#include <brindle/sys/ipset.h>
#include <brindle/sys/ipt.h>
#include <brindle/sys/log.h>
#include <brindle/sys/nft.h>

#include <errno.h>
#include <string.h>

#define CHAIN_PREFIX "cali-"

static int clean_table(struct ipt *t, const char *tool, const char *table, size_t *rules,
		       size_t *chains)
{
	struct ipt_table_state k = { 0 };
	size_t before = *rules + *chains;
	int r = ipt_begin(t, table, &k);
	/* a kernel without this table (or without IPv6's): nothing of ours in it */
	if (r == -ENOENT || r == -EAFNOSUPPORT || r == -ENOPROTOOPT)
		return 0;
	if (r < 0) {
		log_error("%s %s: %s", tool, table, ipt_last_error(t));
		return r;
	}
	for (size_t i = 0; i < k.n && r == 0; i++) {
		const struct ipt_chain_state *c = &k.chains[i];
		/* from the end, so the positions still to come do not move */
		for (size_t j = c->n; c->builtin && j-- > 0 && r == 0;)
			if (str_has_prefix(c->ids[j], IPT_ID_PREFIX) &&
			    (r = ipt_delete(t, c->name, j)) == 0)
				(*rules)++;
	}
	for (size_t i = 0; i < k.n && r == 0; i++)
		if (!k.chains[i].builtin && str_has_prefix(k.chains[i].name, CHAIN_PREFIX))
			r = ipt_flush_chain(t, k.chains[i].name);
	for (size_t i = 0; i < k.n && r == 0; i++)
		if (!k.chains[i].builtin && str_has_prefix(k.chains[i].name, CHAIN_PREFIX) &&
		    (r = ipt_delete_chain(t, k.chains[i].name)) == 0)
			(*chains)++;
	ipt_table_state_free(&k);
	if (r == 0 && *rules + *chains > before)
		r = ipt_commit(t);
	else
		ipt_abort(t); /* nothing of ours: nothing written */
	if (r < 0)
		log_error("%s %s: %s", tool, table, ipt_last_error(t));
	return r;
}

/* iptables, then ip6tables (felix's IPv6 policy). */
int cleanup_iptables(const char *lock_path)
{
	static const int families[] = { AF_INET, AF_INET6 };
	int ret = 0;
	for (size_t f = 0; f < ARRAY_SIZE(families); f++) {
		const char *tool = families[f] == AF_INET6 ? "ip6tables" : "iptables";
		struct ipt *t;
		int r = ipt_open_kernel(families[f], lock_path, 10000, &t);
		if (r < 0) {
			log_error("%s: %s", tool, strerror(-r));
			return r;
		}
		static const char *const tables[] = { "raw", "mangle", "nat", "filter" };
		size_t rules = 0, chains = 0;
		for (size_t i = 0; i < ARRAY_SIZE(tables) && r == 0; i++)
			r = clean_table(t, tool, tables[i], &rules, &chains);
		ipt_close(t);
		if (r == 0 && (rules || chains || families[f] == AF_INET))
			log_info("%s: removed %zu rules from built-in chains and %zu chains", tool,
				 rules, chains);
		if (r < 0 && !ret)
			ret = r;
	}
	return ret;
}

int cleanup_ipsets(void)
{
	struct ips *s;
	int r = ips_open_kernel(&s);
	if (r < 0) {
		log_error("ip sets: %s", strerror(-r));
		return r;
	}
	static const char *const prefixes[] = { "cali4", "cali6" }; /* IPv4's, IPv6's */
	size_t gone = 0;
	for (size_t p = 0; p < ARRAY_SIZE(prefixes) && r == 0; p++) {
		struct ips_list l = { 0 };
		if ((r = ips_list_names(s, prefixes[p], &l)) == 0 && l.n) {
			struct ips_batch *b = ips_batch_new();
			for (size_t i = 0; i < l.n; i++)
				ips_batch_destroy(b, l.v[i].info.name);
			r = ips_apply(s, b, NULL);
			ips_batch_free(b);
			gone += l.n;
		}
		ips_list_free(&l);
	}
	if (r != 0)
		log_error("ip sets: %s", ips_last_error(s));
	else
		log_info("ip sets: destroyed %zu", gone);
	ips_close(s);
	return r > 0 ? -EIO : r;
}

/* Brindle's tables of one family (nftables' ip or ip6). */
static int cleanup_nftables_af(int af, size_t *gone)
{
	struct nft *n;
	int r = nft_open(af, &n);
	if (r < 0) {
		log_error("nftables: %s", strerror(-r));
		return r;
	}
	static const char *const tables[] = { NFT_TABLE_FILTER, NFT_TABLE_NAT };
	struct nft_batch *b = nft_batch_new(n);
	for (size_t i = 0; i < ARRAY_SIZE(tables) && r == 0; i++) {
		bool exists;
		size_t chains;
		r = nft_table_chains(n, tables[i], &exists, &chains);
		if (r == 0 && exists) {
			nft_batch_del_table(b, tables[i]);
			(*gone)++;
		}
	}
	if (r == 0)
		r = nft_batch_commit(b);
	nft_batch_free(b);
	if (r < 0)
		log_error("nftables (%s): %s", af == AF_INET6 ? "ip6" : "ip", nft_last_error(n));
	nft_close(n);
	return r;
}

int cleanup_nftables(void)
{
	size_t gone = 0;
	int r = cleanup_nftables_af(AF_INET, &gone);
	int r6 = cleanup_nftables_af(AF_INET6, &gone);
	if (r == 0)
		r = r6;
	if (r == 0 && gone)
		log_info("nftables: removed Brindle's %zu table%s", gone, gone == 1 ? "" : "s");
	return r;
}
