/*
 * A Prometheus metrics registry: counters, gauges, histograms and summaries
 * with labels, rendered in the text exposition format (version 0.0.4). Pure;
 * the daemons serve it over httpd.
 */
#ifndef BRINDLE_METRICS_H
#define BRINDLE_METRICS_H

#include <stddef.h>
#include <brindle/core/strbuf.h>

struct metrics;
struct metric;

struct metrics *metrics_new(void);
void metrics_free(struct metrics *r);

/* @labels: label names, comma-separated ("kind,table"), or NULL for none. */
struct metric *metrics_counter(struct metrics *r, const char *name, const char *help,
			       const char *labels);
struct metric *metrics_gauge(struct metrics *r, const char *name, const char *help,
			     const char *labels);
/* @buckets: upper bounds, ascending (+Inf is implied). */
struct metric *metrics_histogram(struct metrics *r, const char *name, const char *help,
				 const char *labels, const double *buckets, size_t n);
/*
 * A summary: the 0.5, 0.9 and 0.99 quantiles of the last METRICS_SUMMARY_WINDOW
 * observations (a window by count, not time: the registry has no clock), with
 * the sum and count of all. NaN quantiles before the first observation.
 */
#define METRICS_SUMMARY_WINDOW 500
struct metric *metrics_summary(struct metrics *r, const char *name, const char *help,
			       const char *labels);

/* @values: label values, comma-separated in the order of the names ("route,main"), or NULL. */
void metric_add(struct metric *m, const char *values, double v);
void metric_set(struct metric *m, const char *values, double v);
void metric_observe(struct metric *m, const char *values, double v);
double metric_value(const struct metric *m, const char *values);

void metrics_render(const struct metrics *r, struct strbuf *out);

#endif
