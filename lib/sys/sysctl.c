#include <brindle/core/hmap.h>
#include <brindle/core/strbuf.h>
#include <brindle/sys/sysctl.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

void sysctl_close(struct sysctl *s)
{
	if (s)
		s->ops->close(s);
}

int sysctl_read(struct sysctl *s, const char *path, char *buf, size_t size)
{
	return s->ops->read(s, path, buf, size);
}

/* Writes only when the value differs; *changed (optional) says whether it did. */
must_check static int sysctl_ensure(struct sysctl *s, const char *path, const char *value,
				    bool *changed)
{
	char cur[64];
	if (changed)
		*changed = false;
	if (sysctl_read(s, path, cur, sizeof(cur)) == 0 && strcmp(cur, value) == 0)
		return 0;
	int r = s->ops->write(s, path, value);
	if (r == 0 && changed)
		*changed = true;
	return r;
}

int sysctl_workload_iface(struct sysctl *s, const char *ifname, bool ipv6, int *changed)
{
	static const struct {
		const char *dir, *name, *value;
		bool optional; /* IPv6 may be disabled on the host */
		bool ipv6;     /* only for IPv6 workloads */
	} settings[] = {
		{ "net/ipv4/conf", "proxy_arp", "1", false, false },
		{ "net/ipv4/conf", "forwarding", "1", false, false },
		{ "net/ipv4/conf", "route_localnet", "1", false, false },
		{ "net/ipv4/neigh", "proxy_delay", "0", false, false },
		{ "net/ipv6/conf", "accept_ra", "0", true, false },
		{ "net/ipv6/conf", "forwarding", "1", true, true },
		{ "net/ipv6/conf", "proxy_ndp", "1", true, true },
	};
	int first = 0;
	*changed = 0;
	for (size_t i = 0; i < ARRAY_SIZE(settings); i++) {
		if (settings[i].ipv6 && !ipv6)
			continue;
		char path[128];
		bool ch;
		snprintf(path, sizeof(path), "%s/%s/%s", settings[i].dir, ifname, settings[i].name);
		int r = sysctl_ensure(s, path, settings[i].value, &ch);
		if (r == -ENOENT && settings[i].optional)
			continue;
		if (r < 0 && !first)
			first = r;
		*changed += ch;
	}
	return first;
}

int sysctl_forwarding(struct sysctl *s, bool ipv6, int *changed)
{
	bool ch = false;
	*changed = 0;
	int r = sysctl_ensure(s, "net/ipv4/ip_forward", "1", &ch);
	*changed += ch;
	if (ipv6) {
		int r6 = sysctl_ensure(s, "net/ipv6/conf/all/forwarding", "1", &ch);
		*changed += ch;
		if (r6 < 0 && !r)
			r = r6;
	}
	return r;
}

/* --- kernel ---------------------------------------------------------------------- */

static int k_read(struct sysctl *s, const char *path, char *buf, size_t size)
{
	char full[256];
	snprintf(full, sizeof(full), "/proc/sys/%s", path);
	int fd = open(full, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, size - 1);
	int e = errno;
	close(fd);
	if (n < 0)
		return -e;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		n--;
	buf[n] = '\0';
	return 0;
}

static int k_write(struct sysctl *s, const char *path, const char *value)
{
	char full[256];
	snprintf(full, sizeof(full), "/proc/sys/%s", path);
	int fd = open(full, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t len = strlen(value);
	ssize_t n = write(fd, value, len);
	int e = errno;
	close(fd);
	return n == (ssize_t)len ? 0 : -(n < 0 ? e : EIO);
}

static void k_close(struct sysctl *s)
{
	free(s);
}

static const struct sysctl_ops kernel_ops = { k_read, k_write, k_close };

struct sysctl *sysctl_open_kernel(void)
{
	struct sysctl *s = xcalloc(1, sizeof(*s));
	s->ops = &kernel_ops;
	return s;
}
