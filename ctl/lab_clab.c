/*
 * brindlectl lab export-clab NAME [--file TOPOLOGY] [-o FILE] [--image IMAGE]
 * [--mgmt-subnet CIDR]: the containerlab topology of a lab (lab/clab.c),
 * from the topology a lab that is up was built from, or from a topology
 * file without any lab running. Writes nothing but the output file.
 */
#include "lab.h"
#include "lab_clab.h"

#include "clab.h"
#include <brindle/sys/strbuf_file.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int usage(void)
{
	ctl_error("usage: brindlectl lab export-clab NAME [-o FILE] [--image IMAGE] "
		  "[--mgmt-subnet CIDR]\n"
		  "       brindlectl lab export-clab --file TOPOLOGY.yaml [-o FILE] ...");
	return CTL_USAGE;
}

enum {
	CLAB_FILE,
	CLAB_OUTPUT,
	CLAB_IMAGE,
	CLAB_MGMT_SUBNET
};
const struct ctl_flag lab_export_clab_flags[] = {
	[CLAB_FILE] = { "--file", "-f", "TOPOLOGY", "a topology file instead of a lab that is up" },
	[CLAB_OUTPUT] = { "--output", "-o", "FILE",
			  "where to write it (default: standard output)" },
	[CLAB_IMAGE] = { "--image", NULL, "IMAGE", "the nodes' container image" },
	[CLAB_MGMT_SUBNET] = { "--mgmt-subnet", NULL, "CIDR", "containerlab's management network" },
	{ 0 },
};

static int write_out(const char *path, const struct strbuf *text)
{
	if (!path || streq(path, "-")) {
		fputs(sb_str(text), stdout);
		return fflush(stdout) == 0 ? 0 : -EIO;
	}
	const char *tmp = NULL;
	struct strbuf name = STRBUF_INIT;
	sb_init(&name);
	sb_addf(&name, "%s.tmp.%d", path, (int)getpid());
	tmp = sb_str(&name);
	FILE *f = fopen(tmp, "we");
	int r = -errno;
	if (f) {
		r = fputs(sb_str(text), f) < 0 ? -EIO : 0;
		if (fclose(f) != 0 && r == 0)
			r = -EIO;
		if (r == 0 && rename(tmp, path) < 0)
			r = -errno;
		if (r < 0)
			unlink(tmp);
	}
	if (r < 0)
		ctl_error("%s: %s", path, strerror(-r));
	sb_free(&name);
	return r;
}

int lab_cmd_export_clab(struct ctl *c, int argc, char **argv)
{
	(void)c;
	struct ctl_parsed p;
	int r = ctl_parse("lab export-clab", lab_export_clab_flags, argc, argv, 1, &p);
	const char *name = p.n_pos ? p.pos[0] : NULL, *file = p.value[CLAB_FILE],
		   *output = p.value[CLAB_OUTPUT];
	struct lab_clab_options o = { .image = p.value[CLAB_IMAGE],
				      .mgmt_subnet = p.value[CLAB_MGMT_SUBNET] };
	size_t n_pos = p.n_pos;
	ctl_parsed_free(&p);
	if (r != CTL_OK)
		return r;
	if (n_pos > 1)
		return usage();
	if (!name && !file)
		return usage();
	if (name && !lab_name_valid(name)) {
		ctl_error("\"%s\" is not a lab name", name);
		return CTL_USAGE;
	}
	struct lab l;
	lab_init(&l, name ? name : "-");
	struct strbuf text = STRBUF_INIT, err = STRBUF_INIT, out = STRBUF_INIT;
	sb_init(&text);
	sb_init(&err);
	sb_init(&out);
	if (file) {
		if ((r = sb_read_file(&text, file)) < 0)
			ctl_error("%s: %s", file, strerror(-r));
		else if ((r = lab_topology_parse(l.a, file, text.buf, text.len, &l.topo, &err)) < 0)
			fprintf(stderr, "%s", sb_str(&err));
		else if (name && !streq(name, l.topo->name))
			/* the file's name wins; saying so avoids a surprise in clab's names */
			fprintf(stderr, "note: %s names its lab \"%s\"; exporting it as that\n",
				file, l.topo->name);
	} else {
		r = lab_load(&l);
	}
	if (r == 0 && (r = lab_clab_export(l.a, l.topo, &o, &out, &err)) < 0)
		ctl_error("lab %s: %s", l.topo->name, sb_str(&err));
	if (r == 0)
		r = write_out(output, &out);
	sb_free(&text);
	sb_free(&err);
	sb_free(&out);
	lab_free(&l);
	return r < 0 ? CTL_FAIL : CTL_OK;
}
