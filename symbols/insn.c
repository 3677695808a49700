/*
 * The memory accesses of one x86-64 instruction (libzydis 4.0), for witch:
 * what a sampled instruction touched (to place a watchpoint), what a
 * trapping one touched (to judge it), and every access of every instruction
 * in --witch-exact.
 *
 * Zydis lists memory operands with their actions, sizes and element types,
 * explicit and implicit (push, string ops); what it does not compute is the
 * address of an implicit stack slot (it reports [rsp] for a push that
 * writes [rsp - 8]) nor whether an operand moves a value at all (lea is
 * AGEN, but nop and prefetch report a read). Those rules live here.
 */
#include "symbols/symbols.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/user.h>

#include <Zydis/Zydis.h>

/* One decoder for every thread: ZydisDecoderDecodeFull() only reads it. */
static ZydisDecoder insn_decoder;
static pthread_once_t insn_decoder_once = PTHREAD_ONCE_INIT;
static bool insn_decoder_ok;

static void insn_decoder_init(void)
{
	insn_decoder_ok = ZYAN_SUCCESS(ZydisDecoderInit(&insn_decoder, ZYDIS_MACHINE_MODE_LONG_64,
							ZYDIS_STACK_WIDTH_64));
}

/* The value of a general-purpose register as a base or index: any width
 * names its 64-bit register (a 32-bit address size is wrapped later).
 * false for a register that cannot address memory (vector: VSIB). */
/* Where regs keeps the 64-bit general register reg is part of, or NULL. */
static const unsigned long long *insn_reg_slot(ZydisRegister reg, const struct user_regs_struct *regs)
{
	switch (ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, reg)) {
	case ZYDIS_REGISTER_RAX: return &regs->rax;
	case ZYDIS_REGISTER_RBX: return &regs->rbx;
	case ZYDIS_REGISTER_RCX: return &regs->rcx;
	case ZYDIS_REGISTER_RDX: return &regs->rdx;
	case ZYDIS_REGISTER_RSI: return &regs->rsi;
	case ZYDIS_REGISTER_RDI: return &regs->rdi;
	case ZYDIS_REGISTER_RBP: return &regs->rbp;
	case ZYDIS_REGISTER_RSP: return &regs->rsp;
	case ZYDIS_REGISTER_R8: return &regs->r8;
	case ZYDIS_REGISTER_R9: return &regs->r9;
	case ZYDIS_REGISTER_R10: return &regs->r10;
	case ZYDIS_REGISTER_R11: return &regs->r11;
	case ZYDIS_REGISTER_R12: return &regs->r12;
	case ZYDIS_REGISTER_R13: return &regs->r13;
	case ZYDIS_REGISTER_R14: return &regs->r14;
	case ZYDIS_REGISTER_R15: return &regs->r15;
	default: return NULL;
	}
}

static bool insn_reg_value(ZydisRegister reg, const struct user_regs_struct *regs, uint64_t *out)
{
	const unsigned long long *slot = insn_reg_slot(reg, regs);

	if (slot)
		*out = *slot;
	return slot != NULL;
}

/* Instructions whose memory operand names a line or an address but moves
 * no value to or from it: no access for witch (a prefetch or a flush of a
 * location is neither a use nor a kill of the value stored there). */
static bool insn_moves_no_value(const ZydisDecodedInstruction *in)
{
	switch (in->meta.category) {
	case ZYDIS_CATEGORY_NOP:
	case ZYDIS_CATEGORY_PREFETCH:
	case ZYDIS_CATEGORY_PREFETCHWT1:
	case ZYDIS_CATEGORY_WIDENOP:
		return true;
	default:
		break;
	}
	switch (in->mnemonic) {
	case ZYDIS_MNEMONIC_NOP:
	case ZYDIS_MNEMONIC_PREFETCH:
	case ZYDIS_MNEMONIC_PREFETCHNTA:
	case ZYDIS_MNEMONIC_PREFETCHT0:
	case ZYDIS_MNEMONIC_PREFETCHT1:
	case ZYDIS_MNEMONIC_PREFETCHT2:
	case ZYDIS_MNEMONIC_PREFETCHW:
	case ZYDIS_MNEMONIC_PREFETCHWT1:
	case ZYDIS_MNEMONIC_CLFLUSH:
	case ZYDIS_MNEMONIC_CLFLUSHOPT:
	case ZYDIS_MNEMONIC_CLWB:
	case ZYDIS_MNEMONIC_CLDEMOTE:
		return true;
	default:
		return false;
	}
}

