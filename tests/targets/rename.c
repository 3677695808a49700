/* A thread that renames itself after it has run a while (as a JVM names
 * its threads once they start): psup must show the new name.
 * Usage: rename SECONDS */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

static double secs = 1.0;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void spin(double s)
{
	volatile unsigned long x = 0;
	double until = now() + s;

	while (now() < until)
		for (int i = 0; i < 10000; i++)
			x += (unsigned long)i;
}

static void *worker(void *arg)
{
	(void)arg;
	spin(secs / 3);
	pthread_setname_np(pthread_self(), "renamed-late");
	spin(secs / 3);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;

	if (argc > 1)
		secs = atof(argv[1]);
	pthread_setname_np(pthread_self(), "first-main");
	if (pthread_create(&t, NULL, worker, NULL))
		return 1;
	pthread_join(t, NULL);
	/* The main thread too, after its creation and with samples. */
	spin(secs / 6);
	pthread_setname_np(pthread_self(), "main-renamed");
	spin(secs / 6);
	return 0;
}
