/*
 * Logging for the daemons and tools. Levels with defined meanings:
 *   error   something we should do is not happening (an apply failed)
 *   warning something unexpected we worked around
 *   info    what changed and why, once per change
 *   debug   detail for developers
 * Text on a terminal ("2026-11-22 10:00:00.123 [INFO] felix: msg"), JSON lines
 * when asked (BRINDLE_LOG_FORMAT=json or log_init). Library code does not log.
 *
 * Messages carry outside values (pod names, file paths, error text from other
 * programs), so every message is exactly one line whatever it contains:
 * - Text: log_escape writes \n, \r and \t as those two-character escapes and
 *   every other byte that could break a line or drive a terminal as \xNN: C0
 *   controls, DEL, C1 controls (U+0080-U+009F), U+2028 and U+2029, and bytes
 *   that are not well-formed UTF-8. The output is valid UTF-8 without control
 *   characters. A backslash is written as itself: the escapes cannot make a
 *   line or a control character, and doubling every backslash would garble
 *   the regular expressions, JSON and rule text that messages quote. So a
 *   literal "\n" and an escaped newline read the same; the JSON format is the
 *   exact one.
 * - JSON: the message is a JSON string in which control characters, DEL, C1
 *   controls, U+2028 and U+2029 are \u escapes and bytes that are not
 *   well-formed UTF-8 become U+FFFD; so every line parses, and parses back to
 *   the message (bytes that are not UTF-8 aside).
 * Line ends (\n, \r) at the end of a message are dropped. A message longer than
 * LOG_MSG_MAX bytes is cut at a character boundary and written with
 * " [log message cut: N more bytes]" after it; escaping can make the line at
 * most four (text) or six (JSON) times LOG_MSG_MAX, plus the prefix.
 */
#ifndef BRINDLE_LOG_H
#define BRINDLE_LOG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <brindle/core/util.h>

struct strbuf;

/* Longest message written, in bytes before escaping. */
#define LOG_MSG_MAX 16384

enum log_level {
	LOG_DEBUG,
	LOG_INFO,
	LOG_WARNING,
	LOG_ERROR,
	LOG_FATAL,
	LOG_NONE
};
enum log_format {
	LOG_TEXT,
	LOG_JSON
};

/* @component names the program ("felix"); @fd is where lines go (stderr usually). */
void log_init(const char *component, enum log_level level, enum log_format format, int fd);
void log_set_level(enum log_level level);
/* "debug", "Info", "WARNING", "warn", "error", "fatal", "none"/"panic"; -1 if unknown. */
int log_parse_level(const char *s);
bool log_enabled(enum log_level level);
/* Errors logged since start (a metric). */
uint64_t log_error_count(void);

void log_msg(enum log_level level, const char *fmt, ...) printf_like(2, 3);
void log_vmsg(enum log_level level, const char *fmt, va_list ap) printf_like(2, 0);

#define log_debug(...)                                   \
	do {                                             \
		if (log_enabled(LOG_DEBUG))              \
			log_msg(LOG_DEBUG, __VA_ARGS__); \
	} while (0)
#define log_info(...)  log_msg(LOG_INFO, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_WARNING, __VA_ARGS__)
#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)

/* A token bucket for messages that can repeat: @burst at once, then one per @interval_ms. */
struct ratelimit {
	uint64_t interval_ms;
	unsigned burst;
	double tokens;
	uint64_t last_ms;
	uint64_t suppressed;
};
#define RATELIMIT_INIT(interval, b)                                    \
	{                                                              \
		.interval_ms = (interval), .burst = (b), .tokens = (b) \
	}
bool ratelimit_ok(struct ratelimit *rl);

#endif
