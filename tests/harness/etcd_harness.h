/*
 * A real etcd for tests: a child process with its data, sockets, TLS files
 * and log (etcd.log) in a fresh /tmp/brindle-test-XXXXXX directory. The child
 * dies with the test process (PR_SET_PDEATHSIG), and whatever a test leaves
 * running is killed and removed at exit.
 *
 * Default: clients on a unix socket, no TLS. @tcp: http://127.0.0.1 on a free
 * port; @tls (implies tcp): https with a CA, a server certificate for
 * 127.0.0.1/localhost and a client certificate generated with openssl, and
 * etcd requiring client certificates. Peers always use a unix socket. etcd
 * runs with a 100 ms election timeout (one member starts in ~0.1 s) and sends
 * watch progress notifications every 500 ms.
 */
#ifndef BRINDLE_TEST_ETCD_HARNESS_H
#define BRINDLE_TEST_ETCD_HARNESS_H

#include <stdbool.h>

struct etcd_proc;

struct etcd_proc_opts {
	bool tcp;
	bool tls;
};

/* Starts etcd and waits (at most 20 s) until it answers a range. @opts may be NULL. */
int etcd_proc_start(const struct etcd_proc_opts *opts, struct etcd_proc **out);
/* "unix:/tmp/brindle-test-XXXXXX/etcd.sock:0" or "http(s)://127.0.0.1:PORT". */
const char *etcd_proc_endpoint(const struct etcd_proc *p);
/* TLS files for clients (NULL without tls). */
const char *etcd_proc_ca(const struct etcd_proc *p);
const char *etcd_proc_cert(const struct etcd_proc *p);
const char *etcd_proc_key(const struct etcd_proc *p);
const char *etcd_proc_dir(const struct etcd_proc *p);
/* SIGTERM, up to 5 s for it to exit, then SIGKILL. No-op when not running. */
int etcd_proc_stop(struct etcd_proc *p);
/* Starts it again (stopping it first if needed): same data dir and endpoint. */
int etcd_proc_restart(struct etcd_proc *p);
/*
 * An etcd rebuilt from scratch: stopped, its data removed, started again on
 * the same endpoint, empty (revision 1). With @cluster_token (NULL: the
 * default) the new cluster gets another cluster ID.
 */
int etcd_proc_rebuild(struct etcd_proc *p, const char *cluster_token);
/* Stop and remove the temporary directory. Accepts NULL. */
void etcd_proc_destroy(struct etcd_proc *p);

#endif
