/*
 * The Kubernetes datastore's mapping: Kubernetes API objects, as the
 * apiserver returns them (parsed JSON, with managedFields, status and fields
 * Brindle ignores), to the resources felix, confd and brindlectl read from
 * etcd in etcd mode. Calico's conversion (libcalico-go's k8s/conversion), so
 * clusters, policies and tools carry over. Pure: no system calls.
 *
 * Every result is built as a Brindle document and decoded by the model
 * (model_decode_kind), so it is defaulted and validated exactly as the same
 * resource read from etcd would be: felix cannot tell the two apart.
 *
 * Errors: the functions return 0, or -EINVAL with lines appended to @errs
 * that name the object and the field, "Pod shop/web-0:
 * spec.containers[1].ports[0].containerPort: 70000 is out of range
 * (1-65535)"; the caller logs them once and skips the object (treats it as
 * absent). Warnings (@warns, same form) are values ignored while the object
 * still maps: a Node annotation that does not parse, a namespace label that
 * cannot be applied with its prefix. Out-parameters are written only on
 * success. Every object returned owns its arena: model_free() it.
 */
#ifndef BRINDLE_KDD_MAP_H
#define BRINDLE_KDD_MAP_H

#include <brindle/core/jv.h>
#include <brindle/core/model.h>
#include <brindle/core/net.h>
#include <brindle/core/strbuf.h>

#define KDD_NS_PROFILE_PREFIX "kns."  /* kns.<namespace> */
#define KDD_SA_PROFILE_PREFIX "ksa."  /* ksa.<namespace>.<serviceaccount> */
#define KDD_NS_LABEL_PREFIX   "pcns." /* a namespace's labels, as its pods' */
#define KDD_SA_LABEL_PREFIX   "pcsa." /* a service account's labels, as its pods' */

/* --- WorkloadEndpoint ← Pod -------------------------------------------------------------- */

/*
 * What a pod is to the network, and what felix does with it:
 *  - KDD_POD_SKIP: not an endpoint (spec.hostNetwork, or no spec.nodeName
 *    yet). No object; if an endpoint was known for the pod (by its namespace
 *    and name), felix removes it as if deleted.
 *  - KDD_POD_ACTIVE: an endpoint. Its ipNetworks may be empty while the CNI
 *    plugin has not given the pod an address yet; felix then keeps the
 *    interface's policy chains but has no route and no ip set member for it.
 *  - KDD_POD_FINISHED: an endpoint WITHOUT ipNetworks, whatever the pod's
 *    status still lists: the pod is Succeeded, Failed or Completed, or is
 *    being deleted and the CNI plugin has released its address (annotation
 *    cni.projectcalico.org/podIP set to ""). The address may already belong
 *    to another pod, so felix removes the routes and ip set members at once;
 *    the endpoint itself goes when the pod is deleted.
 * A pod's deletion (watch DELETED) deletes its endpoint.
 */
enum kdd_pod_state {
	KDD_POD_SKIP,
	KDD_POD_ACTIVE,
	KDD_POD_FINISHED,
};

/*
 * A core v1 Pod to its WorkloadEndpoint "<node>-k8s-<pod>-eth0" in the
 * pod's namespace: labels (the pod's, plus projectcalico.org/namespace,
 * /orchestrator=k8s and /serviceaccount), spec orchestrator, node, pod,
 * endpoint, containerID (annotation cni.projectcalico.org/containerID),
 * interfaceName (the CNI plugin's cni_host_veth_name), profiles
 * [kns.<ns>, ksa.<ns>.<sa>], ipNetworks (the first non-empty of the
 * annotations cni.projectcalico.org/podIPs and /podIP, status.podIPs,
 * status.podIP, as /32 and /128), ports (containers' and initContainers' ports
 * with a name or a hostPort), serviceAccountName; uid, resourceVersion
 * (and revision) and creationTimestamp are the pod's. *state always; *out
 * NULL for KDD_POD_SKIP.
 */
int kdd_pod_to_wep(const struct jv *pod, enum kdd_pod_state *state,
		   struct br_workloadendpoint **out, struct model_errors *errs) must_check;

/* A pod's endpoint name: node, "k8s", pod and "eth0", each '-' doubled, joined by '-'. */
char *kdd_wep_name(struct arena *a, const char *node, const char *pod);

/*
 * The reverse: the node and pod of endpoint name @wep (strings in @a), or
 * false when @wep is not such a name, spelt as kdd_wep_name spells it.
 */
bool kdd_wep_name_parse(struct arena *a, const char *wep, const char **node, const char **pod);

/* --- Profiles ← Namespace, ServiceAccount -------------------------------------------------- */

