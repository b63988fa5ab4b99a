/*
 * Metric families keep their series in a hash map keyed by the label values
 * string; rendering sorts families and series so scrapes are deterministic.
 */
#include <brindle/core/hmap.h>
#include <brindle/core/metrics.h>
#include <brindle/core/util.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum metric_type {
	M_COUNTER,
	M_GAUGE,
	M_HISTOGRAM,
	M_SUMMARY
};

static const double summary_quantiles[] = { 0.5, 0.9, 0.99 };

struct series {
	double value; /* counter, gauge; histogram and summary sum */
	uint64_t count;
	uint64_t *buckets; /* cumulative counts, histogram only */
	double *window;	   /* the last observations (a ring), summary only */
};

struct metric {
	struct metrics *r;
	enum metric_type type;
	char *name, *help;
	char **labels;
	size_t n_labels;
	double *bounds;
	size_t n_bounds;
	struct hmap series;
};

struct metrics {
	struct metric **v;
	size_t n, cap;
};

struct metrics *metrics_new(void)
{
	return xcalloc(1, sizeof(struct metrics));
}

static void series_free(struct hmap *m)
{
	for (struct hmap_iter it = hmap_iter(m); hmap_next(&it);) {
		struct series *s = it.value;
		free(s->buckets);
		free(s->window);
		free(s);
	}
	hmap_clear(m);
}

void metrics_free(struct metrics *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++) {
		struct metric *m = r->v[i];
		series_free(&m->series);
		for (size_t j = 0; j < m->n_labels; j++)
			free(m->labels[j]);
		free(m->labels);
		free(m->bounds);
		free(m->name);
		free(m->help);
		free(m);
	}
	free(r->v);
	free(r);
}

static struct metric *add(struct metrics *r, enum metric_type t, const char *name, const char *help,
			  const char *labels)
{
	struct metric *m = xcalloc(1, sizeof(*m));
	m->r = r;
	m->type = t;
	m->name = xstrdup(name);
	m->help = xstrdup(help);
	if (labels && *labels) {
		char *copy = xstrdup(labels), *save = NULL;
		for (char *tok = strtok_r(copy, ",", &save); tok;
		     tok = strtok_r(NULL, ",", &save)) {
			m->labels = xrealloc(m->labels, sizeof(char *) * (m->n_labels + 1));
			m->labels[m->n_labels++] = xstrdup(tok);
		}
		free(copy);
	}
	GROW(r->v, r->cap, r->n + 1);
	r->v[r->n++] = m;
	return m;
}

struct metric *metrics_counter(struct metrics *r, const char *name, const char *help,
			       const char *labels)
{
	return add(r, M_COUNTER, name, help, labels);
}

struct metric *metrics_gauge(struct metrics *r, const char *name, const char *help,
			     const char *labels)
{
	return add(r, M_GAUGE, name, help, labels);
}

struct metric *metrics_histogram(struct metrics *r, const char *name, const char *help,
				 const char *labels, const double *buckets, size_t n)
{
	struct metric *m = add(r, M_HISTOGRAM, name, help, labels);
	m->bounds = xmalloc(sizeof(double) * (n ? n : 1));
	memcpy(m->bounds, buckets, sizeof(double) * n);
	m->n_bounds = n;
	return m;
}

struct metric *metrics_summary(struct metrics *r, const char *name, const char *help,
			       const char *labels)
{
	return add(r, M_SUMMARY, name, help, labels);
}

static struct series *get_series(struct metric *m, const char *values)
{
	const char *key = values ? values : "";
	struct series *s = hmap_get(&m->series, key);
	if (!s) {
		s = xcalloc(1, sizeof(*s));
		if (m->type == M_HISTOGRAM)
			s->buckets = xcalloc(m->n_bounds + 1, sizeof(uint64_t));
		if (m->type == M_SUMMARY)
			s->window = xcalloc(METRICS_SUMMARY_WINDOW, sizeof(double));
		hmap_put(&m->series, key, s);
	}
	return s;
}

void metric_add(struct metric *m, const char *values, double v)
{
	get_series(m, values)->value += v;
}

void metric_set(struct metric *m, const char *values, double v)
{
	get_series(m, values)->value = v;
}

void metric_observe(struct metric *m, const char *values, double v)
{
	struct series *s = get_series(m, values);
	if (s->window)
		s->window[s->count % METRICS_SUMMARY_WINDOW] = v;
	s->value += v;
	s->count++;
	for (size_t i = 0; i < m->n_bounds; i++)
		if (v <= m->bounds[i])
			s->buckets[i]++;
}

double metric_value(const struct metric *m, const char *values)
{
	const struct series *s = hmap_get(&m->series, values ? values : "");
	return s ? (m->type == M_HISTOGRAM || m->type == M_SUMMARY ? (double)s->count : s->value)
		 : 0;
}

static void fmt_double(struct strbuf *out, double v)
{
	if (isinf(v))
		sb_adds(out, v > 0 ? "+Inf" : "-Inf");
	else if (v == floor(v) && fabs(v) < 1e15)
		sb_addf(out, "%.0f", v);
	else
		sb_addf(out, "%.9g", v);
}

