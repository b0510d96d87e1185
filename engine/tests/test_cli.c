/* The binary itself: a bad option exits 2 with exactly one line on stderr
 * and nothing on stdout, before opening anything; --version is one JSON line,
 * and so is --describe;
 * --idle waits until SIGTERM and exits 0. */
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static const char *engine;

static int run(char **argv, char *out, size_t outlen, char *err, size_t errlen)
{
	int po[2], pe[2], status;
	pid_t pid;
	posix_spawn_file_actions_t fa;

	if (pipe(po) || pipe(pe))
		return -1;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, po[1], 1);
	posix_spawn_file_actions_adddup2(&fa, pe[1], 2);
	posix_spawn_file_actions_addclose(&fa, po[0]);
	posix_spawn_file_actions_addclose(&fa, pe[0]);
	argv[0] = (char *)engine;
	if (posix_spawn(&pid, engine, &fa, NULL, argv, NULL))
		return -1;
	close(po[1]);
	close(pe[1]);
	/* until the end: a long document (--describe) comes in more than one write */
	size_t got = 0;
	ssize_t n;
	while (got < outlen - 1 && (n = read(po[0], out + got, outlen - 1 - got)) > 0)
		got += (size_t)n;
	out[got] = 0;
	n = read(pe[0], err, errlen - 1);
	err[n > 0 ? n : 0] = 0;
	close(po[0]);
	close(pe[0]);
	waitpid(pid, &status, 0);
	posix_spawn_file_actions_destroy(&fa);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static void bad(char **argv, const char *name)
{
	char out[4096], err[4096];
	int rc = run(argv, out, sizeof(out), err, sizeof(err));
	char *nl = strchr(err, '\n');

	CHECK(rc == 2, "exit %d for %s %s", rc, argv[1], argv[2] ? argv[2] : "");
	CHECK(nl && nl[1] == 0, "one line on stderr: [%s]", err);
	CHECK(strstr(err, name) != NULL, "names %s: %s", name, err);
	CHECK(out[0] == 0, "nothing on stdout: %s", out);
}

/* --idle runs until a signal: still there after a while, gone with 0 on SIGTERM. */
static void idles(void)
{
	pid_t pid;
	int status;
	char *argv[] = { (char *)engine, "--idle", NULL };

	CHECK(posix_spawn(&pid, engine, NULL, NULL, argv, NULL) == 0, "spawn --idle");
	usleep(100000);
	CHECK(waitpid(pid, &status, WNOHANG) == 0, "--idle still running after 0.1 s");
	kill(pid, SIGTERM);
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "--idle exits 0 on SIGTERM (status %d)", status);
}

int main(int argc, char **argv)
{
	char out[8192], err[4096];

	if (argc < 2) {
		fprintf(stderr, "usage: test_cli PATH-TO-ENGINE\n");
		return 2;
	}
	engine = argv[1];
	bad((char *[]){ NULL, "send", "--rate", "lots", NULL }, "--rate");
	bad((char *[]){ NULL, "recv", "-b", "0", NULL }, "--burst");
	bad((char *[]){ NULL, "recv", "--api", "raw", NULL }, "--iface");
	bad((char *[]){ NULL, "nf", "--api", "udp", "--dst-mac", "02:00:00:00:00:01", NULL }, "--api");
	bad((char *[]){ NULL, "recv", "--poll", "never", NULL }, "--poll");
	bad((char *[]){ NULL, "nf", "--api", "raw", "--iface", "eth0", "--nf", "l3", "--dst-mac", "02:00:00:00:00:01",
			  "--route", "10.0.0.0/33,1", NULL }, "--route");
	bad((char *[]){ NULL, "nonsense", NULL }, "ROLE");
	bad((char *[]){ NULL, "recv", "--frobnicate", NULL }, "--frobnicate");
	bad((char *[]){ NULL, "client", "--dst-ip", "198.18.0.2", "--threads", "3", NULL }, "--threads");

	int rc = run((char *[]){ NULL, "--version", NULL }, out, sizeof(out), err, sizeof(err));
	CHECK(rc == 0, "--version exits 0");
	CHECK(!strncmp(out, "{\"version\": \"", 13) && strstr(out, "\"apis\": [\"udp\", \"raw\"") &&
	      strchr(out, '\n') == out + strlen(out) - 1, "--version is one JSON line: %s", out);
	CHECK(strstr(out, "], \"nfs\": [\"l2\", \"mirror\", \"strip-encap\", \"l3\"]}\n"),
	      "--version lists the NF kinds last: %s", out);
	/* the whole document's shape: describe.py (meson test describe) */
	static char doc[65536];
	rc = run((char *[]){ NULL, "--describe", NULL }, doc, sizeof(doc), err, sizeof(err));
	CHECK(rc == 0 && !err[0], "--describe exits 0, nothing on stderr: %d %s", rc, err);
	CHECK(!strncmp(doc, "{\"version\": \"", 13) && strstr(doc, "\"polls\": [{\"name\": \"busy\"") &&
	      strstr(doc, "\"options\": [{\"name\": \"api\"") && strchr(doc, '\n') == doc + strlen(doc) - 1,
	      "--describe is one JSON document on one line: %.200s", doc);
	rc = run((char *[]){ NULL, "--help", NULL }, out, sizeof(out), err, sizeof(err));
	CHECK(rc == 0 && strstr(out, "usage:"), "--help");
	CHECK(strstr(out, "api udp:\n  -m/--mmsg") && strstr(out, "api raw (needs --iface):"),
	      "--help lists each api's own options: %s", out);
	bad((char *[]){ NULL, "recv", "--api", "raw", "--iface", "eth0", "--mmsg", "--drain", "-1", NULL }, "--drain");
	bad((char *[]){ NULL, "recv", "-R", "eth0", NULL }, "-R");
	bad((char *[]){ NULL, "--idle", "now", NULL }, "--idle");
	idles();
	return check_done("cli");
}
