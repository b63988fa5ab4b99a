/*
 * The ip sets writer: sets named cali40* are ours. Read lists them all with
 * their members (at the start, every FELIX_IPSETSREFRESHINTERVAL, after a
 * failure); between reads, changes go in as deltas from the calculation's
 * dirty marks. Sets are created and filled before the rules that use them are
 * written; finish destroys the sets no desired rule uses, after the rules
 * that used them are gone (a set still in use stays until the next time).
 */
#include "dataplane/writer.h"

#include <brindle/sys/ipset.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Ours: cali4* (IPv4 sets), cali6* (IPv6 sets), one writer per family. */
static const char *our_prefix(int af)
{
	return af == AF_INET6 ? "cali6" : "cali4";
}

struct ipsets {
	struct dp_writer w;
	struct ips *ips;
	int af;
	struct hmap kernel;	 /* name → (void *)1: ours, as the kernel has them */
	struct hmap doomed;	 /* sets to destroy once no rule uses them → (void *)1 */
	struct hmap sizes;	 /* name → (void *)(members + 1) as the last apply left it */
	bool check_read;	 /* the coming read is a check's */
	unsigned false_alarms;	 /* check reads that found nothing to change */
	struct ips_list listing; /* read, not planned yet */
	bool listed;
	struct ips_batch *batch;
};

static struct ipsets *ipsets_of(struct dp_writer *w)
{
	return (struct ipsets *)w;
}

/* The wanted state of the writer's family. */
static struct pol_desired *wanted(const struct ipsets *s, const struct dp_input *in)
{
	return s->af == AF_INET6 ? in->policy6 : in->policy;
}

/* A failure: counted, logged, and the policy dataplane's problem until it works again. */
static void failed(struct ipsets *s, const char *fmt, ...) printf_like(2, 3);
static void failed(struct ipsets *s, const char *fmt, ...)
{
	struct dp_status *st = &s->w.report->status;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(st->policy_problem, sizeof(st->policy_problem), fmt, ap);
	va_end(ap);
	dp_report_error(s->w.report, DP_ERR_IPSET, "%s", st->policy_problem);
}

static void create_filled(struct ipsets *s, const struct pset *set)
{
	ips_batch_create(s->batch, &set->info);
	for (struct hmap_iter it = hmap_iter(&set->members); hmap_next(&it);)
		ips_batch_add(s->batch, set->info.name, it.key);
}

/* --- read --------------------------------------------------------------------------------- */

static int ipsets_read(struct dp_writer *w, const struct dp_input *in)
{
	struct ipsets *s = ipsets_of(w);
	ips_list_free(&s->listing);
	s->listed = false;
	int r = ips_list_sets(s->ips, our_prefix(s->af), &s->listing);
	if (r < 0) {
		failed(s, "listing ip sets: %s", strerror(-r));
		return r;
	}
	s->listed = true;
	return 0;
}

/* --- plan --------------------------------------------------------------------------------- */

/* After a read: make every listed set exactly what is desired. */
static void plan_full(struct ipsets *s, const struct pol_desired *d)
{
	hmap_clear(&s->kernel);
	struct hmap seen = HMAP_INIT;
	for (size_t i = 0; i < s->listing.n; i++) {
		const struct ips_set *ks = &s->listing.v[i];
		const struct pset *want = hmap_get(&d->sets, ks->info.name);
		hmap_put(&s->kernel, ks->info.name, (void *)1);
		if (!want) {
			hmap_put(&s->doomed, ks->info.name, (void *)1);
			continue;
		}
		hmap_put(&seen, ks->info.name, (void *)1);
		if (ks->info.type != want->info.type) {
			/* Names encode what a set holds; a type change means an old writer. */
			log_warn("ip set %s is %s, wanted %s: recreating it", ks->info.name,
				 ips_type_name(ks->info.type), ips_type_name(want->info.type));
			ips_batch_destroy(s->batch, ks->info.name);
			create_filled(s, want);
			continue;
		}
		struct hmap have = HMAP_INIT;
		for (size_t m = 0; m < ks->n; m++) {
			hmap_put(&have, ks->members[m], (void *)1);
			if (!hmap_has(&want->members, ks->members[m]))
				ips_batch_del(s->batch, ks->info.name, ks->members[m]);
		}
		for (struct hmap_iter it = hmap_iter(&want->members); hmap_next(&it);)
			if (!hmap_has(&have, it.key))
				ips_batch_add(s->batch, ks->info.name, it.key);
		hmap_clear(&have);
	}
	for (struct hmap_iter it = hmap_iter(&d->sets); hmap_next(&it);) {
		if (hmap_has(&seen, it.key))
			continue;
		const struct pset *want = it.value;
		create_filled(s, want);
		hmap_put(&s->kernel, want->info.name, (void *)1);
		hmap_del(&s->doomed, want->info.name);
	}
	hmap_clear(&seen);
	ips_list_free(&s->listing);
	s->listed = false;
}

