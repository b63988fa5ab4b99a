/*
 * brindle-node COMMAND: the node's own tasks around the daemons.
 *   startup   once before felix, confd and BIRD start (startup.c)
 *   install-cni [--watch]
 *             the DaemonSet's init container: the CNI plugins, their
 *             kubeconfig and the network configuration onto the host
 *             (install_cni.c); --watch keeps the plugin's token fresh
 *   cleanup   after felix has stopped for good: Brindle's routes, devices,
 *             iptables rules and ip sets removed from the node (cleanup.c)
 *   version
 * Environment as calico-node's (docs/install.md); the datastore as every
 * Brindle program's (BRINDLE_DATASTORE_TYPE, BRINDLE_ETCD_ENDPOINTS,
 * KUBECONFIG, ...). BRINDLE_LOG_LEVEL sets the log level (default info).
 */
#include "node.h"

#include <brindle/sys/log.h>
#include <brindle/version.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "";
	if (streq(cmd, "version") || streq(cmd, "--version")) {
		printf("brindle-node %s\n", BRINDLE_VERSION);
		return 0;
	}
	bool watch = argc == 3 && streq(cmd, "install-cni") && streq(argv[2], "--watch");
	if ((!streq(cmd, "startup") && !streq(cmd, "cleanup") && !streq(cmd, "install-cni")) ||
	    (argc > 2 && !watch)) {
		fprintf(stderr, "usage: brindle-node startup | install-cni [--watch] | cleanup | "
				"version\n");
		return 2;
	}
	int level = log_parse_level(node_env_or("BRINDLE_LOG_LEVEL", "info"));
	log_init("node", level < 0 ? LOG_INFO : (enum log_level)level, LOG_TEXT, 2);
	if (streq(cmd, "cleanup"))
		return node_cleanup() < 0 ? 1 : 0;
	if (streq(cmd, "install-cni"))
		return node_install_cni(watch) < 0 ? 1 : 0;
	struct node_env e = {
		.nodename_file = node_env_or("BRINDLE_NODENAME_FILE", "/var/lib/brindle/nodename"),
		.mtu_file = node_env_or("BRINDLE_MTU_FILE", "/var/lib/brindle/mtu"),
	};
	return node_startup(&e) < 0 ? 1 : 0;
}
