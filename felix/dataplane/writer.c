/*
 * What the writers share: counting and logging errors, logging changes (see
 * writer.h). A refusal and a kernel without IPIP are reported like errors but
 * are not failures; a writer says it failed by what it returns.
 */
#include "dataplane/writer.h"

#include <stdarg.h>

void dp_report_error(struct dp_report *r, enum dp_error_kind kind, const char *fmt, ...)
{
	r->status.errors[kind]++;
	if (!ratelimit_ok(&r->error_rl))
		return;
	va_list ap;
	va_start(ap, fmt);
	log_vmsg(LOG_ERROR, fmt, ap);
	va_end(ap);
}

void dp_report_change(struct dp_report *r, const char *fmt, ...)
{
	/* What changed and why, once; a flood of changes is summarised. */
	enum log_level level = ++r->changes <= DP_LOG_CHANGES_PER_APPLY ? LOG_INFO : LOG_DEBUG;
	if (!log_enabled(level))
		return;
	va_list ap;
	va_start(ap, fmt);
	log_vmsg(level, fmt, ap);
	va_end(ap);
}
