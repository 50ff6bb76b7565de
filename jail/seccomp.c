/*
 * lspd-seccomp: print the seccomp BPF program of one jail phase on stdout.
 *
 *   lspd-seccomp serve|fetch          raw BPF (struct sock_filter[]), for bwrap --seccomp FD
 *   lspd-seccomp serve|fetch --pfc    libseccomp's pseudo-filter code, for a human reviewer
 *
 * The daemon runs this once per phase at boot, keeps the bytes, proves them with the
 * canary (jail/probe.c), and hands exactly those bytes to every bwrap of that phase.
 * bwrap loads the program in its own PID 1 before forking the command, so nothing in
 * the sandbox runs unfiltered (an exec-wrapper inside the jail would leave PID 1
 * unfiltered, and the command could ptrace it).
 *
 * The two phases differ only in what they must (DESIGN.md "Two jail phases"):
 *   both   io_uring_* -> ENOSYS (libuv falls back to epoll; io_uring can create
 *          sockets without socket(2): IORING_OP_SOCKET), and ptrace, process_vm_*,
 *          keyctl, add_key, request_key, bpf, perf_event_open, userfaultfd -> EPERM.
 *   serve  socket() -> EPERM for every family; socketpair() -> EPERM unless the
 *          family is AF_UNIX, compared on the low 32 bits: the kernel takes
 *          `int family`, so the upper half of the register is whatever the caller
 *          left there (see the rule below for how that is spelled).
 * Any other architecture is killed (SCMP_FLTATR_ACT_BADARCH): on x86_64 a process
 * may enter the kernel through the i386 ABI (int 0x80), where socketcall(2) creates
 * sockets and the syscall numbers differ, or through x32 (nr | 0x40000000). The
 * filter names only the native arch, and libseccomp then sends x32 numbers to the
 * bad-arch action as well. See seccomp(2), syscall(2) "Architecture calling conventions".
 */
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int deny(scmp_filter_ctx ctx, int err, const char *name)
{
	int nr = seccomp_syscall_resolve_name(name);
	if (nr == __NR_SCMP_ERROR) {
		fprintf(stderr, "lspd-seccomp: unknown syscall %s\n", name);
		return -1;
	}
	int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(err), nr, 0);
	if (rc < 0)
		fprintf(stderr, "lspd-seccomp: rule for %s: %s\n", name, strerror(-rc));
	return rc;
}

int main(int argc, char **argv)
{
	int serve;
	if (argc < 2 || argc > 3 || (argc == 3 && strcmp(argv[2], "--pfc") != 0)) {
		fprintf(stderr, "usage: lspd-seccomp serve|fetch [--pfc]\n");
		return 2;
	}
	if (strcmp(argv[1], "serve") == 0)
		serve = 1;
	else if (strcmp(argv[1], "fetch") == 0)
		serve = 0;
	else {
		fprintf(stderr, "lspd-seccomp: unknown phase %s\n", argv[1]);
		return 2;
	}

	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (ctx == NULL) {
		fprintf(stderr, "lspd-seccomp: seccomp_init failed\n");
		return 1;
	}
	int rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	/* bwrap sets no_new_privs itself; the exported program must not depend on it. */
	if (rc == 0)
		rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);

	static const char *const both_eperm[] = {
		"ptrace", "process_vm_readv", "process_vm_writev", "keyctl", "add_key",
		"request_key", "bpf", "perf_event_open", "userfaultfd",
	};
	static const char *const both_enosys[] = {
		"io_uring_setup", "io_uring_enter", "io_uring_register",
	};
	for (size_t i = 0; rc == 0 && i < sizeof both_eperm / sizeof *both_eperm; i++)
		rc = deny(ctx, EPERM, both_eperm[i]);
	for (size_t i = 0; rc == 0 && i < sizeof both_enosys / sizeof *both_enosys; i++)
		rc = deny(ctx, ENOSYS, both_enosys[i]);

	if (rc == 0 && serve) {
		rc = deny(ctx, EPERM, "socket");
		/*
		 * socketpair: deny unless (int)a0 == AF_UNIX. libseccomp 2.5's SCMP_A0_32
		 * only casts the datum and still compares all 64 bits (its pseudo-code
		 * shows `$a0.hi32 == 0`), which would refuse AF_UNIX with junk in the upper
		 * half. Masked equality is its one true 32-bit test, so "low 32 bits != 1"
		 * is spelled as: bit 0 clear, or any of bits 1..31 set (rules are OR'ed).
		 */
		_Static_assert(AF_UNIX == 1, "the socketpair rule spells out AF_UNIX == 1");
		if (rc == 0)
			rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socketpair), 1,
					      SCMP_A0_64(SCMP_CMP_MASKED_EQ, 1, 0));
		for (int bit = 1; rc == 0 && bit < 32; bit++)
			rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socketpair), 1,
					      SCMP_A0_64(SCMP_CMP_MASKED_EQ, 1UL << bit, 1UL << bit));
	}
	if (rc < 0) {
		fprintf(stderr, "lspd-seccomp: building the %s filter failed: %s\n", argv[1], strerror(-rc));
		seccomp_release(ctx);
		return 1;
	}

	rc = argc == 3 ? seccomp_export_pfc(ctx, STDOUT_FILENO) : seccomp_export_bpf(ctx, STDOUT_FILENO);
	seccomp_release(ctx);
	if (rc < 0) {
		fprintf(stderr, "lspd-seccomp: export failed: %s\n", strerror(-rc));
		return 1;
	}
	return 0;
}
