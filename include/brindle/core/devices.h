/*
 * The tunnel devices felix owns on a node, by Calico's names: felix makes
 * them, cleanup removes them, and nothing else may claim them (a workload's
 * interface, an autodetected address).
 */
#ifndef BRINDLE_CORE_DEVICES_H
#define BRINDLE_CORE_DEVICES_H

#define VXLAN_DEV  "vxlan.calico"    /* IPv4 in VXLAN over IPv4 */
#define VXLAN6_DEV "vxlan-v6.calico" /* IPv6 in VXLAN over IPv6 */
#define IPIP_DEV   "tunl0"	     /* the kernel's IPIP fallback device */

#endif
