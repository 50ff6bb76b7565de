/*
 * lspd-egress-fwd PORT SOCKET -- CMD [ARG...]: runs INSIDE a FETCH jail, first.
 *
 * Listens on 127.0.0.1:PORT (the jail's own network namespace, where only lo exists)
 * and carries every connection to SOCKET, the daemon's egress proxy bound into the
 * jail, so HTTPS_PROXY=http://127.0.0.1:PORT works for npm, go and composer. Then runs
 * CMD and exits with its status (128+N if a signal N killed it, as bwrap reports).
 *
 * Not a boundary: it runs with the jail's privileges and the command may kill or
 * impersonate it; the allowlist is enforced by the daemon's proxy. It is C rather
 * than a Node script only to start in a millisecond and to cost the jail's memory
 * cap nothing. One forked process per connection, so a slow peer stalls nobody else.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static int write_all(int fd, const char *p, ssize_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, (size_t)n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= w;
	}
	return 0;
}

/* Copy both ways until both directions have ended. */
static void shuttle(int a, int b)
{
	static char buf[65536];
	struct pollfd p[2] = {{.fd = a, .events = POLLIN}, {.fd = b, .events = POLLIN}};
	int open_dirs = 2;
	while (open_dirs > 0) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		for (int i = 0; i < 2; i++) {
			if (p[i].fd < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			int to = i == 0 ? b : a;
			ssize_t n = read(p[i].fd, buf, sizeof buf);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				shutdown(to, SHUT_WR);
				p[i].fd = -1;
				open_dirs--;
			} else if (write_all(to, buf, n) < 0) {
				return;
			}
		}
	}
}

static void handle(int client, const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int up = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (up < 0 || strlen(path) >= sizeof sa.sun_path)
		_exit(1);
	strcpy(sa.sun_path, path);
	if (connect(up, (struct sockaddr *)&sa, sizeof sa) < 0)
		_exit(1);
	shuttle(client, up);
	_exit(0);
}

int main(int argc, char **argv)
{
	if (argc < 5 || strcmp(argv[3], "--") != 0) {
		fprintf(stderr, "usage: lspd-egress-fwd PORT SOCKET -- CMD [ARG...]\n");
		return 2;
	}
	int port = atoi(argv[1]);
	const char *path = argv[2];
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (l < 0 || setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
	    bind(l, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(l, 64) < 0) {
		fprintf(stderr, "lspd: egress forwarder cannot listen on 127.0.0.1:%d: %s\n", port, strerror(errno));
		return 125;
	}

	/* SIGCHLD through a signalfd; the mask is restored in every child before it runs. */
	sigset_t chld, old;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, &old);
	int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0)
		return 125;

	pid_t cmd = fork();
	if (cmd < 0)
		return 125;
	if (cmd == 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		execvp(argv[4], argv + 4);
		fprintf(stderr, "lspd: cannot run %s: %s\n", argv[4], strerror(errno));
		_exit(127);
	}

	struct pollfd p[2] = {{.fd = l, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
	for (;;) {
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			return 125;
		if (p[1].revents & POLLIN) {
			struct signalfd_siginfo si;
			while (read(sfd, &si, sizeof si) > 0)
				;
			int st;
			pid_t pid;
			while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
				if (pid == cmd)
					return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
			}
		}
		if (p[0].revents & POLLIN) {
			int c = accept4(l, NULL, NULL, SOCK_CLOEXEC);
			if (c < 0)
				continue;
			pid_t h = fork();
			if (h == 0) {
				sigprocmask(SIG_SETMASK, &old, NULL);
				close(l);
				close(sfd);
				handle(c, path);
			}
			close(c);
		}
	}
}
