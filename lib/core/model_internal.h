/*
 * Field tables that drive decoding, defaulting, validation and encoding of
 * the resource model. Private to lib/model_*.c.
 */
#ifndef BRINDLE_MODEL_INTERNAL_H
#define BRINDLE_MODEL_INTERNAL_H

#include <brindle/core/model.h>

enum mf_type {
	MF_STRING,    /* const char * */
	MF_BOOL,      /* bool (absent = false) */
	MF_OPT_BOOL,  /* struct opt_bool */
	MF_INT,	      /* int64_t (absent = 0) */
	MF_OPT_INT,   /* struct opt_int */
	MF_OPT_FLOAT, /* struct opt_float */
	MF_STRLIST,   /* const char **, size_t at count_off */
	MF_MAP,	      /* struct br_labels (string → string) */
	MF_STRUCT,    /* embedded struct */
	MF_PTR,	      /* pointer to struct, NULL when absent */
	MF_LIST,      /* array of structs, size_t at count_off */
	MF_CUSTOM,    /* codec */
};

enum {
	MF_REQUIRED = 1 << 0,	/* error when absent/empty */
	MF_EMIT_EMPTY = 1 << 1, /* encode even when empty (Kubernetes' non-omitempty fields) */
	MF_NOCASE = 1 << 2,	/* enum matched without case, stored in canonical case */
	/*
	 * A bool the custom resource stores as a string ("true"/"false"), as
	 * Calico's CRD has it (BlockAffinity's deleted); etcd and v3 keep a bool.
	 */
	MF_CRD_STRING = 1 << 3,
};

struct model_ctx;

struct model_codec {
	/* Decode @v into @field; report errors with model_err and return false. */
	bool (*decode)(struct model_ctx *c, const struct jv *v, void *field);
	/* Encode; NULL means "omit". */
	struct jv *(*encode)(struct arena *a, const void *field);
	/* The OpenAPI v3 schema of what encode writes (structural: typed, or int-or-string). */
	struct jv *(*schema)(struct arena *a);
};

struct model_field {
	const char *name;
	enum mf_type type;
	size_t off;
	size_t count_off;   /* MF_STRLIST, MF_LIST */
	size_t present_off; /* lists: a bool set when the key was given (0 = none) */
	const struct model_struct *sub;
	const struct model_codec *codec;
	const char *const *enum_values; /* MF_STRING: allowed values, NULL-terminated */
	int64_t min, max;		/* MF_INT, MF_OPT_INT: range when min < max */
	unsigned flags;
	/* Value check, called with the path at this field when it is present. */
	void (*check)(struct model_ctx *c, const void *field);
	/* Per-element check for MF_STRLIST, with the path at the element. */
	void (*check_item)(struct model_ctx *c, const char *item);
};

struct model_struct {
	const char *name;
	size_t size;
	const struct model_field *fields;
	size_t n_fields;
	void (*defaults)(struct model_ctx *c, void *obj);
	void (*check)(struct model_ctx *c, const void *obj);
};

struct model_ctx {
	struct arena *a;
	struct strbuf path;
	struct model_errors *errs;
	const struct br_object *obj; /* the resource being processed */
	const char *default_ns;	     /* for namespaced resources that name none */
	size_t n_errs_before;
	/* Paths that failed to decode in this resource. Once @checking, errors at or under
	 * them are not reported again: a field is reported once, and every field is. */
	char **failed;
	size_t n_failed;
	bool checking;
	bool stored; /* decoding what a datastore holds (model_decode_kind), not a user's file */
};

/* Errors and paths (model_ctx.c). */
void model_err(struct model_ctx *c, const char *fmt, ...) printf_like(2, 3);
/* Error at "<current path>.<field>". */
void model_err_at(struct model_ctx *c, const char *field, const char *fmt, ...) printf_like(3, 4);
size_t model_push(struct model_ctx *c, const char *field);
size_t model_push_index(struct model_ctx *c, size_t i);
void model_pop(struct model_ctx *c, size_t mark);
/* @path (full, "spec.x[0].y") is at or under a path that failed to decode. */
bool model_path_failed(const struct model_ctx *c, const char *path);
/* Forget the failed paths (model_ctx.failed) and leave the checking phase. */
void model_failed_clear(struct model_ctx *c);
/* An arena array of the @n strings that follow. */
const char **model_strlist(struct arena *a, size_t n, ...);

/* Field-table builders. */
#define MF(nm, t, st, fld, ...)                                              \
	{                                                                    \
		.name = nm, .type = t, .off = offsetof(st, fld), __VA_ARGS__ \
	}
