/*
 * knobdoc: the knob tables of the documentation (docs/knobs.md, every knob; README.md, the
 * ones people use most), generated from kernel/knobs/knob_table.h through the same
 * knobs_print_markdown() the kernel carries, so the documentation cannot drift from the
 * parser.
 *
 *   knobdoc                print the table
 *   knobdoc --check FILE   exit 1, with a diff, if the text between the lines
 *                          <!-- knobs:begin --> and <!-- knobs:end --> in FILE is not the table
 *   knobdoc --update FILE  rewrite that text in place (FILE is untouched if already current)
 *
 * A begin line that names knobs, <!-- knobs:begin idle hz -->, asks for the table's header
 * and those knobs' rows alone, in that order (a short table whose rows are still generated).
 *   knobdoc --check-cmdline TEXT
 *                          exit 1, printing the kernel's own one-line error, if the kernel
 *                          would refuse the command line TEXT (EXIT_BAD_KNOB at boot)
 *   knobdoc --check-cmdline -
 *                          the same for each line of stdin: "N: error" for each bad line N
 *   knobdoc --defaults      every knob's default as name=value, one a line, as the kernel
 *                          writes it (knob_format_value)
 *   knobdoc --check-switchable TEXT
 *                          exit 1, printing the kernel's own one-line error, if the guest
 *                          would refuse TEXT as settings between two windows
 *
 * --check-cmdline runs knobs_parse() and the kernel's length limit, so the host harness
 * refuses a bad matrix value before anything boots with one definition of what is valid.
 *
 * Exit status: 0 current, done or valid; 1 stale (--check) or refused (--check-cmdline);
 * 2 usage, I/O or marker error.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "boot/bootinfo.h"
#include "kernel/knobs/knobs.h"
#include "kernel/knobs/switchable.h"

#define MARK_BEGIN "<!-- knobs:begin -->"
#define MARK_END   "<!-- knobs:end -->"
/* A begin line with knob names: this, the names separated by blanks, then " -->". */
#define MARK_BEGIN_NAMED "<!-- knobs:begin "
#define MARK_CLOSE	 " -->"

/* A growable byte buffer; every allocation failure ends the program. */
struct buf {
	char *data;
	size_t len;
	size_t cap;
};

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p) {
		fprintf(stderr, "knobdoc: out of memory\n");
		exit(2);
	}
	return p;
}

static void buf_add(struct buf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		b->cap = (b->len + n + 1) * 2;
		b->data = xrealloc(b->data, b->cap);
	}
	memcpy(b->data + b->len, s, n);
	b->len += n;
	b->data[b->len] = '\0';
}

static void emit_line(const char *line, void *ctx)
{
	buf_add(ctx, line, strlen(line));
	buf_add(ctx, "\n", 1);
}

static struct buf generated_table(void)
{
	struct buf b = {NULL, 0, 0};

	knobs_print_markdown(emit_line, &b);
	return b;
}

static bool read_file(const char *path, struct buf *b)
{
	FILE *f = fopen(path, "rb");
	char chunk[4096];
	size_t n;

	if (!f) {
		perror(path);
		return false;
	}
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		buf_add(b, chunk, n);
	buf_add(b, "", 0); /* a NUL even for an empty file */
	if (ferror(f)) {
		perror(path);
		fclose(f);
		return false;
	}
	fclose(f);
	return true;
}

/* Writes through a temporary file and rename, so an interrupted update never truncates. */
static bool write_file(const char *path, const struct buf *b)
{
	size_t tmp_len = strlen(path) + 16;
	char *tmp = xrealloc(NULL, tmp_len);
	FILE *f;
	bool ok;

	snprintf(tmp, tmp_len, "%s.knobdoc.tmp", path);
	f = fopen(tmp, "wb");
	ok = f && fwrite(b->data, 1, b->len, f) == b->len;
	ok = f && fclose(f) == 0 && ok;
	ok = ok && rename(tmp, path) == 0;
	if (!ok) {
		perror(tmp);
		remove(tmp);
	}
	free(tmp);
	return ok;
}

/* --- the marked section --- */

/*
 * Byte offsets of the text strictly between the marker lines, its first line number, and the
 * knob names the begin line gives (names_len 0: every knob).
 */
struct section {
	size_t start;
	size_t end;
	size_t first_line;
	const char *names;
	size_t names_len;
};