/* Between reads: what the calculation marked since the last apply. */
static void plan_delta(struct ipsets *s, const struct pol_desired *d)
{
	struct hmap created = HMAP_INIT;
	for (struct hmap_iter it = hmap_iter(&d->dirty_sets); hmap_next(&it);) {
		const struct pset *want = hmap_get(&d->sets, it.key);
		bool have = hmap_has(&s->kernel, it.key);
		if (want && !have) {
			create_filled(s, want);
			hmap_put(&s->kernel, it.key, (void *)1);
			hmap_put(&created, it.key, (void *)1);
			hmap_del(&s->doomed, it.key);
		} else if (want) {
			hmap_del(&s->doomed, it.key); /* wanted again before it went */
		} else if (have) {
			hmap_put(&s->doomed, it.key, (void *)1);
		}
	}
	for (struct hmap_iter it = hmap_iter(&d->dirty_members); hmap_next(&it);) {
		const char *nl = strchr(it.key, '\n');
		if (!nl)
			continue;
		char name[IPS_NAME_MAX + 1];
		snprintf(name, sizeof(name), "%.*s", (int)(nl - it.key), it.key);
		const struct pset *want = hmap_get(&d->sets, name);
		if (!want || hmap_has(&created, name) || !hmap_has(&s->kernel, name))
			continue;
		if (hmap_has(&want->members, nl + 1))
			ips_batch_add(s->batch, name, nl + 1);
		else
			ips_batch_del(s->batch, name, nl + 1);
	}
	hmap_clear(&created);
}

static int ipsets_plan(struct dp_writer *w, const struct dp_input *in)
{
	struct ipsets *s = ipsets_of(w);
	struct pol_desired *d = wanted(s, in);
	ips_batch_reset(s->batch);
	if (s->listed) {
		plan_full(s, d);
		if (s->check_read && !ips_batch_count(s->batch) && ++s->false_alarms == 3)
			log_warn("ip sets: the kernel's counts of members disagree with felix's "
				 "though the members agree; the size check is off until felix "
				 "restarts (the refresh interval still reads every member)");
		s->check_read = false;
	} else
		plan_delta(s, d);
	hmap_clear(&d->dirty_sets);
	hmap_clear(&d->dirty_members);
	return 0;
}

/* --- apply -------------------------------------------------------------------------------- */

/* What the sets of ours hold now that an apply made them what is wanted: what check expects. */
static void note_sizes(struct ipsets *s, const struct pol_desired *d)
{
	hmap_clear(&s->sizes);
	for (struct hmap_iter it = hmap_iter(&s->kernel); hmap_next(&it);) {
		const struct pset *want = hmap_get(&d->sets, it.key);
		if (want)
			hmap_put(&s->sizes, it.key, (void *)(uintptr_t)(want->members.n + 1));
	}
}

static int ipsets_apply(struct dp_writer *w, const struct dp_input *in)
{
	struct ipsets *s = ipsets_of(w);
	size_t n = ips_batch_count(s->batch);
	hmap_clear(&s->sizes);
	if (!n) {
		note_sizes(s, wanted(s, in));
		return 0;
	}
	int *errs = xcalloc(n, sizeof(*errs));
	int r = ips_apply(s->ips, s->batch, errs);
	w->report->status.set_writes += n;
	if (r != 0) {
		size_t first = 0;
		while (first < n && errs[first] == 0)
			first++;
		failed(s, "ip sets: %s%s%s", r < 0 ? strerror(-r) : "",
		       first < n ? ips_batch_describe(s->batch, first) : "",
		       ips_last_error(s->ips) ? ips_last_error(s->ips) : "");
		r = r < 0 ? r : -EIO;
	} else {
		note_sizes(s, wanted(s, in));
		for (size_t i = 0; log_enabled(LOG_DEBUG) && i < n; i++)
			log_debug("ipset %s", ips_batch_describe(s->batch, i));
	}
	free(errs);
	/* A full load holds every member; do not keep that much for good (nor hold it while
	 * the iptables backend holds a table to write it, the peak of felix's memory). */
	if (n > 4096) {
		ips_batch_free(s->batch);
		s->batch = ips_batch_new();
	} else {
		ips_batch_reset(s->batch);
	}
	return r;
}