/*
 * A Namespace to Profile kns.<ns>: labelsToApply pcns.<key>=<value> for
 * each of its labels, pcns.projectcalico.org/name=<ns> (and
 * pcns.kubernetes.io/metadata.name=<ns> when the namespace lacks that
 * label, as felix's own namespace profile has), ingress and egress [Allow].
 * A label whose prefixed key is no longer a valid key is left out (a
 * warning). resourceVersion "<rv>/", as Calico's.
 */
int kdd_namespace_to_profile(const struct jv *ns, struct br_profile **out,
			     struct model_errors *errs, struct model_errors *warns) must_check;

/*
 * A ServiceAccount to Profile ksa.<ns>.<sa>: labelsToApply pcsa.<key>=<value>
 * and pcsa.projectcalico.org/name=<sa> (left out, with a warning, when the
 * name is not a valid label value: over 63 characters); no rules.
 * resourceVersion "/<rv>".
 */
int kdd_serviceaccount_to_profile(const struct jv *sa, struct br_profile **out,
				  struct model_errors *errs, struct model_errors *warns) must_check;

/* --- Node ↔ core v1 Node -----------------------------------------------------------------------
 */

/*
 * A core v1 Node to Brindle's (Calico's) Node of the same name: labels (the
 * Calico-only ones of annotation projectcalico.org/labels, overlaid by the
 * node's own); spec.bgp and the tunnel fields from the annotations
 * projectcalico.org/IPv4Address, IPv6Address, ASNumber,
 * RouteReflectorClusterID, IPv4IPIPTunnelAddr, IPv4VXLANTunnelAddr,
 * IPv6VXLANTunnelAddr, VXLANTunnelMACAddr, VXLANTunnelMACAddrV6,
 * IPv4WireguardInterfaceAddr, IPv6WireguardInterfaceAddr; status
 * wireguardPublicKey (annotation WireguardPublicKey) and podCIDRs
 * (spec.podCIDRs); addresses: the BGP addresses (type CalicoNodeIP), then
 * status.addresses of type InternalIP and ExternalIP; orchRefs
 * [{nodeName, orchestrator: k8s}]. An annotation whose value the model
 * refuses is ignored with a warning naming the node and the annotation.
 */
int kdd_node_to_calico(const struct jv *node, struct br_node **out, struct model_errors *errs,
		       struct model_errors *warns) must_check;

/*
 * The reverse, for a node agent: every annotation above that a Node's spec
 * sets, mapped to its value, and the others to null, so that a JSON merge
 * patch {"metadata":{"annotations": <this>}} sets and clears them at once.
 */
struct jv *kdd_node_annotations(struct arena *a, const struct br_node *n);

/*
 * A Kubernetes object of ours (a NetworkPolicy, a Service...) as the API
 * takes it: without the server's uid and creationTimestamp, and with
 * resourceVersion only for an update (@for_update: the object's, else its
 * revision), as the precondition of the replace. Allocated in @a.
 */
struct jv *kdd_native_encode(struct arena *a, const struct br_object *o, bool for_update);

/* --- what a pod asks of IPAM ----------------------------------------------------------------- */

/*
 * Calico's IPAM annotations, for the CNI plugin on the Kubernetes datastore:
 * fixed addresses from the pod's cni.projectcalico.org/ipAddrs (a JSON list
 * of IPv4 and IPv6 addresses; when set, the pools annotations do not apply),
 * else the pools to assign from, per family: the pod's
 * cni.projectcalico.org/ipv4pools (ipv6pools), else its namespace's (a JSON
 * list of pool names or CIDRs). @ns may be NULL. Strings live in @a.
 * -EINVAL when an annotation cannot be used, @err naming the object and
 * annotation; nothing set is not an error (n_pools and n_ips 0).
 */
#define KDD_POD_MAX_IPS 16
struct kdd_pod_ipam {
	const char **pools; /* ipv4pools */
	size_t n_pools;
	const char *pools_from; /* "pod <ns>/<name>" or "namespace <ns>": for messages */
	const char **pools6;	/* ipv6pools */
	size_t n_pools6;
	const char *pools6_from;
	struct br_ip ips[KDD_POD_MAX_IPS];
	size_t n_ips;
};
int kdd_pod_ipam(struct arena *a, const struct jv *pod, const struct jv *ns,
		 struct kdd_pod_ipam *out, struct strbuf *err) must_check;

/* --- Kubernetes kinds the model stores as they are ---------------------------------------------
 */

/*
 * A Kubernetes API object of kind @k (networking.k8s.io/v1 NetworkPolicy,
 * Namespace, Service, EndpointSlice; any kind the model knows) decoded as
 * the etcd path decodes it, after model_prune() drops what the model does
 * not know (managedFields, ownerReferences, status conditions, newer
 * fields). apiVersion and kind may be missing (items of a list response);
 * a different kind is an error. revision comes from resourceVersion.
 */
int kdd_decode(const struct br_kind *k, const struct jv *doc, struct br_object **out,
	       struct model_errors *errs) must_check;

#endif
