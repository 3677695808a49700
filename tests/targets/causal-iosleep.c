/* causal-iosleep SECONDS [HANDLE_ITERS]
 *
 * Requests that arrive at a fixed pace from I/O. A feeder thread sleeps 1 ms
 * (nanosleep, marker causal_io_sleep) then writes one byte into a pipe; a
 * handler thread blocks in read() on the pipe (marker causal_io_read), works on
 * the request (HANDLE_ITERS, default 200,000 ~0.3 ms, marker causal_io_handle)
 * and counts it (marker causal_io_done, also causal_io_request_done(): the
 * progress point). Beside them a worker thread computes on its own
 * (marker causal_io_spin). Throughput is set by the arrivals alone: no line
 * can speed the program up. A profiler that credited the feeder's sleep
 * (blocking I/O is NOT credited: Coz 3.4.2) would let arrivals run ahead of
 * the virtual clock and show a phantom speedup for the handler's line.
 * Runs until SECONDS of wall time passed; prints "requests N"; exits 0.
 * Ground truth: CAUSAL_CUT=causal_io_handle:PCT (or causal_io_spin).
 * Exit: 0, 64 on a usage error.
 */
#include <errno.h>
#include <pthread.h>
#include <unistd.h>

#include "causal-common.h"

static unsigned long handle_iters, spin_iters;
static int pipefd[2];
static volatile int stop;
static double deadline;
static unsigned long requests;
static volatile unsigned long sink;

__attribute__((noipa)) void causal_io_request_done(void)
{
	requests++; CAUSAL_PROGRESS; /* MARK:causal_io_done */
}

__attribute__((noipa)) static void handle_request(unsigned long *acc)
{
	CAUSAL_WORK(*acc, handle_iters) /* MARK:causal_io_handle */
}

__attribute__((noipa)) static void spin_work(unsigned long *acc)
{
	CAUSAL_WORK(*acc, spin_iters) /* MARK:causal_io_spin */
}

static void *feeder(void *arg)
{
	struct timespec ts = { 0, 1000000 };
	char c = 'r';

	(void)arg;
	while (causal_now() < deadline) {
		nanosleep(&ts, NULL); /* MARK:causal_io_sleep */
		if (write(pipefd[1], &c, 1) != 1)
			break;
	}
	close(pipefd[1]);
	return NULL;
}

static void *handler(void *arg)
{
	unsigned long acc = 1;
	ssize_t n;
	char c;

	(void)arg;
	for (;;) {
		n = read(pipefd[0], &c, 1); /* MARK:causal_io_read */
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		handle_request(&acc);
		causal_io_request_done();
	}
	sink = acc;
	stop = 1;
	return NULL;
}

static void *worker(void *arg)
{
	unsigned long acc = 7;

	(void)arg;
	while (!stop)
		spin_work(&acc);
	sink = acc;
	return NULL;
}

int main(int argc, char **argv)
{
	double seconds = causal_arg(argc, argv, 1, 5);
	pthread_t f, h, w;

	handle_iters = (unsigned long)causal_arg(argc, argv, 2, 200000);
	spin_iters = causal_cut(handle_iters, causal_cut_pct("causal_io_spin"));
	handle_iters = causal_cut(handle_iters, causal_cut_pct("causal_io_handle"));
	if (pipe(pipefd))
		return 71;
	deadline = causal_now() + seconds;
	if (pthread_create(&h, NULL, handler, NULL) || pthread_create(&w, NULL, worker, NULL) ||
	    pthread_create(&f, NULL, feeder, NULL))
		return 70;
	pthread_join(f, NULL);
	pthread_join(h, NULL);
	pthread_join(w, NULL);
	printf("requests %lu\n", requests);
	return 0;
}
