/*
 * The files a process of a lab node sees (lab.h, struct lab_view): the
 * machine's root with some directories the node's own, built in a mount
 * namespace of the process's own and entered with chroot, as a container
 * runtime builds a container's root. What a kubelet gives the containers of
 * the DaemonSet (lab_kubelet.c) and a runtime's CNI plugin on its host.
 *
 * Nothing is mounted or created on the machine: the mounts live in the new
 * mount namespace (private: nothing propagates back), and a directory is only
 * ever created inside a tmpfs of that namespace or inside the lab's state
 * directory. Where a mount point is missing inside one of the machine's
 * directories (/etc/cni in the machine's /etc), that directory is "unfolded":
 * a tmpfs over it holding each of its entries bound from the machine, so the
 * new directory is made in the tmpfs.
 *
 * The layout is planned in the parent (lab_view_plan: it may allocate and read
 * directories) into a list of mount operations; the child after fork only
 * replays them (view_apply: system calls on prepared strings, no allocation).
 */
#include "lab.h"

#include <brindle/core/util.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

enum view_op_kind {
	OP_TMPFS,   /* a tmpfs at dst */
	OP_MKDIR,   /* a directory at dst */
	OP_MKFILE,  /* an empty file at dst (a mount point for a file) */
	OP_SYMLINK, /* dst -> src */
	OP_BIND,    /* src bound at dst, with its submounts */
	OP_RO,	    /* the bind at dst made read-only */
	OP_SYSFS,   /* a sysfs of the process's network namespace at dst */
	OP_UMOUNT,  /* whatever is mounted at dst detached (errors ignored) */
};

struct lab_view_op {
	enum view_op_kind kind;
	const char *src, *dst; /* dst: a path of the machine (under the root) */
};

/* What covers a path of the view: the deepest mount wins, the later of equals. */
struct view_mount {
	const char *at;	 /* path in the view, "/" for the root */
	const char *src; /* the machine's directory or file shown there; NULL for a tmpfs */
	bool lab;	 /* src is the lab's own: paths may be created in it */
};

enum what {
	NONE,
	DIRECTORY,
	FILE_,
	LINK
};

struct view_made {
	const char *path;
	enum what what;
	const char *link; /* a symlink's target */
};

struct view_plan {
	struct arena *a;
	const char *root;
	struct lab_view_op *ops;
	size_t n_ops, cap_ops;
	struct view_mount *mounts;
	size_t n_mounts, cap_mounts;
	/* what was made in the tmpfs mounts */
	struct view_made *made;
	size_t n_made, cap_made;
	struct strbuf *err;
};

