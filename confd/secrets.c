/* BGP passwords from the secrets directory or allowed variables (see secrets.h). */
#include "secrets.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

const char *secrets_relative(const char *dir, const char *file, struct arena *a, struct strbuf *err)
{
	size_t dl = strlen(dir);
	while (dl > 1 && dir[dl - 1] == '/')
		dl--;
	const char *rel = file;
	if (file[0] == '/') {
		if (strncmp(file, dir, dl) != 0 || file[dl] != '/') {
			sb_addf(err, "%s is not inside the secrets directory %.*s", file, (int)dl,
				dir);
			return NULL;
		}
		rel = file + dl;
		while (*rel == '/')
			rel++;
	}
	/* Every component a name: no "..", no ".", nothing empty at the end. */
	const char *p = rel;
	do {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);
		if ((n == 2 && p[0] == '.' && p[1] == '.') || (n == 1 && p[0] == '.') || n == 0) {
			sb_addf(err,
				"%s: a password file is named by plain components inside the "
				"secrets directory",
				file);
			return NULL;
		}
		p = slash ? slash + 1 : NULL;
	} while (p);
	return arena_strdup(a, rel);
}

/*
 * Open @rel beneath the directory @dirfd, following no link out of it. Where
 * the kernel has no openat2 (before 5.6), each component is opened in turn
 * with O_NOFOLLOW instead, which refuses every symbolic link.
 */
static int open_beneath(int dirfd, const char *rel)
{
	struct open_how how = { .flags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC,
				.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS };
	long fd = syscall(SYS_openat2, dirfd, rel, &how, sizeof(how));
	if (fd >= 0 || errno != ENOSYS)
		return fd >= 0 ? (int)fd : -errno;
	int cur = dup(dirfd);
	const char *p = rel;
	while (cur >= 0) {
		const char *slash = strchr(p, '/');
		char part[256];
		size_t n = slash ? (size_t)(slash - p) : strlen(p);
		if (n >= sizeof(part)) {
			close(cur);
			return -ENAMETOOLONG;
		}
		memcpy(part, p, n);
		part[n] = '\0';
		int flags = slash ? O_RDONLY | O_DIRECTORY : O_RDONLY | O_NONBLOCK | O_NOCTTY;
		int next = openat(cur, part, flags | O_NOFOLLOW | O_CLOEXEC);
		int e = errno;
		close(cur);
		if (next < 0)
			return -e;
		if (!slash)
			return next;
		cur = next;
		p = slash + 1;
	}
	return -errno;
}

static int read_secret(const struct secrets *s, const char *file, struct arena *a, const char **out,
		       struct strbuf *err)
{
	const char *dir = s && s->dir ? s->dir : SECRETS_DEFAULT_DIR;
	const char *rel = secrets_relative(dir, file, a, err);
	if (!rel)
		return -EPERM;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		int e = errno;
		sb_addf(err, "secrets directory %s: %s", dir, strerror(e));
		return -e;
	}
	int fd = open_beneath(dfd, rel);
	close(dfd);
	if (fd < 0) {
		if (fd == -EXDEV || fd == -ELOOP)
			sb_addf(err, "%s/%s leads outside the secrets directory", dir, rel);
		else
			sb_addf(err, "%s/%s: %s", dir, rel, strerror(-fd));
		return fd == -EXDEV || fd == -ELOOP ? -EPERM : fd;
	}
	struct stat st = { 0 };
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > SECRET_MAX_BYTES) {
		close(fd);
		if (S_ISREG(st.st_mode))
			sb_addf(err, "%s/%s: longer than %d bytes", dir, rel, SECRET_MAX_BYTES);
		else
			sb_addf(err, "%s/%s: not a regular file", dir, rel);
		return S_ISREG(st.st_mode) ? -EFBIG : -EINVAL;
	}
	char buf[SECRET_MAX_BYTES + 1];
	size_t len = 0;
	for (;;) {
		ssize_t r = read(fd, buf + len, sizeof(buf) - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			close(fd);
			sb_addf(err, "%s/%s: %s", dir, rel, strerror(e));
			return -e;
		}
		if (r == 0)
			break;
		len += (size_t)r;
		if (len == sizeof(buf)) {
			close(fd);
			sb_addf(err, "%s/%s: longer than %d bytes", dir, rel, SECRET_MAX_BYTES);
			return -EFBIG;
		}
	}
	close(fd);
	if (len && buf[len - 1] == '\n')
		len--;
	if (len && buf[len - 1] == '\r')
		len--;
	*out = arena_strndup(a, buf, len);
	return 0;
}

static bool path_segment_ok(const char *s)
{
	return s && *s && !strchr(s, '/') && strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
}

int secrets_password(void *ctx, const struct br_bgp_password *p, struct arena *a, const char **out,
		     struct strbuf *err)
{
	const struct secrets *s = ctx;
	if (p->env && *p->env) {
		const char *prefix = s && s->env_prefix ? s->env_prefix : "";
		if (!*prefix || strncmp(p->env, prefix, strlen(prefix)) != 0) {
			if (*prefix)
				sb_addf(err,
					"environment variable %s is not allowed: only names "
					"starting "
					"with %s (BRINDLE_PASSWORD_ENV_PREFIX)",
					p->env, prefix);
			else
				sb_addf(err,
					"environment variable %s is not allowed: passwords from "
					"the "
					"environment are off (BRINDLE_PASSWORD_ENV_PREFIX is "
					"empty)",
					p->env);
			return -EPERM;
		}
		const char *v = getenv(p->env);
		if (!v) {
			sb_addf(err, "environment variable %s is not set", p->env);
			return -ENOENT;
		}
		*out = arena_strdup(a, v);
		return 0;
	}
	if (p->file && *p->file)
		return read_secret(s, p->file, a, out, err);
	if (p->secret_key_ref) {
		const struct br_secret_key_ref *r = p->secret_key_ref;
		if (!path_segment_ok(r->name) || !path_segment_ok(r->key)) {
			sb_addf(err, "secret \"%s\" key \"%s\" cannot name a file",
				r->name ? r->name : "", r->key ? r->key : "");
			return -EINVAL;
		}
		return read_secret(s, arena_printf(a, "%s/%s", r->name, r->key), a, out, err);
	}
	sb_adds(err, "no password source");
	return -EINVAL;
}
