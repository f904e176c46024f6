/*
 * The knob name closest to a mistyped one, for the unknown-knob message. It is the choice of
 * Python's difflib.get_close_matches(word, names, n=1, cutoff=0.6), which the host's matrix
 * parser makes (tools/idlelab/bench/matrix.py, _did_you_mean), so that a name misspelt in a
 * matrix and on a boot command line gets the same suggestion: SequenceMatcher's ratio
 * 2 * M / (len(name) + len(word)), where M counts the characters of the longest common block
 * and, recursively, of the blocks left and right of it; at least 0.6; a tie goes to the name
 * that sorts last, as nlargest() breaks it. The word is compared byte for byte (the names
 * are ASCII). No floating point in the kernel, so ratios are compared as fractions.
 */
#include "kernel/knobs/knob_text.h"

/*
 * A word longer than this is below the cutoff against any name: even wholly matched, a name
 * of n characters gives 2n / (n + len) < 0.6 once len > 7n / 3. So the block search works on
 * bounded arrays, and autojunk (difflib's, for words of 200 characters or more) never applies.
 */
#define SUGGEST_WORD_MAX ((KNOB_NAME_MAX - 1) * 7 / 3)
_Static_assert(SUGGEST_WORD_MAX < 128, "suggest.c counts a word's bytes in a signed char");

/* A block a[i..i+k) == b[j..j+k), and a pair of ranges still to search. */
struct block {
	size_t i, j, k;
};
struct ranges {
	unsigned char alo, ahi, blo, bhi;
};

/* ratio >= 0.6 with M matches of len characters in all: 2M / len >= 3 / 5. */
static bool close_enough(size_t matches, size_t len)
{
	return 10 * matches >= 3 * len;
}

/*
 * difflib's quick_ratio bound: the bytes name and word share, counted with their repeats.
 * left[] holds the word's byte counts and is as it was on return.
 */
static size_t shared_bytes(const char *name, size_t la, signed char left[256])
{
	size_t shared = 0;

	for (size_t i = 0; i < la; i++)
		if (--left[(unsigned char)name[i]] >= 0)
			shared++;
	for (size_t i = 0; i < la; i++)
		left[(unsigned char)name[i]]++;
	return shared;
}

/*
 * The longest block in a[alo..ahi) and b[blo..bhi); of equal ones the first in a, then the
 * first in b, as difflib's find_longest_match without junk. run[j + 1] is the length of the
 * common run ending at a[i], b[j]; j descends, so run[j] still holds the row before's, and
 * run[blo] stays 0: no run starts before the range.
 */
static struct block longest_block(const char *a, const char *b, const struct ranges *r)
{
	unsigned char run[SUGGEST_WORD_MAX + 1];
	struct block best = {r->alo, r->blo, 0};
	size_t best_row = 0;

	memset(run + r->blo, 0, (size_t)(r->bhi - r->blo) + 1);
	for (size_t i = r->alo; i < r->ahi; i++) {
		for (size_t j = r->bhi; j-- > r->blo;) {
			unsigned char k = a[i] == b[j] ? (unsigned char)(run[j] + 1) : 0;

			run[j + 1] = k;
			/* Within a row a later j is an earlier block in b. */
			if (k > best.k || (k && k == best.k && best_row == i)) {
				best = (struct block){i + 1 - k, j + 1 - k, k};
				best_row = i;
			}
		}
	}
	return best;
}

/*
 * M of SequenceMatcher(None, a, b).get_matching_blocks(). The ranges waiting on the stack are
 * disjoint and non-empty in a, so there are never more than a's length of them.
 */
static size_t matching_chars(const char *a, size_t la, const char *b, size_t lb)
{
	struct ranges stack[KNOB_NAME_MAX];
	size_t depth = 0;
	size_t matches = 0;

	stack[depth++] = (struct ranges){0, (unsigned char)la, 0, (unsigned char)lb};
	while (depth > 0) {
		struct ranges r = stack[--depth];
		struct block m = longest_block(a, b, &r);

		if (m.k == 0)
			continue;
		matches += m.k;
		if (r.alo < m.i && r.blo < m.j)
			stack[depth++] =
			    (struct ranges){r.alo, (unsigned char)m.i, r.blo, (unsigned char)m.j};
		if (m.i + m.k < r.ahi && m.j + m.k < r.bhi)
			stack[depth++] = (struct ranges){(unsigned char)(m.i + m.k), r.ahi,
							 (unsigned char)(m.j + m.k), r.bhi};
	}
	return matches;
}

/* The name with the best ratio so far: m matching characters of len in all. */
struct candidate {
	const char *name;
	size_t m, len;
};

/* m / len against the best's, without division: <0, 0 or >0. */
static int compare_ratio(size_t m, size_t len, const struct candidate *best)
{
	size_t x = m * best->len, y = best->m * len;

	return x < y ? -1 : x > y;
}

/* Whether a name of ratio m / len, or of at most that, can still be the suggestion. */
static bool may_win(size_t m, size_t len, const struct candidate *best)
{
	return close_enough(m, len) && (!best->name || compare_ratio(m, len, best) >= 0);
}

const char *knob_suggest(const char *word, size_t len)
{
	signed char left[256] = {0};
	struct candidate best = {NULL, 0, 1};

	if (len > SUGGEST_WORD_MAX)
		return NULL;
	for (size_t i = 0; i < len; i++)
		left[(unsigned char)word[i]]++;
	for (int i = 0; i < KNOB__COUNT; i++) {
		const char *name = knob_defs[i].name;
		size_t la = strlen(name);
		size_t total = la + len;
		size_t m;

		/* difflib's real_quick_ratio and quick_ratio: cheap bounds from above. */
		if (!may_win(la < len ? la : len, total, &best) ||
		    !may_win(shared_bytes(name, la, left), total, &best))
			continue;
		m = matching_chars(name, la, word, len);
		if (!may_win(m, total, &best) ||
		    (best.name && compare_ratio(m, total, &best) == 0 &&
		     strcmp(name, best.name) < 0))
			continue;
		best = (struct candidate){name, m, total};
	}
	return best.name;
}
