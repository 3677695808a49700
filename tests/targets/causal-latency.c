/* causal-latency SECONDS [SERVE_ITERS]
 *
 * Latency with a known shape (a closed system: Little's law holds). Three
 * client threads each, in turn: think (sleep 2 ms), begin a request
 * (marker causal_lat_begin, causal_lat_begin_point()), queue it for the one
 * server thread and wait for its answer, end it (marker causal_lat_end,
 * causal_lat_end_point()). The server serves requests in order, SERVE_ITERS
 * (default 600,000, ~1 ms) each (marker causal_lat_serve). A request's latency
 * is its queueing plus its service: making the serve line faster makes the
 * latency fall, i.e. a POSITIVE program speedup for a latency point (the
 * sign Coz's viewer is said to invert). Built -DCAUSAL_PSUP_H / -DCAUSAL_COZ_H
 * the two lines are also PSUP_BEGIN/END("request") (COZ_BEGIN/END).
 * Runs until SECONDS of wall time passed; prints "requests N" and
 * "latency_ns N", the mean time from begin to end measured by the clients
 * (the benchmark's ground truth); exits 0.
 * Ground truth: CAUSAL_CUT=causal_lat_serve:PCT.
 * Exit: 0, 64 on a usage error.
 */
#include <pthread.h>

#include "causal-common.h"

#define CLIENTS 3

static unsigned long serve_iters;
static double deadline;
static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work_cond = PTHREAD_COND_INITIALIZER, done_cond = PTHREAD_COND_INITIALIZER;
/* FIFO of client ids; served[i] counts client i's answered requests. */
static int fifo[CLIENTS], fifo_len, clients_left = CLIENTS;
static unsigned long served[CLIENTS], requests;
/* Per client: requests ended and their summed latency (s). */
static double lat_sum[CLIENTS];
static unsigned long lat_n[CLIENTS];
static volatile unsigned long sink;

__attribute__((noipa)) void causal_lat_begin_point(void)
{
	__asm__ volatile(""); CAUSAL_BEGIN("request"); /* MARK:causal_lat_begin */
}

__attribute__((noipa)) void causal_lat_end_point(void)
{
	__asm__ volatile(""); CAUSAL_END("request"); /* MARK:causal_lat_end */
}

__attribute__((noipa)) static void serve(unsigned long *acc)
{
	CAUSAL_WORK(*acc, serve_iters) /* MARK:causal_lat_serve */
}

static void *client(void *arg)
{
	int id = (int)(long)arg;
	struct timespec think = { 0, 2000000 };
	unsigned long mine;
	double t0;

	while (causal_now() < deadline) {
		nanosleep(&think, NULL);
		t0 = causal_now();
		causal_lat_begin_point();
		pthread_mutex_lock(&mutex);
		mine = served[id];
		fifo[fifo_len++] = id;
		pthread_cond_signal(&work_cond);
		while (served[id] == mine)
			pthread_cond_wait(&done_cond, &mutex);
		pthread_mutex_unlock(&mutex);
		causal_lat_end_point();
		lat_sum[id] += causal_now() - t0;
		lat_n[id]++;
	}
	pthread_mutex_lock(&mutex);
	clients_left--;
	pthread_cond_signal(&work_cond);
	pthread_mutex_unlock(&mutex);
	return NULL;
}

int main(int argc, char **argv)
{
	double seconds = causal_arg(argc, argv, 1, 5);
	pthread_t t[CLIENTS];
	unsigned long acc = 1;
	int id;

	serve_iters = (unsigned long)causal_arg(argc, argv, 2, 600000);
	serve_iters = causal_cut(serve_iters, causal_cut_pct("causal_lat_serve"));
	deadline = causal_now() + seconds;
	for (long i = 0; i < CLIENTS; i++)
		if (pthread_create(&t[i], NULL, client, (void *)i))
			return 70;
	pthread_mutex_lock(&mutex);
	for (;;) {
		while (fifo_len == 0 && clients_left > 0)
			pthread_cond_wait(&work_cond, &mutex);
		if (fifo_len == 0)
			break;
		id = fifo[0];
		for (int i = 1; i < fifo_len; i++)
			fifo[i - 1] = fifo[i];
		fifo_len--;
		pthread_mutex_unlock(&mutex);
		serve(&acc);
		pthread_mutex_lock(&mutex);
		served[id]++;
		requests++;
		pthread_cond_broadcast(&done_cond);
	}
	pthread_mutex_unlock(&mutex);
	for (int i = 0; i < CLIENTS; i++)
		pthread_join(t[i], NULL);
	sink = acc;
	double sum = 0;
	unsigned long n = 0;
	for (int i = 0; i < CLIENTS; i++) {
		sum += lat_sum[i];
		n += lat_n[i];
	}
	printf("requests %lu\nlatency_ns %.0f\n", requests, n ? sum / n * 1e9 : 0.0);
	return 0;
}
