// SPDX-License-Identifier: GPL-2.0
#include <string.h>

#include "names.h"
#include "util.h"

#define NAME_ENTRY(id, name) [id] = name,

static const char *const layer_names[] = {BPFBOX_LAYER_NAMES(NAME_ENTRY)};
static const char *const file_op_names[] = {BPFBOX_FILE_OP_NAMES(NAME_ENTRY)};

const char *bpfbox_layer_name(unsigned int layer)
{
	return layer < ARRAY_SIZE(layer_names) ? layer_names[layer] : NULL;
}

int bpfbox_layer_parse(const char *name)
{
	for (size_t i = 0; name && i < ARRAY_SIZE(layer_names); i++)
		if (layer_names[i] && streq(layer_names[i], name))
			return (int)i;
	return -1;
}

_Static_assert(ARRAY_SIZE(file_op_names) == BPFBOX_FILE_OP_COUNT, "file ops numbered 0..N-1");

const char *bpfbox_file_op_name(unsigned int op)
{
	return op < ARRAY_SIZE(file_op_names) ? file_op_names[op] : NULL;
}

int bpfbox_file_op_parse(const char *name)
{
	return name ? name_index(file_op_names, ARRAY_SIZE(file_op_names), name) : -1;
}
