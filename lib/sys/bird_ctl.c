/*
 * BIRD's control socket: reply parsing (pure) and a small blocking client.
 * Owns nothing in the kernel; the only system objects are the socket it
 * opens and closes.
 */
#include <brindle/sys/bird_ctl.h>

#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* --- replies ----------------------------------------------------------------------------- */

static bool is_code(const char *p, size_t n)
{
	return n >= 5 && isdigit((unsigned char)p[0]) && isdigit((unsigned char)p[1]) &&
	       isdigit((unsigned char)p[2]) && isdigit((unsigned char)p[3]) &&
	       (p[4] == '-' || p[4] == ' ');
}

int bird_reply_parse(const char *buf, size_t len, struct arena *a, struct bird_reply *r,
		     size_t *used)
{
	size_t pos = 0, n = 0, cap = 0;
	struct bird_line *lines = NULL;
	int code = -1;
	/* First pass: find the end, so a partial reply allocates nothing. */
	for (;;) {
		const char *nl = memchr(buf + pos, '\n', len - pos);
		if (!nl)
			return 0;
		size_t ll = (size_t)(nl - (buf + pos));
		const char *p = buf + pos;
		if (is_code(p, ll)) {
			code = (p[0] - '0') * 1000 + (p[1] - '0') * 100 + (p[2] - '0') * 10 +
			       (p[3] - '0');
			cap++;
			pos += ll + 1;
			if (p[4] == ' ')
				break;
		} else if (ll >= 1 && p[0] == ' ' && code >= 0) {
			cap++;
			pos += ll + 1;
		} else {
			*used = pos;
			return -EINVAL;
		}
	}
	lines = arena_new_array(a, struct bird_line, cap);
	code = -1;
	for (size_t at = 0; at < pos;) {
		const char *p = buf + at, *nl = memchr(p, '\n', pos - at);
		size_t ll = (size_t)(nl - p);
		if (is_code(p, ll)) {
			code = (p[0] - '0') * 1000 + (p[1] - '0') * 100 + (p[2] - '0') * 10 +
			       (p[3] - '0');
			lines[n].text = arena_strndup(a, p + 5, ll - 5);
		} else {
			lines[n].text = arena_strndup(a, p + 1, ll - 1);
		}
		lines[n++].code = code;
		at += ll + 1;
	}
	r->lines = lines;
	r->n = n;
	r->code = code;
	*used = pos;
	return 1;
}

const char *bird_reply_text(const struct bird_reply *r, struct arena *a)
{
	struct strbuf sb = STRBUF_INIT;
	sb_init(&sb);
	for (size_t i = 0; i < r->n; i++) {
		if (i)
			sb_addc(&sb, '\n');
		sb_adds(&sb, r->lines[i].text);
	}
	const char *s = arena_strdup(a, sb_str(&sb));
	sb_free(&sb);
	return s;
}

/* --- show protocols ------------------------------------------------------------------------ */

/* Next blank-separated token of @s from *pos: start and length; false at the end. */
static bool token(const char *s, size_t *pos, size_t *start, size_t *len)
{
	size_t i = *pos;
	while (s[i] == ' ' || s[i] == '\t')
		i++;
	if (!s[i])
		return false;
	*start = i;
	while (s[i] && s[i] != ' ' && s[i] != '\t')
		i++;
	*len = i - *start;
	*pos = i;
	return true;
}

/* A clock time as BIRD prints it after a date: "03:24:59" or "03:24:59.843". */
static bool looks_like_time(const char *s, size_t n)
{
	if (n < 5 || !isdigit((unsigned char)s[0]) || !isdigit((unsigned char)s[1]) || s[2] != ':')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isdigit((unsigned char)s[i]) && s[i] != ':' && s[i] != '.')
			return false;
	return true;
}

static bool heading_ok(const char *text)
{
	static const char *const want[] = { "name", "proto", "table", "state", "since", "info" };
	size_t pos = 0, start, len;
	for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
		if (!token(text, &pos, &start, &len) || len != strlen(want[i]) ||
		    strncasecmp(text + start, want[i], len) != 0)
			return false;
	}
	return true;
}

static int parse_row(const char *text, struct arena *a, struct bird_protocol *row)
{
	const char **fields[] = { &row->name, &row->proto, &row->table, &row->state, &row->since };
	size_t pos = 0, start, len;
	for (size_t i = 0; i < ARRAY_SIZE(fields); i++) {
		if (!token(text, &pos, &start, &len))
			return -EINVAL;
		*fields[i] = arena_strndup(a, text + start, len);
	}
	/* A long time format puts the clock after the date: "2026-11-22 03:24:59". */
	size_t save = pos;
	if (token(text, &pos, &start, &len) && looks_like_time(text + start, len))
		row->since = arena_printf(a, "%s %.*s", row->since, (int)len, text + start);
	else
		pos = save;
	while (text[pos] == ' ' || text[pos] == '\t')
		pos++;
	size_t end = strlen(text);
	while (end > pos && (text[end - 1] == ' ' || text[end - 1] == '\t'))
		end--;
	row->info = arena_strndup(a, text + pos, end - pos);
	return 0;
}