/* A marker line may carry surrounding blanks or a CR from a CRLF file. */
static void trim(const char **line, size_t *n)
{
	while (*n > 0 && ((*line)[0] == ' ' || (*line)[0] == '\t')) {
		(*line)++;
		(*n)--;
	}
	while (*n > 0 &&
	       ((*line)[*n - 1] == ' ' || (*line)[*n - 1] == '\t' || (*line)[*n - 1] == '\r'))
		(*n)--;
}

static bool is_marker(const char *line, size_t n, const char *marker)
{
	size_t m = strlen(marker);

	trim(&line, &n);
	return n == m && memcmp(line, marker, m) == 0;
}

/* A begin line naming knobs: their list into *names (not NUL-terminated). */
static bool is_named_begin(const char *line, size_t n, const char **names, size_t *names_len)
{
	size_t pre = strlen(MARK_BEGIN_NAMED);
	size_t post = strlen(MARK_CLOSE);

	trim(&line, &n);
	if (n <= pre + post || memcmp(line, MARK_BEGIN_NAMED, pre) != 0 ||
	    memcmp(line + n - post, MARK_CLOSE, post) != 0)
		return false;
	*names = line + pre;
	*names_len = n - pre - post;
	trim(names, names_len);
	return *names_len > 0;
}

static bool marker_error(const char *path, const char *what)
{
	fprintf(stderr,
		"%s: %s (the table goes between a line " MARK_BEGIN " and a line " MARK_END ")\n",
		path, what);
	return false;
}

static bool find_section(const char *path, const struct buf *text, struct section *sec)
{
	bool in_section = false;
	bool found = false;
	size_t line_no = 1;

	for (size_t pos = 0; pos < text->len; line_no++) {
		const char *nl = memchr(text->data + pos, '\n', text->len - pos);
		size_t len = nl ? (size_t)(nl - (text->data + pos)) : text->len - pos;
		size_t next = nl ? pos + len + 1 : text->len;

		const char *names = NULL;
		size_t names_len = 0;

		if (is_marker(text->data + pos, len, MARK_BEGIN) ||
		    is_named_begin(text->data + pos, len, &names, &names_len)) {
			if (in_section || found)
				return marker_error(path, "more than one " MARK_BEGIN);
			in_section = true;
			sec->start = next;
			sec->first_line = line_no + 1;
			sec->names = names;
			sec->names_len = names_len;
		} else if (is_marker(text->data + pos, len, MARK_END)) {
			if (!in_section)
				return marker_error(path,
						    MARK_END " without a " MARK_BEGIN " before it");
			in_section = false;
			found = true;
			sec->end = pos;
		}
		pos = next;
	}
	if (in_section)
		return marker_error(path, MARK_BEGIN " without a " MARK_END " after it");
	if (!found)
		return marker_error(path, "no " MARK_BEGIN " line");
	return true;
}

/* --- a line diff for --check --- */

struct span {
	const char *s;
	size_t n;
};

static size_t split_lines(const char *text, size_t len, struct span **out)
{
	size_t count = 0;
	struct span *v = NULL;

	for (size_t pos = 0; pos < len;) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;

		v = xrealloc(v, (count + 1) * sizeof(*v));
		v[count++] = (struct span){text + pos, n};
		pos += n + 1;
	}
	*out = v;
	return count;
}

static bool same_line(struct span a, struct span b)
{
	return a.n == b.n && memcmp(a.s, b.s, a.n) == 0;
}

/* The LCS table is (na + 1) x (nb + 1), row-major. */
static size_t *lcs_cell(size_t *lcs, size_t nb, size_t i, size_t j)
{
	return &lcs[i * (nb + 1) + j];
}

/* *lcs_cell(i, j): length of the longest common subsequence of a[i..] and b[j..]. */
static size_t *lcs_table(const struct span *a, size_t na, const struct span *b, size_t nb)
{
	size_t *lcs = xrealloc(NULL, (na + 1) * (nb + 1) * sizeof(*lcs));

	for (size_t i = na + 1; i-- > 0;) {
		for (size_t j = nb + 1; j-- > 0;) {
			size_t *cell = lcs_cell(lcs, nb, i, j);
			size_t down;
			size_t right;

			if (i == na || j == nb) {
				*cell = 0;
				continue;
			}
			if (same_line(a[i], b[j])) {
				*cell = 1 + *lcs_cell(lcs, nb, i + 1, j + 1);
				continue;
			}
			down = *lcs_cell(lcs, nb, i + 1, j);
			right = *lcs_cell(lcs, nb, i, j + 1);
			*cell = down >= right ? down : right;
		}
	}
	return lcs;
}

