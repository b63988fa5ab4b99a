#include <brindle/core/json.h>
#include <brindle/sys/log.h>
#include <brindle/core/strbuf.h>
#include <brindle/core/log_escape.h>
#include <brindle/sys/clock.h>

#include <stdio.h>
#include <strings.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static struct {
	const char *component;
	enum log_level level;
	enum log_format format;
	int fd;
	uint64_t errors;
} lg = { "brindle", LOG_INFO, LOG_TEXT, 2, 0 };

void log_init(const char *component, enum log_level level, enum log_format format, int fd)
{
	lg.component = component;
	lg.level = level;
	lg.format = format;
	lg.fd = fd;
}

void log_set_level(enum log_level level)
{
	lg.level = level;
}

bool log_enabled(enum log_level level)
{
	return level >= lg.level && level != LOG_NONE;
}

uint64_t log_error_count(void)
{
	return lg.errors;
}

int log_parse_level(const char *s)
{
	static const struct {
		const char *name;
		enum log_level level;
	} names[] = {
		{ "trace", LOG_DEBUG },	    { "debug", LOG_DEBUG },  { "info", LOG_INFO },
		{ "warning", LOG_WARNING }, { "warn", LOG_WARNING }, { "error", LOG_ERROR },
		{ "fatal", LOG_FATAL },	    { "panic", LOG_FATAL },  { "none", LOG_NONE },
	};
	for (size_t i = 0; s && i < ARRAY_SIZE(names); i++)
		if (strcasecmp(s, names[i].name) == 0)
			return (int)names[i].level;
	return -1;
}

static const char *log_level_name(enum log_level level)
{
	static const char *const names[] = { "debug", "info", "warning", "error", "fatal", "none" };
	return names[level];
}

void log_vmsg(enum log_level level, const char *fmt, va_list ap)
{
	if (level >= LOG_ERROR)
		lg.errors++;
	if (!log_enabled(level))
		return;
	struct timeval tv;
	gettimeofday(&tv, NULL);
	struct tm tm;
	localtime_r(&tv.tv_sec, &tm);
	char ts[64];
	size_t n = strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(ts + n, sizeof(ts) - n, ".%03ld", (long)(tv.tv_usec / 1000));

	struct strbuf msg = STRBUF_INIT, line = STRBUF_INIT;
	sb_init(&msg);
	sb_init(&line);
	sb_vaddf(&msg, fmt, ap);
	size_t len = msg.len, cut = 0;
	while (len && (msg.buf[len - 1] == '\n' || msg.buf[len - 1] == '\r'))
		len--;
	if (len > LOG_MSG_MAX) {
		/* Not inside a UTF-8 sequence: at most three continuation bytes back. */
		size_t keep = LOG_MSG_MAX;
		while (keep > LOG_MSG_MAX - 3 && (msg.buf[keep] & 0xc0) == 0x80)
			keep--;
		cut = len - keep;
		len = keep;
	}
	if (lg.format == LOG_JSON) {
		sb_adds(&line, "{\"time\":");
		json_write_string(&line, ts);
		sb_addf(&line, ",\"level\":\"%s\",\"component\":", log_level_name(level));
		json_write_string(&line, lg.component);
		sb_adds(&line, ",\"msg\":\"");
		log_escape_json(&line, msg.buf, len);
		if (cut)
			sb_addf(&line, " [log message cut: %zu more bytes]", cut);
		sb_adds(&line, "\"}\n");
	} else {
		ts[10] = ' ';
		char up[16];
		const char *ln = log_level_name(level);
		size_t i;
		for (i = 0; ln[i] && i < sizeof(up) - 1; i++)
			up[i] = (char)(ln[i] >= 'a' && ln[i] <= 'z' ? ln[i] - 32 : ln[i]);
		up[i] = '\0';
		sb_addf(&line, "%s [%s] ", ts, up);
		log_escape(&line, lg.component, strlen(lg.component));
		sb_adds(&line, ": ");
		log_escape(&line, msg.buf, len);
		if (cut)
			sb_addf(&line, " [log message cut: %zu more bytes]", cut);
		sb_addc(&line, '\n');
	}
	/* One write per line so concurrent writers interleave by line. */
	ssize_t w = write(lg.fd, line.buf, line.len);
	(void)w;
	sb_free(&msg);
	sb_free(&line);
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	log_vmsg(level, fmt, ap);
	va_end(ap);
}

bool ratelimit_ok(struct ratelimit *rl)
{
	uint64_t now = now_ms();
	if (rl->last_ms && rl->interval_ms) {
		rl->tokens += (double)(now - rl->last_ms) / (double)rl->interval_ms;
		if (rl->tokens > rl->burst)
			rl->tokens = rl->burst;
	}
	rl->last_ms = now;
	if (rl->tokens >= 1.0) {
		rl->tokens -= 1.0;
		return true;
	}
	rl->suppressed++;
	return false;
}
