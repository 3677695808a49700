/* A function with a 64 KiB stack frame, called from main, where every
 * sample falls: the return address to main lies far above an 8 KiB stack
 * snapshot. Usage: bigframe SECONDS */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static uint64_t big_frame_work(double until)
{
	volatile uint8_t buf[64 * 1024];
	uint64_t sum = 0;

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)i;
	while (now() < until)
		for (size_t i = 0; i < 4096; i++)
			sum += buf[(i * 7919) % sizeof(buf)]; /* MARK:bigframe */
	return sum;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 1.0;

	return big_frame_work(now() + secs) == 1; /* MARK:main */
}