/* Prints only changed lines: "-" as in the file (with its line number), "+" as generated. */
static void print_diff(const char *path, size_t first_line, const char *old, size_t old_len,
		       const char *new, size_t new_len)
{
	struct span *a;
	struct span *b;
	size_t na = split_lines(old, old_len, &a);
	size_t nb = split_lines(new, new_len, &b);
	size_t *lcs = lcs_table(a, na, b, nb);
	size_t i = 0;
	size_t j = 0;

	fprintf(stderr, "--- %s (knob table, from line %zu)\n", path, first_line);
	fprintf(stderr, "+++ generated from kernel/knobs/knob_table.h\n");
	while (i < na || j < nb) {
		if (i < na && j < nb && same_line(a[i], b[j])) {
			i++;
			j++;
		} else if (j == nb || (i < na && *lcs_cell(lcs, nb, i + 1, j) >=
						     *lcs_cell(lcs, nb, i, j + 1))) {
			fprintf(stderr, "-%.*s    (line %zu)\n", (int)a[i].n, a[i].s,
				first_line + i);
			i++;
		} else {
			fprintf(stderr, "+%.*s\n", (int)b[j].n, b[j].s);
			j++;
		}
	}
	free(lcs);
	free(a);
	free(b);
}

/* --- commands --- */

/* The line of text starting at pos, without its newline; pos moves past it. */
static struct span next_line(const struct buf *b, size_t *pos)
{
	const char *nl = memchr(b->data + *pos, '\n', b->len - *pos);
	size_t n = nl ? (size_t)(nl - (b->data + *pos)) : b->len - *pos;
	struct span line = {b->data + *pos, n};

	*pos += nl ? n + 1 : n;
	return line;
}

/* The generated row of the knob called name ("| `name` | ..."), or NULL. */
static const char *knob_row(const struct buf *table, const char *name, size_t name_len,
			    size_t *row_len)
{
	for (size_t pos = 0; pos < table->len;) {
		struct span line = next_line(table, &pos);

		if (line.n > name_len + 5 && memcmp(line.s, "| `", 3) == 0 &&
		    memcmp(line.s + 3, name, name_len) == 0 &&
		    memcmp(line.s + 3 + name_len, "` |", 3) == 0) {
			*row_len = line.n;
			return line.s;
		}
	}
	return NULL;
}

/* What belongs in the section: the whole table, or its header and the named knobs' rows. */
static bool wanted_text(const char *path, const struct section *sec, const struct buf *table,
			struct buf *out)
{
	size_t pos = 0;
	const char *p = sec->names;
	const char *end = sec->names + sec->names_len;

	if (sec->names_len == 0) {
		buf_add(out, table->data, table->len);
		return true;
	}
	for (int i = 0; i < 2; i++) { /* the header row and its rule */
		struct span line = next_line(table, &pos);

		buf_add(out, line.s, line.n);
		buf_add(out, "\n", 1);
	}
	while (p < end) {
		const char *name = p;
		const char *row;
		size_t row_len;

		while (p < end && *p != ' ' && *p != '\t')
			p++;
		row = knob_row(table, name, (size_t)(p - name), &row_len);
		if (!row) {
			fprintf(stderr, "%s:%zu: no knob '%.*s' in kernel/knobs/knob_table.h\n",
				path, sec->first_line - 1, (int)(p - name), name);
			return false;
		}
		buf_add(out, row, row_len);
		buf_add(out, "\n", 1);
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
	}
	return true;
}

static int check(const char *path, const struct buf *table)
{
	struct buf text = {NULL, 0, 0};
	struct buf want = {NULL, 0, 0};
	struct section sec;
	int status = 2;

	if (read_file(path, &text) && find_section(path, &text, &sec) &&
	    wanted_text(path, &sec, table, &want)) {
		size_t len = sec.end - sec.start;

		status = 0;
		if (len != want.len || memcmp(text.data + sec.start, want.data, len) != 0) {
			fprintf(stderr, "%s: knob table is out of date; run 'make knobs-doc'\n",
				path);
			print_diff(path, sec.first_line, text.data + sec.start, len, want.data,
				   want.len);
			status = 1;
		}
	}
	free(want.data);
	free(text.data);
	return status;
}

