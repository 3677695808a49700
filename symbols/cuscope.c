/*
 * The function scopes around an address, from a table of each unit's code
 * DIEs built once. libdw answers "which inlined subroutines and which
 * function contain this address" by walking the unit's DIE tree from its
 * start, twice (dwarf_getscopes() for the innermost scope, then
 * dwarf_getscopes_die() for its parents): in libc's units (libc6-dbg) that
 * was about 0.2 ms an address, half of psup's CPU time on a shell script of
 * 40 short processes. Here the first address asked in a unit walks it once
 * and keeps, in the tree's order, each DIE with code (low_pc or ranges)
 * and each DIE that holds one, with its address ranges, its parent and
 * where its subtree ends; an address then costs a scan of range pairs,
 * skipping the subtrees that miss it.
 *
 * The innermost scope is chosen as a walk of the tree would choose it (the
 * first DIE with code that contains the address, then the first of its
 * children that does, and so on; DIEs without code are looked through):
 * tests/unit/test-cuscope.c compares every answer with libdw's on libc and
 * on psup.
 */
#include <dwarf.h>
#include <stdlib.h>
#include <string.h>

#include "symbols/symbols-internal.h"

struct unit_scopes {
	struct sym_scope_node *ents;
	Dwarf_Die *dies; /* each entry's DIE */
	unsigned n, cap, dcap;
	uint64_t (*ranges)[2];
	unsigned nranges, rcap;
	bool failed; /* out of memory while built: asked of libdw instead */
};

struct sym_cu_index {
	struct psup_u64map units; /* unit DIE offset -> struct unit_scopes * */
};

/* arr (n used of *cap entries of size bytes) with room for one more: arr
 * itself, or a larger copy (*cap updated); NULL when out of memory. */
static void *room_for_one(void *arr, unsigned *cap, unsigned n, size_t size)
{
	unsigned want = *cap ? 2 * *cap : 64;
	void *grown;

	if (n < *cap)
		return arr;
	grown = realloc(arr, want * size);
	if (grown)
		*cap = want;
	return grown;
}

static bool push_ent(struct unit_scopes *u, const Dwarf_Die *die, int parent, bool code)
{
	struct sym_scope_node *ents = room_for_one(u->ents, &u->cap, u->n, sizeof(*ents));
	Dwarf_Die *dies;

	if (!ents)
		return false;
	u->ents = ents;
	dies = room_for_one(u->dies, &u->dcap, u->n, sizeof(*dies));
	if (!dies)
		return false;
	u->dies = dies;
	dies[u->n] = *die;
	ents[u->n++] = (struct sym_scope_node){ .parent = parent, .range = u->nranges, .code = code };
	return true;
}

static bool push_ranges(struct unit_scopes *u, Dwarf_Die *die)
{
	Dwarf_Addr base, start, end;
	ptrdiff_t off = 0;

	while ((off = dwarf_ranges(die, off, &base, &start, &end)) > 0) {
		uint64_t(*ranges)[2] = room_for_one(u->ranges, &u->rcap, u->nranges, sizeof(*ranges));

		if (!ranges)
			return false;
		u->ranges = ranges;
		ranges[u->nranges][0] = start;
		ranges[u->nranges][1] = end;
		u->nranges++;
	}
	return true;
}

/*
 * Whether a DIE of this tag neither has code nor holds a DIE with code, as
 * compilers write them: data, types and their parts, call sites (a
 * DW_TAG_GNU_call_site's low_pc is a return address, no range). Most of a
 * unit's DIEs are these (libc's: members, parameters, variables, types);
 * asking each for its attributes and children was half of building the
 * table (dwarf_hasattr() walks the abbreviation's attribute list).
 * Structures and unions are too in a C unit; a C++ one's are walked (code
 * may nest in a local class).
 */
static bool never_code(int tag, bool c_unit)
{
	switch (tag) {
	case DW_TAG_structure_type:
	case DW_TAG_union_type:
		return c_unit;
	case DW_TAG_member:
	case DW_TAG_formal_parameter:
	case DW_TAG_variable:
	case DW_TAG_typedef:
	case DW_TAG_base_type:
	case DW_TAG_pointer_type:
	case DW_TAG_reference_type:
	case DW_TAG_rvalue_reference_type:
	case DW_TAG_const_type:
	case DW_TAG_volatile_type:
	case DW_TAG_restrict_type:
	case DW_TAG_atomic_type:
	case DW_TAG_array_type:
	case DW_TAG_subrange_type:
	case DW_TAG_enumeration_type:
	case DW_TAG_enumerator:
	case DW_TAG_subroutine_type:
	case DW_TAG_unspecified_parameters:
	case DW_TAG_unspecified_type:
	case DW_TAG_ptr_to_member_type:
	case DW_TAG_template_type_parameter:
	case DW_TAG_template_value_parameter:
	case DW_TAG_call_site:
	case DW_TAG_call_site_parameter:
	case DW_TAG_GNU_call_site:
	case DW_TAG_GNU_call_site_parameter:
	case DW_TAG_imported_declaration:
	case DW_TAG_imported_module:
		return true;
	default:
		return false;
	}
}