#define MF_L(nm, t, st, fld, cnt, ...)                                                           \
	{                                                                                        \
		.name = nm, .type = t, .off = offsetof(st, fld), .count_off = offsetof(st, cnt), \
		__VA_ARGS__                                                                      \
	}
#define MODEL_STRUCT(var, st, fieldsarr, ...)                                \
	const struct model_struct var = { .name = #st,                       \
					  .size = sizeof(st),                \
					  .fields = fieldsarr,               \
					  .n_fields = ARRAY_SIZE(fieldsarr), \
					  __VA_ARGS__ }

#define MODEL_STAGED_ACTIONS ((const char *const[]){ "Set", "Delete", "Learn", "Ignore", NULL })

/* Shared codecs and checks (model_validate.c). */
extern const struct model_codec model_codec_int_or_string;
extern const struct model_codec model_codec_protocol;
extern const struct model_codec model_codec_port_list;
extern const struct model_codec model_codec_asn;
extern const struct model_codec model_codec_duration;
extern const struct model_codec model_codec_int_list;
extern const struct model_codec model_codec_str_int_map;

void model_check_cidr(struct model_ctx *c, const void *field); /* CIDR, host bits allowed */
void model_check_cidr_item(struct model_ctx *c, const char *s);
void model_check_net_item(struct model_ctx *c, const char *s); /* CIDR or bare IP */
void model_check_ip(struct model_ctx *c, const void *field);
void model_check_ip_item(struct model_ctx *c, const char *s);
void model_check_ipv4(struct model_ctx *c, const void *field);
void model_check_ipv4_cidr(struct model_ctx *c,
			   const void *field); /* ipv4Address: IP with prefix */
void model_check_ipv6_cidr(struct model_ctx *c, const void *field);
void model_check_mac(struct model_ctx *c, const void *field);
void model_check_selector(struct model_ctx *c, const void *field);
void model_check_label_map(struct model_ctx *c, const void *field);
void model_check_annotation_map(struct model_ctx *c, const void *field);
void model_check_label_key_item(struct model_ctx *c, const char *s);
void model_check_label_value_item(struct model_ctx *c, const char *s);
void model_check_dns_label(struct model_ctx *c, const void *field);
void model_check_dns_subdomain(struct model_ctx *c, const void *field);
void model_check_dns_subdomain_item(struct model_ctx *c, const char *s);
void model_check_port_name(struct model_ctx *c, const void *field);
void model_check_iface_name(struct model_ctx *c, const void *field);
void model_check_wep_iface(struct model_ctx *c, const void *field);
void model_check_wep_net_item(struct model_ctx *c, const char *s);
void model_check_peer_ip(struct model_ctx *c, const void *field);
void model_check_nonempty_item(struct model_ctx *c, const char *s);
/* Duplicates in a list of enum values: "Ingress" twice. */
void model_check_no_dups(struct model_ctx *c, const char *field, const char *const *v, size_t n);
void model_check_policy_type_item(struct model_ctx *c, const char *s); /* Ingress or Egress */
/* metadata.name by the rules of the object's kind. */
void model_check_name(struct model_ctx *c, const struct br_object *o);

bool model_valid_port_name(const char *s, const char **why);

/* The kind table (model_kinds.c), indexed by enum br_kind_id. */
extern const struct br_kind model_kinds[KIND_COUNT];

/* The Kubernetes kinds' tables and kind-level functions (model_kinds_k8s.c). */
extern const struct model_struct model_k8s_np_desc, model_staged_k8s_np_desc;
extern const struct model_struct model_ns_spec_desc, model_ns_status_desc;
extern const struct model_struct model_service_desc, model_service_status_desc;
extern const struct model_struct model_endpointslice_desc;
void model_default_namespace(struct model_ctx *c, struct br_object *o);

/* The rest of Calico's v3 kinds (model_kinds_calico.c). */
extern const struct model_struct model_tier_desc, model_ipreservation_desc, model_bgpfilter_desc;
extern const struct model_struct model_kcc_desc, model_kcc_status_desc;
extern const struct model_struct model_cns_desc, model_cns_status_desc;
extern const struct model_struct model_clusterinfo_desc;
void model_default_tier(struct model_ctx *c, struct br_object *o);
void model_check_tier(struct model_ctx *c, const struct br_object *o);
void model_check_service_name(struct model_ctx *c, const struct br_object *o);

#endif