/* Instructions that push onto the stack: their hidden [rsp] operand is the
 * slot below rsp. enter with a nesting level > 0 also copies frame
 * pointers; only its push of rbp is reported. */
static bool insn_is_push(ZydisMnemonic m)
{
	switch (m) {
	case ZYDIS_MNEMONIC_PUSH:
	case ZYDIS_MNEMONIC_PUSHF:
	case ZYDIS_MNEMONIC_PUSHFD:
	case ZYDIS_MNEMONIC_PUSHFQ:
	case ZYDIS_MNEMONIC_CALL:
	case ZYDIS_MNEMONIC_ENTER:
		return true;
	default:
		return false;
	}
}

static bool insn_is_pop(ZydisMnemonic m)
{
	switch (m) {
	case ZYDIS_MNEMONIC_POP:
	case ZYDIS_MNEMONIC_POPF:
	case ZYDIS_MNEMONIC_POPFD:
	case ZYDIS_MNEMONIC_POPFQ:
	case ZYDIS_MNEMONIC_RET:
	case ZYDIS_MNEMONIC_LEAVE:
		return true;
	default:
		return false;
	}
}

static unsigned insn_fp_flags(const ZydisDecodedOperand *op)
{
	switch (op->element_type) {
	case ZYDIS_ELEMENT_TYPE_FLOAT32:
		return SYM_INSN_FP32;
	case ZYDIS_ELEMENT_TYPE_FLOAT64:
		return SYM_INSN_FP64;
	default:
		/* float16 and x87's 80-bit values are compared as bytes. */
		return 0;
	}
}

/*
 * bt, bts, btr, btc with a register bit offset on memory address a bit
 * string: the operand-sized word holding bit (signed) offset, which may lie
 * far from the operand's address (Intel SDM, BT: EA + (OpSize / 8) *
 * (BitOffset DIV OpSize)). An immediate offset stays in the operand.
 * Returns the bytes to add to the operand's address.
 */
static uint64_t insn_bit_offset_bytes(const ZydisDecodedInstruction *in,
				      const ZydisDecodedOperand *ops, const ZydisDecodedOperand *mem,
				      const struct user_regs_struct *regs)
{
	unsigned bits = mem->size;
	int64_t offset;
	uint64_t v;

	switch (in->mnemonic) {
	case ZYDIS_MNEMONIC_BT:
	case ZYDIS_MNEMONIC_BTS:
	case ZYDIS_MNEMONIC_BTR:
	case ZYDIS_MNEMONIC_BTC:
		break;
	default:
		return 0;
	}
	for (unsigned i = 0; i < in->operand_count_visible; i++) {
		if (ops[i].type != ZYDIS_OPERAND_TYPE_REGISTER || !insn_reg_value(ops[i].reg.value, regs, &v))
			continue;
		switch (bits) {
		case 16: offset = (int16_t)v; return (uint64_t)((offset >> 4) * 2);
		case 32: offset = (int32_t)v; return (uint64_t)((offset >> 5) * 4);
		case 64: offset = (int64_t)v; return (uint64_t)((offset >> 6) * 8);
		default: return 0;
		}
	}
	return 0;
}

