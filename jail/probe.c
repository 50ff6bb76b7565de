/*
 * lspd-probe TEST...: try each syscall named on the command line and report, one JSON
 * line per test, what the kernel (and the jail's seccomp filter) answered:
 *   {"test":"socket:inet","result":"EPERM"}      errno name, or "ok"
 *   {"test":"i386-socket","result":"killed:SIGSYS"}
 * Each test runs in its own forked child, so a test the filter kills (bad arch)
 * reports "killed:SIG…" and the rest still run. The boot canary and the jail tests
 * run this inside real bwrap jails; nothing here decides pass or fail.
 *
 * Tests:
 *   status                       seccomp mode, no_new_privs, CapEff, uid, interfaces
 *   socket:FAM  socketpair:FAM   FAM = unix inet inet6 netlink packet vsock;
 *                                socketpair:unix-hi is AF_UNIX with garbage in the
 *                                upper 32 bits of the register (the kernel takes int)
 *   io_uring_setup io_uring_enter io_uring_register
 *   i386-socket i386-socketcall x32-socket       (x86_64 only)
 *   ptrace-pid1 process_vm_readv keyctl add_key request_key bpf perf_event_open userfaultfd
 *   read:PATH  write:PATH  connect:IPV4:PORT  connect-abstract:NAME
 */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif

static int family(const char *s)
{
	if (!strcmp(s, "unix") || !strcmp(s, "unix-hi")) return AF_UNIX;
	if (!strcmp(s, "inet")) return AF_INET;
	if (!strcmp(s, "inet6")) return AF_INET6;
	if (!strcmp(s, "netlink")) return AF_NETLINK;
	if (!strcmp(s, "packet")) return AF_PACKET;
	if (!strcmp(s, "vsock")) return AF_VSOCK;
	return -1;
}

/* Result of a raw syscall as 0 (ok) or an errno. */
static int rc(long r) { return r < 0 ? errno : 0; }

static int t_socket(const char *fam)
{
	int f = family(fam);
	if (f < 0) return EINVAL;
	int type = f == AF_NETLINK || f == AF_PACKET ? SOCK_RAW : SOCK_STREAM;
	if (f == AF_PACKET) type = SOCK_DGRAM;
	return rc(syscall(SYS_socket, f, type, 0));
}

static int t_socketpair(const char *fam)
{
	int f = family(fam);
	if (f < 0) return EINVAL;
	int sv[2];
	unsigned long a0 = (unsigned long)(unsigned)f;
	if (!strcmp(fam, "unix-hi")) a0 |= 0xdead000000000000UL;
	int type = f == AF_NETLINK || f == AF_PACKET ? SOCK_RAW : SOCK_STREAM;
	return rc(syscall(SYS_socketpair, a0, type, 0, sv));
}

#if defined(__x86_64__)
/* The i386 ABI from a 64-bit process: int 0x80 takes eax=nr, ebx, ecx, edx. */
static long int80(long nr, long b, long c, long d)
{
	long ret;
	__asm__ volatile("int $0x80" : "=a"(ret) : "a"(nr), "b"(b), "c"(c), "d"(d) : "memory");
	return ret;
}
static int t_i386(int socketcall)
{
	long r;
	if (socketcall) {
		/* socketcall(SYS_SOCKET=1, args): args must be addressable with 32 bits. */
		unsigned int *args = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
					  MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
		if (args == MAP_FAILED) return errno;
		args[0] = AF_INET; args[1] = SOCK_STREAM; args[2] = 0;
		r = int80(102, 1, (long)(uintptr_t)args, 0);
	} else {
		r = int80(359, AF_INET, SOCK_STREAM, 0); /* i386 socket(2) */
	}
	return r < 0 ? (int)-r : 0;
}
static int t_x32(void)
{
	/* x32 shares x86_64's number for socket (41), tagged with __X32_SYSCALL_BIT. */
	return rc(syscall(0x40000000L | SYS_socket, AF_INET, SOCK_STREAM, 0));
}
#endif

static int t_connect_tcp(const char *spec)
{
	char host[64];
	const char *colon = strrchr(spec, ':');
	if (!colon || (size_t)(colon - spec) >= sizeof host) return EINVAL;
	memcpy(host, spec, colon - spec);
	host[colon - spec] = 0;
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(atoi(colon + 1))};
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) return EINVAL;
	int s = socket(AF_INET, SOCK_STREAM, 0);
	if (s < 0) return errno;
	return rc(connect(s, (struct sockaddr *)&sa, sizeof sa));
}

static int t_connect_abstract(const char *name)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t n = strlen(name);
	if (n + 1 > sizeof sa.sun_path) return EINVAL;
	memcpy(sa.sun_path + 1, name, n);
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	if (s < 0) return errno;
	return rc(connect(s, (struct sockaddr *)&sa, offsetof(struct sockaddr_un, sun_path) + 1 + n));
}