/* --- finish ------------------------------------------------------------------------------- */

static int ipsets_finish(struct dp_writer *w, const struct dp_input *in)
{
	struct ipsets *s = ipsets_of(w);
	ips_batch_reset(s->batch);
	for (struct hmap_iter it = hmap_iter(&s->doomed); hmap_next(&it);)
		if (!hmap_has(&wanted(s, in)->sets, it.key))
			ips_batch_destroy(s->batch, it.key);
	size_t n = ips_batch_count(s->batch);
	if (!n)
		return 0;
	int *errs = xcalloc(n, sizeof(*errs));
	int r = ips_apply(s->ips, s->batch, errs);
	w->report->status.set_writes += n;
	for (size_t i = 0; i < n; i++) {
		const char *desc = ips_batch_describe(s->batch, i);
		const char *name = strchr(desc, ' ');
		if (!name)
			continue;
		name++;
		if (r >= 0 && errs[i] == 0) {
			hmap_del(&s->kernel, name);
			hmap_del(&s->doomed, name);
		} else {
			/* Still in use by a rule we could not remove yet: next time. */
			log_info("ip set %s not destroyed yet: %s", name,
				 strerror(r < 0 ? -r : -errs[i]));
		}
	}
	free(errs);
	ips_batch_reset(s->batch);
	return 0;
}

/* --- check -------------------------------------------------------------------------------- */

/*
 * Each set's size as the kernel says it (`ipset list -terse`: no members
 * listed) against what the last apply left: a member someone removed or
 * added shows, and the sets are read back in full. A member swapped for
 * another leaves the size alone: that waits for the refresh interval.
 */
static enum dp_check ipsets_check(struct dp_writer *w)
{
	struct ipsets *s = ipsets_of(w);
	if (!s->sizes.n || s->false_alarms >= 3)
		return DP_CHECK_SAME;
	struct ips_list l = { 0 };
	int r = ips_list_names(s->ips, our_prefix(s->af), &l);
	if (r < 0) {
		ips_list_free(&l);
		return DP_CHECK_SAME; /* the next apply or refresh reports it */
	}
	enum dp_check verdict = DP_CHECK_SAME;
	size_t seen = 0;
	for (size_t i = 0; i < l.n && verdict == DP_CHECK_SAME; i++) {
		uintptr_t want = (uintptr_t)hmap_get(&s->sizes, l.v[i].info.name);
		if (!want)
			continue;
		seen++;
		if (l.v[i].entries == SIZE_MAX || l.v[i].entries == want - 1)
			continue;
		log_warn("ip set %s: %zu members where felix left %zu: changed by someone else; "
			 "reading the sets back",
			 l.v[i].info.name, l.v[i].entries, (size_t)(want - 1));
		verdict = DP_CHECK_READ;
	}
	if (verdict == DP_CHECK_SAME && seen < s->sizes.n) {
		log_warn("ip sets: %zu of felix's sets are gone; reading the sets back",
			 s->sizes.n - seen);
		verdict = DP_CHECK_READ;
	}
	if (verdict != DP_CHECK_SAME) {
		w->report->status.drift_repairs[DP_DRIFT_IPSET]++;
		hmap_clear(&s->sizes);
		s->check_read = true;
	}
	ips_list_free(&l);
	return verdict;
}

static void ipsets_free(struct dp_writer *w)
{
	struct ipsets *s = ipsets_of(w);
	hmap_clear(&s->sizes);
	hmap_clear(&s->kernel);
	hmap_clear(&s->doomed);
	ips_list_free(&s->listing);
	ips_batch_free(s->batch);
	free(s);
}

static const struct dp_writer_ops ipsets_ops = {
	.name = "ip sets",
	.read = ipsets_read,
	.plan = ipsets_plan,
	.apply = ipsets_apply,
	.finish = ipsets_finish,
	.check = ipsets_check,
	.free = ipsets_free,
};

struct dp_writer *ipsets_new(struct dp_report *r, struct ips *ips, int af)
{
	struct ipsets *s = xcalloc(1, sizeof(*s));
	s->af = af;
	s->w.ops = &ipsets_ops;
	s->w.report = r;
	s->ips = ips;
	s->batch = ips_batch_new();
	return &s->w;
}