/*
 * The processor-state save and restore instructions, whose operand Zydis
 * sizes as the whole legacy area + header (576 bytes) written or read. What
 * they really write (Intel SDM vol. 1, 13.7-13.11): the legacy region's
 * x87 and SSE bytes 0-463 (464-511 are left to software), and in the header
 * XSTATE_BV (xsave, xsaveopt) or XSTATE_BV and XCOMP_BV (xsavec, xsaves),
 * never the reserved bytes 16-63 that software clears beforehand (glibc's
 * _dl_runtime_resolve_xsavec does): reporting those as written made every
 * lazy binding show six dead stores. The extended region (AVX and later,
 * from byte 576) depends on XCR0 and compaction and is not reported.
 * access[naccess - 1] is the operand just added.
 */
static void insn_state_area(const ZydisDecodedInstruction *in, struct sym_insn *out)
{
	struct sym_access *a = &out->access[out->naccess - 1];
	unsigned header = 0;

	switch (in->mnemonic) {
	case ZYDIS_MNEMONIC_FXSAVE:
	case ZYDIS_MNEMONIC_FXSAVE64:
		a->size = 464;
		a->flags = SYM_ACCESS_WRITE;
		return;
	case ZYDIS_MNEMONIC_FXRSTOR:
	case ZYDIS_MNEMONIC_FXRSTOR64:
		a->size = 464;
		a->flags = SYM_ACCESS_READ;
		return;
	case ZYDIS_MNEMONIC_XSAVE:
	case ZYDIS_MNEMONIC_XSAVE64:
	case ZYDIS_MNEMONIC_XSAVEOPT:
	case ZYDIS_MNEMONIC_XSAVEOPT64:
		header = 8;
		break;
	case ZYDIS_MNEMONIC_XSAVEC:
	case ZYDIS_MNEMONIC_XSAVEC64:
	case ZYDIS_MNEMONIC_XSAVES:
	case ZYDIS_MNEMONIC_XSAVES64:
		header = 16;
		break;
	default:
		return;
	}
	a->size = 464;
	a->flags = SYM_ACCESS_WRITE;
	if (out->naccess < SYM_INSN_MAX_ACCESS)
		out->access[out->naccess++] = (struct sym_access){
			.addr = a->addr + 512, .size = header, .flags = SYM_ACCESS_WRITE
		};
}

static uint32_t insn_gpr_bit(ZydisRegister reg)
{
	ZydisRegister big = ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, reg);

	if (big >= ZYDIS_REGISTER_RAX && big <= ZYDIS_REGISTER_R15)
		return 1u << (big - ZYDIS_REGISTER_RAX);
	return 0;
}

static void insn_gprs(const ZydisDecodedInstruction *in, const ZydisDecodedOperand *ops,
		      struct sym_insn *out)
{
	for (unsigned i = 0; i < in->operand_count; i++) {
		const ZydisDecodedOperand *op = &ops[i];

		if (op->type == ZYDIS_OPERAND_TYPE_REGISTER &&
		    (op->actions & (ZYDIS_OPERAND_ACTION_WRITE | ZYDIS_OPERAND_ACTION_CONDWRITE)))
			out->gpr_written |= insn_gpr_bit(op->reg.value);
		if (op->type == ZYDIS_OPERAND_TYPE_MEMORY)
			out->gpr_address |= insn_gpr_bit(op->mem.base) | insn_gpr_bit(op->mem.index);
	}
	/* registers that move an address besides base and index: xlat's al,
	 * the bit offset of bt* on memory */
	if (in->mnemonic == ZYDIS_MNEMONIC_XLAT)
		out->gpr_address |= insn_gpr_bit(ZYDIS_REGISTER_RAX);
	if ((in->mnemonic == ZYDIS_MNEMONIC_BT || in->mnemonic == ZYDIS_MNEMONIC_BTS ||
	     in->mnemonic == ZYDIS_MNEMONIC_BTR || in->mnemonic == ZYDIS_MNEMONIC_BTC) &&
	    in->operand_count >= 2 && ops[0].type == ZYDIS_OPERAND_TYPE_MEMORY &&
	    ops[1].type == ZYDIS_OPERAND_TYPE_REGISTER)
		out->gpr_address |= insn_gpr_bit(ops[1].reg.value);
	/* wrfsbase/wrgsbase move an address base too */
	if (in->mnemonic == ZYDIS_MNEMONIC_WRFSBASE || in->mnemonic == ZYDIS_MNEMONIC_WRGSBASE)
		out->gpr_written = ~0u;
}