#define ARENA_GROW(p, field, cap)                                                            \
	do {                                                                                 \
		if ((p)->n_##field == (p)->cap) {                                            \
			size_t nc = (p)->cap ? 2 * (p)->cap : 32;                            \
			void *n = arena_alloc((p)->a, nc * sizeof(*(p)->field));             \
			if ((p)->n_##field)                                                  \
				memcpy(n, (p)->field, (p)->n_##field * sizeof(*(p)->field)); \
			(p)->field = n;                                                      \
			(p)->cap = nc;                                                       \
		}                                                                            \
	} while (0)

static void op(struct view_plan *p, enum view_op_kind kind, const char *src, const char *view_path)
{
	ARENA_GROW(p, ops, cap_ops);
	p->ops[p->n_ops++] = (struct lab_view_op){
		.kind = kind,
		.src = src,
		.dst = arena_printf(p->a, "%s%s", p->root, streq(view_path, "/") ? "" : view_path),
	};
}

static void add_mount(struct view_plan *p, const char *at, const char *src, bool lab)
{
	ARENA_GROW(p, mounts, cap_mounts);
	p->mounts[p->n_mounts++] = (struct view_mount){ arena_strdup(p->a, at), src, lab };
}

static void made(struct view_plan *p, const char *path, enum what what, const char *link)
{
	ARENA_GROW(p, made, cap_made);
	p->made[p->n_made++] = (struct view_made){ arena_strdup(p->a, path), what,
						   link ? arena_strdup(p->a, link) : NULL };
}

static bool under(const char *path, const char *dir)
{
	if (streq(dir, "/"))
		return true;
	size_t n = strlen(dir);
	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* The mount that shows @path. */
static const struct view_mount *covering(const struct view_plan *p, const char *path)
{
	const struct view_mount *best = NULL;
	for (size_t i = 0; i < p->n_mounts; i++)
		if (under(path, p->mounts[i].at) &&
		    (!best || strlen(p->mounts[i].at) >= strlen(best->at)))
			best = &p->mounts[i];
	return best;
}

/* What @path of the view is; *link: a symlink's target. */
static enum what lookup(struct view_plan *p, const char *path, const char **link)
{
	const struct view_mount *m = covering(p, path);
	if (!m)
		return NONE;
	if (!m->src) {
		if (streq(path, m->at))
			return DIRECTORY;
		for (size_t i = p->n_made; i-- > 0;)
			if (streq(p->made[i].path, path)) {
				*link = p->made[i].link;
				return p->made[i].what;
			}
		return NONE;
	}
	const char *src = arena_printf(p->a, "%s%s", m->src, path + strlen(m->at));
	struct stat st;
	if (lstat(src, &st) < 0)
		return NONE;
	if (S_ISLNK(st.st_mode)) {
		char buf[PATH_MAX];
		ssize_t n = readlink(src, buf, sizeof(buf) - 1);
		if (n <= 0)
			return NONE;
		*link = arena_strndup(p->a, buf, (size_t)n);
		return LINK;
	}
	return S_ISDIR(st.st_mode) ? DIRECTORY : FILE_;
}

/*
 * @path with every symlink inside the view followed (absolute targets from the
 * view's root), "." and ".." folded; NULL when links loop.
 */
static const char *resolve(struct view_plan *p, const char *path)
{
	const char *cur = "", *rest = path; /* resolved so far; still to walk */
	for (int hops = 0; hops < 32;) {
		while (*rest == '/')
			rest++;
		if (!*rest)
			return cur[0] ? cur : "/";
		size_t n = strcspn(rest, "/");
		const char *comp = arena_strndup(p->a, rest, n);
		rest += n;
		if (streq(comp, "."))
			continue;
		if (streq(comp, "..")) {
			const char *slash = strrchr(cur, '/');
			cur = slash ? arena_strndup(p->a, cur, (size_t)(slash - cur)) : "";
			continue;
		}
		const char *parent = cur;
		cur = arena_printf(p->a, "%s/%s", parent, comp);
		const char *link = NULL;
		if (lookup(p, cur, &link) != LINK)
			continue;
		/* the link's target in place of the link: from the root when absolute */
		hops++;
		rest = arena_printf(p->a, "%s/%s", link, rest);
		cur = link[0] == '/' ? "" : parent;
	}
	return NULL;
}

/*
 * A tmpfs over @dir (a machine's directory shown by a bind) holding each of
 * its entries bound from the machine, so entries can be added to it.
 */
static int unfold(struct view_plan *p, const char *dir, const char *src)
{
	DIR *d = opendir(src);
	if (!d) {
		sb_addf(p->err, "%s: %s", src, strerror(errno));
		return -errno;
	}
	op(p, OP_TMPFS, NULL, dir);
	add_mount(p, dir, NULL, false);
	struct dirent *e;
	while ((e = readdir(d))) {
		if (streq(e->d_name, ".") || streq(e->d_name, ".."))
			continue;
		const char *at = arena_printf(p->a, "%s/%s", streq(dir, "/") ? "" : dir, e->d_name);
		const char *from =
			arena_printf(p->a, "%s/%s", streq(src, "/") ? "" : src, e->d_name);
		struct stat st;
		if (lstat(from, &st) < 0)
			continue;
		if (S_ISLNK(st.st_mode)) {
			char buf[PATH_MAX];
			ssize_t n = readlink(from, buf, sizeof(buf) - 1);
			if (n <= 0)
				continue;
			const char *target = arena_strndup(p->a, buf, (size_t)n);
			op(p, OP_SYMLINK, target, at);
			made(p, at, LINK, target);
			continue;
		}
		if (streq(at, "/sys")) {
			/* the node's own: a sysfs mounted in its network namespace */
			op(p, OP_MKDIR, NULL, at);
			op(p, OP_SYSFS, NULL, at);
			made(p, at, DIRECTORY, NULL);
			add_mount(p, at, "/sys", false);
			continue;
		}
		bool dir_ = S_ISDIR(st.st_mode);
		op(p, dir_ ? OP_MKDIR : OP_MKFILE, NULL, at);
		made(p, at, dir_ ? DIRECTORY : FILE_, NULL);
		op(p, OP_BIND, from, at);
		add_mount(p, at, from, false);
	}
	closedir(d);
	return 0;
}

/* Every directory of @path (resolved) present in the view, the last one too unless @file. */
static int ensure(struct view_plan *p, const char *path, bool file)
{
	const char *cur = "", *s = path;
	while (*s) {
		while (*s == '/')
			s++;
		size_t n = strcspn(s, "/");
		if (!n)
			break;
		const char *parent = cur[0] ? cur : "/";
		cur = arena_printf(p->a, "%s/%.*s", cur, (int)n, s);
		s += n;
		bool last = !*s || !s[strspn(s, "/")];
		const char *link = NULL;
		enum what w = lookup(p, cur, &link);
		if (w == DIRECTORY || (last && file && w == FILE_))
			continue;
		if (w != NONE) {
			sb_addf(p->err, "%s is in the way of %s", cur, path);
			return -EEXIST;
		}
		const struct view_mount *m = covering(p, parent);
		if (m && m->src && m->lab) {
			/* the lab's own directory: made there */
			const char *real = arena_printf(p->a, "%s%s", m->src, cur + strlen(m->at));
			int fd =
				last && file ? open(real, O_CREAT | O_WRONLY | O_CLOEXEC, 0644) : 0;
			if (fd > 0)
				close(fd);
			if (fd < 0 || (!(last && file) && mkdir(real, 0755) < 0)) {
				sb_addf(p->err, "%s: %s", real, strerror(errno));
				return -errno;
			}
			continue;
		}
		if (m && m->src) {
			int r = unfold(p, parent,
				       arena_printf(p->a, "%s%s", m->src, parent + strlen(m->at)));
			if (r < 0)
				return r;
		}
		op(p, last && file ? OP_MKFILE : OP_MKDIR, NULL, cur);
		made(p, cur, last && file ? FILE_ : DIRECTORY, NULL);
	}
	return 0;
}

const struct lab_view_plan *lab_view_plan(struct arena *a, const struct lab_view *v,
					  struct strbuf *err)
{
	struct view_plan p = { .a = a, .root = v->root, .err = err };
	/* the machine's root, unfolded: every entry bound, /sys the namespace's own */
	add_mount(&p, "/", "/", false);
	int r = unfold(&p, "/", "/");
	/* the root's own directory, caught in the bind of its parent, is hidden */
	if (r == 0)
		op(&p, OP_UMOUNT, NULL, v->root);
	for (size_t i = 0; i < v->n_mounts && r == 0; i++) {
		const struct lab_view_mount *m = &v->mounts[i];
		const char *at = resolve(&p, m->at);
		if (!at) {
			sb_addf(err, "%s: symbolic links loop", m->at);
			r = -ELOOP;
			break;
		}
		if (m->link) {
			/* a link goes in a directory of the view's own making */
			const char *slash = strrchr(at, '/');
			const char *dir =
				slash == at ? "/" : arena_strndup(a, at, (size_t)(slash - at));
			if ((r = ensure(&p, dir, false)) < 0)
				break;
			const struct view_mount *in = covering(&p, at);
			if (!in || in->src) {
				sb_addf(err, "%s: a link can only be made in a tmpfs of the view",
					m->at);
				r = -EINVAL;
				break;
			}
			op(&p, OP_SYMLINK, m->link, at);
			made(&p, at, LINK, m->link);
			continue;
		}
		struct stat st;
		if (m->src && stat(m->src, &st) < 0) {
			sb_addf(err, "%s: %s", m->src, strerror(errno));
			r = -errno;
			break;
		}
		if ((r = ensure(&p, at, m->src && !S_ISDIR(st.st_mode))) < 0)
			break;
		if (!m->src) {
			op(&p, OP_TMPFS, NULL, at);
			add_mount(&p, at, NULL, false);
			continue;
		}
		op(&p, OP_BIND, m->src, at);
		if (m->read_only)
			op(&p, OP_RO, NULL, at);
		add_mount(&p, at, m->src, m->lab_owned);
	}
	if (r < 0)
		return NULL;
	struct lab_view_plan *out = arena_alloc(a, sizeof(*out));
	out->root = v->root;
	out->ops = p.ops;
	out->n = p.n_ops;
	return out;
}

/* In the child, after fork and setns: no allocation here. */
int lab_view_apply(const struct lab_view_plan *plan)
{
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("tmpfs", plan->root, "tmpfs", 0, "mode=0755") < 0) {
		fprintf(stderr, "a mount namespace for %s: %s\n", plan->root, strerror(errno));
		return -1;
	}
	const struct lab_view_op *ops = plan->ops;
	for (size_t i = 0; i < plan->n; i++) {
		const struct lab_view_op *o = &ops[i];
		int r = 0;
		switch (o->kind) {
		case OP_TMPFS:
			/* the root's own tmpfs is the one mounted above */
			if (!streq(o->dst, plan->root))
				r = mount("tmpfs", o->dst, "tmpfs", 0, "mode=0755");
			break;
		case OP_MKDIR:
			r = mkdir(o->dst, 0755) < 0 && errno != EEXIST ? -1 : 0;
			break;
		case OP_MKFILE:
			r = open(o->dst, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
			r = r < 0 ? -1 : close(r);
			break;
		case OP_SYMLINK:
			r = symlink(o->src, o->dst);
			break;
		case OP_BIND:
			r = mount(o->src, o->dst, NULL, MS_BIND | MS_REC, NULL);
			break;
		case OP_RO:
			r = mount(NULL, o->dst, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL);
			break;
		case OP_SYSFS:
			/* as `ip netns exec` does; the machine's when sysfs cannot be mounted */
			if (mount("sysfs", o->dst, "sysfs", 0, NULL) < 0)
				r = mount("/sys", o->dst, NULL, MS_BIND | MS_REC, NULL);
			break;
		case OP_UMOUNT:
			(void)umount2(o->dst, MNT_DETACH);
			break;
		}
		if (r < 0) {
			fprintf(stderr, "building the view under %s: op %d on %s: %s\n", plan->root,
				(int)o->kind, o->dst, strerror(errno));
			return -1;
		}
	}
	if (chroot(plan->root) < 0 || chdir("/") < 0) {
		fprintf(stderr, "chroot %s: %s\n", plan->root, strerror(errno));
		return -1;
	}
	return 0;
}
