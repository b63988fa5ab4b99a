/* What node/'s commands share: the environment and atomic file writes (node.h). */
#include "node.h"

#include <brindle/sys/log.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *node_env_or(const char *name, const char *def)
{
	const char *v = getenv(name);
	return v && *v ? v : def;
}

/* The directories of @path made (0755) where missing: a node without /var/lib/brindle yet. */
static void make_parents(const char *path)
{
	char *p = strdup(path);
	for (char *s = p && *p ? strchr(p + 1, '/') : NULL; s; s = strchr(s + 1, '/')) {
		*s = '\0';
		(void)mkdir(p, 0755);
		*s = '/';
	}
	free(p);
}

int node_write_file(const char *path, const void *data, size_t len, mode_t mode)
{
	struct strbuf tmp = STRBUF_INIT;
	sb_init(&tmp);
	sb_addf(&tmp, "%s.tmp", path);
	int fd = open(sb_str(&tmp), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd < 0 && errno == ENOENT) {
		make_parents(path);
		fd = open(sb_str(&tmp), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	}
	int r = 0;
	if (fd < 0 || write(fd, data, len) != (ssize_t)len || fchmod(fd, mode) < 0 || fsync(fd) < 0)
		r = -errno;
	if (fd >= 0 && close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(sb_str(&tmp), path) < 0)
		r = -errno;
	if (r < 0) {
		log_error("writing %s: %s", path, strerror(-r));
		unlink(sb_str(&tmp));
	}
	sb_free(&tmp);
	return r;
}