int sym_insn_decode(const uint8_t *code, size_t len, const struct user_regs_struct *regs,
		    struct sym_insn *out)
{
	ZydisDecodedInstruction in;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	uint64_t stack_slot_size = 0;
	bool string_op, rep;

	memset(out, 0, sizeof(*out));
	pthread_once(&insn_decoder_once, insn_decoder_init);
	if (!insn_decoder_ok || !code)
		return -EINVAL;
	if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&insn_decoder, code, len, &in, ops)))
		return -EINVAL;
	out->length = in.length;
	insn_gprs(&in, ops, out);

	if (insn_moves_no_value(&in))
		return 0;
	/* clzero (AMD) zeroes the cache line holding rax; Zydis lists the
	 * register, not the memory. */
	if (in.mnemonic == ZYDIS_MNEMONIC_CLZERO) {
		uint64_t a = in.address_width == 32 ? (uint32_t)regs->rax : regs->rax;

		out->access[0] = (struct sym_access){ .addr = a & ~63ULL, .size = 64, .flags = SYM_ACCESS_WRITE };
		out->naccess = 1;
		return 0;
	}

	string_op = in.meta.category == ZYDIS_CATEGORY_STRINGOP;
	rep = in.attributes & (ZYDIS_ATTRIB_HAS_REP | ZYDIS_ATTRIB_HAS_REPE | ZYDIS_ATTRIB_HAS_REPNE);
	if (string_op) {
		out->flags |= SYM_INSN_STRING;
		/* rep with a zero count runs no iteration; the count register
		 * follows the address size (ecx with a 0x67 prefix). */
		if (rep && (in.address_width == 32 ? (uint32_t)regs->rcx : regs->rcx) == 0)
			return 0;
	}

	/* pop to a memory operand based on rsp addresses it with rsp already
	 * incremented (Intel SDM, POP): find the size popped first. */
	if (in.mnemonic == ZYDIS_MNEMONIC_POP) {
		for (unsigned i = 0; i < in.operand_count; i++)
			if (ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY &&
			    ops[i].visibility == ZYDIS_OPERAND_VISIBILITY_HIDDEN)
				stack_slot_size = ops[i].size / 8;
	}

	for (unsigned i = 0; i < in.operand_count; i++) {
		const ZydisDecodedOperand *op = &ops[i];
		struct sym_access *a;
		uint64_t addr = 0, v;
		unsigned flags = 0;
		bool hidden_stack;

		if (op->type != ZYDIS_OPERAND_TYPE_MEMORY)
			continue;
		if (op->mem.type == ZYDIS_MEMOP_TYPE_AGEN) /* lea: an address, no access */
			continue;
		if (op->actions & (ZYDIS_OPERAND_ACTION_READ | ZYDIS_OPERAND_ACTION_CONDREAD))
			flags |= SYM_ACCESS_READ;
		/* A conditional write (cmpxchg, a masked store, a rep string
		 * store) is counted as a write: cmpxchg writes back the old value
		 * when the comparison fails, and a debug register sees it. */
		if (op->actions & (ZYDIS_OPERAND_ACTION_WRITE | ZYDIS_OPERAND_ACTION_CONDWRITE))
			flags |= SYM_ACCESS_WRITE;
		if (!flags)
			continue;
		if (op->mem.type != ZYDIS_MEMOP_TYPE_MEM || op->size == 0 ||
		    out->naccess == SYM_INSN_MAX_ACCESS) {
			/* VSIB (gather/scatter: one address per element), MIB
			 * (MPX bound tables), an operand of unknown size, more
			 * accesses than access[] holds. */
			out->flags |= SYM_INSN_UNWATCHABLE;
			continue;
		}

		hidden_stack = op->visibility == ZYDIS_OPERAND_VISIBILITY_HIDDEN &&
			       ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, op->mem.base) ==
				       ZYDIS_REGISTER_RSP;
		if (op->mem.base == ZYDIS_REGISTER_RIP || op->mem.base == ZYDIS_REGISTER_EIP) {
			addr = regs->rip + in.length;
		} else if (op->mem.base != ZYDIS_REGISTER_NONE) {
			if (!insn_reg_value(op->mem.base, regs, &v)) {
				out->flags |= SYM_INSN_UNWATCHABLE;
				continue;
			}
			addr = v;
		}
		if (op->mem.index != ZYDIS_REGISTER_NONE) {
			if (!insn_reg_value(op->mem.index, regs, &v)) {
				out->flags |= SYM_INSN_UNWATCHABLE;
				continue;
			}
			if (in.address_width == 32)
				v = (uint32_t)v;
			addr += v * (op->mem.scale ? op->mem.scale : 1);
		}
		if (op->mem.disp.has_displacement)
			addr += (uint64_t)op->mem.disp.value;
		/* xlat reads [rbx + al]; Zydis gives only the rbx. */
		if (in.mnemonic == ZYDIS_MNEMONIC_XLAT)
			addr += regs->rax & 0xff;
		addr += insn_bit_offset_bytes(&in, ops, op, regs);
		if (hidden_stack && insn_is_push(in.mnemonic)) {
			out->flags |= SYM_INSN_STACK;
			addr -= op->size / 8;
		} else if (hidden_stack && insn_is_pop(in.mnemonic)) {
			out->flags |= SYM_INSN_STACK;
		} else if (in.mnemonic == ZYDIS_MNEMONIC_LEAVE) {
			out->flags |= SYM_INSN_STACK; /* reads [rbp] */
		} else if (stack_slot_size &&
			   ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, op->mem.base) ==
				   ZYDIS_REGISTER_RSP) {
			addr += stack_slot_size;
		}
		if (in.address_width == 32)
			addr = (uint32_t)addr;
		/* In 64-bit mode only fs and gs have a base. */
		if (op->mem.segment == ZYDIS_REGISTER_FS)
			addr += regs->fs_base;
		else if (op->mem.segment == ZYDIS_REGISTER_GS)
			addr += regs->gs_base;

		a = &out->access[out->naccess++];
		a->addr = addr;
		a->size = op->size / 8;
		a->flags = flags;
		out->flags |= insn_fp_flags(op);
		insn_state_area(&in, out);
	}

	/* Reads first: movs reads [rsi] before it writes [rdi], pop (%rax)
	 * reads its stack slot before it writes (%rax). Zydis lists the
	 * destination first; the exact oracle needs program order. */
	for (unsigned i = 1; i < out->naccess; i++) {
		struct sym_access a = out->access[i];
		unsigned j = i;

		if (a.flags != SYM_ACCESS_READ)
			continue;
		while (j > 0 && out->access[j - 1].flags != SYM_ACCESS_READ) {
			out->access[j] = out->access[j - 1];
			j--;
		}
		out->access[j] = a;
	}
	return 0;
}