int bird_protocols_parse(const struct bird_reply *r, struct arena *a, struct bird_protocol **rows,
			 size_t *n)
{
	if (!bird_reply_ok(r))
		return -EINVAL;
	size_t count = 0;
	bool heading = false;
	for (size_t i = 0; i < r->n; i++) {
		if (r->lines[i].code == 2002) {
			if (heading || !heading_ok(r->lines[i].text))
				return -EINVAL;
			heading = true;
		} else if (r->lines[i].code == 1002) {
			if (!heading)
				return -EINVAL;
			count++;
		} else if (!(r->lines[i].code < 1000 && i + 1 == r->n)) {
			return -EINVAL;
		}
	}
	struct bird_protocol *v = arena_new_array(a, struct bird_protocol, count ? count : 1);
	size_t k = 0;
	for (size_t i = 0; i < r->n; i++) {
		if (r->lines[i].code != 1002)
			continue;
		if (parse_row(r->lines[i].text, a, &v[k]) < 0)
			return -EINVAL;
		k++;
	}
	*rows = v;
	*n = k;
	return 0;
}

/* --- the client ------------------------------------------------------------------------------ */

struct bird_ctl {
	int fd;
	int timeout_ms;
	struct strbuf in; /* bytes read but not yet parsed */
	char *greeting;
};

static int fail(struct strbuf *err, int r, const char *fmt, ...) printf_like(3, 4);
static int fail(struct strbuf *err, int r, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		sb_vaddf(err, fmt, ap);
		va_end(ap);
	}
	return r;
}

/* Read until one reply is complete; it is parsed into @r and removed from the buffer. */
static int read_reply(struct bird_ctl *c, struct arena *a, struct bird_reply *r, struct strbuf *err)
{
	for (;;) {
		size_t used;
		int p = bird_reply_parse(c->in.buf, c->in.len, a, r, &used);
		if (p < 0)
			return fail(err, -EPROTO, "BIRD sent something that is not a reply: %.60s",
				    c->in.buf + used);
		if (p > 0) {
			memmove(c->in.buf, c->in.buf + used, c->in.len - used);
			sb_truncate(&c->in, c->in.len - used);
			return 0;
		}
		if (c->in.len > BIRD_REPLY_MAX)
			return fail(err, -EMSGSIZE, "BIRD's reply is larger than %u bytes",
				    BIRD_REPLY_MAX);
		struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
		int pr = poll(&pfd, 1, c->timeout_ms);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr < 0)
			return fail(err, -errno, "poll: %s", strerror(errno));
		if (pr == 0)
			return fail(err, -ETIMEDOUT, "BIRD did not answer within %d ms",
				    c->timeout_ms);
		char buf[8192];
		ssize_t got = read(c->fd, buf, sizeof(buf));
		if (got < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (got < 0)
			return fail(err, -errno, "read: %s", strerror(errno));
		if (got == 0)
			return fail(err, -ECONNRESET, "BIRD closed the control connection");
		sb_add(&c->in, buf, (size_t)got);
	}
}

int bird_ctl_open(const char *path, int timeout_ms, struct bird_ctl **out, struct strbuf *err)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sun.sun_path))
		return fail(err, -ENAMETOOLONG, "socket path %s is too long", path);
	strcpy(sun.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return fail(err, -errno, "socket: %s", strerror(errno));
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		int e = errno;
		close(fd);
		return fail(err, -e, "cannot connect to BIRD's control socket %s: %s", path,
			    strerror(e));
	}
	struct bird_ctl *c = xcalloc(1, sizeof(*c));
	c->fd = fd;
	c->timeout_ms = timeout_ms > 0 ? timeout_ms : 5000;
	sb_init(&c->in);
	struct arena *a = arena_new();
	struct bird_reply hello;
	int r = read_reply(c, a, &hello, err);
	if (r == 0 && (hello.code != 1 || hello.n != 1))
		r = fail(err, -EPROTO, "%s does not greet like BIRD: %s", path,
			 bird_reply_text(&hello, a));
	if (r == 0)
		c->greeting = xstrdup(hello.lines[0].text);
	arena_free(a);
	if (r < 0) {
		bird_ctl_close(c);
		return r;
	}
	*out = c;
	return 0;
}

int bird_ctl_fd(const struct bird_ctl *c)
{
	return c->fd;
}

const char *bird_ctl_greeting(const struct bird_ctl *c)
{
	return c->greeting;
}

int bird_ctl_command(struct bird_ctl *c, const char *cmd, struct arena *a, struct bird_reply *r,
		     struct strbuf *err)
{
	if (strchr(cmd, '\n'))
		return fail(err, -EINVAL, "a BIRD command is one line");
	struct strbuf line = STRBUF_INIT;
	sb_init(&line);
	sb_addf(&line, "%s\n", cmd);
	size_t off = 0;
	int ret = 0;
	while (off < line.len) {
		ssize_t w = send(c->fd, line.buf + off, line.len - off, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			ret = fail(err, -errno, "write to BIRD: %s", strerror(errno));
			break;
		}
		off += (size_t)w;
	}
	sb_free(&line);
	if (ret < 0)
		return ret;
	return read_reply(c, a, r, err);
}

void bird_ctl_close(struct bird_ctl *c)
{
	if (!c)
		return;
	close(c->fd);
	sb_free(&c->in);
	free(c->greeting);
	free(c);
}
