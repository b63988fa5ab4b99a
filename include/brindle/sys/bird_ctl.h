/*
 * BIRD's control socket, the protocol birdc speaks: connect to the unix
 * socket, read the greeting, send one command per line, read the numbered
 * reply. Used by confd (`configure`) and brindlectl (`node status`).
 *
 * A reply is a sequence of lines:
 *   "CCCC-text"  a line with code CCCC, more lines follow
 *   " text"      another line with the previous line's code
 *   "CCCC text"  the last line of the reply
 * Codes 0xxx end a command that worked (0000 after data), 1xxx are data,
 * 2xxx table headings, 8xxx run-time errors and 9xxx parse errors.
 *
 * The parsers are pure functions over buffers (fuzzed); the client does
 * blocking I/O bounded by a timeout. Nothing here logs.
 */
#ifndef BRINDLE_BIRD_CTL_H
#define BRINDLE_BIRD_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <brindle/core/arena.h>
#include <brindle/core/strbuf.h>

/* Where a node's BIRD listens unless told otherwise. */
#define BIRD_CTL_DEFAULT_SOCKET "/var/run/brindle/bird.ctl"

/* Replies larger than this are refused (-EMSGSIZE). */
#define BIRD_REPLY_MAX (16u << 20)

struct bird_line {
	int code;	  /* 0-9999 */
	const char *text; /* without code, separator and newline */
};

struct bird_reply {
	struct bird_line *lines;
	size_t n;
	int code; /* the last line's code */
};

/*
 * Parse one reply at the start of @buf. Returns 1 and fills @r (strings in
 * @a) with *used set to the bytes it took, 0 when @buf holds only part of a
 * reply, or -EINVAL when @buf is not a reply (*used then says where).
 */
int bird_reply_parse(const char *buf, size_t len, struct arena *a, struct bird_reply *r,
		     size_t *used) must_check;

/* The command worked: the last code is 0xxx. */
static inline bool bird_reply_ok(const struct bird_reply *r)
{
	return r->code >= 0 && r->code < 1000;
}

/* The reply's lines joined with "\n" (for error messages), into @a. */
const char *bird_reply_text(const struct bird_reply *r, struct arena *a);

/* One row of `show protocols`. */
struct bird_protocol {
	const char *name;
	const char *proto; /* "BGP", "Kernel", ... */
	const char *table;
	const char *state; /* "up", "start", "down", ... */
	const char *since;
	const char *info; /* "Established", "Active  Socket: Connection refused", or "" */
};

/*
 * The rows of a `show protocols` reply. The heading (code 2002) is matched
 * without regard to case (BIRD 2 capitalises it, BIRD 1 does not). -EINVAL
 * when the reply is not such a table.
 */
int bird_protocols_parse(const struct bird_reply *r, struct arena *a, struct bird_protocol **rows,
			 size_t *n) must_check;

struct bird_ctl;

/*
 * Connect to the socket at @path and read BIRD's greeting, waiting at most
 * @timeout_ms for each read. Errors: -ENOENT (no socket), -ECONNREFUSED
 * (nobody listens), -ETIMEDOUT, -EPROTO (not BIRD), others from the system;
 * a message goes to @err.
 */
int bird_ctl_open(const char *path, int timeout_ms, struct bird_ctl **out,
		  struct strbuf *err) must_check;
/* The greeting, e.g. "BIRD 2.0.12 ready.". */
const char *bird_ctl_greeting(const struct bird_ctl *c);
/* The connection's socket: readable with nothing asked means BIRD closed it (it is gone). */
int bird_ctl_fd(const struct bird_ctl *c);

/*
 * Send @cmd (one line, no newline) and read the whole reply into @r (strings
 * in @a). A reply with an error code is still a success here: check
 * bird_reply_ok(). Returns a negative errno when the exchange itself fails.
 */
int bird_ctl_command(struct bird_ctl *c, const char *cmd, struct arena *a, struct bird_reply *r,
		     struct strbuf *err) must_check;

/* Accepts NULL. */
void bird_ctl_close(struct bird_ctl *c);

#endif