/* The value of a source operand: an immediate, or a known register. */
static bool insn_source(const ZydisDecodedOperand *op, const struct user_regs_struct *regs,
			uint32_t unknown, uint64_t *v)
{
	if (op->type == ZYDIS_OPERAND_TYPE_IMMEDIATE) {
		*v = op->imm.is_signed ? (uint64_t)op->imm.value.s : op->imm.value.u;
		return true;
	}
	return op->type == ZYDIS_OPERAND_TYPE_REGISTER && !(unknown & insn_gpr_bit(op->reg.value)) &&
	       insn_reg_value(op->reg.value, regs, v);
}

int sym_insn_advance(const uint8_t *code, size_t len, struct user_regs_struct *regs,
		     uint32_t *unknown)
{
	ZydisDecodedInstruction in;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	struct sym_insn info = { 0 };
	uint64_t a, b = 0, v;
	bool known = false;

	pthread_once(&insn_decoder_once, insn_decoder_init);
	if (!insn_decoder_ok || !code ||
	    !ZYAN_SUCCESS(ZydisDecoderDecodeFull(&insn_decoder, code, len, &in, ops)))
		return -EINVAL;
	insn_gprs(&in, ops, &info);
	regs->rip += in.length;
	if (!info.gpr_written)
		return 0;
	const ZydisDecodedOperand *dst = &ops[0];
	/* regs is the caller's to change: the slot is writable */
	unsigned long long *slot = dst->type == ZYDIS_OPERAND_TYPE_REGISTER
					   ? (unsigned long long *)insn_reg_slot(dst->reg.value, regs)
					   : NULL;
	/* 64-bit results, or 32-bit ones (zero-extended); only the
	 * destination written (no implied rdx, rsp) */
	if (slot && (dst->size == 64 || dst->size == 32) &&
	    info.gpr_written == insn_gpr_bit(dst->reg.value)) {
		switch (in.mnemonic) {
		case ZYDIS_MNEMONIC_ADD:
		case ZYDIS_MNEMONIC_SUB:
			known = insn_source(&ops[0], regs, *unknown, &a) &&
				insn_source(&ops[1], regs, *unknown, &b);
			v = in.mnemonic == ZYDIS_MNEMONIC_ADD ? a + b : a - b;
			break;
		case ZYDIS_MNEMONIC_INC:
		case ZYDIS_MNEMONIC_DEC:
			known = insn_source(&ops[0], regs, *unknown, &a);
			v = in.mnemonic == ZYDIS_MNEMONIC_INC ? a + 1 : a - 1;
			break;
		case ZYDIS_MNEMONIC_MOV:
			known = insn_source(&ops[1], regs, *unknown, &v);
			break;
		case ZYDIS_MNEMONIC_LEA:
			known = ops[1].type == ZYDIS_OPERAND_TYPE_MEMORY &&
				!(*unknown & (insn_gpr_bit(ops[1].mem.base) | insn_gpr_bit(ops[1].mem.index)));
			v = ops[1].mem.disp.has_displacement ? (uint64_t)ops[1].mem.disp.value : 0;
			if (known && (ops[1].mem.base == ZYDIS_REGISTER_RIP))
				v += regs->rip;
			else if (known && ops[1].mem.base != ZYDIS_REGISTER_NONE)
				known = insn_reg_value(ops[1].mem.base, regs, &a) && (v += a, true);
			if (known && ops[1].mem.index != ZYDIS_REGISTER_NONE)
				known = insn_reg_value(ops[1].mem.index, regs, &a) &&
					(v += a * (ops[1].mem.scale ? ops[1].mem.scale : 1), true);
			if (in.address_width == 32) /* lea 0x8(%edi),%rax */
				v = (uint32_t)v;
			break;
		default:
			break;
		}
	}
	if (!known) {
		*unknown |= info.gpr_written;
		return 0;
	}
	*slot = dst->size == 32 ? (uint32_t)v : v;
	*unknown &= ~info.gpr_written;
	return 0;
}

unsigned sym_watch_range(uint64_t addr, unsigned size, uint64_t *waddr, unsigned *wlen)
{
	unsigned len = 8;

	*waddr = addr;
	*wlen = 0;
	if (size == 0)
		return 0;
	while (len > size || (addr & (len - 1)))
		len >>= 1;
	*wlen = len;
	return len;
}
