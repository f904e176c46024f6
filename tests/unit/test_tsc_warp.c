/* Unit tests for lib/tsc_warp.c: the boot TSC check's score (warps, the largest
 * one, turns taken, resolution) on made-up readings and on two modelled CPUs whose TSCs
 * differ by a known offset, and the cycles-to-ns conversion of the skew. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/tsc_warp.h"

static void note_all(struct tsc_warp *w, const unsigned *side, const uint64_t *v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		tsc_warp_note(w, side[i], v[i]);
}

/* Two CPUs strictly taking turns, every reading later than the one before it. */
static const unsigned turns_side[] = {0, 1, 0, 1, 0};
static const uint64_t turns_tsc[] = {100, 130, 150, 190, 200};

static void note_forward_turns(struct tsc_warp *w)
{
	tsc_warp_init(w);
	note_all(w, turns_side, turns_tsc, 5);
}

static void alternating_forward_readings_agree(void **state)
{
	struct tsc_warp w;

	(void)state;
	note_forward_turns(&w);
	assert_true(tsc_warp_agree(&w, 1));
	assert_int_equal(w.warps, 0);
	assert_int_equal(w.max_warp, 0);
	assert_int_equal(w.readings[0], 3);
	assert_int_equal(w.readings[1], 2);
	assert_int_equal(w.crossings[0], 2); /* 150 after 130, 200 after 190 */
	assert_int_equal(w.crossings[1], 2);
	/* side 1's smallest step is 30, side 0's 10: a lead under 30 could hide */
	assert_int_equal(tsc_warp_resolution(&w), 30);
}

static void a_step_back_is_a_warp_and_the_largest_is_kept(void **state)
{
	static const unsigned side[] = {0, 1, 0, 1, 0, 1};
	static const uint64_t v[] = {1000, 900, 1100, 400, 1200, 1150};
	struct tsc_warp w;

	(void)state;
	tsc_warp_init(&w);
	note_all(&w, side, v, 6);
	assert_false(tsc_warp_agree(&w, 1));
	assert_int_equal(w.warps, 3);
	assert_int_equal(w.max_warp, 700); /* 1100 then 400 */
	/* the readings after a warp still compare with it: 1200 after 400 is forward */
	assert_int_equal(w.crossings[0], 2);
}

static void readings_that_never_take_turns_prove_nothing(void **state)
{
	struct tsc_warp w;

	(void)state;
	tsc_warp_init(&w);
	for (uint64_t t = 1; t <= 100; t++)
		tsc_warp_note(&w, 0, t);
	for (uint64_t t = 101; t <= 200; t++)
		tsc_warp_note(&w, 1, t);
	assert_int_equal(w.warps, 0);
	assert_int_equal(w.crossings[0], 0);
	assert_int_equal(w.crossings[1], 1);
	assert_false(tsc_warp_agree(&w, 1)); /* only one direction was ever compared */
	assert_int_equal(tsc_warp_resolution(&w), UINT64_MAX);
}

static void too_few_comparisons_are_no_evidence(void **state)
{
	struct tsc_warp w;

	(void)state;
	note_forward_turns(&w);
	assert_true(tsc_warp_agree(&w, 2));
	assert_false(tsc_warp_agree(&w, 3)); /* two comparisons each way, not three */
	assert_true(tsc_warp_agree(&w, 0));  /* 0 asks for one, as 1 does */
	tsc_warp_init(&w);
	assert_false(tsc_warp_agree(&w, 0)); /* nothing read, nothing compared */
}

static void the_first_reading_compares_with_nothing(void **state)
{
	struct tsc_warp w;

	(void)state;
	tsc_warp_init(&w);
	tsc_warp_note(&w, 1, 0);
	assert_int_equal(w.warps, 0);
	assert_int_equal(w.crossings[0] + w.crossings[1], 0);
}

static void a_tsc_behind_past_zero_is_behind(void **state)
{
	/* CPU 1 reads 10 s (at 2.6 GHz) behind a CPU 0 that has run only 1 s: its TSC sits
	 * just under 2^64, which is behind, not 2^64 ahead */
	const uint64_t second = 2600000000ull;
	struct tsc_warp w;

	(void)state;
	tsc_warp_init(&w);
	tsc_warp_note(&w, 1, second - 10 * second); /* first: compares with nothing */
	tsc_warp_note(&w, 0, second + 100);
	tsc_warp_note(&w, 1, second + 200 - 10 * second);
	assert_int_equal(w.warps, 1);
	assert_int_equal(w.max_warp, 10 * second - 100);
	assert_int_equal(tsc_warp_ns(w.max_warp, 2600000000ull), 9999999962ull);
	assert_int_equal(w.min_step[0], 10 * second + 100); /* CPU 0 after CPU 1: forward */
}