static int update(const char *path, const struct buf *table)
{
	struct buf text = {NULL, 0, 0};
	struct buf want = {NULL, 0, 0};
	struct buf out = {NULL, 0, 0};
	struct section sec;
	int status = 2;

	if (read_file(path, &text) && find_section(path, &text, &sec) &&
	    wanted_text(path, &sec, table, &want)) {
		buf_add(&out, text.data, sec.start);
		buf_add(&out, want.data, want.len);
		buf_add(&out, text.data + sec.end, text.len - sec.end);
		status = 0;
		if (out.len != text.len || memcmp(out.data, text.data, out.len) != 0) {
			status = write_file(path, &out) ? 0 : 2;
			if (status == 0)
				printf("%s: knob table updated\n", path);
		}
	}
	free(out.data);
	free(want.data);
	free(text.data);
	return status;
}

/*
 * What the kernel's read_knobs() would say about cmdline, into err: "" if it boots. The
 * kernel parses what fits in boot_info.cmdline and then refuses a truncated line, so an
 * over-long line is refused here whatever it holds.
 */
static bool cmdline_ok(const char *cmdline, char *err, size_t errlen)
{
	struct knob_values vals;

	if (strlen(cmdline) > BOOT_CMDLINE_MAX - 1) {
		snprintf(err, errlen, "command line longer than %d bytes", BOOT_CMDLINE_MAX - 1);
		return false;
	}
	return knobs_parse(cmdline, &vals, err, errlen) == KNOB_OK;
}

static int check_cmdline(const char *cmdline)
{
	char err[KNOB_ERR_MAX];

	if (cmdline_ok(cmdline, err, sizeof(err)))
		return 0;
	printf("%s\n", err);
	return 1;
}

static int check_switchable(const char *line)
{
	char err[KNOB_ERR_MAX];
	struct knob_values vals;

	if (knobs_parse_switch(line, &vals, err, sizeof(err)) == KNOB_OK)
		return 0;
	printf("%s\n", err);
	return 1;
}

static int print_defaults(void)
{
	for (int id = 0; id < KNOB__COUNT; id++) {
		char value[64];

		knob_format_value((enum knob_id)id, knob_defs[id].def, value, sizeof(value));
		printf("%s=%s\n", knob_defs[id].name, value);
	}
	return 0;
}

/* One command line per stdin line (the harness checks every run of a matrix in one call). */
static int check_cmdlines(void)
{
	char err[KNOB_ERR_MAX];
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	size_t line_no = 0;
	int status = 0;

	while ((n = getline(&line, &cap, stdin)) >= 0) {
		line_no++;
		if (n > 0 && line[n - 1] == '\n')
			line[n - 1] = '\0';
		if (!cmdline_ok(line, err, sizeof(err))) {
			printf("%zu: %s\n", line_no, err);
			status = 1;
		}
	}
	free(line);
	if (ferror(stdin)) {
		perror("stdin");
		return 2;
	}
	return status;
}

int main(int argc, char **argv)
{
	struct buf table = generated_table();
	int status = 2;

	if (argc == 1) {
		fputs(table.data, stdout);
		status = 0;
	} else if (argc == 3 && strcmp(argv[1], "--check") == 0) {
		status = check(argv[2], &table);
	} else if (argc == 3 && strcmp(argv[1], "--update") == 0) {
		status = update(argv[2], &table);
	} else if (argc == 3 && strcmp(argv[1], "--check-cmdline") == 0) {
		status = strcmp(argv[2], "-") == 0 ? check_cmdlines() : check_cmdline(argv[2]);
	} else if (argc == 2 && strcmp(argv[1], "--defaults") == 0) {
		status = print_defaults();
	} else if (argc == 3 && strcmp(argv[1], "--check-switchable") == 0) {
		status = check_switchable(argv[2]);
	} else {
		fprintf(stderr,
			"usage: %s [--check FILE | --update FILE | --check-cmdline TEXT|- | "
			"--defaults | --check-switchable TEXT]\n",
			argv[0]);
	}
	free(table.data);
	return status;
}