/* The code DIEs under parent (index pidx) and the DIEs that hold them. */
static bool build(struct unit_scopes *u, Dwarf_Die *parent, int pidx, unsigned depth, bool c_unit)
{
	Dwarf_Die child;

	if (depth > 64 || dwarf_child(parent, &child) != 0)
		return true;
	do {
		if (never_code(dwarf_tag(&child), c_unit))
			continue;
		bool code = dwarf_hasattr(&child, DW_AT_low_pc) || dwarf_hasattr(&child, DW_AT_ranges);
		bool kids = dwarf_haschildren(&child) > 0;
		unsigned at = u->n;

		if (!code && !kids)
			continue;
		if (!push_ent(u, &child, pidx, code))
			return false;
		if (code && !push_ranges(u, &child))
			return false;
		u->ents[at].nranges = u->nranges - u->ents[at].range;
		if (kids && !build(u, &child, (int)at, depth + 1, c_unit))
			return false;
		if (!code && u->n == at + 1) {
			u->n = at; /* holds no code: not kept */
			continue;
		}
		u->ents[at].next = u->n;
	} while (dwarf_siblingof(&child, &child) == 0);
	return true;
}

static bool contains(const struct sym_scope_node *e, const uint64_t (*ranges)[2], uint64_t addr)
{
	for (unsigned i = 0; i < e->nranges; i++)
		if (addr >= ranges[e->range + i][0] && addr < ranges[e->range + i][1])
			return true;
	return false;
}

/* The innermost code entry in [from, to) that contains addr, or -1. */
static int innermost(const struct sym_scope_node *ents, const uint64_t (*ranges)[2], unsigned from, unsigned to,
		     uint64_t addr)
{
	unsigned i = from;

	while (i < to) {
		const struct sym_scope_node *e = &ents[i];
		int inner;

		if (e->code && !contains(e, ranges, addr)) {
			i = e->next;
			continue;
		}
		inner = e->next > i + 1 ? innermost(ents, ranges, i + 1, e->next, addr) : -1;
		if (inner >= 0)
			return inner;
		if (e->code)
			return (int)i;
		i = e->next;
	}
	return -1;
}

int sym_scope_innermost(const struct sym_scope_node *ents, unsigned n, const uint64_t (*ranges)[2], uint64_t addr)
{
	return innermost(ents, ranges, 0, n, addr);
}

static void unit_free(struct unit_scopes *u)
{
	if (!u)
		return;
	free(u->ents);
	free(u->dies);
	free(u->ranges);
	free(u);
}

static struct unit_scopes *unit_of(struct sym_cu_index *idx, Dwarf_Die *cudie)
{
	uint64_t key = dwarf_dieoffset(cudie) + 1;
	uint64_t *v = psup_u64map_find(&idx->units, key);
	struct unit_scopes *u;
	bool created;

	if (v)
		return (struct unit_scopes *)(uintptr_t)*v;
	int lang = dwarf_srclang(cudie);
	bool c_unit = lang == DW_LANG_C89 || lang == DW_LANG_C || lang == DW_LANG_C99 || lang == DW_LANG_C11;

	u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	if (!build(u, cudie, -1, 0, c_unit)) {
		free(u->ents);
		free(u->dies);
		free(u->ranges);
		memset(u, 0, sizeof(*u));
		u->failed = true;
	}
	v = psup_u64map_upsert(&idx->units, key, &created);
	if (!v) {
		unit_free(u);
		return NULL;
	}
	*v = (uint64_t)(uintptr_t)u;
	return u;
}

/* The unit's table, built on first use; NULL when it could not be. */
static struct unit_scopes *unit_table(struct sym_cu_index **pidx, Dwarf_Die *cudie)
{
	struct unit_scopes *u;

	if (!*pidx) {
		*pidx = calloc(1, sizeof(**pidx));
		if (!*pidx)
			return NULL;
		psup_u64map_init(&(*pidx)->units);
	}
	u = unit_of(*pidx, cudie);
	return u && !u->failed ? u : NULL;
}

int sym_cu_scopes(struct sym_cu_index **pidx, Dwarf_Die *cudie, Dwarf_Addr addr, Dwarf_Die *out, int max)
{
	struct unit_scopes *u = unit_table(pidx, cudie);
	int i, n = 0;

	if (!u)
		return -1;
	for (i = innermost(u->ents, (const uint64_t(*)[2])u->ranges, 0, u->n, addr); i >= 0 && n < max;
	     i = u->ents[i].parent) {
		int tag = dwarf_tag(&u->dies[i]);

		if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram)
			continue;
		out[n++] = u->dies[i];
		if (tag == DW_TAG_subprogram)
			break;
	}
	return n;
}

int sym_cu_scope_table(struct sym_cu_index **pidx, Dwarf_Die *cudie, const struct sym_scope_node **ents,
		       Dwarf_Die **dies, unsigned *n, const uint64_t (**ranges)[2], unsigned *nranges)
{
	struct unit_scopes *u = unit_table(pidx, cudie);

	if (!u)
		return -1;
	*ents = u->ents;
	*dies = u->dies;
	*n = u->n;
	*ranges = (const uint64_t(*)[2])u->ranges;
	*nranges = u->nranges;
	return 0;
}

void sym_cu_index_free(struct sym_cu_index *idx)
{
	if (!idx)
		return;
	for (size_t i = 0; i < idx->units.cap; i++)
		if (idx->units.keys[i])
			unit_free((struct unit_scopes *)(uintptr_t)idx->units.vals[i]);
	psup_u64map_release(&idx->units);
	free(idx);
}
