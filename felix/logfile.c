/*
 * The event log's file (see logfile.h): appends whole lines, rate-limited,
 * to a file opened so that nothing in its directory can redirect it.
 */
#include "logfile.h"

#include <brindle/sys/log.h>
#include <brindle/core/util.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct logfile {
	char *dir, *name;
	int fd;
	struct ratelimit rl;
	uint64_t written, dropped;
	bool complained;
};

struct logfile *logfile_open(const char *dir, const char *name, unsigned per_second, unsigned burst)
{
	struct logfile *l = xcalloc(1, sizeof(*l));
	l->dir = xstrdup(dir);
	l->name = xstrdup(name);
	l->fd = -1;
	l->rl = (struct ratelimit)RATELIMIT_INIT(per_second ? 1000 / per_second : 10, burst);
	return l;
}

void logfile_free(struct logfile *l)
{
	if (!l)
		return;
	if (l->fd >= 0)
		close(l->fd);
	free(l->dir);
	free(l->name);
	free(l);
}

/*
 * The file, opened so that nothing in the directory can redirect it: the
 * name is one component (config.c sees to that), a symbolic link there is
 * refused (O_NOFOLLOW), so is anything but a regular file (a FIFO would
 * block: O_NONBLOCK, then fstat), and a new file is 0640. The directory is
 * made (0750) when missing, as a DaemonSet's hostPath may not have it.
 */
static int open_log(struct logfile *l)
{
	if (l->fd >= 0)
		return 0;
	if (streq(l->name, "-")) {
		l->fd = dup(1);
		return l->fd < 0 ? -errno : 0;
	}
	if (mkdir(l->dir, 0750) < 0 && errno != EEXIST)
		return -errno;
	int dfd = open(l->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	int fd = openat(dfd, l->name,
			O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC |
				O_NOCTTY,
			0640);
	int e = errno;
	close(dfd);
	if (fd < 0) /* ELOOP: the name is a symbolic link; ENXIO: a FIFO without a reader */
		return e == ELOOP ? -EMLINK : e == ENXIO ? -EINVAL : -e;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	l->fd = fd;
	return 0;
}

static const char *open_error(int r)
{
	switch (r) {
	case -EMLINK:
		return "it is a symbolic link; felix writes only a regular file it can name";
	case -EINVAL:
		return "it is not a regular file";
	default:
		return strerror(-r);
	}
}

bool logfile_write(struct logfile *l, const char *line)
{
	if (!ratelimit_ok(&l->rl)) {
		l->dropped++;
		return false;
	}
	int r = open_log(l);
	if (r < 0) {
		if (!l->complained)
			log_error("event log %s/%s: %s", l->dir, l->name, open_error(r));
		l->complained = true;
		l->dropped++;
		return false;
	}
	size_t n = strlen(line);
	char *buf = xmalloc(n + 1);
	memcpy(buf, line, n);
	buf[n] = '\n';
	ssize_t w = write(l->fd, buf, n + 1); /* one write: lines never interleave */
	free(buf);
	if (w != (ssize_t)(n + 1)) {
		if (!l->complained)
			log_error("event log %s/%s: %s", l->dir, l->name,
				  w < 0 ? strerror(errno) : "short write");
		l->complained = true;
		close(l->fd);
		l->fd = -1;
		l->dropped++;
		return false;
	}
	l->complained = false;
	l->written++;
	return true;
}

uint64_t logfile_written(const struct logfile *l)
{
	return l->written;
}

uint64_t logfile_dropped(const struct logfile *l)
{
	return l->dropped;
}