static int t_status(void)
{
	char line[512], seccomp[16] = "?", nnp[16] = "?", capeff[32] = "?";
	FILE *f = fopen("/proc/self/status", "r");
	if (!f) return errno;
	while (fgets(line, sizeof line, f)) {
		sscanf(line, "Seccomp: %15s", seccomp);
		sscanf(line, "NoNewPrivs: %15s", nnp);
		sscanf(line, "CapEff: %31s", capeff);
	}
	fclose(f);
	printf("{\"test\":\"status\",\"result\":\"ok\",\"seccomp\":%s,\"nnp\":%s,\"capeff\":\"%s\","
	       "\"uid\":%u,\"euid\":%u,\"ifaces\":[", seccomp, nnp, capeff, getuid(), geteuid());
	/* /proc/net/dev lists the interfaces of the reader's network namespace. */
	f = fopen("/proc/net/dev", "r");
	int first = 1;
	while (f && fgets(line, sizeof line, f)) {
		char name[64];
		if (sscanf(line, " %63[^:]:", name) == 1 && !strchr(name, '|') && !strchr(name, ' ')) {
			int safe = 1;
			for (char *p = name; *p; p++)
				if (*p == '"' || *p == '\\' || (unsigned char)*p < 0x20) safe = 0;
			if (safe) {
				printf("%s\"%s\"", first ? "" : ",", name);
				first = 0;
			}
		}
	}
	if (f) fclose(f);
	printf("]}\n");
	fflush(stdout);
	return -1; /* already printed */
}

static int run(const char *t)
{
	if (!strcmp(t, "status")) return t_status();
	if (!strncmp(t, "socket:", 7)) return t_socket(t + 7);
	if (!strncmp(t, "socketpair:", 11)) return t_socketpair(t + 11);
	if (!strcmp(t, "io_uring_setup")) return rc(syscall(SYS_io_uring_setup, 1, NULL));
	if (!strcmp(t, "io_uring_enter")) return rc(syscall(SYS_io_uring_enter, -1, 0, 0, 0, NULL, 0));
	if (!strcmp(t, "io_uring_register")) return rc(syscall(SYS_io_uring_register, -1, 0, NULL, 0));
#if defined(__x86_64__)
	if (!strcmp(t, "i386-socket")) return t_i386(0);
	if (!strcmp(t, "i386-socketcall")) return t_i386(1);
	if (!strcmp(t, "x32-socket")) return t_x32();
#endif
	if (!strcmp(t, "ptrace-pid1")) return rc(ptrace(PTRACE_ATTACH, 1, NULL, NULL));
	if (!strcmp(t, "process_vm_readv")) {
		char buf[8];
		struct iovec l = {buf, sizeof buf}, r = {buf, sizeof buf};
		return rc(syscall(SYS_process_vm_readv, 1, &l, 1, &r, 1, 0));
	}
	if (!strcmp(t, "keyctl")) return rc(syscall(SYS_keyctl, 0 /* GET_KEYRING_ID */, -3, 0));
	if (!strcmp(t, "add_key")) return rc(syscall(SYS_add_key, "user", "lspd", "x", 1, -3));
	if (!strcmp(t, "request_key")) return rc(syscall(SYS_request_key, "user", "lspd", NULL, -3));
	if (!strcmp(t, "bpf")) return rc(syscall(SYS_bpf, 0, NULL, 0));
	if (!strcmp(t, "perf_event_open")) return rc(syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0));
	if (!strcmp(t, "userfaultfd")) return rc(syscall(SYS_userfaultfd, 0));
	if (!strncmp(t, "read:", 5)) {
		int fd = open(t + 5, O_RDONLY | O_CLOEXEC);
		if (fd < 0) return errno;
		char b[1];
		return rc(read(fd, b, 1));
	}
	if (!strncmp(t, "write:", 6)) {
		int fd = open(t + 6, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0) return errno;
		return rc(write(fd, "x", 1));
	}
	if (!strncmp(t, "connect:", 8)) return t_connect_tcp(t + 8);
	if (!strncmp(t, "connect-abstract:", 17)) return t_connect_abstract(t + 17);
	return EINVAL;
}

static int safe_name(const char *t)
{
	for (; *t; t++)
		if (*t == '"' || *t == '\\' || (unsigned char)*t < 0x20) return 0;
	return 1;
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *t = argv[i];
		if (!safe_name(t)) {
			printf("{\"test\":\"?\",\"result\":\"EINVAL\"}\n");
			continue;
		}
		fflush(stdout);
		pid_t pid = fork();
		if (pid < 0) {
			printf("{\"test\":\"%s\",\"result\":\"fork:%s\"}\n", t, strerrorname_np(errno));
			continue;
		}
		if (pid == 0) {
			int e = run(t);
			if (e >= 0)
				printf("{\"test\":\"%s\",\"result\":\"%s\"}\n", t, e == 0 ? "ok" : strerrorname_np(e));
			fflush(stdout);
			_exit(0);
		}
		int st;
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		if (WIFSIGNALED(st))
			printf("{\"test\":\"%s\",\"result\":\"killed:SIG%s\"}\n", t, sigabbrev_np(WTERMSIG(st)));
	}
	fflush(stdout);
	return 0;
}