static void one_cpu_stepping_back_is_a_warp_too(void **state)
{
	struct tsc_warp w;

	(void)state;
	tsc_warp_init(&w);
	tsc_warp_note(&w, 0, 500);
	tsc_warp_note(&w, 0, 480);
	assert_int_equal(w.warps, 1);
	assert_int_equal(w.max_warp, 20);
}

/*
 * Two CPUs modelled in true time: each turn passes `step` cycles, and CPU 1's TSC reads
 * `offset` cycles behind CPU 0's. CPU 0's lead shows as a warp exactly when it is larger than
 * a step, by the difference; a lead within the resolution stays hidden.
 */
static struct tsc_warp modelled(uint64_t step, uint64_t offset, unsigned turns)
{
	struct tsc_warp w;
	uint64_t t = 1000000;

	tsc_warp_init(&w);
	for (unsigned i = 0; i < turns; i++, t += step)
		tsc_warp_note(&w, i & 1, (i & 1) ? t - offset : t);
	return w;
}

static void a_lead_shows_once_it_exceeds_a_step(void **state)
{
	struct tsc_warp w;

	(void)state;
	w = modelled(100, 0, 1000);
	assert_true(tsc_warp_agree(&w, 1));
	assert_int_equal(tsc_warp_resolution(&w), 100);

	w = modelled(100, 100, 1000); /* CPU 1's reading equals the one before: no warp */
	assert_true(tsc_warp_agree(&w, 1));

	w = modelled(100, 99, 1000); /* within the resolution: hidden */
	assert_true(tsc_warp_agree(&w, 1));

	w = modelled(100, 350, 1000);
	assert_false(tsc_warp_agree(&w, 1));
	assert_int_equal(w.warps, 500); /* every one of CPU 1's readings */
	assert_int_equal(w.max_warp, 250);
}

static void cycles_to_ns_rounds_up(void **state)
{
	const uint64_t hz = 2600000000ull;

	(void)state;
	assert_int_equal(tsc_warp_ns(0, hz), 0);
	assert_int_equal(tsc_warp_ns(1, hz), 1); /* a warp is never reported as 0 ns */
	assert_int_equal(tsc_warp_ns(2600, hz), 1000);
	assert_int_equal(tsc_warp_ns(2601, hz), 1001);
	assert_int_equal(tsc_warp_ns(hz, hz), 1000000000ull);
	assert_int_equal(tsc_warp_ns(3 * hz + 13, hz), 3000000005ull);
}

static void cycles_to_ns_matches_exact_arithmetic(void **state)
{
	static const uint64_t hzs[] = {1,	   999999937,  1000000000,
				       2596154000, 4294967311, (1ull << 34)};
	uint64_t s = 0x1234567;

	(void)state;
	for (unsigned h = 0; h < sizeof(hzs) / sizeof(hzs[0]); h++) {
		for (unsigned i = 0; i < 10000; i++) {
			uint64_t c, want;

			s = s * 6364136223846793005ull + 1442695040888963407ull;
			c = s >> (i % 40); /* every magnitude */
			want =
			    (uint64_t)(((unsigned __int128)c * 1000000000u + hzs[h] - 1) / hzs[h]);
			if ((unsigned __int128)c * 1000000000u / hzs[h] >= UINT64_MAX - 1000000000u)
				continue; /* beyond what the conversion promises */
			assert_int_equal(tsc_warp_ns(c, hzs[h]), want);
		}
	}
}

static void cycles_to_ns_refuses_what_it_cannot_convert(void **state)
{
	(void)state;
	assert_int_equal(tsc_warp_ns(1000, 0), UINT64_MAX);
	assert_int_equal(tsc_warp_ns(1000, (1ull << 34) + 1), UINT64_MAX);
	assert_int_equal(tsc_warp_ns(UINT64_MAX, 1), UINT64_MAX);
	assert_int_equal(tsc_warp_ns(UINT64_MAX, 1000000000), UINT64_MAX);
	/* the largest whole number of seconds it still converts */
	assert_int_equal(tsc_warp_ns(18446744072999999999ull, 1000000000), 18446744072999999999ull);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(alternating_forward_readings_agree),
	    cmocka_unit_test(a_step_back_is_a_warp_and_the_largest_is_kept),
	    cmocka_unit_test(readings_that_never_take_turns_prove_nothing),
	    cmocka_unit_test(too_few_comparisons_are_no_evidence),
	    cmocka_unit_test(the_first_reading_compares_with_nothing),
	    cmocka_unit_test(a_tsc_behind_past_zero_is_behind),
	    cmocka_unit_test(one_cpu_stepping_back_is_a_warp_too),
	    cmocka_unit_test(a_lead_shows_once_it_exceeds_a_step),
	    cmocka_unit_test(cycles_to_ns_rounds_up),
	    cmocka_unit_test(cycles_to_ns_matches_exact_arithmetic),
	    cmocka_unit_test(cycles_to_ns_refuses_what_it_cannot_convert),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
