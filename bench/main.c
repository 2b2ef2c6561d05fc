/*
 * fencebench: is your distributed lock a lease or a safety boundary?
 *
 * Exit codes: 0 success, 1 a fenced discipline failed (or the checker
 * disagreed with a store), 2 usage error, 3 runtime error, 128 + signal
 * when interrupted (the results measured so far are still written).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "options.h"
#include "report.h"
#include "run.h"

static fb_report report;

/* A second SIGINT/SIGTERM while results are being written: leave no
 * temporary file behind and go at once. */
static void on_second_signal(int sig)
{
	fb_report_abandon(&report);
	_exit(128 + sig);
}

/* `fencebench NAME ...`: the subcommands, each a main of its own. */
static const fb_command commands[] = {FB_COMMANDS};

int main(int argc, char **argv)
{
	if (argc > 1)
		for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
			if (commands[i].main && strcmp(argv[1], commands[i].name) == 0)
				return commands[i].main(argc - 1, argv + 1);

	/* Blocked here, inherited by every thread: the run waits for them
	 * with sigtimedwait, workers unblock only SIGUSR1 (the pause). */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);

	fb_config cfg;
	fb_config_defaults(&cfg);
	switch (fb_config_parse(&cfg, argc, argv)) {
	case FB_PARSE_EXIT0:
		return 0;
	case FB_PARSE_USAGE:
		return 2;
	case FB_PARSE_RUN:
		break;
	}

	fb_report_open(&report, &cfg);
	fb_report_header(stdout, &cfg);
	fflush(stdout);
	fb_results res;
	fb_err err = fb_run(&cfg, fb_report_tick, &report, &res);
	if (err != FB_OK && err != FB_EFENCE) {
		fb_report_abandon(&report);
		return err == FB_EINVAL ? 2 : 3; /* a bad plan file is bad input */
	}

	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_second_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigdelset(&set, SIGUSR1);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);

	if (report.progress && report.tty)
		fprintf(stderr, "\r%-100s\r", "");
	int code = fb_report_summary(&report, stdout, &res);
	if (res.interrupted)
		code = 128 + res.signal;
	else if (err == FB_EFENCE)
		code = 3;
	if (fb_report_write(&report, &res, code) && !res.interrupted)
		code = 3;
	fb_results_free(&res);
	return code;
}
