/* SPDX-License-Identifier: MIT */
/*
 * call_on_stack.S - run a function on another stack and come back (x86-64).
 *
 * ASYNC-SIGNAL-SAFE FILE: no memory but the two stacks, no system call.
 *
 *   void tl_call_on_stack(void *stack_top, void (*fn)(void *arg, void *old_sp), void *arg);
 *
 * Switches %rsp to stack_top (16-byte aligned by the caller: the System V
 * x86-64 ABI wants %rsp + 8 aligned to 16 at a function's entry, so
 * aligned to 16 just before the call), calls fn(arg, old_sp) there, where
 * old_sp is the lowest address of the caller's stack still in use (its
 * saved %rbp), and switches back.  The crash handler uses it to run the
 * program's signal handler on the interrupted stack instead of on the
 * alternate signal stack (crash_handler.cc, call_program).
 *
 * %rbp keeps the caller's frame meanwhile, and the CFI says so (CFA =
 * %rbp + 16), so an unwinder (libdwfl from the core, gdb) walks from fn
 * back through this frame to the caller's stack.  A siglongjmp out of fn
 * leaves this frame behind, as it leaves the caller's.
 */
#if defined(__x86_64__)
	.text
	.globl	tl_call_on_stack
	.hidden	tl_call_on_stack
	.type	tl_call_on_stack, @function
	.p2align 4
tl_call_on_stack:
	.cfi_startproc
	pushq	%rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	movq	%rsp, %rbp
	.cfi_def_cfa_register %rbp
	movq	%rsi, %rax          /* fn */
	movq	%rdi, %rsp          /* the new stack */
	movq	%rdx, %rdi          /* fn(arg, */
	movq	%rbp, %rsi          /*    old_sp) */
	callq	*%rax
	movq	%rbp, %rsp          /* back to the caller's stack */
	popq	%rbp
	.cfi_def_cfa %rsp, 8
	ret
	.cfi_endproc
	.size	tl_call_on_stack, .-tl_call_on_stack
#endif
	.section .note.GNU-stack,"",@progbits
