/* Descriptive tables of the device interface, generated from the .def files: field layouts,
 * command list, status names. Used for error messages and for docs/regmap.md. */
#include "model/hw/hca_hw.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define HW_STRUCT(name, doc) static const struct hca_field_desc fields_##name[] = {
#define HW_FIELD(name, type, field, doc)                                                           \
	{ #field, #type, offsetof(struct name, field), sizeof(((struct name *)0)->field), doc },
#define HW_ARRAY(name, type, field, n, doc)                                                        \
	{ #field, #type "[" #n "]", offsetof(struct name, field),                                  \
	  sizeof(((struct name *)0)->field), doc },
#define HW_END(name, size)                                                                         \
	{ NULL, NULL, 0, 0, NULL }                                                                 \
	}                                                                                          \
	;
#include "model/hw/formats.def"
#undef HW_STRUCT
#undef HW_FIELD
#undef HW_ARRAY
#undef HW_END

#define HW_STRUCT(name, doc) { #name, doc, sizeof(struct name), fields_##name },
#define HW_FIELD(name, type, field, doc)
#define HW_ARRAY(name, type, field, n, doc)
#define HW_END(name, size)
const struct hca_struct_desc hca_structs[] = {
#include "model/hw/formats.def"
	{ NULL, NULL, 0, NULL },
};
#undef HW_STRUCT
#undef HW_FIELD
#undef HW_ARRAY
#undef HW_END

const struct hca_cmd_desc hca_cmds[] = {
#define CMD(name, op, in, out, cost, doc)                                                          \
	{ #name, op, #in, #out, sizeof(struct in), sizeof(struct out), cost, doc },
#include "model/hw/cmd.def"
#undef CMD
	{ NULL, 0, NULL, NULL, 0, 0, 0, NULL },
};

const char *hca_field_nested(const struct hca_field_desc *f)
{
	return strncmp(f->type, "struct ", 7) ? NULL : f->type + 7;
}

const struct hca_struct_desc *hca_struct_find(const char *name)
{
	for (const struct hca_struct_desc *s = hca_structs; s->name; s++)
		if (!strcmp(s->name, name))
			return s;
	return NULL;
}

const struct hca_cmd_desc *hca_cmd_find(uint16_t opcode)
{
	for (const struct hca_cmd_desc *c = hca_cmds; c->name; c++)
		if (c->opcode == opcode)
			return c;
	return NULL;
}

bool hca_field_path(const char *name, size_t offset, char *buf, size_t len)
{
	const struct hca_struct_desc *s = hca_struct_find(name);

	if (!s || !len)
		return false;
	for (const struct hca_field_desc *f = s->fields; f->name; f++) {
		if (offset < f->offset || offset >= f->offset + f->size)
			continue;
		if (hca_field_nested(f)) {
			size_t n = (size_t)snprintf(buf, len, "%s.", f->name);

			if (n < len &&
			    hca_field_path(hca_field_nested(f), offset - f->offset, buf + n, len - n))
				return true;
		}
		snprintf(buf, len, "%s", f->name);
		return true;
	}
	return false;
}

struct status_desc {
	uint8_t val;      /* code */
	const char *name; /* name */
	int err;          /* errno for the driver */
	const char *doc;  /* meaning */
};

static const struct status_desc statuses[] = {
#define STATUS(name, val, err, doc) { val, #name, err, doc },
#include "model/hw/status.def"
#undef STATUS
};

static const struct status_desc *status_find(uint8_t s)
{
	for (size_t i = 0; i < sizeof(statuses) / sizeof(statuses[0]); i++)
		if (statuses[i].val == s)
			return &statuses[i];
	return NULL;
}

const char *hca_status_name(uint8_t status)
{
	const struct status_desc *d = status_find(status);

	return d ? d->name : "UNKNOWN_STATUS";
}

const char *hca_status_doc(uint8_t status)
{
	const struct status_desc *d = status_find(status);

	return d ? d->doc : "unknown status code";
}

int hca_status_errno(uint8_t status)
{
	const struct status_desc *d = status_find(status);

	return d ? d->err : EIO;
}

const char *hca_qpa_name(uint32_t bit_index)
{
	static const char *const names[] = {
#define QPA(name, bit, doc) [bit] = "IBV_QP_" #name,
#include "model/hw/qpattr.def"
#undef QPA
	};

	return bit_index < sizeof(names) / sizeof(names[0]) && names[bit_index] ? names[bit_index]
										 : "unknown attribute";
}

const char *hca_qps_name(unsigned state)
{
	static const char *const names[] = { "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR" };

	return state < HCA_QPS_COUNT ? names[state] : "UNKNOWN";
}

static const struct {
	uint32_t val;     /* code */
	const char *name; /* name */
	uint8_t status;   /* the completion status it goes with */
	const char *doc;  /* the check */
} verrs[] = {
#define VERR(name, val, status, doc) { val, #name, HCA_WC_##status, doc },
#include "model/hw/verr.def"
#undef VERR
};

static int verr_find(uint32_t v)
{
	for (size_t i = 0; i < sizeof(verrs) / sizeof(verrs[0]); i++)
		if (verrs[i].val == v)
			return (int)i;
	return -1;
}

const char *hca_verr_name(uint32_t verr)
{
	int i = verr_find(verr);

	return i < 0 ? NULL : verrs[i].name;
}

const char *hca_verr_doc(uint32_t verr)
{
	int i = verr_find(verr);

	return i < 0 ? "" : verrs[i].doc;
}

uint8_t hca_verr_status(uint32_t verr)
{
	int i = verr_find(verr);

	return i < 0 ? 0xff : verrs[i].status;
}

const char *hca_wc_name(uint8_t status)
{
	switch (status) {
#define WQE_OP(name, val, qpts, cls, doc)
#define CQE_OP(name, val, doc)
#define WC(name, val, doc)                                                                         \
	case val:                                                                                  \
		return #name;
#include "model/hw/wqe.def"
#undef WQE_OP
#undef CQE_OP
#undef WC
	default:
		return "UNKNOWN";
	}
}
