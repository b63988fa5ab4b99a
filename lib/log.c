#include <brindle/json.h>
#include <brindle/log.h>
#include <brindle/strbuf.h>

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

/* Length of the well-formed UTF-8 sequence at @s (@n bytes left) and its code point, or 0. */
static size_t utf8_seq(const unsigned char *s, size_t n, uint32_t *cp)
{
	unsigned char c = s[0];
	size_t len;
	uint32_t v, min;
	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2, v = c & 0x1f, min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3, v = c & 0x0f, min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4, v = c & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		v = v << 6 | (s[i] & 0x3f);
	}
	if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return len;
}

static void add_hex(struct strbuf *out, const unsigned char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		char e[4] = { '\\', 'x', hex[s[i] >> 4], hex[s[i] & 15] };
		sb_add(out, e, sizeof(e));
	}
}

void log_escape(struct strbuf *out, const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0;
	while (i < n) {
		size_t run = i;
		while (run < n && s[run] >= 0x20 && s[run] < 0x7f)
			run++;
		sb_add(out, s + i, run - i);
		if ((i = run) == n)
			break;
		uint32_t cp;
		size_t len = utf8_seq(s + i, n - i, &cp);
		if (s[i] == '\n') {
			sb_adds(out, "\\n");
		} else if (s[i] == '\r') {
			sb_adds(out, "\\r");
		} else if (s[i] == '\t') {
			sb_adds(out, "\\t");
		} else if (len <= 1 || cp <= 0x9f || cp == 0x2028 || cp == 0x2029) {
			add_hex(out, s + i, len ? len : 1);
		} else {
			sb_add(out, s + i, len);
		}
		i += len ? len : 1;
	}
}

/*
 * @s escaped for the inside of a JSON string. Beyond what JSON requires: DEL, C1 controls, U+2028
 * and U+2029 are \u escapes too, and bytes that are not UTF-8 become U+FFFD.
 */
static void escape_json_string(struct strbuf *out, const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	for (size_t i = 0; i < n;) {
		size_t run = i;
		while (run < n && s[run] >= 0x20 && s[run] < 0x7f && s[run] != '"' &&
		       s[run] != '\\')
			run++;
		sb_add(out, s + i, run - i);
		if ((i = run) == n)
			break;
		uint32_t cp;
		size_t len = utf8_seq(s + i, n - i, &cp);
		if (len == 0)
			sb_adds(out, "\\ufffd");
		else if (cp == '"' || cp == '\\')
			sb_addf(out, "\\%c", (char)cp);
		else if (cp == '\n')
			sb_adds(out, "\\n");
		else if (cp == '\r')
			sb_adds(out, "\\r");
		else if (cp == '\t')
			sb_adds(out, "\\t");
		else if (cp <= 0x9f || cp == 0x2028 || cp == 0x2029)
			sb_addf(out, "\\u%04x", (unsigned)cp);
		else
			sb_add(out, s + i, len);
		i += len ? len : 1;
	}
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
		escape_json_string(&line, msg.buf, len);
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