/* {a="x",b="y"[,le="0.5"]} with values escaped; @extra ("le", "quantile") = @xval last. */
static void fmt_labels(struct strbuf *out, const struct metric *m, const char *values,
		       const char *extra, const char *xval)
{
	if (!m->n_labels && !extra)
		return;
	sb_addc(out, '{');
	const char *p = values ? values : "";
	for (size_t i = 0; i < m->n_labels; i++) {
		const char *comma = strchr(p, ',');
		size_t n = comma && i + 1 < m->n_labels ? (size_t)(comma - p) : strlen(p);
		sb_addf(out, "%s%s=\"", i ? "," : "", m->labels[i]);
		for (size_t k = 0; k < n; k++) {
			if (p[k] == '"' || p[k] == '\\')
				sb_addc(out, '\\');
			if (p[k] == '\n')
				sb_adds(out, "\\n");
			else
				sb_addc(out, p[k]);
		}
		sb_addc(out, '"');
		p += n + (p[n] ? 1 : 0);
	}
	if (extra)
		sb_addf(out, "%s%s=\"%s\"", m->n_labels ? "," : "", extra, xval);
	sb_addc(out, '}');
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* NAME_sum and NAME_count of a histogram or summary series. */
static void render_sum_count(struct strbuf *out, const struct metric *m, const char *vals,
			     const struct series *s)
{
	sb_addf(out, "%s_sum", m->name);
	fmt_labels(out, m, vals, NULL, NULL);
	sb_addc(out, ' ');
	fmt_double(out, s->value);
	sb_addf(out, "\n%s_count", m->name);
	fmt_labels(out, m, vals, NULL, NULL);
	sb_addf(out, " %llu\n", (unsigned long long)s->count);
}

/* {labels,quantile="q"} value for each quantile of the window, then _sum and _count. */
static void render_summary(struct strbuf *out, const struct metric *m, const char *vals,
			   const struct series *s)
{
	size_t n = s->count < METRICS_SUMMARY_WINDOW ? (size_t)s->count : METRICS_SUMMARY_WINDOW;
	double *sorted = xmalloc(sizeof(double) * (n ? n : 1));
	memcpy(sorted, s->window, sizeof(double) * n);
	qsort(sorted, n, sizeof(double), cmp_double);
	for (size_t q = 0; q < ARRAY_SIZE(summary_quantiles); q++) {
		char quantile[16];
		snprintf(quantile, sizeof(quantile), "%g", summary_quantiles[q]);
		sb_adds(out, m->name);
		fmt_labels(out, m, vals, "quantile", quantile);
		sb_addc(out, ' ');
		if (n) {
			/* the nearest rank */
			size_t rank = (size_t)ceil(summary_quantiles[q] * (double)n);
			fmt_double(out, sorted[rank ? rank - 1 : 0]);
		} else {
			sb_adds(out, "NaN");
		}
		sb_addc(out, '\n');
	}
	free(sorted);
	render_sum_count(out, m, vals, s);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int cmp_metric(const void *a, const void *b)
{
	return strcmp((*(struct metric *const *)a)->name, (*(struct metric *const *)b)->name);
}

void metrics_render(const struct metrics *r, struct strbuf *out)
{
	static const char *const types[] = { "counter", "gauge", "histogram", "summary" };
	struct metric **sorted = xmalloc(sizeof(*sorted) * (r->n ? r->n : 1));
	memcpy(sorted, r->v, sizeof(*sorted) * r->n);
	qsort(sorted, r->n, sizeof(*sorted), cmp_metric);
	for (size_t i = 0; i < r->n; i++) {
		const struct metric *m = sorted[i];
		sb_addf(out, "# HELP %s %s\n# TYPE %s %s\n", m->name, m->help, m->name,
			types[m->type]);
		const char **keys = xmalloc(sizeof(char *) * (m->series.n ? m->series.n : 1));
		size_t n = 0;
		for (struct hmap_iter it = hmap_iter(&m->series); hmap_next(&it);)
			keys[n++] = it.key;
		qsort(keys, n, sizeof(char *), cmp_str);
		/* An unlabelled counter or gauge shows 0 before its first change. */
		if (n == 0 && !m->n_labels && (m->type == M_COUNTER || m->type == M_GAUGE))
			sb_addf(out, "%s 0\n", m->name);
		for (size_t k = 0; k < n; k++) {
			const struct series *s = hmap_get(&m->series, keys[k]);
			const char *vals = *keys[k] ? keys[k] : NULL;
			if (m->type == M_SUMMARY) {
				render_summary(out, m, vals, s);
				continue;
			}
			if (m->type != M_HISTOGRAM) {
				sb_adds(out, m->name);
				fmt_labels(out, m, vals, NULL, NULL);
				sb_addc(out, ' ');
				fmt_double(out, s->value);
				sb_addc(out, '\n');
				continue;
			}
			for (size_t b = 0; b <= m->n_bounds; b++) {
				char le[32];
				if (b < m->n_bounds) {
					struct strbuf t = STRBUF_INIT;
					sb_init(&t);
					fmt_double(&t, m->bounds[b]);
					snprintf(le, sizeof(le), "%s", t.buf);
					sb_free(&t);
				} else {
					snprintf(le, sizeof(le), "+Inf");
				}
				sb_addf(out, "%s_bucket", m->name);
				fmt_labels(out, m, vals, "le", le);
				sb_addf(out, " %llu\n",
					(unsigned long long)(b < m->n_bounds ? s->buckets[b]
									     : s->count));
			}
			render_sum_count(out, m, vals, s);
		}
		free(keys);
	}
	free(sorted);
}
