/*
 * Whether the CPUs' TSCs agree, checked once at boot the way Linux's check_tsc_warp() does
 * (lib/tsc_warp.h keeps the score): the BSP and each AP in turn, right after the AP
 * comes online, read the TSC back and forth under one lock. A figure computed from two
 * CPUs' stamps is printed only where they agree (the wakepath record's phases).
 */
#ifndef IDLELAB_KERNEL_TSC_SYNC_H
#define IDLELAB_KERNEL_TSC_SYNC_H

#include <stdbool.h>
#include <stdint.h>

struct tsc_sync_result {
	bool agree;	  /* every check found agreement (also with one CPU: nothing to check) */
	uint64_t skew_ns; /* the largest warp any check saw, rounded up */
	/* the coarsest check's resolution: a smaller lead could hide (UINT64_MAX: a check
	 * whose sides never followed each other) */
	uint64_t resolution_ns;
	uint64_t readings;  /* TSC readings taken, both sides of every check */
	uint64_t crossings; /* readings that followed the other CPU's */
	uint64_t took_ns;   /* the checks' total time on the BSP */
};

extern struct tsc_sync_result tsc_sync;

/* BSP: checks against AP `cpu`, which is in tsc_sync_join(). False if the AP did not join
 * within timeout_ns. */
bool tsc_sync_check(unsigned cpu, uint64_t timeout_ns);
/* AP: waits for the BSP to call for it, then takes its side. */
void tsc_sync_join(void);
/* One line for people: the verdict, what it rests on and what it cost. */
void tsc_sync_report(void);

#endif
